-- Webhooks: endpoints that callers register, and the deliveries of events to them (an outbox:
-- each delivery is written in the same commit as its event, and attempted until it succeeds or
-- its retry window ends).

-- An endpoint's secret is stored encrypted with the server's secrets key (see SecretBox). After a
-- rotation the previous secret keeps signing beside the new one until previous_secret_until.
CREATE TABLE webhook_endpoint (
  id                     VARCHAR(40) PRIMARY KEY,
  workspace_id           VARCHAR(64) NOT NULL,
  url                    VARCHAR(2000) NOT NULL,
  description            VARCHAR(1000),
  event_types            VARCHAR(4000) NOT NULL,
  enabled                BOOLEAN NOT NULL,
  disabled_reason        VARCHAR(64),
  secret                 VARCHAR(400) NOT NULL,
  previous_secret        VARCHAR(400),
  previous_secret_until  TIMESTAMP WITH TIME ZONE,
  -- Since when every attempt to it has failed (NULL after a success): past
  -- webhooks.disable_after_hours the endpoint is disabled.
  failing_since          TIMESTAMP WITH TIME ZONE,
  created_at             TIMESTAMP WITH TIME ZONE NOT NULL,
  updated_at             TIMESTAMP WITH TIME ZONE NOT NULL
);
CREATE INDEX webhook_endpoint_workspace ON webhook_endpoint (workspace_id, id);

-- What is sent for one event: the same body to every endpoint that asked for its type.
CREATE TABLE webhook_message (
  id            VARCHAR(40) PRIMARY KEY,
  workspace_id  VARCHAR(64) NOT NULL,
  type          VARCHAR(64) NOT NULL,
  payload       VARCHAR(4194304) NOT NULL,
  created_at    TIMESTAMP WITH TIME ZONE NOT NULL
);
CREATE INDEX webhook_message_created ON webhook_message (created_at);

-- One event to one endpoint. A pending delivery is due at next_attempt_at; an instance attempting
-- it holds it until lease_until, so that no other attempts it meanwhile.
CREATE TABLE webhook_delivery (
  id                    VARCHAR(40) PRIMARY KEY,
  workspace_id          VARCHAR(64) NOT NULL,
  endpoint_id           VARCHAR(40) NOT NULL,
  event_id              VARCHAR(40) NOT NULL,
  event_type            VARCHAR(64) NOT NULL,
  status                VARCHAR(16) NOT NULL,
  attempts              INTEGER NOT NULL,
  next_attempt_at       TIMESTAMP WITH TIME ZONE,
  give_up_at            TIMESTAMP WITH TIME ZONE NOT NULL,
  lease_owner           VARCHAR(64),
  lease_until           TIMESTAMP WITH TIME ZONE,
  last_response_status  INTEGER,
  last_error            VARCHAR(500),
  created_at            TIMESTAMP WITH TIME ZONE NOT NULL,
  updated_at            TIMESTAMP WITH TIME ZONE NOT NULL
);
CREATE INDEX webhook_delivery_due ON webhook_delivery (next_attempt_at);
CREATE INDEX webhook_delivery_endpoint ON webhook_delivery (endpoint_id, id);
CREATE INDEX webhook_delivery_updated ON webhook_delivery (updated_at);
CREATE INDEX webhook_delivery_event ON webhook_delivery (event_id);

-- Every attempt of a delivery: when, how long, what the endpoint answered (its first 2 KB) or why
-- it did not.
CREATE TABLE webhook_attempt (
  delivery_id      VARCHAR(40) NOT NULL,
  attempt          INTEGER NOT NULL,
  started_at       TIMESTAMP WITH TIME ZONE NOT NULL,
  duration_ms      INTEGER NOT NULL,
  response_status  INTEGER,
  response_body    VARCHAR(2048),
  error            VARCHAR(500),
  PRIMARY KEY (delivery_id, attempt)
);
