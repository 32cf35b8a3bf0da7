-- Agent Chat (issue 41): a chat is a task with a conversation agent and
-- person (upstream's columns on the issue row), one per (company, agent,
-- person); a comment may record the session generation a `/new` started.
-- Nullable or defaulted columns and new indexes only: nothing is rewritten.
-- No key to agents: a chat outlives its agent as an ordinary task thread.
ALTER TABLE issues ADD COLUMN conversation_agent_id TEXT;
ALTER TABLE issues ADD COLUMN conversation_user_id TEXT;
ALTER TABLE issues ADD COLUMN conversation_state TEXT CHECK (conversation_state IN ('active', 'waiting'));
ALTER TABLE issues ADD COLUMN conversation_session_generation BIGINT NOT NULL DEFAULT 0;
ALTER TABLE issues ADD COLUMN conversation_boundary_comment_id TEXT;
CREATE UNIQUE INDEX issues_one_chat ON issues (company_id, conversation_agent_id, conversation_user_id)
    WHERE conversation_agent_id IS NOT NULL;
ALTER TABLE issue_comments ADD COLUMN conversation_session_generation BIGINT;
