-- Signals sent to runs (POST /v1/runs/{run_id}/signals/{name}, or a signal URL): one row each. A
-- signal that finds no wait for its name is kept (consumed_at null) until a wait of the run takes
-- it, oldest first; one that a wait takes is stored consumed, for the record.
CREATE TABLE run_signal (
  id             VARCHAR(64) PRIMARY KEY,
  workspace_id   VARCHAR(64) NOT NULL,
  run_id         VARCHAR(64) NOT NULL,
  name           VARCHAR(64) NOT NULL,
  body           VARCHAR(1048576) NOT NULL,
  via            VARCHAR(8) NOT NULL,
  created_at     TIMESTAMP WITH TIME ZONE NOT NULL,
  consumed_at    TIMESTAMP WITH TIME ZONE,
  consumed_step  INTEGER
);
CREATE INDEX run_signal_kept ON run_signal (run_id, name, consumed_at, id);
-- The one-use signal URLs ({{run.signal_url.<name>}}): one per run and name of its wait steps, made
-- with the run. Only the SHA-256 of the token is kept; ended_at is set when the URL is used or the
-- wait for its name ends (a signal taken, a time-out, the run's end).
CREATE TABLE run_signal_url (
  token_hash     VARCHAR(64) PRIMARY KEY,
  workspace_id   VARCHAR(64) NOT NULL,
  run_id         VARCHAR(64) NOT NULL,
  name           VARCHAR(64) NOT NULL,
  created_at     TIMESTAMP WITH TIME ZONE NOT NULL,
  ended_at       TIMESTAMP WITH TIME ZONE
);
CREATE INDEX run_signal_url_run ON run_signal_url (run_id, name);
