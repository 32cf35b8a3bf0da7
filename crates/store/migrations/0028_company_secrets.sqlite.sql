-- Company secrets, sealed at rest (AES-256-GCM under the instance's master
-- key, which is never in the database: secrets/master.key in the data dir or
-- PAPERCLIP_SECRETS_MASTER_KEY). A version's ciphertext is bound to its
-- secret id and version number by the cipher's associated data, so a row
-- copied elsewhere does not open. Nonce and ciphertext are base64 text.
-- Key and name are unique per company, as upstream's company secrets are.
CREATE TABLE company_secrets (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    provider TEXT NOT NULL DEFAULT 'local_encrypted',
    status TEXT NOT NULL DEFAULT 'active',
    latest_version BIGINT NOT NULL,
    last_rotated_at TEXT,
    created_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX company_secrets_company_name_uq ON company_secrets (company_id, name);
CREATE UNIQUE INDEX company_secrets_company_key_uq ON company_secrets (company_id, key);

CREATE TABLE company_secret_versions (
    secret_id TEXT NOT NULL REFERENCES company_secrets (id) ON DELETE CASCADE,
    version BIGINT NOT NULL,
    nonce TEXT NOT NULL,
    ciphertext TEXT NOT NULL,
    created_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    created_at TEXT NOT NULL,
    PRIMARY KEY (secret_id, version)
);
