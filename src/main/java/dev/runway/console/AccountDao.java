package dev.runway.console;

import java.time.Instant;
import java.util.Optional;
import org.jdbi.v3.sqlobject.config.RegisterConstructorMapper;
import org.jdbi.v3.sqlobject.customizer.BindMethods;
import org.jdbi.v3.sqlobject.statement.SqlQuery;
import org.jdbi.v3.sqlobject.statement.SqlUpdate;

@RegisterConstructorMapper(Account.class)
public interface AccountDao {
  @SqlUpdate("INSERT INTO account (id, email, password_hash, workspace_id, created_at) "
      + "VALUES (:id, :email, :passwordHash, :workspaceId, :createdAt)")
  void insert(@BindMethods Account account);

  @SqlQuery("SELECT id, email, password_hash, workspace_id, created_at FROM account WHERE email = :email")
  Optional<Account> findByEmail(String email);

  @SqlQuery("SELECT id, email, password_hash, workspace_id, created_at FROM account WHERE id = :id")
  Optional<Account> find(String id);

  @SqlQuery("SELECT COUNT(*) FROM account WHERE workspace_id = :workspaceId")
  int countInWorkspace(String workspaceId);

  @SqlUpdate("UPDATE account SET password_hash = :passwordHash WHERE id = :id")
  void setPassword(String id, String passwordHash);

  /** Until when the account refuses sign-ins from this client, if it does now. */
  @SqlQuery("SELECT locked_until FROM console_signin_failure WHERE account_id = :accountId AND client = :client "
      + "AND locked_until > :now")
  Optional<Instant> lockedUntil(String accountId, String client, Instant now);

  /** Forgets the account's failures not added to since {@code before} whose lock-out, if any, is over. */
  @SqlUpdate("DELETE FROM console_signin_failure WHERE account_id = :accountId AND updated_at < :before "
      + "AND (locked_until IS NULL OR locked_until <= :now)")
  void forgetFailuresBefore(String accountId, Instant before, Instant now);

  /** One more failure from the client; {@code lockedUntil} set (else kept) when it reaches the limit. 0: no row yet. */
  @SqlUpdate("UPDATE console_signin_failure SET failures = failures + 1, updated_at = :now, locked_until = CASE "
      + "WHEN failures + 1 >= :limit THEN :lockedUntil ELSE locked_until END WHERE account_id = :accountId "
      + "AND client = :client")
  int failedAgain(String accountId, String client, int limit, Instant lockedUntil, Instant now);

  @SqlUpdate("INSERT INTO console_signin_failure (account_id, client, failures, locked_until, updated_at) "
      + "VALUES (:accountId, :client, 1, :lockedUntil, :now)")
  void failedFirst(String accountId, String client, Instant lockedUntil, Instant now);

  /** A sign-in from the client succeeded: its failures in a row end. */
  @SqlUpdate("DELETE FROM console_signin_failure WHERE account_id = :accountId AND client = :client")
  void signedIn(String accountId, String client);

  /** The command line's password reset lifts every lock-out of the account. */
  @SqlUpdate("DELETE FROM console_signin_failure WHERE account_id = :accountId")
  void forgetFailures(String accountId);
}
