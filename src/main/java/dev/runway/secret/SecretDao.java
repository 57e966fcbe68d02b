package dev.runway.secret;

import java.util.Collection;
import java.util.List;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindList;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

@RegisterConstructorMapper(Secret.class)
public interface SecretDao {
  @SqlQuery("SELECT * FROM secret WHERE workspace_id = :workspaceId AND name = :name")
  Optional<Secret> find(String workspaceId, String name);

  @SqlQuery("SELECT * FROM secret WHERE workspace_id = :workspaceId AND name IN (<names>)")
  List<Secret> findAll(String workspaceId, @BindList("names") Collection<String> names);

  @SqlUpdate("INSERT INTO secret (workspace_id, name, value_encrypted, allowed_hosts, created_at, updated_at) "
      + "VALUES (:workspaceId, :name, :valueEncrypted, :allowedHosts, :createdAt, :updatedAt)")
  void insert(@BindMethods Secret secret);

  @SqlUpdate("UPDATE secret SET value_encrypted = :valueEncrypted, allowed_hosts = :allowedHosts, "
      + "updated_at = :updatedAt WHERE workspace_id = :workspaceId AND name = :name")
  int update(@BindMethods Secret secret);

  /** A page of a workspace's secrets by name; {@code after} is "" for the first page. */
  @SqlQuery("SELECT * FROM secret WHERE workspace_id = :workspaceId AND name > :after ORDER BY name LIMIT :limit")
  List<Secret> page(String workspaceId, String after, int limit);

  @SqlUpdate("DELETE FROM secret WHERE workspace_id = :workspaceId AND name = :name")
  int delete(String workspaceId, String name);
}
