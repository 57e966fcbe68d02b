package dev.runway.idempotency;

import dev.runway.auth.Principal;
import dev.runway.core.DomainException;
import dev.runway.core.DomainException.Kind;
import dev.runway.db.SqlErrors;
import dev.runway.db.Tx;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import org.jdbi.v3.core.Jdbi;

/**
 * The first responses of POST requests that carried an Idempotency-Key, kept per workspace and API
 * key for {@code ttl}: a retry with the same key and request gets the same answer again, a retry
 * with another request 422, and a retry while the first is still being served 409.
 */
public final class IdempotencyStore {
  private final Jdbi jdbi;
  private final Duration ttl;

  /** A stored answer: its status and JSON body. */
  public record Stored(int status, String body) {}

  public IdempotencyStore(Jdbi jdbi, Duration ttl) {
    this.jdbi = jdbi;
    this.ttl = ttl;
  }

  /** The answer stored for this key, while fresh; 422 idempotency_key_mismatch if it answered another request. */
  public Optional<Stored> replay(Principal caller, String idempotencyKey, String requestHash) {
    Optional<IdempotencyRecord> stored = jdbi.withExtension(IdempotencyDao.class,
        dao -> dao.find(caller.workspaceId(), caller.keyId(), idempotencyKey));
    if (stored.isEmpty() || !Instant.now().isBefore(stored.get().expiresAt())) {
      return Optional.empty();
    }
    if (!stored.get().requestHash().equals(requestHash)) {
      throw new DomainException(Kind.MISMATCH, "idempotency_key_mismatch",
          "this Idempotency-Key was already used with a different request", null);
    }
    return Optional.of(new Stored(stored.get().responseStatus(), stored.get().responseBody()));
  }

  /**
   * Stores the answer in the transaction of the write it reports, so they commit together. A
   * concurrent twin's transaction fails on this row (or waits for it): see {@link #afterFailure}.
   */
  public void store(Tx tx, Principal caller, String idempotencyKey, String requestHash, Stored answer, Instant now) {
    IdempotencyDao keys = tx.dao(IdempotencyDao.class);
    keys.deleteIfExpired(caller.workspaceId(), caller.keyId(), idempotencyKey, now);
    keys.insert(new IdempotencyRecord(caller.workspaceId(), caller.keyId(), idempotencyKey, requestHash,
        answer.status(), answer.body(), now, now.plus(ttl)));
  }

  /**
   * What to answer when the write failed with {@code failure}: a twin's stored answer if the twin
   * got there first, 409 idempotency_in_progress if it is still being written; any other failure
   * is thrown on.
   */
  public Stored afterFailure(RuntimeException failure, Principal caller, String idempotencyKey, String requestHash) {
    if (!SqlErrors.isUniqueViolation(failure) && !SqlErrors.isLockTimeout(failure)) {
      throw failure;
    }
    return replay(caller, idempotencyKey, requestHash).orElseThrow(() -> new DomainException(Kind.CONFLICT,
        "idempotency_in_progress", "a request with this Idempotency-Key is still being served; retry shortly",
        null, 1, Map.of()));
  }

  /** Drops stored answers past their time; returns how many. */
  public int sweep() {
    return jdbi.withExtension(IdempotencyDao.class, dao -> dao.deleteExpired(Instant.now()));
  }
}
