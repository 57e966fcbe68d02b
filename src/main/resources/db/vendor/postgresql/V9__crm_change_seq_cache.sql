-- As for event.seq (V3): the cache stays at 1, so that values follow commit order across writers
-- (each holds its workspace's lock until it commits) and a reader of the change feed skips none.
ALTER TABLE crm_change ALTER COLUMN seq SET CACHE 1;
