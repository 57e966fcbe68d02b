package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.runway.support.TempFiles;
import dev.runway.support.WebhookReceiver;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every curl example of the documentation runs: each fenced {@code ```sh} block of README.md and
 * docs/*.md that holds {@code curl} is run by bash against the packaged jar, started as the README
 * says (a fresh working directory with the shipped config/, the default embedded H2 database,
 * {@code RUNWAY_ENGINE_HTTP_ALLOW_PRIVATE_NETWORKS=true} as the tour's webhook step asks), with the
 * admin key its first start printed. The blocks of one file run in document order in one shell
 * ({@code set -eo pipefail}), so {@code RUN=$(...)} in one block serves the next.
 *
 * <p>What is replaced: {@code http://127.0.0.1:8080} by the server's address,
 * {@code http://127.0.0.1:9000} (the docs' local webhook receiver) by a {@link WebhookReceiver}'s,
 * {@code wsk_...} by the key; {@code RUNWAY_KEY} and {@code KEY} hold it. {@code curl} is a shell
 * function that runs the real one and fails the block on an HTTP status of 400 or more, unless
 * the block names that status in a comment ({@code # 409: it succeeded}); on a live event stream
 * it stops after 3 s. A block that cannot run here says {@code # not run by the doc test} and is
 * counted as skipped; blocks meant for other tools use another fence ({@code ```text},
 * {@code ```ini}, …). What each file's blocks printed is kept in target/doc-examples/.
 */
class DocExamplesIT {
  static final String SKIP_MARKER = "# not run by the doc test";
  private static final Pattern ALLOWED_STATUS = Pattern.compile("#\\s*([45]\\d\\d)\\b");

  /** One {@code ```sh} block with curl: its file, its number among them and its first line in the file. */
  record Block(Path file, int number, int line, String text) {
    boolean skipped() {
      return text.contains(SKIP_MARKER);
    }

    String where() {
      return file + " block " + number + " (line " + line + ")";
    }
  }

  @Test
  void every_curl_example_of_the_readme_and_docs_runs() throws Exception {
    List<Path> files = docFiles();
    Path workDir = TempFiles.dir("runway-doc-examples-");
    copyTree(Path.of("config"), workDir.resolve("config"));
    try (WebhookReceiver receiver = new WebhookReceiver()) {
      RunwayProcess server = new RunwayProcess(Map.of("RUNWAY_ENGINE_HTTP_ALLOW_PRIVATE_NETWORKS", "true"), workDir);
      server.start();
      try {
        String key = firstAdminKey(server);
        int ran = 0;
        List<String> skipped = new ArrayList<>();
        for (Path file : files) {
          List<Block> blocks = curlBlocks(file);
          List<Block> toRun = blocks.stream().filter(b -> !b.skipped()).toList();
          blocks.stream().filter(Block::skipped).forEach(b -> skipped.add(b.where()));
          if (!toRun.isEmpty()) {
            run(file, toRun, server.base(), receiver.url(""), key, workDir);
            ran += toRun.size();
          }
        }
        System.out.println("DocExamplesIT: ran " + ran + " doc blocks with curl, skipped " + skipped.size()
            + (skipped.isEmpty() ? "" : ": " + String.join(", ", skipped)));
        assertTrue(ran > 3 * skipped.size(), "most curl examples must run: ran " + ran + ", skipped " + skipped);
        // The webhook examples' endpoints got their events (the tour's asks for run.*, and stays enabled).
        receiver.await(Duration.ofSeconds(30), d -> d.stream().anyMatch(x -> x.type().equals("run.succeeded")),
            "a run.succeeded delivery at the receiver");
      } finally {
        server.stop();
      }
    }
  }

  /** The parser finds sh blocks with curl, in order, and the skip marker. */
  @Test
  void blocks_are_found_in_order_with_their_lines() throws IOException {
    Path file = TempFiles.dir("runway-doc-parse-").resolve("x.md");
    Files.writeString(file, String.join("\n",
        "# T", "```sh", "./run.sh", "```", "```sh", "curl -s http://127.0.0.1:8080/healthz", "```",
        "```text", "curl no", "```", "```sh", SKIP_MARKER, "curl -s http://elsewhere/", "```", ""));
    List<Block> blocks = curlBlocks(file);
    assertEquals(2, blocks.size());
    assertEquals(6, blocks.get(0).line());
    assertEquals(1, blocks.get(0).number());
    assertTrue(!blocks.get(0).skipped() && blocks.get(1).skipped());
  }

  static List<Path> docFiles() throws IOException {
    List<Path> files = new ArrayList<>(List.of(Path.of("README.md")));
    try (Stream<Path> docs = Files.list(Path.of("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(files::add);
    }
    return files;
  }

  static List<Block> curlBlocks(Path file) throws IOException {
    List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
    List<Block> blocks = new ArrayList<>();
    for (int i = 0; i < lines.size(); i++) {
      if (!lines.get(i).strip().equals("```sh")) {
        continue;
      }
      int start = i + 1;
      int end = start;
      while (end < lines.size() && !lines.get(end).strip().equals("```")) {
        end++;
      }
      String text = String.join("\n", lines.subList(start, end));
      if (text.contains("curl ")) {
        blocks.add(new Block(file, blocks.size() + 1, start + 1, text));
      }
      i = end;
    }
    return blocks;
  }

  /** Runs the blocks of one file in one bash, in order; fails naming the block that failed. */
  private static void run(Path file, List<Block> blocks, String base, String receiverBase, String key, Path workDir)
      throws IOException, InterruptedException {
    Path progress = Files.createTempFile(workDir, "doc-progress", ".txt");
    StringBuilder script = new StringBuilder("""
        set -eo pipefail
        curl() {
          local stream=0 out rc=0 code
          for a in "$@"; do [[ $a == *text/event-stream* ]] && stream=1; done
          out=$(mktemp)
          if [ $stream = 1 ]; then
            command curl --max-time 3 -o "$out" -w '%{http_code}' "$@" > "$out.code" || rc=$?
            [ $rc = 28 ] && rc=0
          else
            command curl --max-time 60 -o "$out" -w '%{http_code}' "$@" > "$out.code" || rc=$?
          fi
          cat "$out"; echo
          code=$(cat "$out.code"); rm -f "$out" "$out.code"
          if [ $rc != 0 ]; then echo "doc test: curl exited $rc (HTTP $code): curl $*" >&2; return $rc; fi
          if [ "$code" -ge 400 ] && [[ " $DOC_ALLOWED_STATUS " != *" $code "* ]]; then
            echo "doc test: HTTP $code from curl $*" >&2; return 22
          fi
        }
        """);
    for (Block b : blocks) {
      TreeSet<String> allowed = new TreeSet<>();
      Matcher m = ALLOWED_STATUS.matcher(b.text());
      while (m.find()) {
        allowed.add(m.group(1));
      }
      script.append("echo 'started ").append(b.number()).append("' >> \"$DOC_PROGRESS\"\n")
          .append("echo '=== ").append(b.where()).append("'\n")
          .append("DOC_ALLOWED_STATUS='").append(String.join(" ", allowed)).append("'\n")
          .append(substitute(b.text(), base, receiverBase, key)).append("\n")
          .append("echo 'ended ").append(b.number()).append("' >> \"$DOC_PROGRESS\"\n");
    }
    Path scriptFile = Files.createTempFile(workDir, "doc-blocks", ".sh");
    Files.writeString(scriptFile, script);
    Path output = Files.createTempFile(workDir, "doc-output", ".txt");
    ProcessBuilder pb = new ProcessBuilder("bash", scriptFile.toString()).directory(workDir.toFile())
        .redirectErrorStream(true).redirectOutput(output.toFile());
    pb.environment().put("RUNWAY_KEY", key);
    pb.environment().put("KEY", key);
    pb.environment().put("DOC_PROGRESS", progress.toString());
    Process p = pb.start();
    boolean ended = p.waitFor(300, TimeUnit.SECONDS);
    if (!ended) {
      p.destroyForcibly().waitFor();
    }
    List<String> steps = Files.readAllLines(progress);
    // What the examples answered, to read after the build: target/doc-examples/<file>.out
    Path kept = Path.of("target", "doc-examples", file.toString().replace('/', '_') + ".out");
    Files.createDirectories(kept.getParent());
    Files.copy(output, kept, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    if (!ended || p.exitValue() != 0) {
      String last = steps.isEmpty() ? "started 1" : steps.get(steps.size() - 1);
      int number = Integer.parseInt(last.substring(last.indexOf(' ') + 1));
      Block failed = blocks.stream().filter(b -> b.number() == number).findFirst().orElseThrow();
      String out = Files.readString(output);
      fail((ended ? "exit code " + p.exitValue() : "no end within 300 s") + " in " + failed.where() + ":\n"
          + failed.text() + "\n--- output (end) ---\n" + out.substring(Math.max(0, out.length() - 4000)));
    }
    assertEquals(2 * blocks.size(), steps.size(), () -> "every block of " + file + " ran: " + steps);
  }

  static String substitute(String text, String base, String receiverBase, String key) {
    return text.replace("http://127.0.0.1:8080", base)
        .replace("http://127.0.0.1:9000", receiverBase)
        .replace("wsk_...", key);
  }

  /** The admin key the first start printed on standard output, as a newcomer finds it. */
  private static String firstAdminKey(RunwayProcess server) throws IOException, InterruptedException {
    Pattern key = Pattern.compile("^\\s+(wsk_[A-Za-z0-9]{40,})\\s*$", Pattern.MULTILINE);
    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
    while (true) { // /readyz may answer 200 a moment before the key is printed
      Matcher m = key.matcher(server.stdout());
      if (m.find()) {
        return m.group(1);
      }
      assertTrue(System.nanoTime() < deadline, "the first start printed an admin key on standard output");
      Thread.sleep(100);
    }
  }

  private static void copyTree(Path from, Path to) throws IOException {
    try (Stream<Path> all = Files.walk(from)) {
      for (Path p : (Iterable<Path>) all::iterator) {
        Path target = to.resolve(from.relativize(p).toString());
        if (Files.isDirectory(p)) {
          Files.createDirectories(target);
        } else {
          Files.copy(p, target);
        }
      }
    }
  }
}
