package dev.runway.auth;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

@RegisterConstructorMapper(ApiKey.class)
public interface ApiKeyDao {
  @SqlUpdate("INSERT INTO api_key (id, workspace_id, name, key_hash, scopes, projects, created_at, expires_at, revoked_at, "
      + "prefix) VALUES (:id, :workspaceId, :name, :keyHash, :scopes, :projects, :createdAt, :expiresAt, :revokedAt, :prefix)")
  void insert(@BindMethods ApiKey key);

  @SqlQuery("SELECT * FROM api_key WHERE key_hash = :keyHash")
  Optional<ApiKey> findByHash(String keyHash);

  @SqlQuery("SELECT * FROM api_key WHERE id = :id")
  Optional<ApiKey> find(String id);

  @SqlQuery("SELECT * FROM api_key WHERE workspace_id = :workspaceId ORDER BY id")
  List<ApiKey> list(String workspaceId);

  @SqlUpdate("UPDATE api_key SET revoked_at = :at WHERE id = :id AND revoked_at IS NULL")
  int revoke(String id, Instant at);

  @SqlUpdate("UPDATE api_key SET last_used_at = :at WHERE id = :id")
  void used(String id, Instant at);
}
