-- Issue-thread interactions: cards an agent puts in a task's thread when it
-- needs a person (questions, confirmations, plan approvals, suggested tasks,
-- verdicts). `delivered_run_id` is the run whose prompt carried the card's
-- resolution to the agent: set once, so an answer reaches the agent once
-- however its wakes were coalesced or a restart came between.
CREATE TABLE issue_thread_interactions (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    issue_id UUID NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    continuation_policy TEXT NOT NULL,
    requested_resolver_policy TEXT,
    effective_resolver_policy TEXT NOT NULL,
    idempotency_key TEXT,
    source_comment_id UUID,
    source_run_id UUID,
    addressee_agent_id UUID REFERENCES agents (id) ON DELETE SET NULL,
    addressee_user_id TEXT,
    title TEXT,
    summary TEXT,
    payload JSONB NOT NULL,
    result JSONB,
    created_by_agent_id UUID REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    resolved_by_agent_id UUID REFERENCES agents (id) ON DELETE SET NULL,
    resolved_by_run_id UUID,
    resolved_by_user_id TEXT,
    delivered_run_id UUID,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    resolved_at TIMESTAMPTZ
);
CREATE INDEX issue_thread_interactions_issue_idx ON issue_thread_interactions (issue_id, created_at, id);
CREATE UNIQUE INDEX issue_thread_interactions_idem_uq ON issue_thread_interactions (issue_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX issue_thread_interactions_pending_idx ON issue_thread_interactions (company_id, created_at)
    WHERE status = 'pending';
