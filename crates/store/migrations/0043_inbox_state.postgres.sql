-- A person's (or agent's) own state of an issue in their inbox (issue 40):
-- when they last read it, and whether they archived it from "Mine". One row
-- per (company, issue, user); later activity is compared to these times.
-- New tables only: nothing existing is rewritten.
CREATE TABLE issue_read_states (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    issue_id UUID NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL,
    last_read_at TIMESTAMPTZ NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX issue_read_states_company_issue_user_uq ON issue_read_states (company_id, issue_id, user_id);
CREATE INDEX issue_read_states_company_user_idx ON issue_read_states (company_id, user_id);
CREATE TABLE issue_inbox_archives (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    issue_id UUID NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL,
    archived_by_actor_type TEXT NOT NULL CHECK (archived_by_actor_type IN ('user', 'agent')),
    archived_by_agent_id UUID REFERENCES agents (id) ON DELETE SET NULL,
    archived_by_run_id UUID,
    archived_at TIMESTAMPTZ NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX issue_inbox_archives_company_issue_user_uq ON issue_inbox_archives (company_id, issue_id, user_id);
CREATE INDEX issue_inbox_archives_company_user_idx ON issue_inbox_archives (company_id, user_id);
