-- People on an authenticated instance: board users who sign in with a
-- password, their sessions, their roles in companies, invites that bring
-- them in, and API keys for their scripts. Secrets are stored as SHA-256
-- (tokens) or argon2id (passwords); nothing here can sign anyone in if read.
-- User ids are text like every person's id (`local-board` included); the
-- other ids are uuid, as everywhere on Postgres.
CREATE TABLE board_users (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL,
    name TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    is_instance_admin BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX board_users_email ON board_users (email);

CREATE TABLE board_sessions (
    id UUID PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES board_users (id) ON DELETE CASCADE,
    token_hash TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    last_seen_at TIMESTAMPTZ NOT NULL,
    revoked_at TIMESTAMPTZ,
    user_agent TEXT
);
CREATE UNIQUE INDEX board_sessions_token ON board_sessions (token_hash);
CREATE INDEX board_sessions_user ON board_sessions (user_id);

CREATE TABLE company_memberships (
    id UUID PRIMARY KEY,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    user_id TEXT NOT NULL REFERENCES board_users (id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'active',
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX company_memberships_pair ON company_memberships (company_id, user_id);
CREATE INDEX company_memberships_user ON company_memberships (user_id);

-- An invite with no company is the bootstrap invite of the first instance
-- administrator.
CREATE TABLE invites (
    id UUID PRIMARY KEY,
    company_id UUID REFERENCES companies (id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    instance_admin BOOLEAN NOT NULL DEFAULT FALSE,
    token_hash TEXT NOT NULL,
    created_by_user_id TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    accepted_at TIMESTAMPTZ,
    accepted_by_user_id TEXT,
    revoked_at TIMESTAMPTZ
);
CREATE UNIQUE INDEX invites_token ON invites (token_hash);
CREATE INDEX invites_company ON invites (company_id, created_at);

CREATE TABLE board_api_keys (
    id UUID PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES board_users (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    key_hash TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    last_used_at TIMESTAMPTZ,
    expires_at TIMESTAMPTZ,
    revoked_at TIMESTAMPTZ
);
CREATE UNIQUE INDEX board_api_keys_hash ON board_api_keys (key_hash);
CREATE INDEX board_api_keys_user ON board_api_keys (user_id);

-- The companies a key may act in; a key with none acts wherever its user may.
CREATE TABLE board_api_key_companies (
    key_id UUID NOT NULL REFERENCES board_api_keys (id) ON DELETE CASCADE,
    company_id UUID NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    PRIMARY KEY (key_id, company_id)
);

-- A company deleted with a task of two or more comments: the cascade removes
-- the comments after the task, and each asks for the task's search row to be
-- rebuilt. The second update touches a row this transaction already changed,
-- so Postgres checks its foreign key again, against a task that is gone, and
-- the deletion failed. A task that is gone has nothing to rebuild.
CREATE OR REPLACE FUNCTION task_search_rebuild(task UUID) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM issues WHERE id = task) THEN
        RETURN;
    END IF;
    PERFORM 1 FROM task_search WHERE issue_id = task FOR UPDATE;
    UPDATE task_search SET words = COALESCE(task_search_words(task), words) WHERE issue_id = task;
END
$$;
