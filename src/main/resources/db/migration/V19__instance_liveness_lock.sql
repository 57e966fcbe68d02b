-- The key of the PostgreSQL session advisory lock each instance holds on a connection of its own
-- while it lives: the database drops the lock the moment the process (or its connection) dies, so
-- the other instances can tell at once that its work is theirs to take. Null on H2 (one process)
-- and for instances of earlier versions, which are judged by their heartbeats alone.
ALTER TABLE instance ADD COLUMN liveness_lock BIGINT;
