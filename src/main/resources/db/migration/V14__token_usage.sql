-- Tokens the model reported (usage.total_tokens of each Chat Completions answer) per workspace and
-- UTC day, for the daily token quota (agents.workspace_tokens_per_day). One row a workspace a
-- day, added to in the commit that stores each answer. (`day` is a keyword of H2: day_utc.)
CREATE TABLE token_usage (
  workspace_id  VARCHAR(64) NOT NULL REFERENCES workspace (id),
  day_utc       DATE NOT NULL,
  tokens        BIGINT NOT NULL,
  PRIMARY KEY (workspace_id, day_utc)
);
