package dev.runway.cli;

import dev.runway.console.Account;
import dev.runway.console.AccountService;
import dev.runway.console.ConsoleException;
import java.io.BufferedReader;
import java.io.Console;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code accounts create|reset-password|setup-code|invite}: console accounts from the command line
 * (with console.signup=closed, the only way; with console.signup=invite, invitations), and a new
 * setup code (the first start's is valid 24 h). The password is never an argument (it would show in the
 * process list and the shell's history): it is asked for, or read as the first line of stdin.
 */
public final class AccountsCommand {
  public static final String USAGE = """
      usage: runway accounts create --email E [--workspace W]   (workspace: default)
             runway accounts reset-password --email E             (ends the account's sessions)
             runway accounts setup-code [--workspace W]           (a new one-time sign-up code for W, default:
                                                                   default; valid 24 h, replaces the earlier one)
             runway accounts invite [--workspace W] [--days D]    (a one-use invitation, valid D days, default 7;
                                                                   without W the account gets a workspace of its own)
      the password is asked for, or read as the first line of stdin: echo "$PASSWORD" | runway accounts create ...""";

  private final AccountService accounts;
  private final PrintStream out;
  private final BufferedReader in;
  private final Console console;
  private final String consoleUrl;

  public AccountsCommand(AccountService accounts, PrintStream out, BufferedReader in, Console console) {
    this(accounts, out, in, console, "http://127.0.0.1:8080");
  }

  /** {@code baseUrl}: where the server is reached (http://host:port), for the link an invitation prints. */
  public AccountsCommand(AccountService accounts, PrintStream out, BufferedReader in, Console console, String baseUrl) {
    this.consoleUrl = baseUrl + "/console";
    this.accounts = accounts;
    this.out = out;
    this.in = in;
    this.console = console;
  }

  /** Runs the command; returns the exit code. Usage errors throw IllegalArgumentException. */
  public int run(List<String> args) {
    if (args.isEmpty()) {
      throw new IllegalArgumentException("accounts needs a command: create, reset-password, setup-code or invite");
    }
    List<String> rest = args.subList(1, args.size());
    try {
      switch (args.get(0)) {
        case "create" -> {
          Map<String, String> options = KeysCommand.options(rest, Set.of("email", "workspace"));
          String email = KeysCommand.required(options, "email");
          Account made = accounts.create(email, password(), options.getOrDefault("workspace", "default"));
          out.println("created account " + made.email() + " in workspace " + made.workspaceId());
        }
        case "reset-password" -> {
          Map<String, String> options = KeysCommand.options(rest, Set.of("email"));
          String email = KeysCommand.required(options, "email");
          accounts.resetPassword(email, password());
          out.println("set a new password for " + email.strip().toLowerCase(java.util.Locale.ROOT)
              + "; its sessions have ended");
        }
        case "setup-code" -> {
          Map<String, String> options = KeysCommand.options(rest, Set.of("workspace"));
          String workspace = options.getOrDefault("workspace", "default");
          String code = accounts.newSetupCode(workspace);
          out.println(code);
          System.err.println("runway: sign up at /console/signup with this code within "
              + AccountService.SETUP_CODE_VALID_FOR.toHours() + " h to take workspace " + workspace + " (usable once)");
        }
        case "invite" -> {
          Map<String, String> options = KeysCommand.options(rest, Set.of("workspace", "days"));
          int days;
          try {
            days = Integer.parseInt(options.getOrDefault("days", "7"));
          } catch (NumberFormatException e) {
            days = 0;
          }
          if (days < 1 || days > 365) {
            throw new IllegalArgumentException("--days must be a whole number from 1 to 365");
          }
          String code = accounts.invite(options.get("workspace"), java.time.Duration.ofDays(days));
          out.println(code);
          out.println("one use, valid " + days + (days == 1 ? " day" : " days") + "; the sign-up link: "
              + consoleUrl + "/signup?code=" + code);
        }
        default -> throw new IllegalArgumentException("unknown accounts command '" + args.get(0) + "'");
      }
      return 0;
    } catch (ConsoleException e) {
      System.err.println("runway: " + e.getMessage());
      return 1;
    }
  }

  private String password() {
    if (console != null) {
      char[] typed = console.readPassword("Password (at least %d characters): ", AccountService.MIN_PASSWORD_LENGTH);
      return typed == null ? "" : new String(typed);
    }
    try {
      String line = in.readLine();
      return line == null ? "" : line;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
