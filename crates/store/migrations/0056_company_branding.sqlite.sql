-- Issue 40: a company's logo, its feedback data-sharing consent record and
-- who may resolve its agents' interaction cards (upstream's columns and
-- tables). A logo is an uploaded asset the company points at (one logo per
-- company, an asset is the logo of at most one). Existing companies get
-- upstream's defaults: no logo, no consent, an empty governance (every card
-- keeps the policy it asks for). A card records where its policy came from;
-- the cards made before this keep NULL, read as before (inherited when it
-- named no policy, and its own request). Nothing existing is rewritten.
ALTER TABLE companies ADD COLUMN interaction_resolver_governance TEXT NOT NULL DEFAULT '{}';
ALTER TABLE companies ADD COLUMN feedback_data_sharing_enabled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE companies ADD COLUMN feedback_data_sharing_consent_at TEXT;
ALTER TABLE companies ADD COLUMN feedback_data_sharing_consent_by_user_id TEXT;
ALTER TABLE companies ADD COLUMN feedback_data_sharing_terms_version TEXT;
CREATE TABLE assets (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    provider TEXT NOT NULL,
    object_key TEXT NOT NULL,
    content_type TEXT NOT NULL,
    byte_size BIGINT NOT NULL,
    sha256 TEXT NOT NULL,
    original_filename TEXT,
    created_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL,
    created_by_user_id TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX assets_company_object_key_uq ON assets (company_id, object_key);
CREATE INDEX assets_company_created_idx ON assets (company_id, created_at);
CREATE TABLE company_logos (
    company_id TEXT PRIMARY KEY REFERENCES companies (id) ON DELETE CASCADE,
    asset_id TEXT NOT NULL UNIQUE REFERENCES assets (id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
ALTER TABLE issue_thread_interactions ADD COLUMN resolver_policy_provenance TEXT
    CHECK (resolver_policy_provenance IN ('explicit', 'inherited'));
ALTER TABLE issue_thread_interactions ADD COLUMN effective_resolver_policy_source TEXT
    CHECK (effective_resolver_policy_source IN ('requested', 'company_cap'));
