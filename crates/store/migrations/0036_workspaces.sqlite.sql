-- Execution workspaces (issue 36), first slice. A project declares its
-- codebase (a local git repository) as a project workspace; a task of such
-- a project runs in its own git worktree, recorded as an execution
-- workspace (one per task); what each run changed there is recorded per
-- run. New tables only: nothing existing changes, so nothing is lost.
CREATE TABLE project_workspaces (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    source_type TEXT NOT NULL,
    cwd TEXT,
    repo_ref TEXT,
    default_ref TEXT,
    is_primary BIGINT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX project_workspaces_project_idx ON project_workspaces (project_id, created_at);
CREATE TABLE execution_workspaces (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    -- Kept when the project workspace goes (the worktree and its branch
    -- are still on disk and still the task's).
    project_workspace_id TEXT,
    source_issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    mode TEXT NOT NULL,
    strategy_type TEXT NOT NULL,
    name TEXT NOT NULL,
    status TEXT NOT NULL,
    cwd TEXT NOT NULL,
    base_ref TEXT NOT NULL,
    branch_name TEXT NOT NULL,
    provider_type TEXT NOT NULL,
    provider_ref TEXT NOT NULL,
    last_used_at TEXT NOT NULL,
    opened_at TEXT NOT NULL,
    closed_at TEXT,
    metadata TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
-- Two tasks never share a worktree, and one task has one open workspace:
-- concurrent first runs of a task cannot make two.
CREATE UNIQUE INDEX execution_workspaces_open_issue_uq ON execution_workspaces (source_issue_id)
    WHERE closed_at IS NULL;
CREATE INDEX execution_workspaces_company_idx ON execution_workspaces (company_id, created_at);
CREATE TABLE run_workspace_changes (
    run_id TEXT PRIMARY KEY REFERENCES heartbeat_runs (id) ON DELETE CASCADE,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    execution_workspace_id TEXT NOT NULL REFERENCES execution_workspaces (id) ON DELETE CASCADE,
    issue_id TEXT NOT NULL,
    from_commit TEXT NOT NULL,
    files_changed BIGINT NOT NULL,
    insertions BIGINT NOT NULL,
    deletions BIGINT NOT NULL,
    files TEXT NOT NULL,
    patch TEXT NOT NULL,
    truncated BIGINT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX run_workspace_changes_workspace_idx ON run_workspace_changes (execution_workspace_id, created_at);
