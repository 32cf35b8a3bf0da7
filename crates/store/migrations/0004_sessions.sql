-- Resumable CLI sessions, one per agent, adapter and task.
CREATE TABLE agent_task_sessions (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    adapter_type TEXT NOT NULL,
    task_key TEXT NOT NULL,
    session_params_json TEXT,
    session_display_id TEXT,
    last_run_id TEXT,
    last_error TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (company_id, agent_id, adapter_type, task_key)
);
CREATE INDEX agent_task_sessions_agent ON agent_task_sessions (agent_id);

ALTER TABLE heartbeat_runs ADD COLUMN session_id_before TEXT;
ALTER TABLE heartbeat_runs ADD COLUMN session_id_after TEXT;
