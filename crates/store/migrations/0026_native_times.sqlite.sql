-- Postgres only (see 0026_native_times.postgres.sql): SQLite keeps times as
-- their text.
SELECT 1;
