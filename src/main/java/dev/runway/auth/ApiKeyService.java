package dev.runway.auth;

import dev.runway.core.Ids;
import dev.runway.core.Json;
import dev.runway.core.Slugs;
import dev.runway.core.Time;
import dev.runway.core.WeighedCache;
import dev.runway.db.SqlErrors;
import dev.runway.db.WorkspaceDao;
import dev.runway.quota.Quota;
import dev.runway.quota.QuotaDao;
import dev.runway.quota.Quotas;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Collection;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.jdbi.v3.core.Jdbi;

/** Creates, lists, revokes and checks API keys. */
public final class ApiKeyService {
  private final Jdbi jdbi;
  private final Quotas quotas;
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ApiKeyService.class);
  private static final long USE_NOTED_EVERY_NANOS = java.util.concurrent.TimeUnit.MINUTES.toNanos(1);
  private final long cacheNanos;
  /** When each key's use was last written (as many entries as valid keys used on this instance). */
  private final java.util.concurrent.ConcurrentHashMap<String, Long> lastNoted = new java.util.concurrent.ConcurrentHashMap<>();
  /** Keys by hash (about 1 MB), kept for {@code cacheNanos} so most requests need no database read to authenticate. */
  private final WeighedCache<String, Cached> cache = new WeighedCache<>(1_000_000, (hash, cached) ->
      hash.length() + cached.key().name().length() + cached.key().scopes().length()
          + (cached.key().projects() == null ? 0 : 2L * cached.key().projects().length()) + 300);

  private record Cached(ApiKey key, Principal principal, long expiresAtNanos) {}

  /**
   * {@code cacheFor} is how long a key read from the database is trusted: a key revoked by
   * another process (the keys command) is refused at the latest that long after. Zero: no cache.
   */
  public ApiKeyService(Jdbi jdbi, Duration cacheFor, Quotas quotas) {
    this.jdbi = jdbi;
    this.quotas = quotas;
    this.cacheNanos = cacheFor.toNanos();
  }

  /** A new key: the only time the plain key exists. */
  public record CreatedKey(String key, ApiKey record) {}

  /** Why a presented key was refused. */
  public enum Refusal { MALFORMED, UNKNOWN, REVOKED, EXPIRED }

  /** Either the caller, or why not. */
  public record Verdict(Principal principal, Refusal refusal) {}

  public CreatedKey create(String workspaceId, String name, Collection<Scope> scopes, List<String> projects,
      Duration validFor) {
    if (!Slugs.isSlug(workspaceId)) {
      throw new IllegalArgumentException("workspace must be a slug: " + Slugs.RULE);
    }
    if (name == null || name.length() > 200 || name.indexOf('\0') >= 0 || !Json.wellFormed(name)) {
      throw new IllegalArgumentException("a key's name must be at most 200 characters, without NUL or broken characters");
    }
    if (scopes.isEmpty()) {
      throw new IllegalArgumentException("a key needs at least one scope");
    }
    if (projects != null) {
      for (String p : projects) {
        if (!Slugs.isSlug(p)) {
          throw new IllegalArgumentException("project '" + p + "' must be a slug: " + Slugs.RULE);
        }
      }
    }
    Instant now = Time.now();
    String key = KeyHasher.newKey();
    ApiKey record = new ApiKey(
        Ids.newId("key", now.toEpochMilli()),
        workspaceId,
        name,
        KeyHasher.hash(key),
        scopes.containsAll(Scope.all()) ? Scope.EVERY
            : EnumSet.copyOf(scopes).stream().map(Scope::wireName).collect(Collectors.joining(",")),
        projects == null ? null : String.join(",", projects),
        now,
        validFor == null ? null : now.plus(validFor),
        null,
        key.substring(0, ApiKey.PREFIX_LENGTH),
        null);
    // Two first keys of one workspace race to create it; the loser retries and finds it.
    SqlErrors.retryOnUniqueViolation(() -> jdbi.inTransaction(h -> {
      quotas.lock(h, workspaceId, now); // the workspace made if new, then locked
      quotas.check(Quota.KEYS, workspaceId, () -> h.attach(QuotaDao.class).keys(workspaceId));
      h.attach(ApiKeyDao.class).insert(record);
      return record;
    }));
    return new CreatedKey(key, record);
  }

  /** Every workspace, with how many active keys it has. */
  public List<WorkspaceDao.WithKeys> workspaces() {
    return jdbi.withExtension(WorkspaceDao.class, WorkspaceDao::listWithKeys);
  }

  public List<ApiKey> list(String workspaceId) {
    return jdbi.withExtension(ApiKeyDao.class, dao -> dao.list(workspaceId));
  }

  public Optional<ApiKey> find(String keyId) {
    return jdbi.withExtension(ApiKeyDao.class, dao -> dao.find(keyId));
  }

  /** True if the key was active and is now revoked. */
  public boolean revoke(String keyId) {
    boolean revoked = jdbi.withExtension(ApiKeyDao.class, dao -> dao.revoke(keyId, Time.now())) == 1;
    find(keyId).ifPresent(key -> cache.remove(key.keyHash()));
    return revoked;
  }

  public Verdict authenticate(String presented) {
    if (!KeyHasher.wellFormed(presented)) {
      return new Verdict(null, Refusal.MALFORMED);
    }
    String hash = KeyHasher.hash(presented);
    Cached cached = lookUp(hash);
    if (cached == null || !KeyHasher.sameHash(cached.key().keyHash(), hash)) {
      return new Verdict(null, Refusal.UNKNOWN);
    }
    ApiKey key = cached.key();
    Instant now = Instant.now();
    if (key.revokedAt() != null) {
      return new Verdict(null, Refusal.REVOKED);
    }
    if (key.expiresAt() != null && !now.isBefore(key.expiresAt())) {
      return new Verdict(null, Refusal.EXPIRED);
    }
    noteUse(key.id());
    return new Verdict(cached.principal(), null);
  }

  /**
   * Records that the key was used (the console shows when), at most once a minute per key and
   * instance: a write on every request would cost the API its speed. A failed write only loses the time.
   */
  private void noteUse(String keyId) {
    long now = System.nanoTime();
    Long last = lastNoted.get(keyId);
    if (last != null && now - last < USE_NOTED_EVERY_NANOS) {
      return;
    }
    lastNoted.put(keyId, now);
    try {
      jdbi.useExtension(ApiKeyDao.class, dao -> dao.used(keyId, Time.now()));
    } catch (RuntimeException e) {
      LOG.debug("could not record the use of key {}: {}", keyId, e.toString());
    }
  }

  /** The key with this hash, from the cache while fresh, else from the database. Unknown keys are not cached. */
  private Cached lookUp(String hash) {
    long now = System.nanoTime();
    Cached cached = cache.get(hash);
    if (cached != null && now - cached.expiresAtNanos() < 0) {
      return cached;
    }
    Optional<ApiKey> found = jdbi.withExtension(ApiKeyDao.class, dao -> dao.findByHash(hash));
    if (found.isEmpty()) {
      cache.remove(hash);
      return null;
    }
    Cached fresh = new Cached(found.get(), toPrincipal(found.get()), now + cacheNanos);
    if (cacheNanos > 0) {
      cache.put(hash, fresh);
    }
    return fresh;
  }

  static Principal toPrincipal(ApiKey key) {
    Set<Scope> scopes = key.scopes().equals(Scope.EVERY) ? Scope.all() : EnumSet.noneOf(Scope.class);
    for (String s : key.scopes().split(",")) {
      Scope.parse(s).ifPresent(scopes::add);
    }
    List<String> projects = key.projects() == null ? null : Arrays.asList(key.projects().split(","));
    return new Principal(key.id(), key.workspaceId(), Set.copyOf(scopes), projects);
  }

  /** True when no workspace exists yet: the first start of an empty database. */
  public boolean databaseIsEmpty() {
    return jdbi.withExtension(WorkspaceDao.class, WorkspaceDao::countAll) == 0;
  }
}
