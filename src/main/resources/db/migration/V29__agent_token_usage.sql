-- The tokens of each agent's runs per UTC day, beside the workspace's (token_usage), added to in
-- the same commit that stores each answer: what the console's usage page shows per agent. One row
-- a workspace, agent and day that had tokens.
CREATE TABLE agent_token_usage (
  workspace_id  VARCHAR(64) NOT NULL REFERENCES workspace (id),
  day_utc       DATE NOT NULL,
  agent_id      VARCHAR(64) NOT NULL,
  tokens        BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, day_utc, agent_id)
);
