-- Routines (issue 17): a task template with triggers; each run of one makes
-- a task. Ids uuid, times text, JSON text (SQLite keeps them as text)
-- the rest. A webhook trigger's secret is sealed like a company secret
-- (AES-256-GCM under the instance's master key, bound to the trigger id and
-- secret version); the database never holds it in the clear.
CREATE TABLE routines (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    project_id TEXT REFERENCES projects (id) ON DELETE SET NULL,
    goal_id TEXT REFERENCES goals (id) ON DELETE SET NULL,
    parent_issue_id TEXT REFERENCES issues (id) ON DELETE SET NULL,
    title TEXT NOT NULL,
    description TEXT,
    assignee_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    priority TEXT NOT NULL,
    status TEXT NOT NULL,
    concurrency_policy TEXT NOT NULL,
    catch_up_policy TEXT NOT NULL,
    variables TEXT NOT NULL,
    latest_revision_id TEXT,
    latest_revision_number BIGINT NOT NULL DEFAULT 0,
    created_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    updated_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    updated_by_user_id TEXT,
    last_triggered_at TEXT,
    last_enqueued_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX routines_company_idx ON routines (company_id, created_at);

CREATE TABLE routine_triggers (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    routine_id TEXT NOT NULL REFERENCES routines (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    label TEXT,
    enabled BIGINT NOT NULL,
    cron_expression TEXT,
    timezone TEXT,
    next_run_at TEXT,
    last_fired_at TEXT,
    public_id TEXT UNIQUE,
    signing_mode TEXT,
    replay_window_sec BIGINT,
    secret_version BIGINT,
    secret_nonce TEXT,
    secret_ciphertext TEXT,
    last_rotated_at TEXT,
    last_result TEXT,
    created_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    updated_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    updated_by_user_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX routine_triggers_routine_idx ON routine_triggers (routine_id);
-- The scheduler's scan: enabled schedules by due time.
CREATE INDEX routine_triggers_due_idx ON routine_triggers (next_run_at)
    WHERE kind = 'schedule' AND enabled = 1;

CREATE TABLE routine_revisions (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    routine_id TEXT NOT NULL REFERENCES routines (id) ON DELETE CASCADE,
    revision_number BIGINT NOT NULL,
    title TEXT NOT NULL,
    description TEXT,
    snapshot TEXT NOT NULL,
    change_summary TEXT,
    restored_from_revision_id TEXT,
    created_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    created_by_run_id TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (routine_id, revision_number)
);

CREATE TABLE routine_runs (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    routine_id TEXT NOT NULL REFERENCES routines (id) ON DELETE CASCADE,
    trigger_id TEXT REFERENCES routine_triggers (id) ON DELETE SET NULL,
    source TEXT NOT NULL,
    status TEXT NOT NULL,
    triggered_at TEXT NOT NULL,
    routine_revision_id TEXT,
    idempotency_key TEXT,
    trigger_payload TEXT,
    linked_issue_id TEXT REFERENCES issues (id) ON DELETE SET NULL,
    coalesced_into_run_id TEXT,
    failure_reason TEXT,
    completed_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX routine_runs_routine_idx ON routine_runs (routine_id, created_at);
CREATE INDEX routine_runs_issue_idx ON routine_runs (linked_issue_id);
-- A schedule's tick makes one run, whichever server claimed it.
CREATE UNIQUE INDEX routine_runs_tick_uq ON routine_runs (trigger_id, triggered_at)
    WHERE source = 'schedule';

-- Signed webhook deliveries already accepted, so a resend within the
-- window is refused even after a restart.
CREATE TABLE routine_webhook_replays (
    trigger_id TEXT NOT NULL REFERENCES routine_triggers (id) ON DELETE CASCADE,
    replay_key TEXT NOT NULL,
    seen_at TEXT NOT NULL,
    PRIMARY KEY (trigger_id, replay_key)
);
