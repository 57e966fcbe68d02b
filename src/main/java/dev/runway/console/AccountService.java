package dev.runway.console;

import dev.runway.core.DomainException.Kind;
import dev.runway.core.Ids;
import dev.runway.core.Sha256;
import dev.runway.core.Slugs;
import dev.runway.core.Time;
import dev.runway.db.SqlErrors;
import dev.runway.db.WorkspaceDao;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.HashSet;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import org.jdbi.v3.core.Handle;
import org.jdbi.v3.core.Jdbi;

/**
 * Console accounts: sign-up (an account and a workspace of its own, or the first start's workspace
 * with its setup code), sign-in with a lockout after failures in a row from one client address, and
 * the command line's create, reset-password and setup-code. The rules for passwords are here; their
 * hashing is PasswordHasher's.
 */
public final class AccountService {
  public static final int MIN_PASSWORD_LENGTH = 12;
  static final int MAX_PASSWORD_LENGTH = 1000;
  static final int MAX_EMAIL_LENGTH = 254;
  /** How long a setup code may be used after it is made (and printed). */
  public static final java.time.Duration SETUP_CODE_VALID_FOR = java.time.Duration.ofHours(24);
  private static final Pattern EMAIL = Pattern.compile("[^@\\s]+@[^@\\s]+\\.[^@\\s.]+");
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final Set<String> COMMON_PASSWORDS = loadCommonPasswords();

  private final Jdbi jdbi;
  private final PasswordHasher hasher;
  private final ConsoleSettings settings;
  /**
   * Failures in a row of emails without an account, by client and email, kept in memory: they lock
   * out as an account does, so that a lock-out (429) tells no one that an email has an account.
   */
  private final java.util.concurrent.ConcurrentHashMap<String, Failures> decoyFailures =
      new java.util.concurrent.ConcurrentHashMap<>();

  private record Failures(int count, Instant lockedUntil, Instant updatedAt) {}

  private static final int MAX_DECOY_FAILURES = 100_000;

  public AccountService(Jdbi jdbi, ConsoleSettings settings) {
    this.jdbi = jdbi;
    this.settings = settings;
    this.hasher = new PasswordHasher(settings.maxConcurrentHashes(), java.time.Duration.ofSeconds(5));
  }

  /** Thrown when the hashing places stay taken: the page asks the person to try again shortly. */
  public static boolean isBusy(RuntimeException e) {
    return e instanceof PasswordHasher.Busy;
  }

  /**
   * A new account with a workspace of its own; with the right {@code setupCode} (printed at first
   * start or by {@code accounts setup-code}, usable once within 24 h), the account takes the
   * workspace that code was made for instead. Empty, with nothing made (the code not used), when
   * the email has an account already: the page must not tell, so sign-up answers alike.
   */
  public Optional<Account> signUp(String email, String password, String setupCode) {
    return signUp(email, password, setupCode, false);
  }

  /**
   * Like {@link #signUp(String, String, String)}, where {@code code} may also be an invitation
   * (from {@link #invite}): the account then goes where the invitation says. With
   * {@code invitationNeeded} (console.signup=invite) a sign-up without a valid code is refused.
   * Empty, with nothing made (the code not used), when the email has an account already: the page
   * must not tell, so sign-up answers alike.
   */
  public Optional<Account> signUp(String email, String password, String code, boolean invitationNeeded) {
    String given = code == null || code.isBlank() ? null : code.strip();
    if (given == null && invitationNeeded) {
      throw new ConsoleException(Kind.INVALID, "setup_code",
          "Sign-up on this server is by invitation: enter the invitation code you were given.");
    }
    Optional<Invitation> invitation = given == null ? Optional.empty() : invitation(given);
    String claimed = given == null || invitation.isPresent() ? null
        : given.startsWith("inv_") || invitationNeeded ? claimableWorkspaceOrNull(given) : claimableWorkspace(given);
    if (given != null && invitation.isEmpty() && claimed == null) {
      throw new ConsoleException(Kind.INVALID, "setup_code",
          "This invitation is not valid: it may have been used already or have expired. Ask for a new one.");
    }
    try {
      return Optional.of(insert(email, password, (h, now) -> {
        if (invitation.isPresent()) {
          // Used once: its row goes in the account's transaction; a second use finds none.
          if (h.createUpdate("DELETE FROM console_invitation WHERE code_hash = :hash AND expires_at > :now")
              .bind("hash", Sha256.hex(given)).bind("now", now).execute() != 1) {
            throw new ConsoleException(Kind.INVALID, "setup_code", "This invitation has been used already or has expired.");
          }
          String workspace = invitation.get().workspaceId();
          if (workspace == null) {
            workspace = newWorkspaceId(email.strip().toLowerCase(Locale.ROOT));
            h.attach(WorkspaceDao.class).insert(workspace, now);
          } else {
            h.attach(WorkspaceDao.class).ensure(workspace, now);
          }
          return workspace;
        }
        if (claimed == null) {
          String workspace = newWorkspaceId(email.strip().toLowerCase(Locale.ROOT));
          h.attach(WorkspaceDao.class).insert(workspace, now);
          return workspace;
        }
        // Used once: the code's row goes in the same transaction as the account.
        if (h.createUpdate("DELETE FROM console_setup_code WHERE workspace_id = :ws").bind("ws", claimed).execute() != 1) {
          throw new ConsoleException(Kind.INVALID, "setup_code", "This setup code has been used already.");
        }
        return claimed;
      }));
    } catch (EmailTaken e) {
      return Optional.empty();
    }
  }

  /** The email has an account already (the command line says so; sign-up does not). */
  private static final class EmailTaken extends ConsoleException {
    EmailTaken() {
      super(Kind.CONFLICT, "email", "An account with this email exists already.");
    }
  }

  /** An unused invitation: the workspace it signs up into (null: a new one of the account's own). */
  private record Invitation(String workspaceId) {}

  /**
   * A one-use invitation (console.signup=invite) valid for {@code validFor}: the person who signs
   * up with it gets an account in {@code workspaceId} (made if new), or with null a workspace of
   * their own. Only its hash is stored; invitations past their time are dropped here.
   */
  public String invite(String workspaceId, java.time.Duration validFor) {
    if (workspaceId != null && !Slugs.isSlug(workspaceId)) {
      throw new ConsoleException(Kind.INVALID, "workspace", "the workspace must be a slug: " + Slugs.RULE);
    }
    byte[] bytes = new byte[20];
    RANDOM.nextBytes(bytes);
    String code = "inv_" + java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    Instant now = Time.now();
    jdbi.useTransaction(h -> {
      h.createUpdate("DELETE FROM console_invitation WHERE expires_at <= :now").bind("now", now).execute();
      h.createUpdate("INSERT INTO console_invitation (code_hash, workspace_id, created_at, expires_at) "
          + "VALUES (:hash, :ws, :now, :expires)").bind("hash", Sha256.hex(code)).bind("ws", workspaceId)
          .bind("now", now).bind("expires", now.plus(validFor)).execute();
    });
    return code;
  }

  /** The invitation with this code, if unused and not expired (looked up by the code's hash). */
  private Optional<Invitation> invitation(String code) {
    if (!code.startsWith("inv_")) {
      return Optional.empty();
    }
    Instant now = Time.now();
    return jdbi.withHandle(h -> h.createQuery(
            "SELECT workspace_id FROM console_invitation WHERE code_hash = :hash AND expires_at > :now")
        .bind("hash", Sha256.hex(code)).bind("now", now).map((rs, c) -> new Invitation(rs.getString(1))).findOne());
  }

  /**
   * A new account after checking its email and password, in the workspace {@code workspace} picks
   * (or makes) in the account's transaction; 409 if the email has an account already.
   */
  private Account insert(String email, String password, java.util.function.BiFunction<Handle, Instant, String> workspace) {
    String normalized = checkEmail(email);
    checkPassword(password, normalized);
    String hash = hasher.hash(password);
    Instant now = Time.now();
    return SqlErrors.retryOnUniqueViolation(() -> jdbi.inTransaction(h -> {
      AccountDao accounts = h.attach(AccountDao.class);
      if (accounts.findByEmail(normalized).isPresent()) {
        throw new EmailTaken();
      }
      Account account = new Account(Ids.newId("acct", now.toEpochMilli()), normalized, hash, workspace.apply(h, now), now);
      accounts.insert(account);
      return account;
    }));
  }

  /**
   * The account if the password is right; else 401 without telling whether the email has an
   * account. After {@code console.lockout_failures} failures in a row from one client address (an
   * IPv6 client: its /64), the account refuses that address (429) for {@code console.lockout_minutes};
   * other addresses, its owner's among them, are not refused for what that one did.
   */
  public Account signIn(String email, String password, String client) {
    String normalized = email == null ? "" : email.strip().toLowerCase(Locale.ROOT);
    String given = password == null ? "" : password;
    if (given.length() > MAX_PASSWORD_LENGTH) {
      throw wrongCredentials();
    }
    Optional<Account> found = jdbi.withExtension(AccountDao.class, dao -> dao.findByEmail(normalized));
    if (found.isEmpty()) {
      decoySignIn(client + " " + normalized, given);
    }
    Account account = found.get();
    Instant now = Time.now();
    Optional<Instant> locked = jdbi.withExtension(AccountDao.class, dao -> dao.lockedUntil(account.id(), client, now));
    if (locked.isPresent()) {
      throw locked(locked.get(), now);
    }
    if (!hasher.verify(given, account.passwordHash())) {
      failed(account.id(), client, Time.now());
      throw wrongCredentials();
    }
    jdbi.useExtension(AccountDao.class, dao -> dao.signedIn(account.id(), client));
    return account;
  }

  /** A sign-in with an email that has no account: refused as one with a wrong password would be, lock-out included. */
  private void decoySignIn(String name, String given) {
    Instant now = Time.now();
    Failures before = decoyFailures.get(name);
    if (before != null && before.lockedUntil() != null && now.isBefore(before.lockedUntil())) {
      throw locked(before.lockedUntil(), now);
    }
    hasher.verifyDecoy(given); // as long as a known email's check
    if (decoyFailures.size() >= MAX_DECOY_FAILURES) {
      Instant forgotten = now.minus(settings.lockout());
      decoyFailures.values().removeIf(f -> f.updatedAt().isBefore(forgotten));
      if (decoyFailures.size() >= MAX_DECOY_FAILURES) {
        decoyFailures.clear(); // a flood of names: forgetting decoys costs no account anything
      }
    }
    decoyFailures.compute(name, (n, f) -> {
      boolean forget = f == null || f.updatedAt().isBefore(now.minus(settings.lockout()))
          && (f.lockedUntil() == null || !now.isBefore(f.lockedUntil()));
      int count = forget ? 1 : f.count() + 1;
      Instant until = count >= settings.lockoutFailures() ? now.plus(settings.lockout()) : forget ? null : f.lockedUntil();
      return new Failures(count, until, now);
    });
    throw wrongCredentials();
  }

  /** Counts a failed sign-in of the account from the client, locking it out for that client at the limit. */
  private void failed(String accountId, String client, Instant now) {
    int limit = settings.lockoutFailures();
    Instant lockedUntil = now.plus(settings.lockout());
    SqlErrors.retryOnUniqueViolation(() -> jdbi.inTransaction(h -> {
      AccountDao dao = h.attach(AccountDao.class);
      dao.forgetFailuresBefore(accountId, now.minus(settings.lockout()), now);
      if (dao.failedAgain(accountId, client, limit, lockedUntil, now) == 0) {
        dao.failedFirst(accountId, client, limit <= 1 ? lockedUntil : null, now);
      }
      return null;
    }));
  }

  public Optional<Account> find(String accountId) {
    return jdbi.withExtension(AccountDao.class, dao -> dao.find(accountId));
  }

  /** An account from the command line, in the workspace named (made if new). */
  public Account create(String email, String password, String workspaceId) {
    if (!Slugs.isSlug(workspaceId)) {
      throw new ConsoleException(Kind.INVALID, "workspace", "the workspace must be a slug: " + Slugs.RULE);
    }
    return insert(email, password, (h, now) -> {
      h.attach(WorkspaceDao.class).ensure(workspaceId, now);
      return workspaceId;
    });
  }

  /** Sets a new password from the command line; the account's sessions end and its lockout lifts. */
  public void resetPassword(String email, String password) {
    String normalized = email == null ? "" : email.strip().toLowerCase(Locale.ROOT);
    Account account = jdbi.withExtension(AccountDao.class, dao -> dao.findByEmail(normalized))
        .orElseThrow(() -> new ConsoleException(Kind.NOT_FOUND, "email", "no account has the email " + normalized));
    checkPassword(password, normalized);
    String hash = hasher.hash(password);
    jdbi.useTransaction(h -> {
      h.attach(AccountDao.class).setPassword(account.id(), hash);
      h.attach(AccountDao.class).forgetFailures(account.id());
      h.attach(SessionDao.class).deleteOfAccount(account.id());
    });
  }

  /**
   * A one-time code with which the next account to sign up takes {@code workspaceId} (the first
   * start's workspace, or one the operator names), within {@link #SETUP_CODE_VALID_FOR}; only its
   * hash is stored, and it replaces any earlier code of the workspace.
   */
  public String newSetupCode(String workspaceId) {
    if (jdbi.withExtension(WorkspaceDao.class, dao -> dao.count(workspaceId)) == 0) {
      throw new ConsoleException(Kind.NOT_FOUND, "workspace", "there is no workspace " + workspaceId);
    }
    byte[] bytes = new byte[15];
    RANDOM.nextBytes(bytes);
    String code = java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    jdbi.useHandle(h -> {
      h.createUpdate("DELETE FROM console_setup_code WHERE workspace_id = :ws").bind("ws", workspaceId).execute();
      h.createUpdate("INSERT INTO console_setup_code (workspace_id, code_hash, created_at) VALUES (:ws, :hash, :at)")
          .bind("ws", workspaceId).bind("hash", Sha256.hex(code)).bind("at", Time.now()).execute();
    });
    return code;
  }

  private String claimableWorkspaceOrNull(String code) {
    try {
      return claimableWorkspace(code);
    } catch (ConsoleException e) {
      return null;
    }
  }

  private String claimableWorkspace(String code) {
    String hash = Sha256.hex(code);
    Instant madeAfter = Time.now().minus(SETUP_CODE_VALID_FOR);
    return jdbi.withHandle(h -> h.createQuery("SELECT workspace_id, code_hash FROM console_setup_code "
                + "WHERE created_at > :after").bind("after", madeAfter)
            .map((rs, c) -> MessageDigest.isEqual(hash.getBytes(StandardCharsets.US_ASCII),
                rs.getString("code_hash").getBytes(StandardCharsets.US_ASCII)) ? rs.getString("workspace_id") : null)
            .list()).stream().filter(java.util.Objects::nonNull).findFirst()
        .orElseThrow(() -> new ConsoleException(Kind.INVALID, "setup_code", "This setup code is not valid (it may have been "
            + "used already, or be more than 24 hours old: the operator makes a new one with `runway accounts "
            + "setup-code`). Leave it empty to get a workspace of your own."));
  }

  static String checkEmail(String email) {
    String normalized = email == null ? "" : email.strip().toLowerCase(Locale.ROOT);
    if (normalized.isEmpty()) {
      throw new ConsoleException(Kind.INVALID, "email", "Enter your email address.");
    }
    if (normalized.length() > MAX_EMAIL_LENGTH || !EMAIL.matcher(normalized).matches()
        || normalized.chars().anyMatch(ch -> ch < 0x20 || ch == 0x7f)) {
      throw new ConsoleException(Kind.INVALID, "email", "Enter an email address like name@example.com.");
    }
    return normalized;
  }

  static void checkPassword(String password, String email) {
    if (password == null || password.codePointCount(0, password.length()) < MIN_PASSWORD_LENGTH) {
      throw new ConsoleException(Kind.INVALID, "password", "Use at least " + MIN_PASSWORD_LENGTH + " characters.");
    }
    if (password.length() > MAX_PASSWORD_LENGTH) {
      throw new ConsoleException(Kind.INVALID, "password", "Use at most " + MAX_PASSWORD_LENGTH + " characters.");
    }
    String lower = password.toLowerCase(Locale.ROOT);
    if (COMMON_PASSWORDS.contains(lower) || lower.equals(email)) {
      throw new ConsoleException(Kind.INVALID, "password",
          "This password is among the most common ones, which are tried first. Choose another.");
    }
  }

  private static ConsoleException wrongCredentials() {
    return new ConsoleException(Kind.UNAUTHENTICATED, null, "Wrong email or password.");
  }

  static ConsoleException locked(Instant until, Instant now) {
    long minutes = Math.max(1, (java.time.Duration.between(now, until).toSeconds() + 59) / 60);
    return new ConsoleException(Kind.TOO_MANY, null, "Too many failed sign-ins. Try again in " + minutes
        + (minutes == 1 ? " minute." : " minutes."));
  }

  private static String newWorkspaceId(String email) {
    String local = email.substring(0, email.indexOf('@')).replaceAll("[^a-z0-9_-]+", "-").replaceAll("^[-_]+", "");
    if (local.length() > 40) {
      local = local.substring(0, 40);
    }
    String random = Ids.newId("w");
    String suffix = random.substring(random.length() - 6); // the random end of the id
    String id = (local.isEmpty() ? "ws" : local) + "-" + suffix;
    return id.toLowerCase(Locale.ROOT);
  }

  private static Set<String> loadCommonPasswords() {
    Set<String> words = new HashSet<>(65_536);
    try (InputStream in = AccountService.class.getResourceAsStream("/console/common-passwords.txt")) {
      if (in == null) {
        throw new IllegalStateException("console/common-passwords.txt is missing from the jar");
      }
      BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      for (String line; (line = reader.readLine()) != null; ) {
        if (!line.isEmpty() && !line.startsWith("#")) {
          words.add(line);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return Set.copyOf(words);
  }
}
