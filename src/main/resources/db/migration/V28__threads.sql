-- Threads of agent runs: a thread belongs to one workspace and one project; each agent run started
-- through the API names its thread (a new one when it names none). One run of a thread is active at
-- a time: the thread's place is a concurrency_slot row (workflow_id '~thread', the thread id as its
-- key, limit 1), taken and handed on in the commits that start and end its runs, as for a
-- workflow's concurrency key.
CREATE TABLE agent_thread (
  workspace_id VARCHAR(64) NOT NULL,
  id VARCHAR(64) NOT NULL,
  project VARCHAR(64) NOT NULL,
  created_at TIMESTAMP WITH TIME ZONE NOT NULL,
  PRIMARY KEY (workspace_id, id)
);
ALTER TABLE run ADD COLUMN thread_id VARCHAR(64);
CREATE INDEX run_thread ON run (workspace_id, thread_id, id);
