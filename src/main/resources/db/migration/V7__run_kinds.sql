-- Run kinds: a run is a workflow run or an agent run. Both share the run table, its states,
-- approvals, leases and events; an agent run names its agent instead of a workflow. For an agent
-- run, definition holds the agent as it was at the start (with the model and endpoint serving it),
-- inputs its input (a JSON string or object) and steps its progress (turns, usage, output, the
-- tool calls of the model's last answer).
ALTER TABLE run ADD COLUMN kind VARCHAR(16) DEFAULT 'workflow' NOT NULL;
ALTER TABLE run ADD COLUMN agent_id VARCHAR(64);
ALTER TABLE run ALTER COLUMN workflow_id DROP NOT NULL;
CREATE INDEX run_workspace_agent_id ON run (workspace_id, agent_id, id);

ALTER TABLE event ADD COLUMN agent_id VARCHAR(64);
ALTER TABLE event ALTER COLUMN workflow_id DROP NOT NULL;

-- An agent run's transcript, oldest first: the messages sent to and received from the model, each
-- stored in the commit of the move that made it (a model answer before anything is done with it).
-- content is the message text (or null: an assistant message with tool calls only); tool_calls the
-- assistant's tool calls as JSON text, in the Chat Completions API's shape.
CREATE TABLE run_message (
  run_id        VARCHAR(40) NOT NULL,
  idx           INTEGER NOT NULL,
  role          VARCHAR(16) NOT NULL,
  content       VARCHAR(1048576),
  tool_calls    VARCHAR(1048576),
  tool_call_id  VARCHAR(200),
  created_at    TIMESTAMP WITH TIME ZONE NOT NULL,
  PRIMARY KEY (run_id, idx)
);
