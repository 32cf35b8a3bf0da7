-- Agent-side secrets (issue 40): what an agent proposes (a secret with its
-- value sealed like a company secret's, or a binding of a secret to an
-- agent) and the bindings the board granted. A proposal's sealed value is
-- scrubbed once it is resolved. New tables only: nothing is rewritten.
CREATE TABLE company_secret_proposals (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    proposed_name TEXT,
    proposed_key TEXT,
    proposed_description TEXT,
    justification TEXT NOT NULL,
    value_nonce TEXT,
    value_ciphertext TEXT,
    secret_id TEXT REFERENCES company_secrets (id) ON DELETE SET NULL,
    secret_proposal_id TEXT REFERENCES company_secret_proposals (id) ON DELETE SET NULL,
    target_id TEXT REFERENCES agents (id) ON DELETE CASCADE,
    config_path TEXT,
    proposed_by_agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    origin_issue_id TEXT REFERENCES issues (id) ON DELETE SET NULL,
    origin_run_id TEXT REFERENCES heartbeat_runs (id) ON DELETE SET NULL,
    resolved_by_user_id TEXT,
    resolved_at TEXT,
    resolution_reason TEXT,
    created_secret_id TEXT REFERENCES company_secrets (id) ON DELETE SET NULL,
    expires_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX company_secret_proposals_company_status_idx ON company_secret_proposals (company_id, status);
CREATE INDEX company_secret_proposals_proposer_idx ON company_secret_proposals (proposed_by_agent_id, status);
CREATE TABLE company_secret_bindings (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    secret_id TEXT NOT NULL REFERENCES company_secrets (id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    config_path TEXT NOT NULL,
    version_selector TEXT NOT NULL DEFAULT 'latest',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX company_secret_bindings_agent_path_uq ON company_secret_bindings (agent_id, config_path);
CREATE INDEX company_secret_bindings_secret_idx ON company_secret_bindings (secret_id);
