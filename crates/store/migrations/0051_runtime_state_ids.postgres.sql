-- Issue 40: the original's shapes for an agent's runtime state and the
-- inbox's dismissals.
--
-- When the agent's runtime state began (upstream's `createdAt` of its
-- runtime state row): its first run, or the first time the state was read
-- (store::runs::sessions::keep_began keeps it then). Agents that ran
-- before this migration get their first run's time; the others stay NULL
-- until then.
ALTER TABLE agents ADD COLUMN runtime_state_created_at TIMESTAMPTZ;
UPDATE agents SET runtime_state_created_at =
    (SELECT MIN(r.created_at) FROM heartbeat_runs r WHERE r.agent_id = agents.id);

-- A dismissal's own id (upstream's `id`), kept when the same item is
-- dismissed again; and when it was last set (`updatedAt`), apart from when
-- it was first made (`createdAt`). Existing rows get random ids (a volatile
-- default is evaluated per row) and were last set when they were made.
ALTER TABLE inbox_dismissals ADD COLUMN id UUID NOT NULL DEFAULT gen_random_uuid();
ALTER TABLE inbox_dismissals ALTER COLUMN id DROP DEFAULT;
CREATE UNIQUE INDEX inbox_dismissals_id ON inbox_dismissals (id);
ALTER TABLE inbox_dismissals ADD COLUMN updated_at TIMESTAMPTZ;
UPDATE inbox_dismissals SET updated_at = created_at;
ALTER TABLE inbox_dismissals ALTER COLUMN updated_at SET NOT NULL;
