package dev.runway.console;

import dev.runway.auth.ApiKey;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;

/** What the console's templates show: plain records, every text escaped by the templates. */
public final class Views {
  private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'")
      .withZone(ZoneOffset.UTC);

  private Views() {}

  /** Every page's frame: its title, who is signed in (null: nobody), the CSRF token, the active tab. */
  public record Frame(String title, String email, String workspace, String csrf, String nav) {
    public boolean signedIn() {
      return email != null;
    }

    public String navClass(String tab) {
      return tab.equals(nav) ? "active" : null;
    }
  }

  /** The sign-in and sign-up forms: the message, the field it is about, what was typed (never the password). */
  public record Form(String error, String field, String email, String setupCode, boolean signupOpen) {}

  /** One scope's checkbox. */
  public record ScopeOption(String name, String description, boolean checked) {}

  public record KeyRow(String id, String name, String prefix, String scopes, String projects, String created,
      String lastUsed, String expires, String state) {

    static KeyRow of(ApiKey key, Instant now) {
      String state = key.revokedAt() != null ? "revoked"
          : key.expiresAt() != null && !now.isBefore(key.expiresAt()) ? "expired" : "active";
      return new KeyRow(key.id(), key.name(), key.prefix() == null ? "wsk_…" : key.prefix() + "…",
          key.scopes().replace(",", ", "), key.projects() == null ? "all" : key.projects().replace(",", ", "),
          time(key.createdAt()), key.lastUsedAt() == null ? "never" : time(key.lastUsedAt()),
          key.expiresAt() == null ? "never" : time(key.expiresAt()), state);
    }

    public boolean active() {
      return state.equals("active");
    }
  }

  /** The keys page: the workspace's keys, the form to make one (with what was typed on an error), a notice. */
  public record Keys(List<KeyRow> keys, List<ScopeOption> scopes, String name, String projects, String expiry,
      String error, String field, String notice) {}

  /** The page that shows a new key, once. */
  public record KeyCreated(String name, String key, String curl) {}

  /** A page with one message: an error, a refusal, a wait. */
  public record Message(String heading, String text, String link, String linkText) {}

  static String time(Instant t) {
    return TIME.format(t);
  }
}
