package dev.runway.console;

import dev.runway.core.Sha256;
import dev.runway.core.Time;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Optional;
import org.jdbi.v3.core.Jdbi;

/**
 * Console sessions: 128-bit random ids, stored as their SHA-256, with a CSRF token each. A signed-in
 * session ends after console.session_idle_minutes without a request and console.session_max_hours
 * after sign-in; a visitor's (the sign-in and sign-up forms) after an hour.
 */
public final class SessionService {
  private static final Duration VISITOR_LIFETIME = Duration.ofHours(1);
  /** A session's last-seen time is written at most this often (not on every page). */
  private static final Duration SEEN_EVERY = Duration.ofMinutes(1);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Jdbi jdbi;
  private final ConsoleSettings settings;

  /** A new session: the cookie's value (shown only here) and the stored row. */
  public record Started(String cookie, ConsoleSession session) {}

  public SessionService(Jdbi jdbi, ConsoleSettings settings) {
    this.jdbi = jdbi;
    this.settings = settings;
  }

  /** A signed-in session for the account: a new id (never the visitor's, which the page may have leaked). */
  public Started signIn(String accountId) {
    return start(accountId, settings.sessionMax());
  }

  /** A session for a visitor not signed in, so that the sign-in and sign-up forms carry a CSRF token. */
  public Started visitor() {
    return start(null, VISITOR_LIFETIME);
  }

  private Started start(String accountId, Duration lifetime) {
    byte[] id = new byte[16];
    RANDOM.nextBytes(id);
    byte[] csrf = new byte[32];
    RANDOM.nextBytes(csrf);
    String cookie = Base64.getUrlEncoder().withoutPadding().encodeToString(id);
    Instant now = Time.now();
    ConsoleSession session = new ConsoleSession(Sha256.hex(cookie), accountId, HexFormat.of().formatHex(csrf), now, now,
        now.plus(lifetime));
    jdbi.useExtension(SessionDao.class, dao -> dao.insert(session));
    return new Started(cookie, session);
  }

  /** The live session the cookie names; an expired or idle one is deleted and not returned. */
  public Optional<ConsoleSession> find(String cookie) {
    if (cookie == null || cookie.length() != 22) {
      return Optional.empty();
    }
    String hash = Sha256.hex(cookie);
    Optional<ConsoleSession> found = jdbi.withExtension(SessionDao.class, dao -> dao.find(hash));
    if (found.isEmpty()) {
      return found;
    }
    ConsoleSession session = found.get();
    Instant now = Time.now();
    Duration idle = session.signedIn() ? settings.sessionIdle() : VISITOR_LIFETIME;
    if (!now.isBefore(session.expiresAt()) || !now.isBefore(session.lastSeenAt().plus(idle))) {
      jdbi.useExtension(SessionDao.class, dao -> dao.delete(hash));
      return Optional.empty();
    }
    if (session.lastSeenAt().plus(SEEN_EVERY).isBefore(now)) {
      jdbi.useExtension(SessionDao.class, dao -> dao.seen(hash, now));
    }
    return found;
  }

  public void end(ConsoleSession session) {
    jdbi.useExtension(SessionDao.class, dao -> dao.delete(session.idHash()));
  }

  /** Whether a form's token is the session's, compared in constant time. */
  public static boolean csrfMatches(ConsoleSession session, String token) {
    return token != null && !token.isEmpty() && MessageDigest.isEqual(session.csrfToken().getBytes(StandardCharsets.US_ASCII),
        token.getBytes(StandardCharsets.US_ASCII));
  }

  /** Deletes ended sessions (the housekeeping sweep). */
  public int prune() {
    Instant now = Time.now();
    Duration longestIdle = settings.sessionIdle().compareTo(VISITOR_LIFETIME) > 0 ? settings.sessionIdle() : VISITOR_LIFETIME;
    return jdbi.withExtension(SessionDao.class, dao -> dao.prune(now, now.minus(longestIdle)));
  }
}
