-- Less written per run start (issue 40). Most runs have no parent run, thread, concurrency key or
-- agent, yet an index on the run table adds an entry for every run, the ones without a value too:
-- H2 has no partial indexes, and each index a commit touches is one more B-tree whose changed pages
-- (leaf to root) it writes. So the runs that have one of these values are found through a small
-- table of their own, written only for such runs (in the commit that stores the run), and the run
-- table keeps one index less for each. The run row still holds the values: reading a run is as before.
--
-- run_by_key holds the runs of a concurrency key that have not ended, with their status (kept in
-- the commits that move them; a run leaves it in the commit that ends it): what admitting the next
-- queued run and cancel_oldest look for. The others keep every run, as runs are never deleted.
CREATE TABLE run_by_parent (
  parent_run_id VARCHAR(40) NOT NULL,
  run_id VARCHAR(40) NOT NULL,
  PRIMARY KEY (parent_run_id, run_id)
);
INSERT INTO run_by_parent (parent_run_id, run_id) SELECT parent_run_id, id FROM run WHERE parent_run_id IS NOT NULL;
DROP INDEX run_parent;

CREATE TABLE run_by_thread (
  workspace_id VARCHAR(64) NOT NULL,
  thread_id VARCHAR(64) NOT NULL,
  run_id VARCHAR(40) NOT NULL,
  PRIMARY KEY (workspace_id, thread_id, run_id)
);
INSERT INTO run_by_thread (workspace_id, thread_id, run_id)
  SELECT workspace_id, thread_id, id FROM run WHERE thread_id IS NOT NULL;
DROP INDEX run_thread;

CREATE TABLE run_by_agent (
  workspace_id VARCHAR(64) NOT NULL,
  agent_id VARCHAR(64) NOT NULL,
  run_id VARCHAR(40) NOT NULL,
  PRIMARY KEY (workspace_id, agent_id, run_id)
);
INSERT INTO run_by_agent (workspace_id, agent_id, run_id) SELECT workspace_id, agent_id, id FROM run WHERE agent_id IS NOT NULL;
DROP INDEX run_workspace_agent_id;

CREATE TABLE run_by_key (
  workspace_id VARCHAR(64) NOT NULL,
  workflow_id VARCHAR(64) NOT NULL,
  concurrency_key VARCHAR(200) NOT NULL,
  status VARCHAR(32) NOT NULL,
  run_id VARCHAR(40) NOT NULL,
  PRIMARY KEY (workspace_id, workflow_id, concurrency_key, status, run_id)
);
INSERT INTO run_by_key (workspace_id, workflow_id, concurrency_key, status, run_id)
  SELECT workspace_id, workflow_id, concurrency_key, status, id FROM run
  WHERE concurrency_key IS NOT NULL AND status NOT IN ('succeeded', 'failed', 'canceled', 'rejected');
DROP INDEX run_concurrency_key;
