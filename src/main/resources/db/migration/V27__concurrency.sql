-- Concurrency keys: a workflow's "concurrency" setting (JSON, null: none); the key a run of it
-- evaluated at start (null: none); and per workspace, workflow and key, how many of its runs are
-- active now (running or awaiting approval), changed in the commits that start and end them, so
-- that two instances on one database cannot both take the last place.
ALTER TABLE workflow ADD COLUMN concurrency VARCHAR(2000);
ALTER TABLE run ADD COLUMN concurrency_key VARCHAR(200);
CREATE INDEX run_concurrency_key ON run (workspace_id, workflow_id, concurrency_key, status, id);
CREATE TABLE concurrency_slot (
  workspace_id VARCHAR(64) NOT NULL,
  workflow_id VARCHAR(64) NOT NULL,
  concurrency_key VARCHAR(200) NOT NULL,
  active INT NOT NULL,
  PRIMARY KEY (workspace_id, workflow_id, concurrency_key)
);
