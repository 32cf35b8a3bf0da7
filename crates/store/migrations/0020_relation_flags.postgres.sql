-- SQLite only (see 0020_relation_flags.sqlite.sql): the list written
-- straight from the statement runs on SQLite; Postgres keeps its EXISTS
-- probes and needs no trigger taking row locks on both ends of a blocker.
SELECT 1;
