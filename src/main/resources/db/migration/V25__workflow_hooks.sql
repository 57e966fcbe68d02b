-- Inbound webhooks (the triggers of kind "webhook", kept whole in workflow.triggers). Each such
-- trigger has a hook: POST /hooks/<hook id> starts a run of the workflow. The hook id is the
-- credential of the URL, so the row keeps only its SHA-256 (looked up) and the id sealed with the
-- secrets key (to show it in the workflow). A rotated hook's old row stays until expires_at.
CREATE TABLE workflow_hook (
  id_hash        VARCHAR(64) PRIMARY KEY,
  id_sealed      VARCHAR(512) NOT NULL,
  workspace_id   VARCHAR(64) NOT NULL,
  workflow_id    VARCHAR(64) NOT NULL,
  trigger_index  INTEGER NOT NULL,
  created_at     TIMESTAMP WITH TIME ZONE NOT NULL,
  expires_at     TIMESTAMP WITH TIME ZONE
);
CREATE INDEX workflow_hook_of ON workflow_hook (workspace_id, workflow_id, trigger_index);

-- The deliveries each hook trigger took, by the sender's delivery id (webhook-id, X-GitHub-Delivery,
-- a Stripe event's id): a sender's retry within 24 hours starts no second run. The primary key makes
-- it hold for concurrent copies and across instances.
CREATE TABLE hook_delivery (
  workspace_id   VARCHAR(64) NOT NULL,
  workflow_id    VARCHAR(64) NOT NULL,
  trigger_index  INTEGER NOT NULL,
  delivery_id    VARCHAR(200) NOT NULL,
  run_id         VARCHAR(64) NOT NULL,
  received_at    TIMESTAMP WITH TIME ZONE NOT NULL,
  PRIMARY KEY (workspace_id, workflow_id, trigger_index, delivery_id)
);
CREATE INDEX hook_delivery_received ON hook_delivery (received_at);
