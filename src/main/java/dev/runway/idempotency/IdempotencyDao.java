package dev.runway.idempotency;

import java.time.Instant;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

/**
 * Stored first responses, per workspace and API key. Rows stored before keys were told apart have
 * api_key_id '' and answer for every key of their workspace until they expire (see the migration).
 */
@RegisterConstructorMapper(IdempotencyRecord.class)
public interface IdempotencyDao {
  @SqlUpdate("INSERT INTO idempotency_key (workspace_id, api_key_id, idem_key, request_hash, response_status, "
      + "response_body, created_at, expires_at) VALUES (:workspaceId, :apiKeyId, :idemKey, :requestHash, "
      + ":responseStatus, :responseBody, :createdAt, :expiresAt)")
  void insert(@BindMethods IdempotencyRecord record);

  @SqlQuery("SELECT * FROM idempotency_key WHERE workspace_id = :workspaceId AND api_key_id IN (:apiKeyId, '') "
      + "AND idem_key = :idemKey ORDER BY api_key_id DESC LIMIT 1")
  Optional<IdempotencyRecord> find(String workspaceId, String apiKeyId, String idemKey);

  @SqlUpdate("DELETE FROM idempotency_key WHERE workspace_id = :workspaceId AND api_key_id IN (:apiKeyId, '') "
      + "AND idem_key = :idemKey AND expires_at <= :now")
  int deleteIfExpired(String workspaceId, String apiKeyId, String idemKey, Instant now);

  @SqlUpdate("DELETE FROM idempotency_key WHERE expires_at <= :now")
  int deleteExpired(Instant now);
}
