package dev.runway.console;

import dev.runway.auth.ApiKey;
import dev.runway.auth.ApiKeyService;
import dev.runway.auth.Scope;
import dev.runway.core.DomainException.Kind;
import dev.runway.core.RateLimiter;
import dev.runway.core.Slugs;
import dev.runway.core.Time;
import dev.runway.http.ClientAddress;
import dev.runway.http.ErrorMapper;
import dev.runway.quota.QuotaExceeded;
import io.javalin.http.Context;
import io.javalin.http.HttpStatus;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * The console's pages: sign-up, sign-in and out, and the workspace's API keys. Each handler finds
 * the session and checks a form's CSRF token (and its Origin) through the guard, calls the services
 * the API uses, and renders a page or redirects after a post (Post/Redirect/Get).
 */
public final class ConsoleRoutes {
  private static final String CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
      + "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
  private static final Map<String, String> ASSETS = Map.of(
      "console.css", "text/css; charset=utf-8",
      "console.js", "text/javascript; charset=utf-8");
  private static final Map<Scope, String> SCOPES = scopeDescriptions();
  private static final Set<String> EXPIRIES = Set.of("never", "7", "30", "90", "365");
  /** The sign-in page's notice after any sign-up: the same whether the email was new or not. */
  private static final String SIGNED_UP = "Thank you. If this email had no account, it has one now: sign in with "
      + "the password you chose. If it had one already, sign in with that account's password.";

  private final ConsoleGuard guard;
  private final PageRenderer pages;
  private final AccountService accounts;
  private final ApiKeyService keys;
  private final ConsoleSettings settings;
  private final RateLimiter perEmail;
  private final RateLimiter perAddress;
  /** The ids of a workspace's workflows, for the command shown with a new key. */
  private final Function<String, List<String>> workflowIds;

  public ConsoleRoutes(ConsoleGuard guard, PageRenderer pages, AccountService accounts, ApiKeyService keys,
      ConsoleSettings settings, Function<String, List<String>> workflowIds) {
    this.guard = guard;
    this.pages = pages;
    this.accounts = accounts;
    this.keys = keys;
    this.settings = settings;
    this.workflowIds = workflowIds;
    this.perEmail = new RateLimiter(settings.signinsPerMinutePerEmail() / 60.0, settings.signinsPerMinutePerEmail());
    this.perAddress = new RateLimiter(settings.signinsPerMinutePerAddress() / 60.0,
        settings.signinsPerMinutePerAddress());
  }

  /** Before every console request: a strict Content-Security-Policy, no framing, no referrer to other sites. */
  public static void headers(Context ctx) {
    ctx.header("Content-Security-Policy", CSP);
    ctx.header("X-Frame-Options", "DENY");
    ctx.header("Referrer-Policy", "same-origin");
  }

  /** GET /console */
  public void home(Context ctx) {
    ctx.redirect(guard.signedIn(ctx).isPresent() ? "/console/keys" : "/console/signin", HttpStatus.SEE_OTHER);
  }

  /** GET /console/static/{file}: the stylesheet and the few lines of script. */
  public void asset(Context ctx) {
    String file = ctx.pathParam("file");
    String type = ASSETS.get(file);
    if (type == null) {
      pages.message(ctx, 404, null,
          new Views.Message("Not found", "There is no such page.", "/console", "Go to the console"));
      return;
    }
    try (InputStream in = ConsoleRoutes.class.getResourceAsStream("/console/" + file)) {
      ctx.header("Cache-Control", "public, max-age=300");
      ctx.contentType(type).result(in.readAllBytes());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** GET /console/signin (after a sign-up, with a notice that does not say whether it made an account) */
  public void signinPage(Context ctx) {
    if (guard.signedIn(ctx).isPresent()) {
      ctx.redirect("/console/keys", HttpStatus.SEE_OTHER);
      return;
    }
    ConsoleSession visitor = guard.visitor(ctx);
    String notice = "signed-up".equals(ctx.queryParam("notice")) ? SIGNED_UP : null;
    pages.render(ctx, 200, "signin.jte", "frame", pages.frame("Sign in", visitor), "form",
        form(null, null, null, null).withNotice(notice));
  }

  /** POST /console/signin */
  public void signin(Context ctx) {
    ConsoleForm posted = guard.readForm(ctx);
    if (posted == null) {
      return;
    }
    Optional<ConsoleSession> session = checkedForm(ctx, posted, "signin.jte", "Sign in");
    if (session.isEmpty()) {
      return;
    }
    String email = posted.get("email");
    String normalized = email == null ? "" : email.strip().toLowerCase(Locale.ROOT);
    String client = ClientAddress.of(ctx);
    try {
      limit(ctx, perAddress, client);
      // Per email and address: counted per email alone, anyone could keep its owner out.
      limit(ctx, perEmail, client + " " + normalized);
      Account account = accounts.signIn(email, posted.get("password"), client);
      guard.startSignedIn(ctx, session.get(), account);
    } catch (ConsoleException e) {
      pages.render(ctx, ErrorMapper.status(e.kind()), "signin.jte", "frame", pages.frame("Sign in", session.get()),
          "form", form(e.getMessage(), e.param(), email, null));
    } catch (RuntimeException e) {
      if (!AccountService.isBusy(e)) {
        throw e;
      }
      busy(ctx, session.get());
    }
  }

  /** GET /console/signup */
  public void signupPage(Context ctx) {
    if (guard.signedIn(ctx).isPresent()) {
      ctx.redirect("/console/keys", HttpStatus.SEE_OTHER);
      return;
    }
    ConsoleSession visitor = guard.visitor(ctx);
    if (!settings.signupOpen()) {
      signupClosed(ctx, visitor);
      return;
    }
    // An invitation link carries its code (?code=): shown in the form, if it looks like one.
    String code = ctx.queryParam("code");
    pages.render(ctx, 200, "signup.jte", "frame", pages.frame("Sign up", visitor), "form",
        form(null, null, null, code != null && code.matches("[A-Za-z0-9_-]{1,100}") ? code : null));
  }

  /**
   * POST /console/signup: a new email gets its account, a known one nothing, and both the same
   * answer (a redirect to the sign-in page with the same notice), so sign-up tells no one which
   * emails have accounts.
   */
  public void signup(Context ctx) {
    ConsoleForm posted = guard.readForm(ctx);
    if (posted == null) {
      return;
    }
    Optional<ConsoleSession> session = checkedForm(ctx, posted, "signup.jte", "Sign up");
    if (session.isEmpty()) {
      return;
    }
    if (!settings.signupOpen()) {
      signupClosed(ctx, session.get());
      return;
    }
    String email = posted.get("email");
    String setupCode = posted.get("setup_code");
    try {
      limit(ctx, perAddress, ClientAddress.of(ctx));
      accounts.signUp(email, posted.get("password"), setupCode, settings.signup() == ConsoleSettings.Signup.INVITE);
      ctx.redirect("/console/signin?notice=signed-up", HttpStatus.SEE_OTHER);
    } catch (ConsoleException e) {
      pages.render(ctx, ErrorMapper.status(e.kind()), "signup.jte", "frame", pages.frame("Sign up", session.get()),
          "form", form(e.getMessage(), e.param(), email, setupCode));
    } catch (RuntimeException e) {
      if (!AccountService.isBusy(e)) {
        throw e;
      }
      busy(ctx, session.get());
    }
  }

  /** POST /console/signout */
  public void signout(Context ctx) {
    ConsoleForm posted = guard.readForm(ctx);
    if (posted == null) {
      return;
    }
    Optional<ConsoleSession> session = guard.session(ctx);
    if (session.isPresent() && !ConsoleGuard.csrfOk(ctx, posted, session.get())) {
      guard.forbidden(ctx, session.get());
      return;
    }
    guard.signOut(ctx, session);
    ctx.redirect("/console/signin", HttpStatus.SEE_OTHER);
  }

  /** GET /console/keys */
  public void keysPage(Context ctx) {
    Optional<SignedIn> signed = guard.requireSignedIn(ctx);
    if (signed.isEmpty()) {
      return;
    }
    String notice = null;
    String revoked = ctx.queryParam("revoked");
    if (revoked != null) {
      notice = keyOf(signed.get(), revoked).map(k -> "Key “" + k.name() + "” revoked: it is refused from now on.")
          .orElse(null);
    }
    renderKeys(ctx, 200, signed.get(), null, null, null, null, null, null, notice);
  }

  /** POST /console/keys: makes a key and shows it, this once. */
  public void createKey(Context ctx) {
    ConsoleForm posted = guard.readForm(ctx);
    if (posted == null) {
      return;
    }
    Optional<SignedIn> signed = guard.requireSignedInForm(ctx, posted);
    if (signed.isEmpty()) {
      return;
    }
    String name = posted.get("name") == null ? "" : posted.get("name").strip();
    List<String> scopeNames = posted.all("scope");
    String projectsText = posted.get("projects") == null ? "" : posted.get("projects").strip();
    String expiry = posted.get("expiry") == null ? "never" : posted.get("expiry");
    try {
      if (name.isEmpty() || name.length() > 200) {
        throw new ConsoleException(Kind.INVALID, "name", "Give the key a name of 1 to 200 characters, e.g. what uses it.");
      }
      EnumSet<Scope> scopes = EnumSet.noneOf(Scope.class);
      for (String s : scopeNames) {
        scopes.add(Scope.parse(s).orElseThrow(() -> new ConsoleException(Kind.INVALID, "scope", "Unknown scope " + s + ".")));
      }
      if (scopes.isEmpty()) {
        throw new ConsoleException(Kind.INVALID, "scope", "Choose at least one scope.");
      }
      List<String> projects = null;
      if (!projectsText.isEmpty()) {
        projects = new ArrayList<>();
        for (String p : projectsText.split("[,\\s]+")) {
          if (!Slugs.isSlug(p)) {
            throw new ConsoleException(Kind.INVALID, "projects", "Project “" + p + "” is not a valid name: " + Slugs.RULE + ".");
          }
          projects.add(p);
        }
      }
      if (!EXPIRIES.contains(expiry)) {
        throw new ConsoleException(Kind.INVALID, "expiry", "Choose when the key expires.");
      }
      Duration validFor = expiry.equals("never") ? null : Duration.ofDays(Integer.parseInt(expiry));
      ApiKeyService.CreatedKey made = keys.create(signed.get().account().workspaceId(), name, scopes, projects, validFor);
      Views.KeyCreated page = tryIt(origin(ctx), name, made.key(), scopes, signed.get().account().workspaceId());
      pages.render(ctx, 201, "key_created.jte", "frame", pages.frame("New key", signed.get(), "keys"), "page", page);
    } catch (ConsoleException e) {
      renderKeys(ctx, ErrorMapper.status(e.kind()), signed.get(), scopeNames, name, projectsText, expiry, e.getMessage(), e.param(), null);
    } catch (QuotaExceeded e) {
      renderKeys(ctx, 403, signed.get(), scopeNames, name, projectsText, expiry, "This workspace has "
          + e.extensions().get("limit") + " active keys, the most it may have: revoke one first.", "name", null);
    }
  }

  /** GET /console/keys/{id}/revoke: asks to confirm. */
  public void revokePage(Context ctx) {
    Optional<SignedIn> signed = guard.requireSignedIn(ctx);
    if (signed.isEmpty()) {
      return;
    }
    Optional<ApiKey> key = keyOf(signed.get(), ctx.pathParam("id")).filter(k -> k.revokedAt() == null);
    if (key.isEmpty()) {
      keyNotFound(ctx, signed.get());
      return;
    }
    pages.render(ctx, 200, "revoke.jte", "frame", pages.frame("Revoke key", signed.get(), "keys"),
        "key", Views.KeyRow.of(key.get(), Time.now()));
  }

  /** POST /console/keys/{id}/revoke */
  public void revoke(Context ctx) {
    ConsoleForm posted = guard.readForm(ctx);
    if (posted == null) {
      return;
    }
    Optional<SignedIn> signed = guard.requireSignedInForm(ctx, posted);
    if (signed.isEmpty()) {
      return;
    }
    Optional<ApiKey> key = keyOf(signed.get(), ctx.pathParam("id"));
    if (key.isEmpty()) {
      keyNotFound(ctx, signed.get());
      return;
    }
    keys.revoke(key.get().id());
    ctx.redirect("/console/keys?revoked=" + key.get().id(), HttpStatus.SEE_OTHER);
  }

  // ---------------------------------------------------------------- forms

  /**
   * The session of a sign-in or sign-up post whose token and Origin check out; else the form again
   * (with a fresh session if it had expired) saying why, and empty.
   */
  private Optional<ConsoleSession> checkedForm(Context ctx, ConsoleForm posted, String template, String title) {
    Optional<ConsoleSession> session = guard.session(ctx);
    if (session.isPresent() && ConsoleGuard.csrfOk(ctx, posted, session.get())) {
      return session;
    }
    ConsoleSession fresh = session.isPresent() ? session.get() : guard.visitor(ctx);
    pages.render(ctx, 403, template, "frame", pages.frame(title, fresh), "form", form("This form had expired or did "
        + "not come from this site. Please send it again.", null, posted.get("email"), null));
    return Optional.empty();
  }

  private static void limit(Context ctx, RateLimiter limiter, String name) {
    RateLimiter.Quota quota = limiter.take(name);
    if (!quota.allowed()) {
      ctx.header("Retry-After", String.valueOf(quota.retryAfterSeconds()));
      throw new ConsoleException(Kind.TOO_MANY, null, "Too many attempts. Try again in " + quota.retryAfterSeconds()
          + (quota.retryAfterSeconds() == 1 ? " second." : " seconds."));
    }
  }

  // ---------------------------------------------------------------- pages

  private Views.Form form(String error, String field, String email, String setupCode) {
    return new Views.Form(error, field, email, setupCode, settings.signupOpen(),
        settings.signup() == ConsoleSettings.Signup.INVITE);
  }

  private Optional<ApiKey> keyOf(SignedIn signed, String keyId) {
    return keys.find(keyId).filter(k -> k.workspaceId().equals(signed.account().workspaceId()));
  }

  private void renderKeys(Context ctx, int status, SignedIn signed, List<String> checked, String name, String projects,
      String expiry, String error, String field, String notice) {
    Instant now = Time.now();
    List<Views.KeyRow> rows = keys.list(signed.account().workspaceId()).stream()
        .sorted((a, b) -> b.createdAt().compareTo(a.createdAt())).map(k -> Views.KeyRow.of(k, now)).toList();
    // Ticked at first: all but admin and secrets:use, which let a key read secrets (issue 34, item 5).
    List<Views.ScopeOption> scopes = SCOPES.entrySet().stream().map(e -> new Views.ScopeOption(e.getKey().wireName(),
        e.getValue(), checked == null ? e.getKey() != Scope.ADMIN && e.getKey() != Scope.SECRETS_USE
            : checked.contains(e.getKey().wireName()))).toList();
    pages.render(ctx, status, "keys.jte", "frame", pages.frame("API keys", signed, "keys"), "page",
        new Views.Keys(rows, scopes, name, projects, expiry == null ? "never" : expiry, error, field, notice));
  }

  private void keyNotFound(Context ctx, SignedIn signed) {
    pages.message(ctx, 404, pages.frame("Not found", signed, "keys"), new Views.Message("No such key",
        "This workspace has no active key with that id.", "/console/keys", "Back to the keys"));
  }

  private void busy(Context ctx, ConsoleSession session) {
    ctx.header("Retry-After", "5");
    pages.message(ctx, 503, pages.frame("Busy", session), new Views.Message("Busy",
        "Too many sign-ins at once right now. Try again in a few seconds.", null, null));
  }

  private void signupClosed(Context ctx, ConsoleSession session) {
    pages.message(ctx, 403, pages.frame("Sign-up closed", session), new Views.Message("Sign-up is closed",
        "Accounts on this server are made by its operator (./run.sh accounts create or accounts invite). "
        + "Ask them for one.",
        "/console/signin", "Sign in"));
  }

  /**
   * The page that shows a new key, with a command that works with it as it is: a run of one of the
   * workspace's workflows (hello if it has one); in a workspace without workflows, one defined
   * first (if the key may); else a read of the runs.
   */
  private Views.KeyCreated tryIt(String origin, String name, String key, Set<Scope> scopes, String workspaceId) {
    String auth = "  -H \"Authorization: Bearer " + key + "\"";
    String json = "  -H \"Content-Type: application/json\"";
    if (scopes.contains(Scope.RUNS_WRITE)) {
      List<String> workflows = workflowIds.apply(workspaceId);
      String workflow = workflows.contains("hello") ? "hello" : workflows.isEmpty() ? null : workflows.get(0);
      String start = "curl -s -X POST " + origin + "/v1/workflows/" + (workflow == null ? "hello" : workflow)
          + "/runs \\\n" + auth + " \\\n" + json + " -d '{\"project\": \"demo\"}'";
      if (workflow != null) {
        return new Views.KeyCreated(name, key, "Start a run of the workflow " + workflow + " with it:", start);
      }
      if (scopes.contains(Scope.WORKFLOWS_WRITE)) {
        String define = "curl -s -X PUT " + origin + "/v1/workflows/hello \\\n" + auth + " \\\n" + json
            + " -d '{\"name\": \"Hello\", \"steps\": []}'";
        return new Views.KeyCreated(name, key, "This workspace has no workflows yet: define one, then start a run of it:",
            define + "\n" + start);
      }
    }
    return new Views.KeyCreated(name, key, "List the workspace's runs with it:",
        "curl -s " + origin + "/v1/runs \\\n" + auth);
  }

  private static String origin(Context ctx) {
    String host = ctx.header("Host");
    return ctx.scheme() + "://" + (host == null ? "127.0.0.1:8080" : host);
  }

  private static Map<Scope, String> scopeDescriptions() {
    Map<Scope, String> d = new LinkedHashMap<>();
    d.put(Scope.RUNS_WRITE, "start and cancel runs");
    d.put(Scope.RUNS_READ, "read runs, events, workflows and agents");
    d.put(Scope.APPROVALS_WRITE, "approve and reject runs");
    d.put(Scope.WORKFLOWS_WRITE, "create and change workflows and agents");
    d.put(Scope.CRM_WRITE, "sync and delete CRM records");
    d.put(Scope.CRM_READ, "read CRM records and their changes");
    d.put(Scope.SECRETS_USE, "save workflows and agents that use secrets (not checked by default)");
    d.put(Scope.ADMIN, "secrets and webhook endpoints (implies secrets:use)");
    if (d.size() != Scope.values().length) {
      throw new IllegalStateException("every scope needs a description on the keys page");
    }
    return d;
  }
}
