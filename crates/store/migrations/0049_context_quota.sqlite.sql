-- Context and quota (issue 41): how full a task session's context is, as
-- the CLI last reported it (tokens and the model it ran on), and each
-- agent's latest provider usage windows as its CLI reported them. Nullable
-- columns and a new table only: nothing existing is rewritten.
ALTER TABLE agent_task_sessions ADD COLUMN context_tokens BIGINT;
ALTER TABLE agent_task_sessions ADD COLUMN context_model TEXT;
CREATE TABLE agent_quota_snapshots (
    agent_id TEXT PRIMARY KEY REFERENCES agents (id) ON DELETE CASCADE,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    windows TEXT NOT NULL,
    run_id TEXT,
    updated_at TEXT NOT NULL
);
CREATE INDEX agent_quota_snapshots_company ON agent_quota_snapshots (company_id);
