-- The key a board API key was made with, if any (a session makes keys with
-- none). A key made by a key lives only while every key above it does: it is
-- revoked with its parent and refused once any of them is revoked or expired.
-- Existing keys were made by sessions (the column is empty): nothing is lost.
ALTER TABLE board_api_keys ADD COLUMN parent_key_id TEXT REFERENCES board_api_keys (id) ON DELETE CASCADE;
CREATE INDEX board_api_keys_parent ON board_api_keys (parent_key_id);
