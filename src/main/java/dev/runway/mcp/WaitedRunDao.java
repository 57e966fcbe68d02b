package dev.runway.mcp;

import java.util.Collection;
import java.util.List;
import org.jdbi.v3.sqlobject.customizer.Bind;
import org.jdbi.v3.sqlobject.customizer.BindList;
import org.jdbi.v3.sqlobject.statement.SqlQuery;

/** Which of the runs that MCP calls wait for have ended: a few ids and statuses, not the runs. */
interface WaitedRunDao {
  @SqlQuery("SELECT id FROM run WHERE workspace_id = :ws AND id IN (<ids>) AND status IN (<ended>)")
  List<String> ended(@Bind("ws") String workspaceId, @BindList("ids") Collection<String> ids,
      @BindList("ended") Collection<String> endedStatuses);
}
