-- Core work model. One schema for SQLite and Postgres: ids are TEXT (UUIDs),
-- timestamps are TEXT in RFC 3339 UTC with milliseconds (sortable as text),
-- JSON is TEXT, booleans are BIGINT 0/1. Both engines accept every type used here.

CREATE TABLE companies (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    description TEXT,
    status TEXT NOT NULL DEFAULT 'active',
    issue_prefix TEXT NOT NULL,
    issue_counter BIGINT NOT NULL DEFAULT 0,
    budget_monthly_cents BIGINT NOT NULL DEFAULT 0,
    spent_monthly_cents BIGINT NOT NULL DEFAULT 0,
    require_board_approval_for_new_agents BIGINT NOT NULL DEFAULT 0,
    default_responsible_user_id TEXT,
    pause_reason TEXT,
    paused_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX companies_issue_prefix_key ON companies (issue_prefix);

CREATE TABLE agents (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    url_key TEXT NOT NULL,
    role TEXT NOT NULL DEFAULT 'general',
    title TEXT,
    icon TEXT,
    status TEXT NOT NULL DEFAULT 'idle',
    reports_to TEXT REFERENCES agents (id) ON DELETE SET NULL,
    capabilities TEXT,
    adapter_type TEXT NOT NULL DEFAULT 'process',
    adapter_config TEXT NOT NULL DEFAULT '{}',
    runtime_config TEXT NOT NULL DEFAULT '{}',
    permissions TEXT NOT NULL DEFAULT '{}',
    metadata TEXT,
    budget_monthly_cents BIGINT NOT NULL DEFAULT 0,
    spent_monthly_cents BIGINT NOT NULL DEFAULT 0,
    pause_reason TEXT,
    paused_at TEXT,
    error_reason TEXT,
    last_heartbeat_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX agents_company_url_key ON agents (company_id, url_key);
CREATE INDEX agents_reports_to ON agents (reports_to);

CREATE TABLE goals (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    description TEXT,
    level TEXT NOT NULL DEFAULT 'task',
    status TEXT NOT NULL DEFAULT 'planned',
    parent_id TEXT REFERENCES goals (id) ON DELETE SET NULL,
    owner_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX goals_company ON goals (company_id);

CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    goal_id TEXT REFERENCES goals (id) ON DELETE SET NULL,
    name TEXT NOT NULL,
    url_key TEXT NOT NULL,
    description TEXT,
    status TEXT NOT NULL DEFAULT 'backlog',
    lead_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    target_date TEXT,
    color TEXT,
    archived_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX projects_company ON projects (company_id);

CREATE TABLE issues (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    project_id TEXT REFERENCES projects (id) ON DELETE SET NULL,
    goal_id TEXT REFERENCES goals (id) ON DELETE SET NULL,
    parent_id TEXT REFERENCES issues (id) ON DELETE SET NULL,
    title TEXT NOT NULL,
    description TEXT,
    status TEXT NOT NULL DEFAULT 'backlog',
    priority TEXT NOT NULL DEFAULT 'medium',
    assignee_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    assignee_user_id TEXT,
    checkout_run_id TEXT,
    execution_run_id TEXT,
    execution_locked_at TEXT,
    created_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    issue_number BIGINT NOT NULL,
    identifier TEXT NOT NULL,
    origin_kind TEXT NOT NULL DEFAULT 'manual',
    request_depth BIGINT NOT NULL DEFAULT 0,
    billing_code TEXT,
    started_at TEXT,
    completed_at TEXT,
    cancelled_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX issues_company_number ON issues (company_id, issue_number);
CREATE UNIQUE INDEX issues_identifier ON issues (identifier);
CREATE INDEX issues_company_status ON issues (company_id, status);
CREATE INDEX issues_assignee ON issues (assignee_agent_id);
CREATE INDEX issues_parent ON issues (parent_id);

CREATE TABLE issue_blockers (
    issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    blocked_by_issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (issue_id, blocked_by_issue_id)
);
CREATE INDEX issue_blockers_by ON issue_blockers (blocked_by_issue_id);

CREATE TABLE labels (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    color TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX labels_company_name ON labels (company_id, name);

CREATE TABLE issue_labels (
    issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    label_id TEXT NOT NULL REFERENCES labels (id) ON DELETE CASCADE,
    PRIMARY KEY (issue_id, label_id)
);
CREATE INDEX issue_labels_label ON issue_labels (label_id);

CREATE TABLE issue_comments (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    author_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    author_user_id TEXT,
    author_type TEXT NOT NULL,
    created_by_run_id TEXT,
    body TEXT NOT NULL,
    deleted_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX issue_comments_issue ON issue_comments (issue_id, created_at);

CREATE TABLE issue_documents (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    doc_key TEXT NOT NULL,
    title TEXT,
    format TEXT NOT NULL,
    body TEXT NOT NULL,
    latest_revision_id TEXT NOT NULL,
    latest_revision_number BIGINT NOT NULL,
    created_by_agent_id TEXT,
    created_by_user_id TEXT,
    updated_by_agent_id TEXT,
    updated_by_user_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX issue_documents_key ON issue_documents (issue_id, doc_key);

CREATE TABLE issue_document_revisions (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    document_id TEXT NOT NULL REFERENCES issue_documents (id) ON DELETE CASCADE,
    revision_number BIGINT NOT NULL,
    title TEXT,
    format TEXT NOT NULL,
    body TEXT NOT NULL,
    change_summary TEXT,
    created_by_agent_id TEXT,
    created_by_user_id TEXT,
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX issue_document_revisions_number ON issue_document_revisions (document_id, revision_number);

CREATE TABLE activity_log (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    actor_type TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    action TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    agent_id TEXT,
    run_id TEXT,
    details TEXT NOT NULL DEFAULT '{}',
    created_at TEXT NOT NULL
);
CREATE INDEX activity_entity ON activity_log (entity_type, entity_id);
CREATE INDEX activity_company_id ON activity_log (company_id, id);
