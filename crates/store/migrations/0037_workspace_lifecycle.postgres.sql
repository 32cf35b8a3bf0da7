-- Execution workspaces (issue 36), their lifecycle: every git or setup step
-- on a workspace is a recorded operation with its log (upstream's
-- `workspace_operations`); what a task changed against its base branch is
-- kept per workspace (ours); a workspace's disk use is measured; a company
-- bounds its workspaces' disk and keeps closed tasks' worktrees for a
-- retention period. A project workspace may be a git URL cloned into the
-- data dir, with a setup and a cleanup command. New tables and nullable
-- columns only: nothing is lost.
CREATE TABLE workspace_operations (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    execution_workspace_id UUID NOT NULL REFERENCES execution_workspaces (id) ON DELETE CASCADE,
    -- Kept when the run goes: the operation happened whatever became of it.
    heartbeat_run_id UUID,
    issue_id UUID,
    phase TEXT NOT NULL,
    command TEXT,
    cwd TEXT,
    status TEXT NOT NULL,
    exit_code BIGINT,
    log TEXT NOT NULL,
    log_bytes BIGINT NOT NULL,
    metadata JSONB NOT NULL,
    started_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX workspace_operations_workspace_idx ON workspace_operations (execution_workspace_id, created_at);
CREATE INDEX workspace_operations_run_idx ON workspace_operations (heartbeat_run_id);
CREATE TABLE workspace_task_changes (
    execution_workspace_id UUID PRIMARY KEY REFERENCES execution_workspaces (id) ON DELETE CASCADE,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    issue_id UUID NOT NULL,
    base_commit TEXT NOT NULL,
    head_commit TEXT NOT NULL,
    files_changed BIGINT NOT NULL,
    insertions BIGINT NOT NULL,
    deletions BIGINT NOT NULL,
    files JSONB NOT NULL,
    patch TEXT NOT NULL,
    truncated BOOLEAN NOT NULL,
    commits JSONB NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
ALTER TABLE execution_workspaces ADD COLUMN disk_bytes BIGINT;
ALTER TABLE execution_workspaces ADD COLUMN cleanup_reason TEXT;
ALTER TABLE project_workspaces ADD COLUMN repo_url TEXT;
ALTER TABLE project_workspaces ADD COLUMN setup_command TEXT;
ALTER TABLE project_workspaces ADD COLUMN cleanup_command TEXT;
ALTER TABLE projects ADD COLUMN execution_workspace_policy JSONB;
ALTER TABLE companies ADD COLUMN workspace_retention_days BIGINT;
ALTER TABLE companies ADD COLUMN workspace_disk_budget_mb BIGINT;
