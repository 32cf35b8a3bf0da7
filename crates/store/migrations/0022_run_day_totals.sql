-- The dashboard's runs per day and status, for days that can no longer
-- change, written by the first dashboard that needs them (Postgres only: on
-- SQLite, triggers keep every day's counts, migration 15). Postgres grouped
-- its (company, created_at, status) index over the whole fortnight on every
-- dashboard: 36 ms at 100,000 runs. A day is kept once it ended more than an
-- hour ago with none of its runs queued or running: a run is only ever
-- created now, and a finished run's status never changes. Deleting an agent
-- deletes its runs, so it drops its company's kept days.
CREATE TABLE run_day_totals (
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    day TEXT NOT NULL,
    status TEXT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (company_id, day, status)
);
