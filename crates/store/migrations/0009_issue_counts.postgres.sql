-- Tasks per company and status, kept by a trigger in the transaction that
-- changes a task, so the dashboard counts a million tasks by reading seven
-- rows. Filled from the tasks that exist when this migration runs.
CREATE TABLE issue_status_counts (
    company_id TEXT NOT NULL,
    status TEXT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (company_id, status)
);
INSERT INTO issue_status_counts (company_id, status, n)
    SELECT company_id, status, COUNT(*) FROM issues GROUP BY company_id, status;
CREATE FUNCTION issue_status_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        -- Both counters locked in one order (by status), so two tasks moving
        -- in opposite directions at once wait for each other, never deadlock.
        PERFORM 1 FROM issue_status_counts
            WHERE (company_id = OLD.company_id AND status = OLD.status)
               OR (company_id = NEW.company_id AND status = NEW.status)
            ORDER BY company_id, status FOR UPDATE;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE issue_status_counts SET n = n - 1
            WHERE company_id = OLD.company_id AND status = OLD.status;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO issue_status_counts (company_id, status, n) VALUES (NEW.company_id, NEW.status, 1)
            ON CONFLICT (company_id, status) DO UPDATE SET n = issue_status_counts.n + 1;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER issue_status_counts_insert_delete AFTER INSERT OR DELETE ON issues
    FOR EACH ROW EXECUTE FUNCTION issue_status_counts_follow();
CREATE TRIGGER issue_status_counts_update AFTER UPDATE OF status, company_id ON issues
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.company_id IS DISTINCT FROM NEW.company_id)
    EXECUTE FUNCTION issue_status_counts_follow();
-- The dashboard's 14-day task chart reads its window from this index alone.
CREATE INDEX issues_company_created ON issues (company_id, created_at, status);
-- "What each agent works on": the in-progress tasks per agent, index only.
CREATE INDEX issues_company_status_assignee ON issues (company_id, status, assignee_agent_id, issue_number);
