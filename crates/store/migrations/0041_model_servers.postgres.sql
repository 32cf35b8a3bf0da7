-- Local model servers a company's agents can run on (issue 39): Ollama or an
-- OpenAI-compatible endpoint, by base URL. The API key is a company secret
-- (sealed like the others); a price is micro-dollars per million tokens,
-- zero unless the board set one. A new table only: nothing is rewritten.
CREATE TABLE model_servers (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    base_url TEXT NOT NULL,
    provider_key TEXT NOT NULL,
    api_key_secret_id UUID REFERENCES company_secrets (id) ON DELETE SET NULL,
    input_micros_per_mtok BIGINT NOT NULL DEFAULT 0,
    output_micros_per_mtok BIGINT NOT NULL DEFAULT 0,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX model_servers_company_name_uq ON model_servers (company_id, name);
CREATE UNIQUE INDEX model_servers_company_provider_uq ON model_servers (company_id, provider_key);
