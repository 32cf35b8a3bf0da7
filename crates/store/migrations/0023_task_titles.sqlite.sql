-- A search ranks the tasks whose identifier or title hold every word before
-- the others (issue_rank.rs). Their words get an index of their own, so the
-- title rank reads only titles: a word common in descriptions and absent
-- from titles is found absent at once, where a query of the whole index's
-- title columns read every match of the word (~15 ms among a million tasks).
-- Contentless as `task_search` (migration 21), keyed by the task's rowid,
-- same tokenizer.
CREATE VIRTUAL TABLE task_titles USING fts5(
    identifier, title,
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);

INSERT INTO task_titles (rowid, identifier, title) SELECT rowid, identifier, title FROM issues;

CREATE TRIGGER task_titles_insert AFTER INSERT ON issues BEGIN
    INSERT INTO task_titles (rowid, identifier, title) VALUES (new.rowid, new.identifier, new.title);
END;

CREATE TRIGGER task_titles_delete AFTER DELETE ON issues BEGIN
    DELETE FROM task_titles WHERE rowid = old.rowid;
END;

CREATE TRIGGER task_titles_update AFTER UPDATE OF identifier, title ON issues
WHEN old.identifier IS NOT new.identifier OR old.title IS NOT new.title BEGIN
    DELETE FROM task_titles WHERE rowid = old.rowid;
    INSERT INTO task_titles (rowid, identifier, title) VALUES (new.rowid, new.identifier, new.title);
END;
