-- H2 writes a sequence's state to disk (its own commit) each time its cache of values runs out:
-- with the default of 32, every 16th run start paid for an extra commit. Values taken from a
-- larger cache and never used leave gaps after a crash, which event sequence numbers allow (they
-- only order events). H2 hands out values from one counter per database, in order, so they still
-- follow commit order under the group commit's workspace locks.
ALTER TABLE event ALTER COLUMN seq SET CACHE 100000;
