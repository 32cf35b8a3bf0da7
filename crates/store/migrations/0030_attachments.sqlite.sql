-- Issue attachments (upstream's issue_attachments over its assets, kept as
-- one row: the asset id is the stored object's own id) and work products.
-- Rows go with their company and issue; the stored bytes live under the
-- data dir at `{company_id}/issues/{issue_id}/...`, so a deleted issue's or
-- company's files are one directory the server removes with it.
CREATE TABLE issue_attachments (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    issue_comment_id TEXT REFERENCES issue_comments (id) ON DELETE SET NULL,
    originating_run_id TEXT REFERENCES heartbeat_runs (id) ON DELETE SET NULL,
    asset_id TEXT NOT NULL,
    provider TEXT NOT NULL,
    object_key TEXT NOT NULL,
    content_type TEXT NOT NULL,
    byte_size BIGINT NOT NULL,
    sha256 TEXT NOT NULL,
    original_filename TEXT,
    created_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX issue_attachments_issue ON issue_attachments (issue_id, created_at);

CREATE TABLE issue_work_products (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    project_id TEXT REFERENCES projects (id) ON DELETE SET NULL,
    issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    execution_workspace_id TEXT,
    runtime_service_id TEXT,
    type TEXT NOT NULL,
    provider TEXT NOT NULL,
    external_id TEXT,
    title TEXT NOT NULL,
    url TEXT,
    status TEXT NOT NULL,
    review_state TEXT NOT NULL,
    is_primary BIGINT NOT NULL DEFAULT 0,
    health_status TEXT NOT NULL,
    summary TEXT,
    metadata TEXT,
    created_by_run_id TEXT REFERENCES heartbeat_runs (id) ON DELETE SET NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX issue_work_products_issue ON issue_work_products (issue_id, updated_at);
CREATE INDEX issue_work_products_company ON issue_work_products (company_id, created_at);
