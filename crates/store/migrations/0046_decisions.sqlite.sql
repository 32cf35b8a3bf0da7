-- Decisions (issue 40): what an agent's issue-scoped run asks the board to
-- choose between, each option carrying the effects it has on issues when
-- chosen; bundles group a run's decisions; each executed effect is recorded
-- once. New tables only: nothing existing is rewritten.
CREATE TABLE decision_bundles (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    summary TEXT NOT NULL,
    origin_agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    origin_issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    origin_run_id TEXT NOT NULL REFERENCES heartbeat_runs (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL
);
CREATE INDEX decision_bundles_company_created_at_idx ON decision_bundles (company_id, created_at);
CREATE TABLE decisions (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    bundle_id TEXT REFERENCES decision_bundles (id) ON DELETE SET NULL,
    origin_agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    origin_issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    origin_run_id TEXT NOT NULL REFERENCES heartbeat_runs (id) ON DELETE CASCADE,
    rule_key TEXT,
    title TEXT NOT NULL,
    body TEXT NOT NULL,
    options TEXT NOT NULL,
    inputs TEXT,
    status TEXT NOT NULL,
    execution_status TEXT,
    chosen_option_id TEXT,
    input_values TEXT,
    decided_by_user_id TEXT,
    decided_at TEXT,
    expires_at TEXT NOT NULL,
    idempotency_key TEXT,
    signed_spec TEXT NOT NULL,
    target_snapshots TEXT NOT NULL,
    continuation_policy TEXT NOT NULL,
    metadata TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX decisions_company_status_expires_at_idx ON decisions (company_id, status, expires_at);
CREATE INDEX decisions_bundle_idx ON decisions (bundle_id);
CREATE INDEX decisions_origin_agent_status_idx ON decisions (origin_agent_id, status);
CREATE UNIQUE INDEX decisions_company_idempotency_uq ON decisions (company_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE TABLE decision_target_issues (
    decision_id TEXT NOT NULL REFERENCES decisions (id) ON DELETE CASCADE,
    issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    PRIMARY KEY (decision_id, issue_id)
);
CREATE INDEX decision_target_issues_issue_idx ON decision_target_issues (issue_id);
CREATE TABLE decision_effect_executions (
    id TEXT PRIMARY KEY,
    decision_id TEXT NOT NULL REFERENCES decisions (id) ON DELETE CASCADE,
    effect_index BIGINT NOT NULL,
    effect_type TEXT NOT NULL,
    target_issue_id TEXT NOT NULL REFERENCES issues (id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    result TEXT,
    error TEXT,
    activity_log_id TEXT,
    executed_at TEXT
);
CREATE UNIQUE INDEX decision_effect_executions_decision_effect_uq ON decision_effect_executions (decision_id, effect_index);
