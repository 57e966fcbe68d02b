-- A run started by POST /v1/runs/{run_id}/rerun names the run it reruns (null for others).
ALTER TABLE run ADD COLUMN rerun_of VARCHAR(64);
