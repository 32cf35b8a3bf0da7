-- People on an authenticated instance: board users who sign in with a
-- password, their sessions, their roles in companies, invites that bring
-- them in, and API keys for their scripts. Secrets are stored as SHA-256
-- (tokens) or argon2id (passwords); nothing here can sign anyone in if read.
-- User ids are text like every person's id (`local-board` included).
CREATE TABLE board_users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    name TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    is_instance_admin BIGINT NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX board_users_email ON board_users (email);

CREATE TABLE board_sessions (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES board_users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    revoked_at TEXT,
    user_agent TEXT
);
CREATE UNIQUE INDEX board_sessions_token ON board_sessions (token_hash);
CREATE INDEX board_sessions_user ON board_sessions (user_id);

CREATE TABLE company_memberships (
    id TEXT PRIMARY KEY,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES board_users (id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX company_memberships_pair ON company_memberships (company_id, user_id);
CREATE INDEX company_memberships_user ON company_memberships (user_id);

-- An invite with no company is the bootstrap invite of the first instance
-- administrator.
CREATE TABLE invites (
    id TEXT PRIMARY KEY,
    company_id TEXT REFERENCES companies (id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    instance_admin BIGINT NOT NULL DEFAULT 0,
    token_hash TEXT NOT NULL,
    created_by_user_id TEXT,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL,
    accepted_at TEXT,
    accepted_by_user_id TEXT,
    revoked_at TEXT
);
CREATE UNIQUE INDEX invites_token ON invites (token_hash);
CREATE INDEX invites_company ON invites (company_id, created_at);

CREATE TABLE board_api_keys (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES board_users (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_used_at TEXT,
    expires_at TEXT,
    revoked_at TEXT
);
CREATE UNIQUE INDEX board_api_keys_hash ON board_api_keys (key_hash);
CREATE INDEX board_api_keys_user ON board_api_keys (user_id);

-- The companies a key may act in; a key with none acts wherever its user may.
CREATE TABLE board_api_key_companies (
    key_id TEXT NOT NULL REFERENCES board_api_keys (id) ON DELETE CASCADE,
    company_id TEXT NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    PRIMARY KEY (key_id, company_id)
);
