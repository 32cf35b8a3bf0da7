-- Issue 40: the original's shapes for an agent's runtime state and the
-- inbox's dismissals.
--
-- When the agent's runtime state began (upstream's `createdAt` of its
-- runtime state row): its first run, or the first time the state was read
-- (store::runs::sessions::keep_began keeps it then). Agents that ran
-- before this migration get their first run's time; the others stay NULL
-- until then.
ALTER TABLE agents ADD COLUMN runtime_state_created_at TEXT;
UPDATE agents SET runtime_state_created_at =
    (SELECT MIN(r.created_at) FROM heartbeat_runs r WHERE r.agent_id = agents.id);

-- A dismissal's own id (upstream's `id`), kept when the same item is
-- dismissed again; and when it was last set (`updatedAt`), apart from when
-- it was first made (`createdAt`). Existing rows get random v4 ids and were
-- last set when they were made.
ALTER TABLE inbox_dismissals ADD COLUMN id TEXT;
UPDATE inbox_dismissals SET id =
    lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4'
    || substr(lower(hex(randomblob(2))), 2) || '-'
    || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(lower(hex(randomblob(2))), 2)
    || '-' || lower(hex(randomblob(6)));
CREATE UNIQUE INDEX inbox_dismissals_id ON inbox_dismissals (id);
ALTER TABLE inbox_dismissals ADD COLUMN updated_at TEXT;
UPDATE inbox_dismissals SET updated_at = created_at;
