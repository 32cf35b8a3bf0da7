-- Web Push (issue 37): a person's subscriptions, one per browser or device
-- (the endpoint is the push service's URL for it, so it is unique), what
-- they want to hear about, and the action links already used (a link in a
-- notification acts once). User ids are text like every person's id
-- (`local-board` included, which has no board_users row: no key to it);
-- ids are uuid, times timestamptz and flags boolean, as migrations 25 to 27
-- made the rest. New tables only: nothing existing changes.
CREATE TABLE push_subscriptions (
    id UUID PRIMARY KEY,
    user_id TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    p256dh TEXT NOT NULL,
    auth TEXT NOT NULL,
    user_agent TEXT,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    last_sent_at TIMESTAMPTZ
);
CREATE UNIQUE INDEX push_subscriptions_endpoint ON push_subscriptions (endpoint);
CREATE INDEX push_subscriptions_user ON push_subscriptions (user_id);

-- No row: every kind on.
CREATE TABLE push_preferences (
    user_id TEXT PRIMARY KEY,
    questions BOOLEAN NOT NULL DEFAULT TRUE,
    approvals BOOLEAN NOT NULL DEFAULT TRUE,
    failed_runs BOOLEAN NOT NULL DEFAULT TRUE,
    budget_stops BOOLEAN NOT NULL DEFAULT TRUE,
    updated_at TIMESTAMPTZ NOT NULL
);

-- A used link's id; kept until the link would have expired anyway.
CREATE TABLE push_action_uses (
    id UUID PRIMARY KEY,
    user_id TEXT NOT NULL,
    used_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX push_action_uses_expiry ON push_action_uses (expires_at);
