-- Version 2 of the workflow definition: a JSON Schema the inputs of a start must meet, and an
-- expression that makes a finished run's output. Both optional (null).
ALTER TABLE workflow ADD COLUMN inputs_schema VARCHAR(262144);
ALTER TABLE workflow ADD COLUMN output VARCHAR(262144);
-- A workflow run's output, as JSON: what its workflow's output expression gave when it succeeded.
ALTER TABLE run ADD COLUMN output VARCHAR(1048576);
