-- A search ranks the tasks whose identifier or title hold every word before
-- the others (issue_rank.rs). Those words are kept apart from the whole
-- task's, with an index of their own: the planner then estimates a title
-- search from its own statistics (a word common in comments and absent from
-- titles is rare here), and a rare one is found through this index.
ALTER TABLE task_search ADD COLUMN title_words tsvector;

UPDATE task_search s SET title_words = task_search_vector(i.identifier || ' ' || i.title)
    FROM issues i WHERE i.id = s.issue_id;

ALTER TABLE task_search ALTER COLUMN title_words SET NOT NULL;

CREATE INDEX task_search_title_words ON task_search USING GIN (title_words);

CREATE OR REPLACE FUNCTION task_search_rebuild(task TEXT) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM task_search WHERE issue_id = task FOR UPDATE;
    -- COALESCE: a comment removed with its task (cascade) may find the task
    -- gone and its search row not yet.
    UPDATE task_search SET words = COALESCE(task_search_words(task), words),
        title_words = COALESCE((SELECT task_search_vector(i.identifier || ' ' || i.title)
                                FROM issues i WHERE i.id = task), title_words)
    WHERE issue_id = task;
END
$$;

CREATE OR REPLACE FUNCTION task_search_issue_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- A new task has no comments yet: its words are its own.
        INSERT INTO task_search (issue_id, words, title_words)
            VALUES (NEW.id,
                    task_search_vector(NEW.identifier || ' ' || NEW.title || ' ' || COALESCE(NEW.description, '')),
                    task_search_vector(NEW.identifier || ' ' || NEW.title));
    ELSE
        PERFORM task_search_rebuild(NEW.id);
    END IF;
    RETURN NULL;
END
$$;

ANALYZE task_search;
