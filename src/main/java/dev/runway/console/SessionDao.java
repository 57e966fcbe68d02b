package dev.runway.console;

import java.time.Instant;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

@RegisterConstructorMapper(ConsoleSession.class)
public interface SessionDao {
  @SqlUpdate("INSERT INTO console_session (id_hash, account_id, csrf_token, created_at, last_seen_at, expires_at) "
      + "VALUES (:idHash, :accountId, :csrfToken, :createdAt, :lastSeenAt, :expiresAt)")
  void insert(@BindMethods ConsoleSession session);

  @SqlQuery("SELECT * FROM console_session WHERE id_hash = :idHash")
  Optional<ConsoleSession> find(String idHash);

  @SqlUpdate("UPDATE console_session SET last_seen_at = :at WHERE id_hash = :idHash")
  void seen(String idHash, Instant at);

  @SqlUpdate("DELETE FROM console_session WHERE id_hash = :idHash")
  void delete(String idHash);

  @SqlUpdate("DELETE FROM console_session WHERE account_id = :accountId")
  int deleteOfAccount(String accountId);

  @SqlUpdate("DELETE FROM console_session WHERE expires_at < :now OR last_seen_at < :idleBefore")
  int prune(Instant now, Instant idleBefore);
}
