-- The console: accounts (people who sign in), their sessions, and the one-time setup code with
-- which the first account may claim the workspace made at first start.

CREATE TABLE account (
  id              VARCHAR(40) PRIMARY KEY,
  email           VARCHAR(254) NOT NULL,
  password_hash   VARCHAR(200) NOT NULL,
  workspace_id    VARCHAR(64) NOT NULL REFERENCES workspace (id),
  created_at      TIMESTAMP WITH TIME ZONE NOT NULL,
  -- Failed sign-ins in a row, and until when the account refuses sign-ins after too many.
  failed_signins  INT NOT NULL DEFAULT 0,
  locked_until    TIMESTAMP WITH TIME ZONE
);
-- Emails are stored lower-cased: one account per address, whatever its case.
CREATE UNIQUE INDEX account_email ON account (email);
CREATE INDEX account_workspace ON account (workspace_id);

CREATE TABLE console_session (
  -- SHA-256 of the 128-bit random id in the cookie: a copy of the database signs no one in.
  id_hash       VARCHAR(64) PRIMARY KEY,
  -- Null for a visitor not signed in (the sign-in and sign-up forms carry its CSRF token too).
  account_id    VARCHAR(40) REFERENCES account (id) ON DELETE CASCADE,
  csrf_token    VARCHAR(64) NOT NULL,
  created_at    TIMESTAMP WITH TIME ZONE NOT NULL,
  last_seen_at  TIMESTAMP WITH TIME ZONE NOT NULL,
  expires_at    TIMESTAMP WITH TIME ZONE NOT NULL
);
CREATE INDEX console_session_account ON console_session (account_id);
CREATE INDEX console_session_expires ON console_session (expires_at);

CREATE TABLE console_setup_code (
  workspace_id  VARCHAR(64) PRIMARY KEY REFERENCES workspace (id),
  code_hash     VARCHAR(64) NOT NULL,
  created_at    TIMESTAMP WITH TIME ZONE NOT NULL
);

-- What the console shows of a key after its creation: the start of the key (never enough to use
-- it), and when it was last used (written at most once a minute per key). Null for older keys.
ALTER TABLE api_key ADD COLUMN prefix VARCHAR(16);
ALTER TABLE api_key ADD COLUMN last_used_at TIMESTAMP WITH TIME ZONE;
