-- Governance and money: approvals, cost events, budgets and their incidents,
-- agent config revisions.

CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    type TEXT NOT NULL,
    status TEXT NOT NULL,
    payload TEXT NOT NULL DEFAULT '{}',
    requested_by_agent_id TEXT,
    requested_by_user_id TEXT,
    decision_note TEXT,
    decided_by_user_id TEXT,
    decided_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX approvals_company_status ON approvals (company_id, status);

CREATE TABLE approval_comments (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    approval_id TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    author_agent_id TEXT,
    author_user_id TEXT,
    author_type TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX approval_comments_approval ON approval_comments (approval_id, id);

CREATE TABLE issue_approvals (
    issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    approval_id TEXT NOT NULL REFERENCES approvals (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (issue_id, approval_id)
);
CREATE INDEX issue_approvals_approval ON issue_approvals (approval_id);

CREATE TABLE cost_events (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    issue_id TEXT REFERENCES issues (id) ON DELETE SET NULL,
    project_id TEXT REFERENCES projects (id) ON DELETE SET NULL,
    goal_id TEXT REFERENCES goals (id) ON DELETE SET NULL,
    heartbeat_run_id TEXT,
    billing_code TEXT,
    provider TEXT,
    model TEXT,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    cached_input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    -- NULL when the event carried no price: unpriced is not free.
    cost_cents BIGINT,
    occurred_at TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX cost_events_company_time ON cost_events (company_id, occurred_at);
CREATE INDEX cost_events_agent_time ON cost_events (agent_id, occurred_at);

CREATE TABLE budget_incidents (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    scope_type TEXT NOT NULL,
    scope_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    window_month TEXT NOT NULL,
    spend_cents BIGINT NOT NULL,
    budget_cents BIGINT NOT NULL,
    status TEXT NOT NULL,
    resolution TEXT,
    created_at TEXT NOT NULL,
    resolved_at TEXT
);
CREATE UNIQUE INDEX budget_incidents_once ON budget_incidents (scope_type, scope_id, kind, window_month);
CREATE INDEX budget_incidents_company ON budget_incidents (company_id, status);

CREATE TABLE agent_config_revisions (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    revision_number BIGINT NOT NULL,
    adapter_type TEXT NOT NULL,
    adapter_config TEXT NOT NULL,
    runtime_config TEXT NOT NULL,
    redacted_paths TEXT NOT NULL DEFAULT '[]',
    changed_by_actor_type TEXT NOT NULL,
    changed_by_actor_id TEXT NOT NULL,
    change_summary TEXT,
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX agent_config_revisions_number ON agent_config_revisions (agent_id, revision_number);

ALTER TABLE companies ADD COLUMN strategy_approved_at TEXT;
ALTER TABLE projects ADD COLUMN budget_monthly_cents BIGINT NOT NULL DEFAULT 0;
