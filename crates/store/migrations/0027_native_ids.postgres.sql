-- Ids as uuid on Postgres (SQLite keeps their text). Every id the store
-- makes is a UUID (`new_id`); the store binds ids as text and Postgres types
-- each parameter from its column (src/pg_params.rs), and an id is read back
-- as the same lowercase text. People's ids (`local-board`, `*_user_id`),
-- actor and entity ids (which name people or agents) and ids supplied by
-- clients (`client_request_id`) stay text.
--
-- A stored id that is not a UUID fails the upgrade (Postgres names the
-- value) and the database is left as it was: no reference is guessed or
-- dropped.

-- A trigger that names columns (`UPDATE OF`, `WHEN`) blocks a change of
-- their type: each is dropped and made again, as it was. Read from the
-- database rather than listed here, so one made by an earlier build's
-- definition is kept as it is too.
CREATE TEMPORARY TABLE paperclip_triggers ON COMMIT DROP AS
    SELECT t.tgrelid::regclass AS tbl, t.tgname AS name, pg_get_triggerdef(t.oid) AS def
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE NOT t.tgisinternal AND n.nspname = current_schema()
        AND (t.tgattr::text <> '' OR t.tgqual IS NOT NULL);

DO $$
DECLARE k RECORD;
BEGIN
    FOR k IN SELECT * FROM paperclip_triggers LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', k.name, k.tbl);
    END LOOP;
END
$$;

-- One queued run per agent and task, a run without a task keyed ''.
DROP INDEX heartbeat_runs_one_queued;

-- A foreign key and the key it references change type together: each is
-- dropped and made again, as it was, once both sides are uuid.
CREATE TEMPORARY TABLE paperclip_foreign_keys ON COMMIT DROP AS
    SELECT c.conrelid::regclass AS tbl, c.conname AS name, pg_get_constraintdef(c.oid) AS def
    FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
    WHERE c.contype = 'f' AND n.nspname = current_schema();

DO $$
DECLARE k RECORD;
BEGIN
    FOR k IN SELECT * FROM paperclip_foreign_keys LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', k.tbl, k.name);
    END LOOP;
END
$$;

ALTER TABLE activity_log
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN agent_id TYPE UUID USING CAST(agent_id AS UUID),
    ALTER COLUMN run_id TYPE UUID USING CAST(run_id AS UUID);

ALTER TABLE agent_api_keys
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN agent_id TYPE UUID USING CAST(agent_id AS UUID);

ALTER TABLE agent_config_revisions
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN agent_id TYPE UUID USING CAST(agent_id AS UUID);

ALTER TABLE agent_task_sessions
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN agent_id TYPE UUID USING CAST(agent_id AS UUID),
    ALTER COLUMN last_run_id TYPE UUID USING CAST(last_run_id AS UUID);

ALTER TABLE agent_wakeup_requests
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN agent_id TYPE UUID USING CAST(agent_id AS UUID),
    ALTER COLUMN issue_id TYPE UUID USING CAST(issue_id AS UUID),
    ALTER COLUMN run_id TYPE UUID USING CAST(run_id AS UUID);

ALTER TABLE agents
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN reports_to TYPE UUID USING CAST(reports_to AS UUID);

ALTER TABLE approval_comments
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN approval_id TYPE UUID USING CAST(approval_id AS UUID),
    ALTER COLUMN author_agent_id TYPE UUID USING CAST(author_agent_id AS UUID);

ALTER TABLE approvals
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN requested_by_agent_id TYPE UUID USING CAST(requested_by_agent_id AS UUID);

ALTER TABLE budget_incidents
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID);

ALTER TABLE companies
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID);

ALTER TABLE company_day_counts
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID);

ALTER TABLE cost_events
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN agent_id TYPE UUID USING CAST(agent_id AS UUID),
    ALTER COLUMN issue_id TYPE UUID USING CAST(issue_id AS UUID),
    ALTER COLUMN project_id TYPE UUID USING CAST(project_id AS UUID),
    ALTER COLUMN goal_id TYPE UUID USING CAST(goal_id AS UUID),
    ALTER COLUMN heartbeat_run_id TYPE UUID USING CAST(heartbeat_run_id AS UUID);

ALTER TABLE cost_month_totals
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID);

ALTER TABLE goals
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN parent_id TYPE UUID USING CAST(parent_id AS UUID),
    ALTER COLUMN owner_agent_id TYPE UUID USING CAST(owner_agent_id AS UUID);

ALTER TABLE heartbeat_run_events
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN run_id TYPE UUID USING CAST(run_id AS UUID),
    ALTER COLUMN agent_id TYPE UUID USING CAST(agent_id AS UUID);

ALTER TABLE heartbeat_runs
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN agent_id TYPE UUID USING CAST(agent_id AS UUID),
    ALTER COLUMN wakeup_request_id TYPE UUID USING CAST(wakeup_request_id AS UUID),
    ALTER COLUMN issue_id TYPE UUID USING CAST(issue_id AS UUID),
    ALTER COLUMN retry_of_run_id TYPE UUID USING CAST(retry_of_run_id AS UUID);

ALTER TABLE inbox_dismissals
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID);

ALTER TABLE issue_approvals
    ALTER COLUMN issue_id TYPE UUID USING CAST(issue_id AS UUID),
    ALTER COLUMN approval_id TYPE UUID USING CAST(approval_id AS UUID);

ALTER TABLE issue_blockers
    ALTER COLUMN issue_id TYPE UUID USING CAST(issue_id AS UUID),
    ALTER COLUMN blocked_by_issue_id TYPE UUID USING CAST(blocked_by_issue_id AS UUID);

ALTER TABLE issue_comments
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN issue_id TYPE UUID USING CAST(issue_id AS UUID),
    ALTER COLUMN author_agent_id TYPE UUID USING CAST(author_agent_id AS UUID),
    ALTER COLUMN created_by_run_id TYPE UUID USING CAST(created_by_run_id AS UUID);

ALTER TABLE issue_document_revisions
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN document_id TYPE UUID USING CAST(document_id AS UUID),
    ALTER COLUMN created_by_agent_id TYPE UUID USING CAST(created_by_agent_id AS UUID);

ALTER TABLE issue_documents
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN issue_id TYPE UUID USING CAST(issue_id AS UUID),
    ALTER COLUMN latest_revision_id TYPE UUID USING CAST(latest_revision_id AS UUID),
    ALTER COLUMN created_by_agent_id TYPE UUID USING CAST(created_by_agent_id AS UUID),
    ALTER COLUMN updated_by_agent_id TYPE UUID USING CAST(updated_by_agent_id AS UUID),
    ALTER COLUMN locked_by_agent_id TYPE UUID USING CAST(locked_by_agent_id AS UUID);

ALTER TABLE issue_labels
    ALTER COLUMN issue_id TYPE UUID USING CAST(issue_id AS UUID),
    ALTER COLUMN label_id TYPE UUID USING CAST(label_id AS UUID);

ALTER TABLE issue_status_counts
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID);

ALTER TABLE issue_wake_loops
    ALTER COLUMN issue_id TYPE UUID USING CAST(issue_id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID);

ALTER TABLE issues
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN project_id TYPE UUID USING CAST(project_id AS UUID),
    ALTER COLUMN goal_id TYPE UUID USING CAST(goal_id AS UUID),
    ALTER COLUMN parent_id TYPE UUID USING CAST(parent_id AS UUID),
    ALTER COLUMN assignee_agent_id TYPE UUID USING CAST(assignee_agent_id AS UUID),
    ALTER COLUMN checkout_run_id TYPE UUID USING CAST(checkout_run_id AS UUID),
    ALTER COLUMN execution_run_id TYPE UUID USING CAST(execution_run_id AS UUID),
    ALTER COLUMN created_by_agent_id TYPE UUID USING CAST(created_by_agent_id AS UUID);

ALTER TABLE labels
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID);

ALTER TABLE projects
    ALTER COLUMN id TYPE UUID USING CAST(id AS UUID),
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID),
    ALTER COLUMN goal_id TYPE UUID USING CAST(goal_id AS UUID),
    ALTER COLUMN lead_agent_id TYPE UUID USING CAST(lead_agent_id AS UUID);

ALTER TABLE run_day_totals
    ALTER COLUMN company_id TYPE UUID USING CAST(company_id AS UUID);

ALTER TABLE task_search
    ALTER COLUMN issue_id TYPE UUID USING CAST(issue_id AS UUID);

ALTER TABLE task_titles
    ALTER COLUMN issue_id TYPE UUID USING CAST(issue_id AS UUID);

DO $$
DECLARE k RECORD;
BEGIN
    FOR k IN SELECT * FROM paperclip_foreign_keys ORDER BY name LOOP
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', k.tbl, k.name, k.def);
    END LOOP;
END
$$;

CREATE UNIQUE INDEX heartbeat_runs_one_queued
    ON heartbeat_runs (agent_id, COALESCE(CAST(issue_id AS TEXT), '')) WHERE status = 'queued';

-- A task's search words are rebuilt by its id.
DROP FUNCTION task_search_rebuild(TEXT);
DROP FUNCTION task_search_words(TEXT);

CREATE FUNCTION task_search_words(task UUID) RETURNS tsvector LANGUAGE sql STABLE AS $$
    SELECT task_search_vector(
        i.identifier || ' ' || i.title || ' ' || COALESCE(i.description, '') || ' ' ||
        LEFT(COALESCE((SELECT string_agg(c.body, ' ' ORDER BY c.created_at, c.id) FROM issue_comments c
                       WHERE c.issue_id = i.id AND c.deleted_at IS NULL), ''), 1000000))
    FROM issues i WHERE i.id = task
$$;

CREATE FUNCTION task_search_rebuild(task UUID) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM task_search WHERE issue_id = task FOR UPDATE;
    -- COALESCE: a comment removed with its task (cascade) may find the task
    -- gone and its search row not yet.
    UPDATE task_search SET words = COALESCE(task_search_words(task), words) WHERE issue_id = task;
END
$$;

-- Cost totals key an agent, project or task by its id's text ('' for none).
CREATE OR REPLACE FUNCTION cost_month_totals_follow() RETURNS trigger LANGUAGE plpgsql AS $$
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

DO $$
DECLARE k RECORD;
BEGIN
    FOR k IN SELECT * FROM paperclip_triggers ORDER BY name LOOP
        EXECUTE k.def;
    END LOOP;
END
$$;

ANALYZE;
