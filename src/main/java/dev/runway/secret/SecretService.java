package dev.runway.secret;

import dev.runway.core.DomainException;
import dev.runway.core.Time;
import dev.runway.db.SqlErrors;
import dev.runway.quota.Quota;
import dev.runway.quota.QuotaDao;
import dev.runway.quota.Quotas;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import org.jdbi.v3.core.Jdbi;

/**
 * A workspace's secrets: written by admins, never read back by anyone; their values are decrypted
 * only to make a call that refers to them.
 */
public final class SecretService implements SecretSource {
  private final Jdbi jdbi;
  private final Quotas quotas;
  private final Supplier<SecretBox> box;
  private volatile SecretBox loaded;

  /** {@code box} gives the server's SecretBox; it is asked at the first use (making a key file then, if need be). */
  public SecretService(Jdbi jdbi, Supplier<SecretBox> box, Quotas quotas) {
    this.jdbi = jdbi;
    this.quotas = quotas;
    this.box = box;
  }

  /** The server's SecretBox, loaded (its key file made, if need be) at the first call. */
  public SecretBox box() {
    SecretBox b = loaded;
    if (b == null) {
      synchronized (this) {
        if (loaded == null) {
          loaded = box.get();
        }
        b = loaded;
      }
    }
    return b;
  }

  /** The outcome of a put: the stored secret and whether it was new. */
  public record Saved(Secret secret, boolean created) {}

  /**
   * Creates or replaces the secret. A null {@code value} keeps the stored one (a secret that does not
   * exist yet needs one); null {@code allowedHosts} keep the stored list (none for a new secret).
   */
  public Saved put(String workspaceId, String name, String value, AllowedHosts allowedHosts) {
    String sealed = value == null ? null : box().encrypt(workspaceId, name, value);
    // Two first puts of one name race to insert; the loser retries and replaces the winner's value.
    return SqlErrors.retryOnUniqueViolation(() -> jdbi.inTransaction(h -> {
      Instant now = Time.now();
      quotas.lock(h, workspaceId, now); // the workspace made if new, then locked
      SecretDao dao = h.attach(SecretDao.class);
      Optional<Secret> existing = dao.find(workspaceId, name);
      if (sealed == null && existing.isEmpty()) {
        throw DomainException.invalid("value", "value is required for a new secret: 1-" + SecretRoutes.MAX_VALUE_LENGTH
            + " characters");
      }
      if (existing.isEmpty()) {
        quotas.check(Quota.SECRETS, workspaceId, () -> h.attach(QuotaDao.class).secrets(workspaceId));
      }
      String hosts = allowedHosts != null ? allowedHosts.toStored() : existing.map(Secret::allowedHosts).orElse(null);
      Secret secret = new Secret(workspaceId, name, sealed != null ? sealed : existing.get().valueEncrypted(), hosts,
          existing.map(Secret::createdAt).orElse(now), now);
      if (existing.isEmpty()) {
        dao.insert(secret);
        return new Saved(secret, true);
      }
      dao.update(secret);
      return new Saved(secret, false);
    }));
  }

  public Secret get(String workspaceId, String name) {
    return jdbi.withExtension(SecretDao.class, dao -> dao.find(workspaceId, name)).orElseThrow(() -> notFound(workspaceId, name));
  }

  public List<Secret> page(String workspaceId, String after, int limit) {
    return jdbi.withExtension(SecretDao.class, dao -> dao.page(workspaceId, after == null ? "" : after, limit));
  }

  /** Deletes the secret; calls that refer to it fail from now on. */
  public Secret delete(String workspaceId, String name) {
    return jdbi.inTransaction(h -> {
      SecretDao dao = h.attach(SecretDao.class);
      Secret secret = dao.find(workspaceId, name).orElseThrow(() -> notFound(workspaceId, name));
      dao.delete(workspaceId, name);
      return secret;
    });
  }

  @Override
  public Map<String, Usable> values(String workspaceId, Set<String> names) throws Unavailable {
    if (names.isEmpty()) {
      return Map.of();
    }
    List<Secret> found = jdbi.withExtension(SecretDao.class, dao -> dao.findAll(workspaceId, names));
    Map<String, Usable> values = new HashMap<>();
    for (Secret s : found) {
      try {
        values.put(s.name(), new Usable(box().decrypt(workspaceId, s.name(), s.valueEncrypted()), s.hosts()));
      } catch (SecretBox.Unreadable e) {
        throw new Unavailable(e.getMessage());
      }
    }
    Set<String> missing = new TreeSet<>(names);
    missing.removeAll(values.keySet());
    if (!missing.isEmpty()) {
      throw new Unavailable((missing.size() == 1 ? "secret " : "secrets ") + String.join(", ", missing)
          + (missing.size() == 1 ? " is" : " are") + " not set in this workspace (PUT /v1/secrets/{name})");
    }
    return values;
  }

  static DomainException notFound(String workspaceId, String name) {
    return DomainException.notFound("secret_not_found", "no secret '" + name + "' in workspace '" + workspaceId + "'");
  }
}
