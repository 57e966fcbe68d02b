-- How deep the runs of a request nest: 1 for a change a caller made (a sync, a delete), one deeper
-- than the writing run for a change a workflow's crm step made. A crm step in a run at the deepest
-- level (5) fires no trigger, so a workflow whose records trigger itself stops after a few rounds.
ALTER TABLE run_request ADD COLUMN depth INTEGER DEFAULT 1 NOT NULL;
