-- Runs that CRM record changes ask for (workflow triggers), queued by the change's commit and made
-- into runs later, a few at a time, by the trigger processor (dev.runway.trigger): a sync of 1,000
-- records into a type 20 workflows listen to writes 1,000 of these, not 20,000 runs in one commit.
-- One row per change that some trigger matched; the run for its target i has an id derived from
-- the row's id and i, and is inserted in the transaction that moves `done` past i, so each target
-- becomes exactly one run, also across a crash or two instances.
CREATE TABLE run_request (
  id            VARCHAR(40) PRIMARY KEY,
  workspace_id  VARCHAR(64) NOT NULL,
  -- The workflows to start, in order, each as workflow_id/project, comma-separated.
  targets       VARCHAR(1048576) NOT NULL,
  -- How many targets have their run already.
  done          INTEGER NOT NULL,
  -- The runs' inputs: the change and the record as it was right after it (the change feed is
  -- pruned and is not indexed by record, so the record is kept here until the runs exist).
  inputs        VARCHAR(1048576) NOT NULL,
  -- The key whose write made the change: named by the runs' run.started events.
  actor         VARCHAR(64),
  created_at    TIMESTAMP WITH TIME ZONE NOT NULL,
  -- The processor working on the row, until when; free when null or past.
  lease_owner   VARCHAR(40),
  lease_until   TIMESTAMP WITH TIME ZONE
);
-- Each workspace's queue in order; also how the processor finds the next workspace with requests.
CREATE INDEX run_request_queue ON run_request (workspace_id, id);
