package dev.runway.db;

import java.util.Optional;
import org.jdbi.v3.sqlobject.statement.SqlQuery;

/** Row locks on workspaces, held until the transaction ends: the writes of one workspace go one after another. */
public interface WorkspaceLocks {
  @SqlQuery("SELECT id FROM workspace WHERE id = :id FOR UPDATE")
  Optional<String> lock(String id);
}
