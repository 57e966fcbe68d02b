-- Less written per run start (issue 40). Most runs have no parent run, thread, concurrency key or
-- agent, and a run that has ended is not due: the indexes on those columns keep only the rows that
-- have a value, which is all their queries look for (each compares the column with = or a range,
-- so PostgreSQL knows that the rows they find are in the partial index). A run of a workflow
-- without steps now adds 3 index entries instead of 8.
--
-- The run's foreign key to its workflow goes too: workflows are never deleted (they are archived),
-- and a start reads the workflow before it stores the run, so it guarded nothing; checking it
-- looked the workflow up again for each run and locked its row (FOR KEY SHARE) in every commit.
ALTER TABLE run DROP CONSTRAINT IF EXISTS run_workspace_id_workflow_id_fkey;

DROP INDEX run_parent;
CREATE INDEX run_parent ON run (parent_run_id) WHERE parent_run_id IS NOT NULL;
DROP INDEX run_thread;
CREATE INDEX run_thread ON run (workspace_id, thread_id, id) WHERE thread_id IS NOT NULL;
DROP INDEX run_concurrency_key;
CREATE INDEX run_concurrency_key ON run (workspace_id, workflow_id, concurrency_key, status, id)
  WHERE concurrency_key IS NOT NULL;
DROP INDEX run_due;
CREATE INDEX run_due ON run (due_at) WHERE due_at IS NOT NULL;
DROP INDEX run_workspace_agent_id;
CREATE INDEX run_workspace_agent_id ON run (workspace_id, agent_id, id) WHERE agent_id IS NOT NULL;
