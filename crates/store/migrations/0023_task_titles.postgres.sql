-- A search ranks the tasks whose identifier or title hold every word before
-- the others (issue_rank.rs). Those words are kept apart from the whole
-- task's (`task_search`, migration 21), in a table and index of their own:
-- the planner estimates a title search from the titles' own statistics (a
-- word common in comments and absent from titles is rare here), a rare one
-- is found through this index, and a walk tests small rows. A new table,
-- not a column: filling a column would rewrite every search row at once.
CREATE TABLE task_titles (
    issue_id TEXT PRIMARY KEY REFERENCES issues (id) ON DELETE CASCADE,
    words tsvector NOT NULL
);

INSERT INTO task_titles (issue_id, words)
    SELECT id, task_search_vector(identifier || ' ' || title) FROM issues;

CREATE INDEX task_titles_words ON task_titles USING GIN (words);

-- A task's row is locked by the write that fires this, so two writers of
-- one task's title follow one another.
CREATE FUNCTION task_titles_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO task_titles (issue_id, words)
            VALUES (NEW.id, task_search_vector(NEW.identifier || ' ' || NEW.title));
    ELSE
        UPDATE task_titles SET words = task_search_vector(NEW.identifier || ' ' || NEW.title)
            WHERE issue_id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER task_titles_insert AFTER INSERT ON issues
    FOR EACH ROW EXECUTE FUNCTION task_titles_follow();
CREATE TRIGGER task_titles_update AFTER UPDATE OF identifier, title ON issues
    FOR EACH ROW WHEN (OLD.identifier IS DISTINCT FROM NEW.identifier OR OLD.title IS DISTINCT FROM NEW.title)
    EXECUTE FUNCTION task_titles_follow();

ANALYZE task_titles;
