-- An Idempotency-Key belongs to the API key that sent it, not to the whole workspace: another key
-- of the workspace (say one limited to other projects) can neither replay it, nor block it, nor
-- learn that it was used. Responses stored before this version have api_key_id '' and are still
-- replayed to any key of their workspace until they expire (24 h by default).
ALTER TABLE idempotency_key ADD COLUMN api_key_id VARCHAR(40) DEFAULT '' NOT NULL;
ALTER TABLE idempotency_key DROP PRIMARY KEY;
ALTER TABLE idempotency_key ADD PRIMARY KEY (workspace_id, api_key_id, idem_key);
