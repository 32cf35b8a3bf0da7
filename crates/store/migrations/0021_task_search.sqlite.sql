-- One search index per task, holding its comments with it. Migration 7 kept
-- tasks and comments in two indexes, so a common word had to be matched in
-- both and joined back to tasks before a page could be chosen (a million
-- tasks: a page ~100 ms, a count of the matches ~200 ms). Keyed by the task's
-- rowid, a page is now read one number range at a time, and a count walks
-- the matches themselves.
--
-- Contentless (`content=''`): the text lives in `issues` / `issue_comments`
-- only; `contentless_delete=1` (SQLite 3.43+) lets a row be deleted by rowid,
-- so a task's row is rebuilt whole (its text and its comments' bodies) when
-- either changes. Same tokenizer as before.
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
           COALESCE((SELECT group_concat(c.body, ' ') FROM issue_comments c
                     WHERE c.issue_id = i.id AND c.deleted_at IS NULL), '')
    FROM issues i;

CREATE TRIGGER task_search_issue_insert AFTER INSERT ON issues BEGIN
    INSERT INTO task_search (rowid, identifier, title, description, comments)
    VALUES (new.rowid, new.identifier, new.title, COALESCE(new.description, ''), '');
END;

CREATE TRIGGER task_search_issue_delete AFTER DELETE ON issues BEGIN
    DELETE FROM task_search WHERE rowid = old.rowid;
END;

CREATE TRIGGER task_search_issue_update AFTER UPDATE OF identifier, title, description ON issues BEGIN
    DELETE FROM task_search WHERE rowid = old.rowid;
    INSERT INTO task_search (rowid, identifier, title, description, comments)
    SELECT new.rowid, new.identifier, new.title, COALESCE(new.description, ''),
           COALESCE((SELECT group_concat(c.body, ' ') FROM issue_comments c
                     WHERE c.issue_id = new.id AND c.deleted_at IS NULL), '');
END;

-- A comment's task, rebuilt. Reading the task through `issues` makes a
-- comment removed with its task (cascade) rebuild nothing.
CREATE TRIGGER task_search_comment_insert AFTER INSERT ON issue_comments BEGIN
    DELETE FROM task_search WHERE rowid = (SELECT rowid FROM issues WHERE id = new.issue_id);
    INSERT INTO task_search (rowid, identifier, title, description, comments)
    SELECT i.rowid, i.identifier, i.title, COALESCE(i.description, ''),
           COALESCE((SELECT group_concat(c.body, ' ') FROM issue_comments c
                     WHERE c.issue_id = i.id AND c.deleted_at IS NULL), '')
    FROM issues i WHERE i.id = new.issue_id;
END;

CREATE TRIGGER task_search_comment_update AFTER UPDATE OF body, deleted_at ON issue_comments BEGIN
    DELETE FROM task_search WHERE rowid = (SELECT rowid FROM issues WHERE id = new.issue_id);
    INSERT INTO task_search (rowid, identifier, title, description, comments)
    SELECT i.rowid, i.identifier, i.title, COALESCE(i.description, ''),
           COALESCE((SELECT group_concat(c.body, ' ') FROM issue_comments c
                     WHERE c.issue_id = i.id AND c.deleted_at IS NULL), '')
    FROM issues i WHERE i.id = new.issue_id;
END;

CREATE TRIGGER task_search_comment_delete AFTER DELETE ON issue_comments BEGIN
    DELETE FROM task_search WHERE rowid = (SELECT rowid FROM issues WHERE id = old.issue_id);
    INSERT INTO task_search (rowid, identifier, title, description, comments)
    SELECT i.rowid, i.identifier, i.title, COALESCE(i.description, ''),
           COALESCE((SELECT group_concat(c.body, ' ') FROM issue_comments c
                     WHERE c.issue_id = i.id AND c.deleted_at IS NULL), '')
    FROM issues i WHERE i.id = old.issue_id;
END;
