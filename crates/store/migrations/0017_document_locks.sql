-- Upstream's document locks: the board freezes a document (a signed-off
-- plan) and every write to it is refused until it is unlocked. Existing
-- documents start unlocked.
ALTER TABLE issue_documents ADD COLUMN locked_at TEXT;
ALTER TABLE issue_documents ADD COLUMN locked_by_agent_id TEXT;
ALTER TABLE issue_documents ADD COLUMN locked_by_user_id TEXT;
