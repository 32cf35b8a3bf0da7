-- What the dashboard and the costs page show, kept by triggers in the
-- transaction that writes the rows, so at a million tasks they read a few
-- dozen rows instead of grouping a window of runs, tasks and cost events.
-- Days and months are UTC: the first 10 or 7 characters of the stored
-- timestamps. Filled from the rows that exist when this migration runs.
--
-- company_day_counts: per company, subject and UTC day, by current status:
--   task - tasks by the day they were created (the 14-day task chart),
--   done - tasks that are done, by the day they were completed (status 'done').
CREATE TABLE company_day_counts (
    company_id TEXT NOT NULL,
    subject TEXT NOT NULL,
    day TEXT NOT NULL,
    status TEXT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (company_id, subject, day, status)
);
INSERT INTO company_day_counts (company_id, subject, day, status, n)
    SELECT company_id, 'task', SUBSTR(created_at, 1, 10), status, COUNT(*) FROM issues
    GROUP BY company_id, SUBSTR(created_at, 1, 10), status;
INSERT INTO company_day_counts (company_id, subject, day, status, n)
    SELECT company_id, 'done', SUBSTR(completed_at, 1, 10), 'done', COUNT(*) FROM issues
    WHERE status = 'done' AND completed_at IS NOT NULL
    GROUP BY company_id, SUBSTR(completed_at, 1, 10);

CREATE FUNCTION issue_day_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        -- Every counter this change moves, locked in one order.
        PERFORM 1 FROM company_day_counts WHERE
            (company_id = OLD.company_id AND subject = 'task' AND day = SUBSTR(OLD.created_at, 1, 10) AND status = OLD.status)
            OR (company_id = NEW.company_id AND subject = 'task' AND day = SUBSTR(NEW.created_at, 1, 10) AND status = NEW.status)
            OR (OLD.status = 'done' AND company_id = OLD.company_id AND subject = 'done'
                AND day = SUBSTR(OLD.completed_at, 1, 10) AND status = 'done')
            OR (NEW.status = 'done' AND company_id = NEW.company_id AND subject = 'done'
                AND day = SUBSTR(NEW.completed_at, 1, 10) AND status = 'done')
            ORDER BY company_id, subject, day, status FOR UPDATE;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE company_day_counts SET n = n - 1 WHERE company_id = OLD.company_id AND subject = 'task'
            AND day = SUBSTR(OLD.created_at, 1, 10) AND status = OLD.status;
        IF OLD.status = 'done' AND OLD.completed_at IS NOT NULL THEN
            UPDATE company_day_counts SET n = n - 1 WHERE company_id = OLD.company_id AND subject = 'done'
                AND day = SUBSTR(OLD.completed_at, 1, 10) AND status = 'done';
        END IF;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO company_day_counts (company_id, subject, day, status, n)
            VALUES (NEW.company_id, 'task', SUBSTR(NEW.created_at, 1, 10), NEW.status, 1)
            ON CONFLICT (company_id, subject, day, status) DO UPDATE SET n = company_day_counts.n + 1;
        IF NEW.status = 'done' AND NEW.completed_at IS NOT NULL THEN
            INSERT INTO company_day_counts (company_id, subject, day, status, n)
                VALUES (NEW.company_id, 'done', SUBSTR(NEW.completed_at, 1, 10), 'done', 1)
                ON CONFLICT (company_id, subject, day, status) DO UPDATE SET n = company_day_counts.n + 1;
        END IF;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER issue_day_counts_insert_delete AFTER INSERT OR DELETE ON issues
    FOR EACH ROW EXECUTE FUNCTION issue_day_counts_follow();
CREATE TRIGGER issue_day_counts_update AFTER UPDATE OF status, company_id, created_at, completed_at ON issues
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.company_id IS DISTINCT FROM NEW.company_id
        OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.completed_at IS DISTINCT FROM NEW.completed_at)
    EXECUTE FUNCTION issue_day_counts_follow();

-- cost_month_totals: spend per company and UTC month of occurrence, once per
-- dimension: dim 'task' (dim_key '1' on a task, '0' with none), 'agent',
-- 'project', 'issue' (dim_key the id, '' for none) and 'model' (dim_key the model,
-- label the greatest provider seen). Each value is capped as every spend
-- sum is (10^10 per event), so a total cannot overflow.
CREATE TABLE cost_month_totals (
    company_id TEXT NOT NULL,
    month TEXT NOT NULL,
    dim TEXT NOT NULL,
    dim_key TEXT NOT NULL,
    label TEXT,
    cost_cents BIGINT NOT NULL,
    input_tokens BIGINT NOT NULL,
    cached_input_tokens BIGINT NOT NULL,
    output_tokens BIGINT NOT NULL,
    unpriced_tokens BIGINT NOT NULL,
    events BIGINT NOT NULL,
    unpriced_events BIGINT NOT NULL,
    PRIMARY KEY (company_id, month, dim, dim_key)
);
-- The costs page's and costs/by-issue's biggest first.
CREATE INDEX cost_month_totals_biggest ON cost_month_totals (company_id, month, dim, cost_cents);
INSERT INTO cost_month_totals (company_id, month, dim, dim_key, label, cost_cents, input_tokens, cached_input_tokens, output_tokens, unpriced_tokens, events, unpriced_events)
    SELECT e.company_id, SUBSTR(e.occurred_at, 1, 7), 'task', CASE WHEN e.issue_id IS NULL THEN '0' ELSE '1' END, NULL,
    SUM(COALESCE(CASE WHEN e.cost_cents > 10000000000 THEN 10000000000 ELSE e.cost_cents END, 0)), SUM(CASE WHEN e.input_tokens > 10000000000 THEN 10000000000 ELSE e.input_tokens END), SUM(CASE WHEN e.cached_input_tokens > 10000000000 THEN 10000000000 ELSE e.cached_input_tokens END), SUM(CASE WHEN e.output_tokens > 10000000000 THEN 10000000000 ELSE e.output_tokens END), SUM(CASE WHEN e.cost_cents IS NULL THEN CASE WHEN e.input_tokens > 10000000000 THEN 10000000000 ELSE e.input_tokens END + CASE WHEN e.cached_input_tokens > 10000000000 THEN 10000000000 ELSE e.cached_input_tokens END + CASE WHEN e.output_tokens > 10000000000 THEN 10000000000 ELSE e.output_tokens END ELSE 0 END), COUNT(*), SUM(CASE WHEN e.cost_cents IS NULL THEN 1 ELSE 0 END)
    FROM cost_events e GROUP BY e.company_id, SUBSTR(e.occurred_at, 1, 7), CASE WHEN e.issue_id IS NULL THEN '0' ELSE '1' END;
INSERT INTO cost_month_totals (company_id, month, dim, dim_key, label, cost_cents, input_tokens, cached_input_tokens, output_tokens, unpriced_tokens, events, unpriced_events)
    SELECT e.company_id, SUBSTR(e.occurred_at, 1, 7), 'agent', COALESCE(CAST(e.agent_id AS TEXT), ''), NULL,
    SUM(COALESCE(CASE WHEN e.cost_cents > 10000000000 THEN 10000000000 ELSE e.cost_cents END, 0)), SUM(CASE WHEN e.input_tokens > 10000000000 THEN 10000000000 ELSE e.input_tokens END), SUM(CASE WHEN e.cached_input_tokens > 10000000000 THEN 10000000000 ELSE e.cached_input_tokens END), SUM(CASE WHEN e.output_tokens > 10000000000 THEN 10000000000 ELSE e.output_tokens END), SUM(CASE WHEN e.cost_cents IS NULL THEN CASE WHEN e.input_tokens > 10000000000 THEN 10000000000 ELSE e.input_tokens END + CASE WHEN e.cached_input_tokens > 10000000000 THEN 10000000000 ELSE e.cached_input_tokens END + CASE WHEN e.output_tokens > 10000000000 THEN 10000000000 ELSE e.output_tokens END ELSE 0 END), COUNT(*), SUM(CASE WHEN e.cost_cents IS NULL THEN 1 ELSE 0 END)
    FROM cost_events e GROUP BY e.company_id, SUBSTR(e.occurred_at, 1, 7), COALESCE(CAST(e.agent_id AS TEXT), '');
INSERT INTO cost_month_totals (company_id, month, dim, dim_key, label, cost_cents, input_tokens, cached_input_tokens, output_tokens, unpriced_tokens, events, unpriced_events)
    SELECT e.company_id, SUBSTR(e.occurred_at, 1, 7), 'project', COALESCE(CAST(e.project_id AS TEXT), ''), NULL,
    SUM(COALESCE(CASE WHEN e.cost_cents > 10000000000 THEN 10000000000 ELSE e.cost_cents END, 0)), SUM(CASE WHEN e.input_tokens > 10000000000 THEN 10000000000 ELSE e.input_tokens END), SUM(CASE WHEN e.cached_input_tokens > 10000000000 THEN 10000000000 ELSE e.cached_input_tokens END), SUM(CASE WHEN e.output_tokens > 10000000000 THEN 10000000000 ELSE e.output_tokens END), SUM(CASE WHEN e.cost_cents IS NULL THEN CASE WHEN e.input_tokens > 10000000000 THEN 10000000000 ELSE e.input_tokens END + CASE WHEN e.cached_input_tokens > 10000000000 THEN 10000000000 ELSE e.cached_input_tokens END + CASE WHEN e.output_tokens > 10000000000 THEN 10000000000 ELSE e.output_tokens END ELSE 0 END), COUNT(*), SUM(CASE WHEN e.cost_cents IS NULL THEN 1 ELSE 0 END)
    FROM cost_events e GROUP BY e.company_id, SUBSTR(e.occurred_at, 1, 7), COALESCE(CAST(e.project_id AS TEXT), '');
INSERT INTO cost_month_totals (company_id, month, dim, dim_key, label, cost_cents, input_tokens, cached_input_tokens, output_tokens, unpriced_tokens, events, unpriced_events)
    SELECT e.company_id, SUBSTR(e.occurred_at, 1, 7), 'issue', COALESCE(CAST(e.issue_id AS TEXT), ''), NULL,
    SUM(COALESCE(CASE WHEN e.cost_cents > 10000000000 THEN 10000000000 ELSE e.cost_cents END, 0)), SUM(CASE WHEN e.input_tokens > 10000000000 THEN 10000000000 ELSE e.input_tokens END), SUM(CASE WHEN e.cached_input_tokens > 10000000000 THEN 10000000000 ELSE e.cached_input_tokens END), SUM(CASE WHEN e.output_tokens > 10000000000 THEN 10000000000 ELSE e.output_tokens END), SUM(CASE WHEN e.cost_cents IS NULL THEN CASE WHEN e.input_tokens > 10000000000 THEN 10000000000 ELSE e.input_tokens END + CASE WHEN e.cached_input_tokens > 10000000000 THEN 10000000000 ELSE e.cached_input_tokens END + CASE WHEN e.output_tokens > 10000000000 THEN 10000000000 ELSE e.output_tokens END ELSE 0 END), COUNT(*), SUM(CASE WHEN e.cost_cents IS NULL THEN 1 ELSE 0 END)
    FROM cost_events e GROUP BY e.company_id, SUBSTR(e.occurred_at, 1, 7), COALESCE(CAST(e.issue_id AS TEXT), '');
INSERT INTO cost_month_totals (company_id, month, dim, dim_key, label, cost_cents, input_tokens, cached_input_tokens, output_tokens, unpriced_tokens, events, unpriced_events)
    SELECT e.company_id, SUBSTR(e.occurred_at, 1, 7), 'model', COALESCE(e.model, ''), MAX(e.provider),
    SUM(COALESCE(CASE WHEN e.cost_cents > 10000000000 THEN 10000000000 ELSE e.cost_cents END, 0)), SUM(CASE WHEN e.input_tokens > 10000000000 THEN 10000000000 ELSE e.input_tokens END), SUM(CASE WHEN e.cached_input_tokens > 10000000000 THEN 10000000000 ELSE e.cached_input_tokens END), SUM(CASE WHEN e.output_tokens > 10000000000 THEN 10000000000 ELSE e.output_tokens END), SUM(CASE WHEN e.cost_cents IS NULL THEN CASE WHEN e.input_tokens > 10000000000 THEN 10000000000 ELSE e.input_tokens END + CASE WHEN e.cached_input_tokens > 10000000000 THEN 10000000000 ELSE e.cached_input_tokens END + CASE WHEN e.output_tokens > 10000000000 THEN 10000000000 ELSE e.output_tokens END ELSE 0 END), COUNT(*), SUM(CASE WHEN e.cost_cents IS NULL THEN 1 ELSE 0 END)
    FROM cost_events e GROUP BY e.company_id, SUBSTR(e.occurred_at, 1, 7), COALESCE(e.model, '');

CREATE FUNCTION cost_month_totals_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Cost reports of one company are serialised by the company row lock
    -- (costs::record); an update (SET NULL) takes its rows in key order.
    IF TG_OP = 'UPDATE' THEN
        PERFORM 1 FROM cost_month_totals WHERE (company_id = OLD.company_id AND month = SUBSTR(OLD.occurred_at, 1, 7)
            AND (dim, dim_key) IN (('task', CASE WHEN OLD.issue_id IS NULL THEN '0' ELSE '1' END), ('agent', COALESCE(CAST(OLD.agent_id AS TEXT), '')), ('project', COALESCE(CAST(OLD.project_id AS TEXT), '')), ('issue', COALESCE(CAST(OLD.issue_id AS TEXT), '')), ('model', COALESCE(OLD.model, ''))))
            OR (company_id = NEW.company_id AND month = SUBSTR(NEW.occurred_at, 1, 7)
            AND (dim, dim_key) IN (('task', CASE WHEN NEW.issue_id IS NULL THEN '0' ELSE '1' END), ('agent', COALESCE(CAST(NEW.agent_id AS TEXT), '')), ('project', COALESCE(CAST(NEW.project_id AS TEXT), '')), ('issue', COALESCE(CAST(NEW.issue_id AS TEXT), '')), ('model', COALESCE(NEW.model, ''))))
            ORDER BY company_id, month, dim, dim_key FOR UPDATE;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE cost_month_totals SET
            cost_cents = cost_cents - (COALESCE(CASE WHEN OLD.cost_cents > 10000000000 THEN 10000000000 ELSE OLD.cost_cents END, 0)),
            input_tokens = input_tokens - (CASE WHEN OLD.input_tokens > 10000000000 THEN 10000000000 ELSE OLD.input_tokens END),
            cached_input_tokens = cached_input_tokens - (CASE WHEN OLD.cached_input_tokens > 10000000000 THEN 10000000000 ELSE OLD.cached_input_tokens END),
            output_tokens = output_tokens - (CASE WHEN OLD.output_tokens > 10000000000 THEN 10000000000 ELSE OLD.output_tokens END),
            unpriced_tokens = unpriced_tokens - (CASE WHEN OLD.cost_cents IS NULL THEN CASE WHEN OLD.input_tokens > 10000000000 THEN 10000000000 ELSE OLD.input_tokens END + CASE WHEN OLD.cached_input_tokens > 10000000000 THEN 10000000000 ELSE OLD.cached_input_tokens END + CASE WHEN OLD.output_tokens > 10000000000 THEN 10000000000 ELSE OLD.output_tokens END ELSE 0 END),
            events = events - (1),
            unpriced_events = unpriced_events - (CASE WHEN OLD.cost_cents IS NULL THEN 1 ELSE 0 END)
            WHERE company_id = OLD.company_id AND month = SUBSTR(OLD.occurred_at, 1, 7)
            AND (dim, dim_key) IN (('task', CASE WHEN OLD.issue_id IS NULL THEN '0' ELSE '1' END), ('agent', COALESCE(CAST(OLD.agent_id AS TEXT), '')), ('project', COALESCE(CAST(OLD.project_id AS TEXT), '')), ('issue', COALESCE(CAST(OLD.issue_id AS TEXT), '')), ('model', COALESCE(OLD.model, '')));
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO cost_month_totals (company_id, month, dim, dim_key, label, cost_cents, input_tokens, cached_input_tokens, output_tokens, unpriced_tokens, events, unpriced_events)
            SELECT NEW.company_id, SUBSTR(NEW.occurred_at, 1, 7), d.dim, d.dim_key, d.label,
            COALESCE(CASE WHEN NEW.cost_cents > 10000000000 THEN 10000000000 ELSE NEW.cost_cents END, 0), CASE WHEN NEW.input_tokens > 10000000000 THEN 10000000000 ELSE NEW.input_tokens END, CASE WHEN NEW.cached_input_tokens > 10000000000 THEN 10000000000 ELSE NEW.cached_input_tokens END, CASE WHEN NEW.output_tokens > 10000000000 THEN 10000000000 ELSE NEW.output_tokens END, CASE WHEN NEW.cost_cents IS NULL THEN CASE WHEN NEW.input_tokens > 10000000000 THEN 10000000000 ELSE NEW.input_tokens END + CASE WHEN NEW.cached_input_tokens > 10000000000 THEN 10000000000 ELSE NEW.cached_input_tokens END + CASE WHEN NEW.output_tokens > 10000000000 THEN 10000000000 ELSE NEW.output_tokens END ELSE 0 END, 1, CASE WHEN NEW.cost_cents IS NULL THEN 1 ELSE 0 END
            FROM (VALUES ('task', CASE WHEN NEW.issue_id IS NULL THEN '0' ELSE '1' END, NULL::TEXT),
            ('agent', COALESCE(CAST(NEW.agent_id AS TEXT), ''), NULL::TEXT),
            ('project', COALESCE(CAST(NEW.project_id AS TEXT), ''), NULL::TEXT),
            ('issue', COALESCE(CAST(NEW.issue_id AS TEXT), ''), NULL::TEXT),
            ('model', COALESCE(NEW.model, ''), NEW.provider)) AS d (dim, dim_key, label)
            WHERE true ORDER BY d.dim, d.dim_key
            ON CONFLICT (company_id, month, dim, dim_key) DO UPDATE SET
            cost_cents = cost_month_totals.cost_cents + excluded.cost_cents,
            input_tokens = cost_month_totals.input_tokens + excluded.input_tokens,
            cached_input_tokens = cost_month_totals.cached_input_tokens + excluded.cached_input_tokens,
            output_tokens = cost_month_totals.output_tokens + excluded.output_tokens,
            unpriced_tokens = cost_month_totals.unpriced_tokens + excluded.unpriced_tokens,
            events = cost_month_totals.events + excluded.events,
            unpriced_events = cost_month_totals.unpriced_events + excluded.unpriced_events,
            label = CASE WHEN excluded.label IS NULL THEN cost_month_totals.label WHEN cost_month_totals.label IS NULL
                OR excluded.label > cost_month_totals.label THEN excluded.label ELSE cost_month_totals.label END;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER cost_month_totals_insert_delete AFTER INSERT OR DELETE ON cost_events
    FOR EACH ROW EXECUTE FUNCTION cost_month_totals_follow();
-- Deleting an agent, task or project clears its id on the events (SET NULL).
CREATE TRIGGER cost_month_totals_update AFTER UPDATE ON cost_events
    FOR EACH ROW EXECUTE FUNCTION cost_month_totals_follow();
