-- Decisions (issue 40): what an agent's issue-scoped run asks the board to
-- choose between, each option carrying the effects it has on issues when
-- chosen; bundles group a run's decisions; each executed effect is recorded
-- once. New tables only: nothing existing is rewritten.
CREATE TABLE decision_bundles (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    summary TEXT NOT NULL,
    origin_agent_id UUID NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    origin_issue_id UUID NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    origin_run_id UUID NOT NULL REFERENCES heartbeat_runs (id) ON DELETE CASCADE,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX decision_bundles_company_created_at_idx ON decision_bundles (company_id, created_at);
CREATE TABLE decisions (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    bundle_id UUID REFERENCES decision_bundles (id) ON DELETE SET NULL,
    origin_agent_id UUID NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    origin_issue_id UUID NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    origin_run_id UUID NOT NULL REFERENCES heartbeat_runs (id) ON DELETE CASCADE,
    rule_key TEXT,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    options JSONB NOT NULL,
    inputs JSONB,
    status TEXT NOT NULL,
    execution_status TEXT,
    chosen_option_id TEXT,
    input_values JSONB,
    decided_by_user_id TEXT,
    decided_at TIMESTAMPTZ,
    expires_at TIMESTAMPTZ NOT NULL,
    idempotency_key TEXT,
    signed_spec TEXT NOT NULL,
    target_snapshots JSONB NOT NULL,
    continuation_policy TEXT NOT NULL,
    metadata JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX decisions_company_status_expires_at_idx ON decisions (company_id, status, expires_at);
CREATE INDEX decisions_bundle_idx ON decisions (bundle_id);
CREATE INDEX decisions_origin_agent_status_idx ON decisions (origin_agent_id, status);
CREATE UNIQUE INDEX decisions_company_idempotency_uq ON decisions (company_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE TABLE decision_target_issues (
    decision_id UUID NOT NULL REFERENCES decisions (id) ON DELETE CASCADE,
    issue_id UUID NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    PRIMARY KEY (decision_id, issue_id)
);
CREATE INDEX decision_target_issues_issue_idx ON decision_target_issues (issue_id);
CREATE TABLE decision_effect_executions (
    id UUID PRIMARY KEY,
    decision_id UUID NOT NULL REFERENCES decisions (id) ON DELETE CASCADE,
    effect_index BIGINT NOT NULL,
    effect_type TEXT NOT NULL,
    target_issue_id UUID NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    result JSONB,
    error TEXT,
    activity_log_id TEXT,
    executed_at TIMESTAMPTZ
);
CREATE UNIQUE INDEX decision_effect_executions_decision_effect_uq ON decision_effect_executions (decision_id, effect_index);
