-- Agents: definitions of a model, its instructions and the caller's tools it may call. The
-- definition (model, instructions, tools, requires_approval, limits) is kept as JSON text, every
-- default filled in; name and description have columns of their own, as a workflow's do.
CREATE TABLE agent (
  workspace_id  VARCHAR(64) NOT NULL REFERENCES workspace (id),
  id            VARCHAR(64) NOT NULL,
  name          VARCHAR(200) NOT NULL,
  description   VARCHAR(2000) NOT NULL,
  definition    VARCHAR(1048576) NOT NULL,
  created_at    TIMESTAMP WITH TIME ZONE NOT NULL,
  updated_at    TIMESTAMP WITH TIME ZONE NOT NULL,
  archived_at   TIMESTAMP WITH TIME ZONE,
  PRIMARY KEY (workspace_id, id)
);
