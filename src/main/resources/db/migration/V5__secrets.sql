-- Workspace secrets: credentials for the caller's tools, referenced as {{secrets.NAME}} in step
-- headers and URL query strings. Only the encrypted value is stored (AES-256-GCM, see SecretBox).
CREATE TABLE secret (
  workspace_id     VARCHAR(64) NOT NULL REFERENCES workspace (id),
  name             VARCHAR(64) NOT NULL,
  value_encrypted  VARCHAR(16384) NOT NULL,
  created_at       TIMESTAMP WITH TIME ZONE NOT NULL,
  updated_at       TIMESTAMP WITH TIME ZONE NOT NULL,
  PRIMARY KEY (workspace_id, name)
);
