-- Issue-tree control and monitors (issue 40): holds over a task's subtree
-- (a pause keeps the subtree's queued runs from starting until released),
-- the members each hold covered when it was made, a task's watchdog, and
-- the task's scheduled monitor (upstream's columns on the issue row). New
-- tables and nullable or defaulted columns only: nothing existing is rewritten.
CREATE TABLE issue_tree_holds (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    root_issue_id UUID NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    mode TEXT NOT NULL CHECK (mode IN ('pause', 'resume', 'cancel', 'restore')),
    status TEXT NOT NULL CHECK (status IN ('active', 'released')),
    reason TEXT,
    release_policy JSONB,
    created_by_actor_type TEXT NOT NULL,
    created_by_agent_id UUID REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    created_by_run_id UUID,
    released_at TIMESTAMPTZ,
    released_by_actor_type TEXT,
    released_by_agent_id UUID REFERENCES agents (id) ON DELETE SET NULL,
    released_by_user_id TEXT,
    released_by_run_id UUID,
    release_reason TEXT,
    release_metadata JSONB,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX issue_tree_holds_company_root_status_idx ON issue_tree_holds (company_id, root_issue_id, status);
CREATE TABLE issue_tree_hold_members (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    hold_id UUID NOT NULL REFERENCES issue_tree_holds (id) ON DELETE CASCADE,
    issue_id UUID NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    parent_issue_id UUID,
    depth BIGINT NOT NULL DEFAULT 0,
    issue_identifier TEXT,
    issue_title TEXT NOT NULL,
    issue_status TEXT NOT NULL,
    assignee_agent_id UUID,
    assignee_user_id TEXT,
    active_run_id UUID,
    active_run_status TEXT,
    skipped BOOLEAN NOT NULL DEFAULT FALSE,
    skip_reason TEXT,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX issue_tree_hold_members_hold_issue_uq ON issue_tree_hold_members (hold_id, issue_id);
-- The claim's gate probes by task.
CREATE INDEX issue_tree_hold_members_issue_idx ON issue_tree_hold_members (issue_id, hold_id);
CREATE TABLE issue_watchdogs (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    issue_id UUID NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    watchdog_agent_id UUID NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    instructions TEXT,
    status TEXT NOT NULL CHECK (status IN ('active', 'disabled')),
    watchdog_issue_id UUID,
    last_triggered_at TIMESTAMPTZ,
    last_completed_at TIMESTAMPTZ,
    trigger_count BIGINT NOT NULL DEFAULT 0,
    created_by_agent_id UUID REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    created_by_run_id UUID,
    updated_by_agent_id UUID REFERENCES agents (id) ON DELETE SET NULL,
    updated_by_user_id TEXT,
    updated_by_run_id UUID,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX issue_watchdogs_company_issue_uq ON issue_watchdogs (company_id, issue_id);
CREATE INDEX issue_watchdogs_agent_idx ON issue_watchdogs (watchdog_agent_id);
ALTER TABLE issues ADD COLUMN execution_policy JSONB;
ALTER TABLE issues ADD COLUMN execution_state JSONB;
ALTER TABLE issues ADD COLUMN monitor_next_check_at TIMESTAMPTZ;
ALTER TABLE issues ADD COLUMN monitor_wake_requested_at TIMESTAMPTZ;
ALTER TABLE issues ADD COLUMN monitor_last_triggered_at TIMESTAMPTZ;
ALTER TABLE issues ADD COLUMN monitor_attempt_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE issues ADD COLUMN monitor_notes TEXT;
ALTER TABLE issues ADD COLUMN monitor_scheduled_by TEXT;
-- The monitor's external reference: answered redacted, kept here for the wake.
ALTER TABLE issues ADD COLUMN monitor_external_ref TEXT;
CREATE INDEX issues_monitor_due_idx ON issues (monitor_next_check_at) WHERE monitor_next_check_at IS NOT NULL;
