-- The run's foreign key to its workflow goes (issue 40): workflows are never deleted (they are
-- archived), and a start reads the workflow before it stores the run, so it guarded nothing, while
-- each run stored looked the workflow up again and added an entry to the key's own index. H2 named
-- the key when V1 made the run table; a database where it has another name keeps it (H2 drops a
-- constraint only from the table named, so no other can go). H2 has no partial indexes: the
-- PostgreSQL migration of this version makes its sparse run indexes partial instead.
ALTER TABLE run DROP CONSTRAINT IF EXISTS CONSTRAINT_13;
