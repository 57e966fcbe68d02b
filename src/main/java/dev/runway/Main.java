package dev.runway;

import dev.runway.cli.AccountsCommand;
import dev.runway.cli.KeysCommand;
import dev.runway.config.Settings;
import dev.runway.config.SettingsException;
import dev.runway.db.Database;
import dev.runway.db.DatabaseInUseException;
import io.javalin.util.JavalinBindException;
import java.net.BindException;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import sun.misc.Signal;

/** The composition root: reads settings, then serves or runs a `keys` command. */
public final class Main {
  private static final String USAGE = """
      usage: runway [serve]            start the server
             runway keys ...           manage API keys (runway keys --help)
             runway accounts ...       manage console accounts (runway accounts --help)
      settings: config/runway.properties, overridden by RUNWAY_* environment variables""";

  private static final String JETTY_REFERENCES_PER_CACHE_LINE = "org.eclipse.jetty.util.referencesPerCacheLine";
  /**
   * Start-ups that another process stands in the way of, each with one line on stderr. Besides these:
   * 0 stopped cleanly, 1 start-up or stop failed, 2 bad setting or usage; 3 is the JVM's own exit
   * on OutOfMemoryError (config/jvm.options).
   */
  static final int EXIT_DATABASE_IN_USE = 4;
  static final int EXIT_CANNOT_LISTEN = 5;

  private Main() {}

  public static void main(String[] args) {
    List<String> argv = Arrays.asList(args);
    String command = argv.isEmpty() ? "serve" : argv.get(0);
    try {
      switch (command) {
        case "serve" -> serve(Settings.load(System.getenv()));
        case "keys" -> System.exit(keys(argv.subList(1, argv.size())));
        case "accounts" -> System.exit(accounts(argv.subList(1, argv.size())));
        case "help", "--help", "-h" -> System.out.println(USAGE);
        default -> {
          System.err.println("runway: unknown command '" + command + "'\n" + USAGE);
          System.exit(2);
        }
      }
    } catch (SettingsException e) {
      System.err.println("runway: " + e.getMessage());
      System.exit(2);
    }
  }

  private static void serve(Settings settings) {
    skipJettysJmxProbe();
    Logger log = LoggerFactory.getLogger(Main.class);
    ServerSettings s = ServerSettings.from(settings);
    Runway runway;
    try {
      runway = Runway.start(settings);
    } catch (SettingsException e) {
      throw e;
    } catch (DatabaseInUseException e) {
      System.err.println("runway: " + e.getMessage());
      System.exit(EXIT_DATABASE_IN_USE);
      return;
    } catch (JavalinBindException e) {
      System.err.println("runway: cannot listen on " + s.httpHost() + ":" + s.httpPort() + ": " + whyNotListening(e));
      System.exit(EXIT_CANNOT_LISTEN);
      return;
    } catch (RuntimeException e) {
      log.error("start-up failed", e);
      System.err.println("runway: start-up failed: " + e.getMessage());
      System.exit(1);
      return;
    }
    // SIGTERM (and Ctrl-C) stop the server cleanly and exit 0; the JVM's default would exit 143.
    AtomicBoolean stopping = new AtomicBoolean();
    for (String signal : new String[] {"TERM", "INT"}) {
      Signal.handle(new Signal(signal), received -> {
        if (stopping.compareAndSet(false, true)) {
          stopInForeground(runway, log, "SIG" + signal);
        } else {
          log.info("SIG{}: already stopping", signal);
        }
      });
    }
    String base = "http://" + (s.httpHost().equals("0.0.0.0") ? "127.0.0.1" : s.httpHost()) + ":" + runway.port();
    log.info("Runway listening on {} (database {})", base, s.dbUrl().split("[?;]", 2)[0]);
    log.info("agent runs use {}", s.model().isSandbox()
        ? "the built-in sandbox model (no network); set agents.model.base_url (RUNWAY_AGENTS_MODEL_BASE_URL) to an "
            + "OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 for Ollama, to use a real one"
        : "the model endpoint " + s.model().baseUrl());
    runway.firstAdminKey().ifPresent(key -> System.out.println("""

        ==============================================================================
        First start: created workspace `default` and this admin API key.
        It is shown only this once; keep it somewhere safe.

            %s

        Start a run of the sample workflow `hello`:

            curl -s -X POST %s/v1/workflows/hello/runs \\
              -H 'Authorization: Bearer %s' \\
              -H 'Content-Type: application/json' \\
              -d '{"project": "demo"}'

        Start a run of the sample agent `clock` (model: %s):

            curl -s -X POST %s/v1/agents/clock/runs \\
              -H 'Authorization: Bearer %s' \\
              -H 'Content-Type: application/json' \\
              -d '{"project": "demo", "input": "Europe/Paris"}'

        More keys: ./run.sh keys create --workspace default --scopes runs:write,runs:read --name ci

        %s
        ==============================================================================
        """.formatted(key, base, key, s.model().isSandbox() ? "the built-in sandbox" : s.model().baseUrl(), base,
        key, consoleLines(s, base, runway.firstSetupCode().orElseThrow()).stripTrailing())));
  }

  /** The first start's lines on the console: how to get an account, as console.signup allows. */
  static String consoleLines(ServerSettings s, String base, String setupCode) {
    if (s.console().signup() == dev.runway.console.ConsoleSettings.Signup.CLOSED) {
      return """
          The console, to manage keys in a browser: %s/console
          Sign-up is closed (console.signup; the server listens beyond this machine): make an account
          for workspace `default` with

              ./run.sh accounts create --email you@example.com --workspace default
          """.formatted(base);
    }
    return """
        The console, to sign up and manage keys in a browser: %s/console
        Setup code (sign up with it to take over workspace `default`; usable once, within 24 h):

            %s
        """.formatted(base, setupCode);
  }

  /** Why the HTTP server could not bind its port, in words that say which setting to change. */
  static String whyNotListening(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof BindException bind && bind.getMessage() != null) {
        return bind.getMessage().startsWith("Address already in use")
            ? "the port is in use (set http.port or RUNWAY_HTTP_PORT)"
            : bind.getMessage() + " (check http.host and http.port)";
      }
    }
    return e.getMessage();
  }

  /**
   * Jetty pads some shared counters to a cache line, and to size the padding it asks JMX whether
   * object references are compressed: setting up JMX's platform server took a tenth of a second of
   * the start's CPU. They are compressed in any heap under 32 GB, Runway's is 128 MB: 16 references
   * to a 64-byte line, what Jetty would have found. A value given on the command line wins.
   */
  private static void skipJettysJmxProbe() {
    if (System.getProperty(JETTY_REFERENCES_PER_CACHE_LINE) == null) {
      System.setProperty(JETTY_REFERENCES_PER_CACHE_LINE, "16");
    }
  }

  /**
   * Stops on a thread that is not a daemon. The JVM runs a signal handler on a daemon thread, and
   * Runway's own threads are daemons too: once the HTTP server's threads had ended, nothing held the
   * JVM up, and it exited in the middle of the stop, before the engine's running steps had finished
   * and before the database was closed (an H2 file then keeps its lock file, and the next start
   * waits two seconds for it to go stale).
   */
  private static void stopInForeground(Runway runway, Logger log, String why) {
    Thread stop = new Thread(() -> System.exit(stop(runway::close, log, why)), "runway-stop");
    stop.setDaemon(false);
    stop.start();
  }

  /**
   * Runs the stop and returns the exit code: 0 once everything is closed, 1 if closing failed. The
   * failure must not escape: the stop thread would end with it, and with no other thread left the
   * JVM would exit 0, telling the supervisor that the stop went well.
   */
  static int stop(Runnable close, Logger log, String why) {
    log.info("{}: stopping (finishing requests in flight, committing what is waiting)", why);
    try {
      close.run();
    } catch (Throwable e) {
      log.error("the stop failed", e);
      return 1;
    }
    log.info("stopped cleanly");
    return 0;
  }

  private static int accounts(List<String> args) {
    ServerSettings s = ServerSettings.from(Settings.load(System.getenv()));
    String base = "http://" + (s.httpHost().equals("0.0.0.0") ? "127.0.0.1" : s.httpHost()) + ":" + s.httpPort();
    return onDatabase(args, AccountsCommand.USAGE, services -> new AccountsCommand(services.accounts(), System.out,
        new java.io.BufferedReader(new java.io.InputStreamReader(System.in, java.nio.charset.StandardCharsets.UTF_8)),
        System.console(), base).run(args));
  }

  private static int keys(List<String> args) {
    return onDatabase(args, KeysCommand.USAGE, services -> new KeysCommand(services.keys(), System.out).run(args));
  }

  /** Runs a command line tool on the configured database; its usage for --help, no arguments or bad ones. */
  private static int onDatabase(List<String> args, String usage, java.util.function.ToIntFunction<Services> command) {
    // stdout carries the command's answer (a new key alone); start-up chatter would only be noise.
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    if (args.isEmpty() || args.contains("--help") || args.contains("-h")) {
      System.out.println(usage);
      return args.isEmpty() ? 2 : 0;
    }
    ServerSettings settings = ServerSettings.from(Settings.load(System.getenv()));
    try (Database database = Database.open(settings.database())) {
      return command.applyAsInt(Services.over(database, settings, () -> { }));
    } catch (IllegalArgumentException e) {
      System.err.println("runway: " + e.getMessage() + "\n" + usage);
      return 2;
    } catch (DatabaseInUseException e) {
      System.err.println("runway: " + e.getMessage());
      return EXIT_DATABASE_IN_USE;
    }
  }
}
