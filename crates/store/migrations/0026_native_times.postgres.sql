-- Times as timestamptz on Postgres (SQLite keeps the store's text form,
-- `2026-12-04T21:18:32.123Z`, which sorts as time). The store binds times
-- as that text and Postgres types each parameter from its column
-- (src/pg_params.rs); a time is read back in the same form.
--
-- A stored value that is not a time fails the upgrade (Postgres names the
-- value) and the database is left as it was: no time is guessed or dropped.

-- Shared SQL takes a day or a month as the first 10 or 7 characters of a
-- time (as SQLite's text is): the same characters of a timestamptz, in UTC.
-- STABLE as to_char is, so Postgres inlines it into the query (declared
-- IMMUTABLE it was called row by row: 35 against 24 ms for 9,000 runs).
CREATE FUNCTION substr(t TIMESTAMPTZ, start INTEGER, count INTEGER) RETURNS TEXT AS $$
    SELECT substr(to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), start, count)
$$ LANGUAGE SQL STABLE PARALLEL SAFE;

-- Triggers that name a time column are set up again after it changes type.
DROP TRIGGER issue_day_counts_update ON issues;
DROP TRIGGER task_search_comment_change ON issue_comments;

ALTER TABLE activity_log
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ);

ALTER TABLE agent_api_keys
    ALTER COLUMN last_used_at TYPE TIMESTAMPTZ USING CAST(last_used_at AS TIMESTAMPTZ),
    ALTER COLUMN revoked_at TYPE TIMESTAMPTZ USING CAST(revoked_at AS TIMESTAMPTZ),
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ);

ALTER TABLE agent_config_revisions
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ);

ALTER TABLE agent_task_sessions
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING CAST(updated_at AS TIMESTAMPTZ);

ALTER TABLE agent_wakeup_requests
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING CAST(updated_at AS TIMESTAMPTZ);

ALTER TABLE agents
    ALTER COLUMN paused_at TYPE TIMESTAMPTZ USING CAST(paused_at AS TIMESTAMPTZ),
    ALTER COLUMN last_heartbeat_at TYPE TIMESTAMPTZ USING CAST(last_heartbeat_at AS TIMESTAMPTZ),
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING CAST(updated_at AS TIMESTAMPTZ),
    ALTER COLUMN usage_limited_until TYPE TIMESTAMPTZ USING CAST(usage_limited_until AS TIMESTAMPTZ);

ALTER TABLE approval_comments
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ);

ALTER TABLE approvals
    ALTER COLUMN decided_at TYPE TIMESTAMPTZ USING CAST(decided_at AS TIMESTAMPTZ),
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING CAST(updated_at AS TIMESTAMPTZ);

ALTER TABLE budget_incidents
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ),
    ALTER COLUMN resolved_at TYPE TIMESTAMPTZ USING CAST(resolved_at AS TIMESTAMPTZ);

ALTER TABLE companies
    ALTER COLUMN paused_at TYPE TIMESTAMPTZ USING CAST(paused_at AS TIMESTAMPTZ),
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING CAST(updated_at AS TIMESTAMPTZ),
    ALTER COLUMN strategy_approved_at TYPE TIMESTAMPTZ USING CAST(strategy_approved_at AS TIMESTAMPTZ);

ALTER TABLE cost_events
    ALTER COLUMN occurred_at TYPE TIMESTAMPTZ USING CAST(occurred_at AS TIMESTAMPTZ),
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ);

ALTER TABLE goals
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING CAST(updated_at AS TIMESTAMPTZ);

ALTER TABLE heartbeat_run_events
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ);

ALTER TABLE heartbeat_runs
    ALTER COLUMN started_at TYPE TIMESTAMPTZ USING CAST(started_at AS TIMESTAMPTZ),
    ALTER COLUMN finished_at TYPE TIMESTAMPTZ USING CAST(finished_at AS TIMESTAMPTZ),
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING CAST(updated_at AS TIMESTAMPTZ),
    ALTER COLUMN process_started_at TYPE TIMESTAMPTZ USING CAST(process_started_at AS TIMESTAMPTZ),
    ALTER COLUMN callback_deadline_at TYPE TIMESTAMPTZ USING CAST(callback_deadline_at AS TIMESTAMPTZ),
    ALTER COLUMN last_output_at TYPE TIMESTAMPTZ USING CAST(last_output_at AS TIMESTAMPTZ),
    ALTER COLUMN last_useful_action_at TYPE TIMESTAMPTZ USING CAST(last_useful_action_at AS TIMESTAMPTZ);

ALTER TABLE inbox_dismissals
    ALTER COLUMN snoozed_until TYPE TIMESTAMPTZ USING CAST(snoozed_until AS TIMESTAMPTZ),
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ);

ALTER TABLE instance_secrets
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ);

ALTER TABLE issue_approvals
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ);

ALTER TABLE issue_blockers
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ);

ALTER TABLE issue_comments
    ALTER COLUMN deleted_at TYPE TIMESTAMPTZ USING CAST(deleted_at AS TIMESTAMPTZ),
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING CAST(updated_at AS TIMESTAMPTZ);

ALTER TABLE issue_document_revisions
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ);

ALTER TABLE issue_documents
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING CAST(updated_at AS TIMESTAMPTZ),
    ALTER COLUMN locked_at TYPE TIMESTAMPTZ USING CAST(locked_at AS TIMESTAMPTZ);

ALTER TABLE issue_wake_loops
    ALTER COLUMN window_started_at TYPE TIMESTAMPTZ USING CAST(window_started_at AS TIMESTAMPTZ),
    ALTER COLUMN held_at TYPE TIMESTAMPTZ USING CAST(held_at AS TIMESTAMPTZ),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING CAST(updated_at AS TIMESTAMPTZ);

ALTER TABLE issues
    ALTER COLUMN execution_locked_at TYPE TIMESTAMPTZ USING CAST(execution_locked_at AS TIMESTAMPTZ),
    ALTER COLUMN started_at TYPE TIMESTAMPTZ USING CAST(started_at AS TIMESTAMPTZ),
    ALTER COLUMN completed_at TYPE TIMESTAMPTZ USING CAST(completed_at AS TIMESTAMPTZ),
    ALTER COLUMN cancelled_at TYPE TIMESTAMPTZ USING CAST(cancelled_at AS TIMESTAMPTZ),
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING CAST(updated_at AS TIMESTAMPTZ);

ALTER TABLE labels
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING CAST(updated_at AS TIMESTAMPTZ);

ALTER TABLE projects
    ALTER COLUMN archived_at TYPE TIMESTAMPTZ USING CAST(archived_at AS TIMESTAMPTZ),
    ALTER COLUMN created_at TYPE TIMESTAMPTZ USING CAST(created_at AS TIMESTAMPTZ),
    ALTER COLUMN updated_at TYPE TIMESTAMPTZ USING CAST(updated_at AS TIMESTAMPTZ);

CREATE TRIGGER issue_day_counts_update AFTER UPDATE OF status, company_id, created_at, completed_at ON issues
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.company_id IS DISTINCT FROM NEW.company_id
        OR OLD.created_at IS DISTINCT FROM NEW.created_at OR OLD.completed_at IS DISTINCT FROM NEW.completed_at)
    EXECUTE FUNCTION issue_day_counts_follow();
CREATE TRIGGER task_search_comment_change AFTER INSERT OR DELETE OR UPDATE OF body, deleted_at, issue_id
    ON issue_comments FOR EACH ROW EXECUTE FUNCTION task_search_comment_follow();

-- A column whose type changed has no planner statistics until autovacuum
-- gets to its table; the pages at a million tasks are planned from them.
ANALYZE;
