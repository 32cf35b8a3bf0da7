-- Heartbeat runtime: agent credentials, the wakeup queue, runs and their
-- event timeline. Same portable types as 0001.

CREATE TABLE agent_api_keys (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    -- SHA-256 of the token, hex. The token itself is shown once and never stored.
    key_hash TEXT NOT NULL,
    created_by_user_id TEXT,
    last_used_at TEXT,
    revoked_at TEXT,
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX agent_api_keys_hash ON agent_api_keys (key_hash);
CREATE INDEX agent_api_keys_agent ON agent_api_keys (agent_id);

CREATE TABLE heartbeat_runs (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    invocation_source TEXT NOT NULL,
    trigger_detail TEXT,
    status TEXT NOT NULL,
    wakeup_request_id TEXT,
    issue_id TEXT,
    wake_reason TEXT,
    context_snapshot TEXT NOT NULL DEFAULT '{}',
    started_at TEXT,
    finished_at TEXT,
    error TEXT,
    error_code TEXT,
    exit_code BIGINT,
    signal TEXT,
    usage_json TEXT,
    result_json TEXT,
    stdout_excerpt TEXT,
    stderr_excerpt TEXT,
    log_store TEXT,
    log_ref TEXT,
    log_bytes BIGINT NOT NULL DEFAULT 0,
    process_pid BIGINT,
    process_group_id BIGINT,
    next_event_seq BIGINT NOT NULL DEFAULT 1,
    coalesced_count BIGINT NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX heartbeat_runs_company ON heartbeat_runs (company_id, id);
CREATE INDEX heartbeat_runs_agent_status ON heartbeat_runs (agent_id, status);
CREATE INDEX heartbeat_runs_status ON heartbeat_runs (status);
CREATE INDEX heartbeat_runs_issue ON heartbeat_runs (issue_id);

CREATE TABLE agent_wakeup_requests (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    source TEXT NOT NULL,
    trigger_detail TEXT,
    reason TEXT,
    payload TEXT,
    issue_id TEXT,
    requested_by_actor_type TEXT,
    requested_by_actor_id TEXT,
    idempotency_key TEXT,
    status TEXT NOT NULL,
    skip_reason TEXT,
    run_id TEXT,
    coalesced_count BIGINT NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX agent_wakeup_requests_agent ON agent_wakeup_requests (agent_id, status);
CREATE UNIQUE INDEX agent_wakeup_requests_idempotency ON agent_wakeup_requests (agent_id, idempotency_key);

CREATE TABLE heartbeat_run_events (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    run_id TEXT NOT NULL REFERENCES heartbeat_runs (id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    event_type TEXT NOT NULL,
    stream TEXT,
    level TEXT NOT NULL,
    message TEXT,
    payload TEXT,
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX heartbeat_run_events_seq ON heartbeat_run_events (run_id, seq);

-- Secrets of this instance (the run-token signing key). Never returned by the API.
CREATE TABLE instance_secrets (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    created_at TEXT NOT NULL
);
