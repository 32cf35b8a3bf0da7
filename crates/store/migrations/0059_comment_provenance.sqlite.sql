-- A comment's provenance, as the original keeps it: the person an agent
-- acted for, the agent run a board-written comment came from (derived, by
-- its run id), how the board's thread presents it and the structured detail
-- beside it, and who deleted it. Existing comments get nulls, except that a
-- comment the local board (or no known person) wrote naming an agent's run is attributed to that
-- run's agent here, as new ones are when written.
ALTER TABLE issue_comments ADD COLUMN on_behalf_of_user_id TEXT;
ALTER TABLE issue_comments ADD COLUMN derived_author_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL;
ALTER TABLE issue_comments ADD COLUMN derived_created_by_run_id TEXT REFERENCES heartbeat_runs (id) ON DELETE SET NULL;
ALTER TABLE issue_comments ADD COLUMN derived_author_source TEXT;
ALTER TABLE issue_comments ADD COLUMN presentation TEXT;
ALTER TABLE issue_comments ADD COLUMN metadata TEXT;
ALTER TABLE issue_comments ADD COLUMN deleted_by_type TEXT;
ALTER TABLE issue_comments ADD COLUMN deleted_by_agent_id TEXT REFERENCES agents (id) ON DELETE SET NULL;
ALTER TABLE issue_comments ADD COLUMN deleted_by_user_id TEXT;
ALTER TABLE issue_comments ADD COLUMN deleted_by_run_id TEXT REFERENCES heartbeat_runs (id) ON DELETE SET NULL;
-- Deleting an agent deletes its runs, each of which nulls these columns
-- where they name it: without an index that is a scan of every comment per
-- run. Few comments name a run here, so the indexes are small.
CREATE INDEX issue_comments_derived_run ON issue_comments (derived_created_by_run_id)
    WHERE derived_created_by_run_id IS NOT NULL;
CREATE INDEX issue_comments_deleted_by_run ON issue_comments (deleted_by_run_id)
    WHERE deleted_by_run_id IS NOT NULL;
UPDATE issue_comments
SET derived_author_agent_id = (SELECT r.agent_id FROM heartbeat_runs r
        WHERE r.id = issue_comments.created_by_run_id AND r.company_id = issue_comments.company_id),
    derived_created_by_run_id = created_by_run_id,
    derived_author_source = 'run_id'
WHERE author_agent_id IS NULL AND author_user_id IS NOT NULL
  AND (author_user_id = 'local-board'
       OR NOT EXISTS (SELECT 1 FROM board_users u WHERE u.id = issue_comments.author_user_id))
  AND created_by_run_id IS NOT NULL
  AND EXISTS (SELECT 1 FROM heartbeat_runs r
        WHERE r.id = issue_comments.created_by_run_id AND r.company_id = issue_comments.company_id);
