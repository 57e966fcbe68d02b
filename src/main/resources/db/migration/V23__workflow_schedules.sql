-- Workflow schedules (the triggers of kind "schedule", kept whole in workflow.triggers): one row per
-- schedule, written with the workflow, with its next time. The scheduler of any instance fires a
-- due row by moving next_run_at on with an UPDATE conditional on the time it read, in the commit
-- that stores the run: each scheduled time starts one run however many instances share the database.
CREATE TABLE workflow_schedule (
  workspace_id   VARCHAR(64) NOT NULL,
  workflow_id    VARCHAR(64) NOT NULL,
  trigger_index  INTEGER NOT NULL,
  spec           VARCHAR(65536) NOT NULL,
  next_run_at    TIMESTAMP WITH TIME ZONE NOT NULL,
  last_run_at    TIMESTAMP WITH TIME ZONE,
  last_run_id    VARCHAR(64),
  PRIMARY KEY (workspace_id, workflow_id, trigger_index)
);
CREATE INDEX workflow_schedule_due ON workflow_schedule (next_run_at);
