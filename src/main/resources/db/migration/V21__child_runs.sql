-- Child runs: a workflow step of type workflow starts a run of another workflow and waits for it.
-- The child names its parent; the parent's step names the child (in its progress).
ALTER TABLE run ADD COLUMN parent_run_id VARCHAR(40);
CREATE INDEX run_parent ON run (parent_run_id);
