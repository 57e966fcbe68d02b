-- Console invitations (console.signup=invite): a one-use code made by `runway accounts invite`,
-- with which one person may sign up, into a workspace of their own (workspace_id NULL) or into
-- the workspace named. Only the code's SHA-256 is stored; a used or expired code is deleted.
CREATE TABLE console_invitation (
  code_hash     VARCHAR(64) PRIMARY KEY,
  workspace_id  VARCHAR(64),
  created_at    TIMESTAMP WITH TIME ZONE NOT NULL,
  expires_at    TIMESTAMP WITH TIME ZONE NOT NULL
);
CREATE INDEX console_invitation_expires ON console_invitation (expires_at);

-- What the live records of each CRM object type hold, in characters of their properties JSON
-- (quotas.crm_megabytes_per_workspace), kept up to date by each sync as the record counts are.
ALTER TABLE crm_object_type ADD COLUMN live_chars BIGINT DEFAULT 0 NOT NULL;
UPDATE crm_object_type SET live_chars = (SELECT COALESCE(SUM(LENGTH(r.properties)), 0) FROM crm_record r
  WHERE r.workspace_id = crm_object_type.workspace_id AND r.object_type = crm_object_type.object_type
  AND r.deleted = FALSE);
