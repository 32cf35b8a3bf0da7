-- Several control-plane instances on one database (issue 38). Each instance
-- registers under a stable id with a lease it renews; every claimed run
-- records the instance that drives it, so a starting instance settles only
-- its own previous incarnation's runs and those of instances whose lease
-- expired, never a live instance's. New tables and one nullable column:
-- nothing existing changes (a run left running by an older binary has no
-- owner and is settled by the next start, as before).
CREATE TABLE instances (
    id TEXT PRIMARY KEY,
    incarnation TEXT NOT NULL,
    hostname TEXT NOT NULL,
    pid INTEGER NOT NULL,
    version TEXT NOT NULL,
    started_at TEXT NOT NULL,
    renewed_at TEXT NOT NULL,
    lease_expires_at TEXT NOT NULL,
    stopped_at TEXT
);

-- Loops that must run on one instance at a time (run-log retention, the
-- worktree sweep): the holder of a name until its lease expires.
CREATE TABLE singleton_leases (
    name TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at TEXT NOT NULL
);

ALTER TABLE heartbeat_runs ADD COLUMN owner_instance_id TEXT;
CREATE INDEX heartbeat_runs_running_owner ON heartbeat_runs (owner_instance_id)
    WHERE status = 'running';

-- Live events cross instances on Postgres NOTIFY, whose payload is bounded
-- (8000 bytes): a larger event is kept here for a few minutes and the
-- notification names it.
CREATE TABLE live_event_spill (
    id TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
);
