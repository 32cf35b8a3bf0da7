-- Indexes for a company of a million tasks. A filtered task list (one
-- assignee, one project, one parent, one status) reads its page newest
-- first straight from the index of the filter instead of walking the
-- company's whole history; the dashboard's 14-day run chart reads its
-- window only.
CREATE INDEX issues_company_assignee_number ON issues (company_id, assignee_agent_id, issue_number);
CREATE INDEX issues_company_project_number ON issues (company_id, project_id, issue_number);
CREATE INDEX issues_company_parent_number ON issues (company_id, parent_id, issue_number);
CREATE INDEX issues_company_status_number ON issues (company_id, status, issue_number);
DROP INDEX issues_company_status;
CREATE INDEX heartbeat_runs_company_created ON heartbeat_runs (company_id, created_at);
-- A month's spend (company, agent) is summed from these indexes alone,
-- without reading the cost rows.
CREATE INDEX cost_events_company_time_cents ON cost_events (company_id, occurred_at, cost_cents);
DROP INDEX cost_events_company_time;
CREATE INDEX cost_events_agent_time_cents ON cost_events (agent_id, occurred_at, cost_cents);
DROP INDEX cost_events_agent_time;
