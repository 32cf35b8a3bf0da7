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
-- configuration (lower-cased, no stemming). Comments count up to 500,000
-- characters of a task's thread (a tsvector holds at most 1 MB).
DROP INDEX IF EXISTS issues_search;
DROP INDEX IF EXISTS issue_comments_search;

CREATE FUNCTION task_search_words(task TEXT) RETURNS tsvector LANGUAGE sql STABLE AS $$
    SELECT to_tsvector('simple', regexp_replace(
        i.identifier || ' ' || i.title || ' ' || COALESCE(i.description, '') || ' ' ||
        LEFT(COALESCE((SELECT string_agg(c.body, ' ') FROM issue_comments c
                       WHERE c.issue_id = i.id AND c.deleted_at IS NULL), ''), 500000),
        '[^[:alnum:]]+', ' ', 'g'))
    FROM issues i WHERE i.id = task
$$;

CREATE TABLE task_search (
    issue_id TEXT PRIMARY KEY REFERENCES issues (id) ON DELETE CASCADE,
    company_id TEXT NOT NULL,
    issue_number BIGINT NOT NULL,
    words tsvector NOT NULL
);

INSERT INTO task_search (issue_id, company_id, issue_number, words)
    SELECT i.id, i.company_id, i.issue_number, to_tsvector('simple', regexp_replace(
        i.identifier || ' ' || i.title || ' ' || COALESCE(i.description, '') || ' ' ||
        LEFT(COALESCE(c.bodies, ''), 500000), '[^[:alnum:]]+', ' ', 'g'))
    FROM issues i
    LEFT JOIN (SELECT issue_id, string_agg(body, ' ') AS bodies FROM issue_comments
               WHERE deleted_at IS NULL GROUP BY issue_id) c ON c.issue_id = i.id;

CREATE INDEX task_search_words ON task_search USING GIN (words);
-- The walk of a common word: the company's tasks newest first, words tested
-- per row.
CREATE INDEX task_search_company_number ON task_search (company_id, issue_number);

CREATE FUNCTION task_search_issue_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- A new task has no comments yet: its words are its own.
        INSERT INTO task_search (issue_id, company_id, issue_number, words)
            VALUES (NEW.id, NEW.company_id, NEW.issue_number, to_tsvector('simple', regexp_replace(
                NEW.identifier || ' ' || NEW.title || ' ' || COALESCE(NEW.description, ''),
                '[^[:alnum:]]+', ' ', 'g')));
    ELSE
        UPDATE task_search SET company_id = NEW.company_id, issue_number = NEW.issue_number,
            words = COALESCE(task_search_words(NEW.id), words) WHERE issue_id = NEW.id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER task_search_issue_insert AFTER INSERT ON issues
    FOR EACH ROW EXECUTE FUNCTION task_search_issue_follow();
CREATE TRIGGER task_search_issue_update AFTER UPDATE OF identifier, title, description, company_id, issue_number
    ON issues FOR EACH ROW EXECUTE FUNCTION task_search_issue_follow();

CREATE FUNCTION task_search_comment_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- COALESCE: a comment removed with its task (cascade) may find the task
    -- gone and its search row not yet.
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE task_search SET words = COALESCE(task_search_words(NEW.issue_id), words)
            WHERE issue_id = NEW.issue_id;
    END IF;
    IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND OLD.issue_id IS DISTINCT FROM NEW.issue_id) THEN
        UPDATE task_search SET words = COALESCE(task_search_words(OLD.issue_id), words)
            WHERE issue_id = OLD.issue_id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER task_search_comment_change AFTER INSERT OR DELETE OR UPDATE OF body, deleted_at, issue_id
    ON issue_comments FOR EACH ROW EXECUTE FUNCTION task_search_comment_follow();

-- The search reads the planner's estimate of a query's matches to choose its
-- plan: statistics now, not at autovacuum's next pass.
ANALYZE task_search;
