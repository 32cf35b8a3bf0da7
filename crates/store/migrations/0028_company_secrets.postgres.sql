-- Company secrets, sealed at rest (AES-256-GCM under the instance's master
-- key, which is never in the database: secrets/master.key in the data dir or
-- PAPERCLIP_SECRETS_MASTER_KEY). A version's ciphertext is bound to its
-- secret id and version number by the cipher's associated data, so a row
-- copied elsewhere does not open. Nonce and ciphertext are base64 text;
-- ids are uuid and times timestamptz, as migrations 26 and 27 made the rest.
-- Key and name are unique per company, as upstream's company secrets are.
CREATE TABLE company_secrets (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    provider TEXT NOT NULL DEFAULT 'local_encrypted',
    status TEXT NOT NULL DEFAULT 'active',
    latest_version BIGINT NOT NULL,
    last_rotated_at TIMESTAMPTZ,
    created_by_agent_id UUID REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX company_secrets_company_name_uq ON company_secrets (company_id, name);
CREATE UNIQUE INDEX company_secrets_company_key_uq ON company_secrets (company_id, key);

CREATE TABLE company_secret_versions (
    secret_id UUID NOT NULL REFERENCES company_secrets (id) ON DELETE CASCADE,
    version BIGINT NOT NULL,
    nonce TEXT NOT NULL,
    ciphertext TEXT NOT NULL,
    created_by_agent_id UUID REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (secret_id, version)
);
