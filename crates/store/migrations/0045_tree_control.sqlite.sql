-- Issue-tree control and monitors (issue 40): holds over a task's subtree
-- (a pause keeps the subtree's queued runs from starting until released),
-- the members each hold covered when it was made, a task's watchdog, and
-- the task's scheduled monitor (upstream's columns on the issue row). New
-- tables and nullable or defaulted columns only: nothing existing is rewritten.
CREATE TABLE issue_tree_holds (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    root_issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    mode TEXT NOT NULL CHECK (mode IN ('pause', 'resume', 'cancel', 'restore')),
    status TEXT NOT NULL CHECK (status IN ('active', 'released')),
    reason TEXT,
    release_policy TEXT,
    created_by_actor_type TEXT NOT NULL,
    created_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    created_by_run_id TEXT,
    released_at TEXT,
    released_by_actor_type TEXT,
    released_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    released_by_user_id TEXT,
    released_by_run_id TEXT,
    release_reason TEXT,
    release_metadata TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX issue_tree_holds_company_root_status_idx ON issue_tree_holds (company_id, root_issue_id, status);
CREATE TABLE issue_tree_hold_members (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    hold_id TEXT NOT NULL REFERENCES issue_tree_holds (id) ON DELETE CASCADE,
    issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    parent_issue_id TEXT,
    depth BIGINT NOT NULL DEFAULT 0,
    issue_identifier TEXT,
    issue_title TEXT NOT NULL,
    issue_status TEXT NOT NULL,
    assignee_agent_id TEXT,
    assignee_user_id TEXT,
    active_run_id TEXT,
    active_run_status TEXT,
    skipped INTEGER NOT NULL DEFAULT 0,
    skip_reason TEXT,
    created_at TEXT NOT NULL
);
CREATE UNIQUE INDEX issue_tree_hold_members_hold_issue_uq ON issue_tree_hold_members (hold_id, issue_id);
-- The claim's gate probes by task.
CREATE INDEX issue_tree_hold_members_issue_idx ON issue_tree_hold_members (issue_id, hold_id);
CREATE TABLE issue_watchdogs (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    watchdog_agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    instructions TEXT,
    status TEXT NOT NULL CHECK (status IN ('active', 'disabled')),
    watchdog_issue_id TEXT,
    last_triggered_at TEXT,
    last_completed_at TEXT,
    trigger_count BIGINT NOT NULL DEFAULT 0,
    created_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    created_by_run_id TEXT,
    updated_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    updated_by_user_id TEXT,
    updated_by_run_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX issue_watchdogs_company_issue_uq ON issue_watchdogs (company_id, issue_id);
CREATE INDEX issue_watchdogs_agent_idx ON issue_watchdogs (watchdog_agent_id);
ALTER TABLE issues ADD COLUMN execution_policy TEXT;
ALTER TABLE issues ADD COLUMN execution_state TEXT;
ALTER TABLE issues ADD COLUMN monitor_next_check_at TEXT;
ALTER TABLE issues ADD COLUMN monitor_wake_requested_at TEXT;
ALTER TABLE issues ADD COLUMN monitor_last_triggered_at TEXT;
ALTER TABLE issues ADD COLUMN monitor_attempt_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE issues ADD COLUMN monitor_notes TEXT;
ALTER TABLE issues ADD COLUMN monitor_scheduled_by TEXT;
-- The monitor's external reference: answered redacted, kept here for the wake.
ALTER TABLE issues ADD COLUMN monitor_external_ref TEXT;
CREATE INDEX issues_monitor_due_idx ON issues (monitor_next_check_at) WHERE monitor_next_check_at IS NOT NULL;
