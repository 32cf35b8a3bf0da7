-- One search index per task, holding its comments with it. Migration 7 kept
-- tasks and comments in two indexes, so a common word had to be matched in
-- both and joined back to tasks before a page could be chosen (a million
-- tasks: a page ~100 ms, a count of the matches ~200 ms). Keyed by the task's
-- rowid, a page is now read one number range at a time, and a count walks
-- the matches themselves.
--
-- Contentless (`content=''`): the text lives in `issues` / `issue_comments`
-- only; `contentless_delete=1` (SQLite 3.43+) lets a row be deleted by rowid,
-- so a task's row is rebuilt whole (its text and its comments' bodies,
-- oldest first, up to 1,000,000 characters of them) when either changes.
-- Same tokenizer as before.
DROP TRIGGER IF EXISTS issue_fts_insert;
DROP TRIGGER IF EXISTS issue_fts_delete;
DROP TRIGGER IF EXISTS issue_fts_update;
DROP TRIGGER IF EXISTS comment_fts_insert;
DROP TRIGGER IF EXISTS comment_fts_delete;
DROP TRIGGER IF EXISTS comment_fts_update;
DROP TABLE IF EXISTS issue_fts;
DROP TABLE IF EXISTS comment_fts;

CREATE VIRTUAL TABLE task_search USING fts5(
    identifier, title, description, comments,
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);

INSERT INTO task_search (rowid, identifier, title, description, comments)
    SELECT i.rowid, i.identifier, i.title, COALESCE(i.description, ''),
           substr(COALESCE((SELECT group_concat(c.body, ' ' ORDER BY c.created_at, c.id) FROM issue_comments c
                     WHERE c.issue_id = i.id AND c.deleted_at IS NULL), ''), 1, 1000000)
    FROM issues i;

CREATE TRIGGER task_search_issue_insert AFTER INSERT ON issues BEGIN
    INSERT INTO task_search (rowid, identifier, title, description, comments)
    VALUES (new.rowid, new.identifier, new.title, COALESCE(new.description, ''), '');
END;

CREATE TRIGGER task_search_issue_delete AFTER DELETE ON issues BEGIN
    DELETE FROM task_search WHERE rowid = old.rowid;
END;

-- Only when the words change: every write of a task sets its title and
-- description, and a move must not re-read the whole thread.
CREATE TRIGGER task_search_issue_update AFTER UPDATE OF identifier, title, description ON issues
WHEN old.identifier IS NOT new.identifier OR old.title IS NOT new.title
    OR old.description IS NOT new.description BEGIN
    DELETE FROM task_search WHERE rowid = old.rowid;
    INSERT INTO task_search (rowid, identifier, title, description, comments)
    SELECT new.rowid, new.identifier, new.title, COALESCE(new.description, ''),
           substr(COALESCE((SELECT group_concat(c.body, ' ' ORDER BY c.created_at, c.id) FROM issue_comments c
                     WHERE c.issue_id = new.id AND c.deleted_at IS NULL), ''), 1, 1000000);
END;

-- A comment's task, rebuilt. Reading the task through `issues` makes a
-- comment removed with its task (cascade) rebuild nothing.
CREATE TRIGGER task_search_comment_insert AFTER INSERT ON issue_comments BEGIN
    DELETE FROM task_search WHERE rowid = (SELECT rowid FROM issues WHERE id = new.issue_id);
    INSERT INTO task_search (rowid, identifier, title, description, comments)
    SELECT i.rowid, i.identifier, i.title, COALESCE(i.description, ''),
           substr(COALESCE((SELECT group_concat(c.body, ' ' ORDER BY c.created_at, c.id) FROM issue_comments c
                     WHERE c.issue_id = i.id AND c.deleted_at IS NULL), ''), 1, 1000000)
    FROM issues i WHERE i.id = new.issue_id;
END;

CREATE TRIGGER task_search_comment_update AFTER UPDATE OF body, deleted_at, issue_id ON issue_comments BEGIN
    DELETE FROM task_search WHERE rowid IN (SELECT rowid FROM issues WHERE id IN (old.issue_id, new.issue_id));
    INSERT INTO task_search (rowid, identifier, title, description, comments)
    SELECT i.rowid, i.identifier, i.title, COALESCE(i.description, ''),
           substr(COALESCE((SELECT group_concat(c.body, ' ' ORDER BY c.created_at, c.id) FROM issue_comments c
                     WHERE c.issue_id = i.id AND c.deleted_at IS NULL), ''), 1, 1000000)
    FROM issues i WHERE i.id IN (old.issue_id, new.issue_id);
END;

CREATE TRIGGER task_search_comment_delete AFTER DELETE ON issue_comments BEGIN
    DELETE FROM task_search WHERE rowid = (SELECT rowid FROM issues WHERE id = old.issue_id);
    INSERT INTO task_search (rowid, identifier, title, description, comments)
    SELECT i.rowid, i.identifier, i.title, COALESCE(i.description, ''),
           substr(COALESCE((SELECT group_concat(c.body, ' ' ORDER BY c.created_at, c.id) FROM issue_comments c
                     WHERE c.issue_id = i.id AND c.deleted_at IS NULL), ''), 1, 1000000)
    FROM issues i WHERE i.id = old.issue_id;
END;
