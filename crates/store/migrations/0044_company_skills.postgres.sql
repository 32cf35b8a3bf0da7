-- The company skills library (issue 40), as upstream keeps it: a skill row
-- (what the board lists) and its immutable versions, each with every file's
-- content, so any instance materialises a run's skills from the database
-- alone and an edit never changes what a running agent reads. An agent's
-- chosen skills stay where upstream keeps them (adapter_config's
-- paperclipSkillSync). New tables only: nothing is rewritten.
CREATE TABLE company_skills (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    slug TEXT NOT NULL,
    name TEXT NOT NULL,
    description TEXT,
    source_type TEXT NOT NULL,
    source_locator TEXT,
    source_ref TEXT,
    categories JSONB NOT NULL,
    metadata JSONB,
    current_version_id UUID,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX company_skills_company_key_uq ON company_skills (company_id, key);
CREATE UNIQUE INDEX company_skills_company_slug_uq ON company_skills (company_id, slug);
CREATE TABLE company_skill_versions (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    company_skill_id UUID NOT NULL REFERENCES company_skills (id) ON DELETE CASCADE,
    revision_number BIGINT NOT NULL,
    label TEXT,
    files JSONB NOT NULL,
    author_agent_id UUID,
    author_user_id TEXT,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX company_skill_versions_revision_uq ON company_skill_versions (company_skill_id, revision_number);
