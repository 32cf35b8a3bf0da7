-- Ids stay text on SQLite (0027_native_ids.postgres.sql makes them uuid).
SELECT 1;
