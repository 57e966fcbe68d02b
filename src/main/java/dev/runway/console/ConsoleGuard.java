package dev.runway.console;

import dev.runway.core.DomainException.Kind;
import dev.runway.core.RateLimiter;
import dev.runway.core.Time;
import dev.runway.http.ClientAddress;
import dev.runway.http.ErrorMapper;
import io.javalin.http.Context;
import io.javalin.http.HttpStatus;
import java.net.URI;
import java.time.Duration;
import java.util.Optional;

/** Who a console request is from: its session and cookie, the signed-in account, and whether its form is genuine. */
public final class ConsoleGuard {
  static final String COOKIE = "runway_session";

  private final AccountService accounts;
  private final SessionService sessions;
  private final ConsoleSettings settings;
  private final PageRenderer pages;
  /** New visitor sessions per client address (each is a row until it expires): 60 at once, one a second after. */
  private final RateLimiter visitorsPerAddress = new RateLimiter(1.0, 60);

  public ConsoleGuard(AccountService accounts, SessionService sessions, ConsoleSettings settings, PageRenderer pages) {
    this.accounts = accounts;
    this.sessions = sessions;
    this.settings = settings;
    this.pages = pages;
  }

  /** The request's session, signed in or not, if its cookie names one that has not ended. */
  Optional<ConsoleSession> session(Context ctx) {
    return sessions.find(ctx.cookie(COOKIE));
  }

  /** The signed-in session of the request, if any (an account deleted since ends it). */
  Optional<SignedIn> signedIn(Context ctx) {
    return session(ctx).filter(ConsoleSession::signedIn)
        .flatMap(s -> accounts.find(s.accountId()).map(a -> new SignedIn(s, a)));
  }

  /** The signed-in request, else a redirect to the sign-in page (and empty). */
  Optional<SignedIn> requireSignedIn(Context ctx) {
    Optional<SignedIn> signed = signedIn(ctx);
    if (signed.isEmpty()) {
      ctx.redirect("/console/signin", HttpStatus.SEE_OTHER);
    }
    return signed;
  }

  /** Like {@link #requireSignedIn}, for a form post: its CSRF token and Origin checked too (else 403). */
  Optional<SignedIn> requireSignedInForm(Context ctx, ConsoleForm posted) {
    Optional<SignedIn> signed = requireSignedIn(ctx);
    if (signed.isPresent() && !csrfOk(ctx, posted, signed.get().session())) {
      forbidden(ctx, signed.get().session());
      return Optional.empty();
    }
    return signed;
  }

  /** The visitor's session (made, with its cookie, if it has none): the forms carry its CSRF token. */
  ConsoleSession visitor(Context ctx) {
    Optional<ConsoleSession> found = session(ctx);
    if (found.isPresent()) {
      return found.get();
    }
    RateLimiter.Quota quota = visitorsPerAddress.take(ClientAddress.of(ctx));
    if (!quota.allowed()) {
      // No new row: the form still shows, and its post is refused as expired.
      return new ConsoleSession("", null, "", Time.now(), Time.now(), Time.now());
    }
    SessionService.Started started = sessions.visitor();
    setCookie(ctx, started.cookie(), Duration.ofHours(1).toSeconds());
    return started.session();
  }

  /**
   * The post's form (url-encoded, at most 16 KB, every field within its bound: see ConsoleForm);
   * else a page saying why (413, 415, 400, echoing nothing of it) and null.
   */
  ConsoleForm readForm(Context ctx) {
    try {
      return ConsoleForm.read(ctx);
    } catch (ConsoleException e) {
      pages.message(ctx, ErrorMapper.status(e.kind()), null, new Views.Message(e.kind() == Kind.TOO_LARGE
          ? "Form too large" : e.kind() == Kind.UNSUPPORTED_FORMAT ? "Not a form" : "Form refused", e.getMessage(),
          "/console", "Go to the console"));
      return null;
    }
  }

  /** The form's token is the session's (constant time), and a browser's Origin, when sent, is this site. */
  static boolean csrfOk(Context ctx, ConsoleForm posted, ConsoleSession session) {
    String origin = ctx.header("Origin");
    if (origin != null) {
      String host = ctx.header("Host");
      try {
        URI uri = URI.create(origin);
        if (host == null || uri.getRawAuthority() == null || !uri.getRawAuthority().equalsIgnoreCase(host)) {
          return false;
        }
      } catch (IllegalArgumentException e) {
        return false;
      }
    }
    return SessionService.csrfMatches(session, posted.get("csrf"));
  }

  /** The 403 page for a form whose token or Origin did not check out. */
  void forbidden(Context ctx, ConsoleSession session) {
    pages.message(ctx, 403, pages.frame("Refused", session), new Views.Message("This form had expired",
        "It did not carry this session's token, or came from another site. Go back, reload the page and send it again.",
        "/console", "Go to the console"));
  }

  /** Signs the account in on a new session and redirects to its keys. */
  void startSignedIn(Context ctx, ConsoleSession visitor, Account account) {
    sessions.end(visitor); // a new id at sign-in: an id someone planted before it signs no one in
    SessionService.Started started = sessions.signIn(account.id());
    setCookie(ctx, started.cookie(), settings.sessionMax().toSeconds());
    ctx.redirect("/console/keys", HttpStatus.SEE_OTHER);
  }

  /** Ends the request's session, if it has one, and clears its cookie. */
  void signOut(Context ctx, Optional<ConsoleSession> session) {
    session.ifPresent(sessions::end);
    setCookie(ctx, "", 0);
  }

  private void setCookie(Context ctx, String value, long maxAgeSeconds) {
    boolean secure = settings.secureCookies() || "https".equalsIgnoreCase(ctx.scheme());
    ctx.res().addHeader("Set-Cookie", COOKIE + "=" + value + "; Path=/console; Max-Age=" + maxAgeSeconds
        + "; HttpOnly; SameSite=Lax" + (secure ? "; Secure" : ""));
  }
}
