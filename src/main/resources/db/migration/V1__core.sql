-- Runway's core schema. Plain SQL that H2 (2.x) and PostgreSQL both accept.
-- JSON documents are kept as text: they are written and read whole, never queried inside.

CREATE TABLE workspace (
  id          VARCHAR(64) PRIMARY KEY,
  created_at  TIMESTAMP WITH TIME ZONE NOT NULL
);

CREATE TABLE api_key (
  id            VARCHAR(40) PRIMARY KEY,
  workspace_id  VARCHAR(64) NOT NULL REFERENCES workspace (id),
  name          VARCHAR(200) NOT NULL,
  key_hash      VARCHAR(64) NOT NULL,
  scopes        VARCHAR(200) NOT NULL,
  projects      VARCHAR(4000),
  created_at    TIMESTAMP WITH TIME ZONE NOT NULL,
  expires_at    TIMESTAMP WITH TIME ZONE,
  revoked_at    TIMESTAMP WITH TIME ZONE
);
CREATE UNIQUE INDEX api_key_hash ON api_key (key_hash);
CREATE INDEX api_key_workspace ON api_key (workspace_id);

CREATE TABLE workflow (
  workspace_id       VARCHAR(64) NOT NULL REFERENCES workspace (id),
  id                 VARCHAR(64) NOT NULL,
  name               VARCHAR(200) NOT NULL,
  description        VARCHAR(2000) NOT NULL,
  requires_approval  BOOLEAN NOT NULL,
  steps              VARCHAR(1048576) NOT NULL,
  created_at         TIMESTAMP WITH TIME ZONE NOT NULL,
  updated_at         TIMESTAMP WITH TIME ZONE NOT NULL,
  archived_at        TIMESTAMP WITH TIME ZONE,
  PRIMARY KEY (workspace_id, id)
);

CREATE TABLE run (
  id                 VARCHAR(40) PRIMARY KEY,
  workspace_id       VARCHAR(64) NOT NULL,
  workflow_id        VARCHAR(64) NOT NULL,
  project            VARCHAR(64) NOT NULL,
  status             VARCHAR(32) NOT NULL,
  requires_approval  BOOLEAN NOT NULL,
  inputs             VARCHAR(1048576) NOT NULL,
  created_at         TIMESTAMP WITH TIME ZONE NOT NULL,
  updated_at         TIMESTAMP WITH TIME ZONE NOT NULL,
  finished_at        TIMESTAMP WITH TIME ZONE,
  approval           VARCHAR(8000),
  error              VARCHAR(8000),
  FOREIGN KEY (workspace_id, workflow_id) REFERENCES workflow (workspace_id, id)
);
-- Listing is newest first within a workspace; ids sort by creation time.
CREATE INDEX run_workspace_id ON run (workspace_id, id);
CREATE INDEX run_workspace_workflow_id ON run (workspace_id, workflow_id, id);

-- Stored first responses of POST requests that carried an Idempotency-Key.
CREATE TABLE idempotency_key (
  workspace_id     VARCHAR(64) NOT NULL,
  idem_key         VARCHAR(255) NOT NULL,
  request_hash     VARCHAR(64) NOT NULL,
  response_status  INTEGER NOT NULL,
  response_body    VARCHAR(1048576) NOT NULL,
  created_at       TIMESTAMP WITH TIME ZONE NOT NULL,
  expires_at       TIMESTAMP WITH TIME ZONE NOT NULL,
  PRIMARY KEY (workspace_id, idem_key)
);
CREATE INDEX idempotency_key_expires ON idempotency_key (expires_at);
