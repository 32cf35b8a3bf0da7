-- Agent-side secrets (issue 40): what an agent proposes (a secret with its
-- value sealed like a company secret's, or a binding of a secret to an
-- agent) and the bindings the board granted. A proposal's sealed value is
-- scrubbed once it is resolved. New tables only: nothing is rewritten.
CREATE TABLE company_secret_proposals (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    proposed_name TEXT,
    proposed_key TEXT,
    proposed_description TEXT,
    justification TEXT NOT NULL,
    value_nonce TEXT,
    value_ciphertext TEXT,
    secret_id UUID REFERENCES company_secrets (id) ON DELETE SET NULL,
    secret_proposal_id UUID REFERENCES company_secret_proposals (id) ON DELETE SET NULL,
    target_id UUID REFERENCES agents (id) ON DELETE CASCADE,
    config_path TEXT,
    proposed_by_agent_id UUID NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    origin_issue_id UUID REFERENCES issues (id) ON DELETE SET NULL,
    origin_run_id UUID REFERENCES heartbeat_runs (id) ON DELETE SET NULL,
    resolved_by_user_id TEXT,
    resolved_at TIMESTAMPTZ,
    resolution_reason TEXT,
    created_secret_id UUID REFERENCES company_secrets (id) ON DELETE SET NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX company_secret_proposals_company_status_idx ON company_secret_proposals (company_id, status);
CREATE INDEX company_secret_proposals_proposer_idx ON company_secret_proposals (proposed_by_agent_id, status);
CREATE TABLE company_secret_bindings (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    secret_id UUID NOT NULL REFERENCES company_secrets (id) ON DELETE CASCADE,
    agent_id UUID NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    config_path TEXT NOT NULL,
    version_selector TEXT NOT NULL DEFAULT 'latest',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX company_secret_bindings_agent_path_uq ON company_secret_bindings (agent_id, config_path);
CREATE INDEX company_secret_bindings_secret_idx ON company_secret_bindings (secret_id);
