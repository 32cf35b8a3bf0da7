-- Full-text search over tasks: identifier, title and description, and the
-- bodies of their comments (SQLite FTS5, external content: the text lives in
-- `issues` / `issue_comments` once; the index follows them by triggers).
-- Tokens are Unicode words, case-folded, accents kept (as Postgres' `simple`
-- configuration does, so both engines find the same); `ACM-12` is the words `acm`
-- and `12`. The index is keyed by the tables' rowids, which nothing here
-- renumbers (no VACUUM).
CREATE VIRTUAL TABLE issue_fts USING fts5(
    identifier, title, description,
    content = 'issues', content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 0'
);
INSERT INTO issue_fts (rowid, identifier, title, description)
    SELECT rowid, identifier, title, COALESCE(description, '') FROM issues;
CREATE TRIGGER issue_fts_insert AFTER INSERT ON issues BEGIN
    INSERT INTO issue_fts (rowid, identifier, title, description)
    VALUES (new.rowid, new.identifier, new.title, COALESCE(new.description, ''));
END;
CREATE TRIGGER issue_fts_delete AFTER DELETE ON issues BEGIN
    INSERT INTO issue_fts (issue_fts, rowid, identifier, title, description)
    VALUES ('delete', old.rowid, old.identifier, old.title, COALESCE(old.description, ''));
END;
CREATE TRIGGER issue_fts_update AFTER UPDATE OF identifier, title, description ON issues BEGIN
    INSERT INTO issue_fts (issue_fts, rowid, identifier, title, description)
    VALUES ('delete', old.rowid, old.identifier, old.title, COALESCE(old.description, ''));
    INSERT INTO issue_fts (rowid, identifier, title, description)
    VALUES (new.rowid, new.identifier, new.title, COALESCE(new.description, ''));
END;

CREATE VIRTUAL TABLE comment_fts USING fts5(
    body,
    content = 'issue_comments', content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 0'
);
INSERT INTO comment_fts (rowid, body) SELECT rowid, body FROM issue_comments;
CREATE TRIGGER comment_fts_insert AFTER INSERT ON issue_comments BEGIN
    INSERT INTO comment_fts (rowid, body) VALUES (new.rowid, new.body);
END;
CREATE TRIGGER comment_fts_delete AFTER DELETE ON issue_comments BEGIN
    INSERT INTO comment_fts (comment_fts, rowid, body) VALUES ('delete', old.rowid, old.body);
END;
CREATE TRIGGER comment_fts_update AFTER UPDATE OF body ON issue_comments BEGIN
    INSERT INTO comment_fts (comment_fts, rowid, body) VALUES ('delete', old.rowid, old.body);
    INSERT INTO comment_fts (rowid, body) VALUES (new.rowid, new.body);
END;
