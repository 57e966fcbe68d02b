package dev.runway.console;

import java.time.Instant;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

@RegisterConstructorMapper(Account.class)
public interface AccountDao {
  @SqlUpdate("INSERT INTO account (id, email, password_hash, workspace_id, created_at, failed_signins) "
      + "VALUES (:id, :email, :passwordHash, :workspaceId, :createdAt, 0)")
  void insert(@BindMethods Account account);

  @SqlQuery("SELECT * FROM account WHERE email = :email")
  Optional<Account> findByEmail(String email);

  @SqlQuery("SELECT * FROM account WHERE id = :id")
  Optional<Account> find(String id);

  @SqlQuery("SELECT COUNT(*) FROM account WHERE workspace_id = :workspaceId")
  int countInWorkspace(String workspaceId);

  @SqlUpdate("UPDATE account SET failed_signins = 0, locked_until = NULL WHERE id = :id")
  void signedIn(String id);

  /** One more failed sign-in; {@code lockedUntil} is set (else kept) when this one reaches the limit. */
  @SqlUpdate("UPDATE account SET failed_signins = failed_signins + 1, locked_until = CASE WHEN failed_signins + 1 >= "
      + ":limit THEN :lockedUntil ELSE locked_until END WHERE id = :id")
  void failed(String id, int limit, Instant lockedUntil);

  @SqlUpdate("UPDATE account SET password_hash = :passwordHash, failed_signins = 0, locked_until = NULL WHERE id = :id")
  void setPassword(String id, String passwordHash);
}
