-- One search row per task, holding its comments' words with its own (as the
-- SQLite side does, see 0021_task_search.sqlite.sql). Migration 7 indexed
-- expressions over tasks and comments apart, so a common word was tested by
-- computing each walked task's words (a count of the first 10,000 matches
-- among a million tasks took ~1.9 s). Kept words are tested per row in
-- microseconds, and one GIN index serves rare words.
--
-- A row of its own, not a column of `issues`: a comment rewrites only its
-- task's search row, never locks the task row that checkouts and moves take.
-- Words as before: everything but letters and digits separates, 'simple'
-- configuration (lower-cased, no stemming). A task's comments (oldest
-- first) count up to 1,000,000 characters, as on SQLite.
DROP INDEX IF EXISTS issues_search;
DROP INDEX IF EXISTS issue_comments_search;

-- A tsvector holds at most 1 MB of words and positions: a thread of many
-- distinct words (logs full of ids, three-byte scripts) can pass it, and then
-- the first 100,000 characters are indexed instead of failing the write.
CREATE FUNCTION task_search_vector(doc TEXT) RETURNS tsvector LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN to_tsvector('simple', regexp_replace(doc, '[^[:alnum:]]+', ' ', 'g'));
EXCEPTION WHEN program_limit_exceeded THEN
    RETURN to_tsvector('simple', regexp_replace(LEFT(doc, 100000), '[^[:alnum:]]+', ' ', 'g'));
END
$$;

CREATE FUNCTION task_search_words(task TEXT) RETURNS tsvector LANGUAGE sql STABLE AS $$
    SELECT task_search_vector(
        i.identifier || ' ' || i.title || ' ' || COALESCE(i.description, '') || ' ' ||
        LEFT(COALESCE((SELECT string_agg(c.body, ' ' ORDER BY c.created_at, c.id) FROM issue_comments c
                       WHERE c.issue_id = i.id AND c.deleted_at IS NULL), ''), 1000000))
    FROM issues i WHERE i.id = task
$$;

CREATE TABLE task_search (
    issue_id TEXT PRIMARY KEY REFERENCES issues (id) ON DELETE CASCADE,
    words tsvector NOT NULL
);

INSERT INTO task_search (issue_id, words)
    SELECT i.id, task_search_vector(
        i.identifier || ' ' || i.title || ' ' || COALESCE(i.description, '') || ' ' ||
        LEFT(COALESCE(c.bodies, ''), 1000000))
    FROM issues i
    LEFT JOIN (SELECT issue_id, string_agg(body, ' ' ORDER BY created_at, id) AS bodies FROM issue_comments
               WHERE deleted_at IS NULL GROUP BY issue_id) c ON c.issue_id = i.id;

CREATE INDEX task_search_words ON task_search USING GIN (words);

-- Rebuilds a task's row. Its row is locked first, and the words are read by
-- the next statement: under READ COMMITTED that statement sees what a
-- concurrent writer of the same task committed while this one waited, so
-- two comments at once cannot each write words without the other's.
CREATE FUNCTION task_search_rebuild(task TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM task_search WHERE issue_id = task FOR UPDATE;
    -- COALESCE: a comment removed with its task (cascade) may find the task
    -- gone and its search row not yet.
    UPDATE task_search SET words = COALESCE(task_search_words(task), words) WHERE issue_id = task;
END
$$;

CREATE FUNCTION task_search_issue_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- A new task has no comments yet: its words are its own.
        INSERT INTO task_search (issue_id, words)
            VALUES (NEW.id, task_search_vector(
                NEW.identifier || ' ' || NEW.title || ' ' || COALESCE(NEW.description, '')));
    ELSE
        PERFORM task_search_rebuild(NEW.id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER task_search_issue_insert AFTER INSERT ON issues
    FOR EACH ROW EXECUTE FUNCTION task_search_issue_follow();
-- Only when the words change: every write of a task sets its title and
-- description, and a move must not re-read the whole thread.
CREATE TRIGGER task_search_issue_update AFTER UPDATE OF identifier, title, description ON issues
    FOR EACH ROW WHEN (OLD.identifier IS DISTINCT FROM NEW.identifier OR OLD.title IS DISTINCT FROM NEW.title
        OR OLD.description IS DISTINCT FROM NEW.description)
    EXECUTE FUNCTION task_search_issue_follow();

CREATE FUNCTION task_search_comment_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        PERFORM task_search_rebuild(NEW.issue_id);
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.issue_id IS DISTINCT FROM NEW.issue_id) THEN
        PERFORM task_search_rebuild(OLD.issue_id);
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER task_search_comment_change AFTER INSERT OR DELETE OR UPDATE OF body, deleted_at, issue_id
    ON issue_comments FOR EACH ROW EXECUTE FUNCTION task_search_comment_follow();

-- The search reads the planner's estimate of a query's matches to choose its
-- plan: statistics now, not at autovacuum's next pass.
ANALYZE task_search;
