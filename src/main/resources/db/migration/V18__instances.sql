-- The instances that serve this database, each registered at its start and beating while it runs,
-- so that the instances (and an operator) can tell a live one from one that is gone.
CREATE TABLE instance (
  id            VARCHAR(40) PRIMARY KEY,
  host          VARCHAR(255) NOT NULL,
  pid           BIGINT NOT NULL,
  version       VARCHAR(64) NOT NULL,
  started_at    TIMESTAMP WITH TIME ZONE NOT NULL,
  heartbeat_at  TIMESTAMP WITH TIME ZONE NOT NULL,
  -- When its stop began (it claims nothing more) and when it ended; null while it runs.
  stopping_at   TIMESTAMP WITH TIME ZONE,
  stopped_at    TIMESTAMP WITH TIME ZONE
);
CREATE INDEX instance_started ON instance (started_at);
