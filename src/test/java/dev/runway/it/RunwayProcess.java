package dev.runway.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.runway.support.Http;
import dev.runway.support.TempFiles;
import dev.runway.support.TestDatabase;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The packaged jar (target/runway.jar) run as a child process, as a user runs it: with the JVM
 * options of config/jvm.options, as ./run.sh starts it (the small heap, SerialGC, H2's value cache
 * off), so that the kill -9 and SIGTERM tests check the server as it is shipped.
 */
final class RunwayProcess {
  static final Path JAR = Path.of(System.getProperty("runway.jar", "target/runway.jar")).toAbsolutePath();
  private static final Path JVM_OPTIONS = Path.of("config/jvm.options").toAbsolutePath();

  private final Map<String, String> env;
  private final Path workDir;
  final int port;
  private Process process;

  RunwayProcess(Map<String, String> env, Path workDir) throws IOException {
    this.port = freePort();
    this.env = new java.util.HashMap<>(env);
    this.env.put("RUNWAY_HTTP_PORT", Integer.toString(port));
    this.env.put("RUNWAY_HTTP_REQUEST_LOG", "false");
    this.workDir = workDir;
  }

  /**
   * The server on a fresh database of {@code db} (H2 with AUTO_SERVER, so the keys command can use
   * it while the server runs), with the workflow files of config/workflows and these variables set.
   */
  static RunwayProcess onFreshDatabase(TestDatabase db, Map<String, String> env, String dirPrefix) throws IOException {
    Map<String, String> fresh = db.settingsForFreshDatabase().asMap();
    Map<String, String> all = new java.util.HashMap<>(Map.of(
        "RUNWAY_DB_URL", fresh.get("db.url") + (db == TestDatabase.H2 ? ";AUTO_SERVER=TRUE" : ""),
        "RUNWAY_DB_USER", fresh.get("db.user"),
        "RUNWAY_DB_PASSWORD", fresh.get("db.password"),
        "RUNWAY_WORKFLOWS_DIR", Path.of("config/workflows").toAbsolutePath().toString()));
    all.putAll(env);
    return new RunwayProcess(all, TempFiles.dir(dirPrefix));
  }

  /**
   * What an agent run's server in a kill -9 test is given: no workflow or agent files, tools on
   * loopback allowed, a 1 s lease polled every 100 ms (so a restarted server takes its runs back at
   * once), the model at {@code modelBaseUrl}, and {@code more} (name, value, …).
   */
  static Map<String, String> agentEnv(String modelBaseUrl, String... more) {
    Map<String, String> env = new java.util.HashMap<>(Map.of(
        "RUNWAY_WORKFLOWS_DIR", "",
        "RUNWAY_AGENTS_DIR", "",
        "RUNWAY_ENGINE_HTTP_ALLOW_PRIVATE_NETWORKS", "true",
        "RUNWAY_ENGINE_LEASE_SECONDS", "1",
        "RUNWAY_ENGINE_POLL_INTERVAL_MS", "100",
        "RUNWAY_AGENTS_MODEL_BASE_URL", modelBaseUrl));
    for (int i = 0; i < more.length; i += 2) {
      env.put(more[i], more[i + 1]);
    }
    return env;
  }

  /** The value the server gets of this environment variable (e.g. RUNWAY_DB_URL), or null. */
  String env(String name) {
    return env.get(name);
  }

  /** How a run of the jar to its end went. */
  record Result(int exitCode, String stdout, String stderr) {}

  /** Runs the jar with these arguments (none: the server) to its end, within {@code seconds}. */
  Result run(int seconds, String... args) throws IOException, InterruptedException {
    List<String> cmd = javaJar();
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(workDir.toFile());
    pb.environment().putAll(env);
    // Both to files: reading a pipe to its end would wait for ever on a process that does not exit.
    Path out = Files.createTempFile(workDir, "command", ".out");
    Path err = Files.createTempFile(workDir, "command", ".err");
    pb.redirectOutput(out.toFile());
    pb.redirectError(err.toFile());
    Process p = pb.start();
    if (!p.waitFor(seconds, java.util.concurrent.TimeUnit.SECONDS)) {
      p.destroyForcibly().waitFor();
      throw new IllegalStateException("runway " + String.join(" ", args) + " still running after " + seconds + " s");
    }
    return new Result(p.exitValue(), Files.readString(out), Files.readString(err));
  }

  /** Runs the server with some environment variables changed, expecting it to stop by itself (bad settings). */
  Result runWithEnv(Map<String, String> changes) throws IOException, InterruptedException {
    env.putAll(changes);
    return run(30);
  }

  /** Runs a command of the jar (e.g. keys create ...) that must succeed; returns its stdout. */
  String command(String... args) throws IOException, InterruptedException {
    Result r = run(60, args);
    if (r.exitCode() != 0) {
      throw new IllegalStateException("runway " + String.join(" ", args) + " failed: " + r.stderr());
    }
    return r.stdout();
  }

  /**
   * A new key of the workspace default with these scopes (comma-separated), made by the keys
   * command: it works on the database before the server has ever run, and while it runs.
   */
  String createKey(String scopes, String name) throws IOException, InterruptedException {
    String key = command("keys", "create", "--workspace", "default", "--scopes", scopes, "--name", name).trim();
    assertTrue(key.matches("wsk_[0-9A-Za-z]{40}"), key);
    return key;
  }

  /** The run once it is neither running nor awaiting approval (within 40 s; else fails with the server's log). */
  com.fasterxml.jackson.databind.JsonNode awaitEnded(Http api, String runId) throws InterruptedException {
    long deadline = System.nanoTime() + Duration.ofSeconds(40).toNanos();
    com.fasterxml.jackson.databind.JsonNode run = null;
    while (System.nanoTime() < deadline) {
      run = dev.runway.core.Json.tree(api.get("/v1/runs/" + runId).body());
      String status = run.get("status").asText();
      if (!status.equals("running") && !status.equals("awaiting_approval")) {
        return run;
      }
      Thread.sleep(100);
    }
    throw new AssertionError("run never finished: " + run + "\n" + log());
  }

  /** A client of the server's API with this key, with connections of its own (none kept from a server killed before). */
  Http http(String key) {
    return Http.at(base(), key);
  }

  /** Starts the server and waits until /readyz answers 200. */
  void start() throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(javaJar()).directory(workDir.toFile());
    pb.environment().putAll(env);
    pb.redirectOutput(ProcessBuilder.Redirect.appendTo(workDir.resolve("server.out").toFile()));
    pb.redirectError(ProcessBuilder.Redirect.appendTo(workDir.resolve("server.err").toFile()));
    process = pb.start();
    HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
    long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IllegalStateException("server exited: " + log());
      }
      try {
        HttpResponse<Void> r = client.send(HttpRequest.newBuilder(URI.create(base() + "/readyz")).build(),
            HttpResponse.BodyHandlers.discarding());
        if (r.statusCode() == 200) {
          return;
        }
      } catch (IOException notYet) {
        // still starting
      }
      Thread.sleep(100);
    }
    throw new IllegalStateException("server not ready within 60 s: " + log());
  }

  /** The server's process id (for jcmd). */
  long pid() {
    return process.pid();
  }

  /** kill -9: no shutdown hook, no flush. */
  void kill9() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor();
  }

  /** kill -STOP: the process is frozen as a long GC pause or a stopped container freezes it (it keeps its connections). */
  void pause() throws IOException, InterruptedException {
    signal("-STOP");
  }

  /** kill -CONT: a paused process goes on where it stopped. */
  void resume() throws IOException, InterruptedException {
    signal("-CONT");
  }

  private void signal(String which) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("/bin/kill", which, Long.toString(process.pid())).start();
    if (!kill.waitFor(10, java.util.concurrent.TimeUnit.SECONDS) || kill.exitValue() != 0) {
      throw new IllegalStateException("/bin/kill " + which + " " + process.pid() + " failed");
    }
  }

  /**
   * The instant the process is seen to exit (ask before signalling it: the instant is taken when the
   * JDK reaps it, not when the test next looks).
   */
  java.util.concurrent.CompletableFuture<java.time.Instant> exitInstant() {
    return process.onExit().thenApply(p -> java.time.Instant.now());
  }

  /** The folder it runs in, with its server.out and server.err. */
  Path workDir() {
    return workDir;
  }

  boolean alive() {
    return process != null && process.isAlive();
  }

  /** The exit code of a process that has exited. */
  int exitCode() {
    return process.exitValue();
  }

  /** SIGTERM, without waiting. */
  void sigterm() {
    process.destroy();
  }

  /** SIGTERM; returns the exit code, or -1 if the process had not exited after {@code seconds}. */
  int terminate(int seconds) throws InterruptedException {
    sigterm();
    if (!process.waitFor(seconds, java.util.concurrent.TimeUnit.SECONDS)) {
      return -1;
    }
    return process.exitValue();
  }

  void stop() throws InterruptedException {
    if (process != null && process.isAlive()) {
      process.destroy();
      if (!process.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)) {
        process.destroyForcibly().waitFor();
      }
    }
  }

  String base() {
    return "http://127.0.0.1:" + port;
  }

  /** Whether the server wrote {@code text} anywhere in its output (stdout or stderr), not only the tail {@link #log()} shows. */
  boolean logged(String text) throws IOException {
    return loggedMatching(java.util.regex.Pattern.quote(text));
  }

  /** Whether a line of the server's output matches {@code regex} (found anywhere in it). */
  boolean loggedMatching(String regex) throws IOException {
    java.util.regex.Pattern pattern = java.util.regex.Pattern.compile(regex);
    for (String file : List.of("server.out", "server.err")) {
      Path path = workDir.resolve(file);
      if (Files.exists(path) && pattern.matcher(Files.readString(path)).find()) {
        return true;
      }
    }
    return false;
  }

  /** What the server wrote on standard output (the first start's admin key), or "" before it wrote anything. */
  String stdout() throws IOException {
    Path out = workDir.resolve("server.out");
    return Files.exists(out) ? Files.readString(out) : "";
  }

  String log() {
    try {
      String err = Files.readString(workDir.resolve("server.err"));
      return err.length() > 4000 ? err.substring(err.length() - 4000) : err;
    } catch (IOException e) {
      return "(no log)";
    }
  }

  /** java, the options of config/jvm.options (its lines but comments), -jar and the jar. */
  private static List<String> javaJar() throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    for (String line : Files.readAllLines(JVM_OPTIONS)) {
      if (!line.startsWith("#") && !line.isBlank()) {
        cmd.addAll(List.of(line.trim().split("\\s+")));
      }
    }
    cmd.add("-jar");
    cmd.add(JAR.toString());
    return cmd;
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }
}
