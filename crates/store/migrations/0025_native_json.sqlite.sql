-- Postgres only (see 0025_native_json.postgres.sql): SQLite keeps JSON as
-- text and flags as 0/1.
SELECT 1;
