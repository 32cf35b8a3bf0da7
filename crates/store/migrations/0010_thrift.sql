-- Spending nothing for nothing.
--
-- issue_wake_loops: the loop breaker's count of agent-caused wakes on one
-- task since its last progress (a status change or a board comment resets
-- it by deleting the row). held_at is set when the count passes the limit:
-- from then on agent-caused wakes on the task are held (recorded, not run)
-- until the board releases it.
CREATE TABLE issue_wake_loops (
    issue_id TEXT PRIMARY KEY REFERENCES issues (id) ON DELETE CASCADE,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    window_started_at TEXT NOT NULL,
    wake_count BIGINT NOT NULL DEFAULT 0,
    held_at TEXT,
    updated_at TEXT NOT NULL
);
CREATE INDEX issue_wake_loops_held ON issue_wake_loops (company_id, held_at);
-- usage_limited_until: the provider refused the agent's last run for a usage
-- limit that lifts then; its queued runs wait for it instead of failing again.
ALTER TABLE agents ADD COLUMN usage_limited_until TEXT;
-- An agent's wakes newest first, and "what happened since its last run".
CREATE INDEX agent_wakeup_requests_agent_created ON agent_wakeup_requests (agent_id, created_at);
-- The dashboard's "wakes skipped and why" over the last day.
CREATE INDEX agent_wakeup_requests_company_created ON agent_wakeup_requests (company_id, created_at);
-- Tasks finished this month, for spend per finished task.
CREATE INDEX issues_company_completed ON issues (company_id, completed_at);
-- One task's or one agent's history, newest first, at scale: the company
-- prefix and the id order in one index, so the planner does not walk the
-- company's whole history by id (4 s for one task's activity at 1.3M rows,
-- 260 ms for its runs among 100,000).
CREATE INDEX activity_company_entity ON activity_log (company_id, entity_type, entity_id, id);
CREATE INDEX heartbeat_runs_company_issue ON heartbeat_runs (company_id, issue_id, id);
CREATE INDEX heartbeat_runs_company_agent ON heartbeat_runs (company_id, agent_id, id);
CREATE INDEX heartbeat_runs_company_status ON heartbeat_runs (company_id, status, id);
