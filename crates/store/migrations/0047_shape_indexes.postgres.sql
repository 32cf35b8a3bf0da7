-- A project's task count (upstream's taskCount on every project read) counts
-- its tasks through this index instead of scanning every task.
CREATE INDEX IF NOT EXISTS issues_project_idx ON issues (project_id);
-- A task's wake diagnostics read its wakes by task.
CREATE INDEX IF NOT EXISTS agent_wakeup_requests_issue ON agent_wakeup_requests (issue_id, created_at);
-- Upstream's responsibleUserId: the person answerable for a task, kept on the
-- row from its creation (its creator, else its parent's responsible person).
ALTER TABLE issues ADD COLUMN responsible_user_id TEXT;
-- Existing tasks: the creator, else the nearest ancestor's creator (a parent
-- chain is acyclic; the depth bound only guards a damaged one).
WITH RECURSIVE chain (id, user_id, depth) AS (
    SELECT id, created_by_user_id, 0 FROM issues WHERE created_by_user_id IS NOT NULL
    UNION ALL
    SELECT i.id, chain.user_id, chain.depth + 1 FROM issues i JOIN chain ON i.parent_id = chain.id
    WHERE i.created_by_user_id IS NULL AND chain.depth < 64
)
UPDATE issues SET responsible_user_id = chain.user_id FROM chain
WHERE chain.id = issues.id AND issues.responsible_user_id IS NULL;
