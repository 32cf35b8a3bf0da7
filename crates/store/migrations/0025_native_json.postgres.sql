-- JSON as jsonb and the one flag as boolean: Postgres checks what is stored
-- and the store filters JSON with its operators instead of matching text.
-- Statements stay shared with SQLite: the store binds JSON as text and
-- Postgres types each parameter from its column (src/pg_params.rs).

-- A value that is not valid JSON (none is written by this store, but a
-- database may have been edited by hand) is kept as a JSON string of its
-- text rather than failing the upgrade.
CREATE FUNCTION paperclip_upgrade_jsonb(value TEXT) RETURNS JSONB AS $$
BEGIN
    RETURN value::jsonb;
EXCEPTION WHEN others THEN
    RETURN to_jsonb(value);
END;
$$ LANGUAGE plpgsql IMMUTABLE;

ALTER TABLE agents
    ALTER COLUMN adapter_config DROP DEFAULT,
    ALTER COLUMN runtime_config DROP DEFAULT,
    ALTER COLUMN permissions DROP DEFAULT,
    ALTER COLUMN adapter_config TYPE JSONB USING paperclip_upgrade_jsonb(adapter_config),
    ALTER COLUMN runtime_config TYPE JSONB USING paperclip_upgrade_jsonb(runtime_config),
    ALTER COLUMN permissions TYPE JSONB USING paperclip_upgrade_jsonb(permissions),
    ALTER COLUMN metadata TYPE JSONB USING paperclip_upgrade_jsonb(metadata),
    ALTER COLUMN adapter_config SET DEFAULT '{}',
    ALTER COLUMN runtime_config SET DEFAULT '{}',
    ALTER COLUMN permissions SET DEFAULT '{}';

ALTER TABLE agent_config_revisions
    ALTER COLUMN redacted_paths DROP DEFAULT,
    ALTER COLUMN adapter_config TYPE JSONB USING paperclip_upgrade_jsonb(adapter_config),
    ALTER COLUMN runtime_config TYPE JSONB USING paperclip_upgrade_jsonb(runtime_config),
    ALTER COLUMN redacted_paths TYPE JSONB USING paperclip_upgrade_jsonb(redacted_paths),
    ALTER COLUMN redacted_paths SET DEFAULT '[]';

ALTER TABLE activity_log
    ALTER COLUMN details DROP DEFAULT,
    ALTER COLUMN details TYPE JSONB USING paperclip_upgrade_jsonb(details),
    ALTER COLUMN details SET DEFAULT '{}';

ALTER TABLE approvals
    ALTER COLUMN payload DROP DEFAULT,
    ALTER COLUMN payload TYPE JSONB USING paperclip_upgrade_jsonb(payload),
    ALTER COLUMN payload SET DEFAULT '{}';

ALTER TABLE heartbeat_runs
    ALTER COLUMN context_snapshot DROP DEFAULT,
    ALTER COLUMN context_snapshot TYPE JSONB USING paperclip_upgrade_jsonb(context_snapshot),
    ALTER COLUMN usage_json TYPE JSONB USING paperclip_upgrade_jsonb(usage_json),
    ALTER COLUMN result_json TYPE JSONB USING paperclip_upgrade_jsonb(result_json),
    ALTER COLUMN context_snapshot SET DEFAULT '{}';

ALTER TABLE heartbeat_run_events
    ALTER COLUMN payload TYPE JSONB USING paperclip_upgrade_jsonb(payload);

ALTER TABLE agent_wakeup_requests
    ALTER COLUMN payload TYPE JSONB USING paperclip_upgrade_jsonb(payload);

ALTER TABLE agent_task_sessions
    ALTER COLUMN session_params_json TYPE JSONB USING paperclip_upgrade_jsonb(session_params_json);

DROP FUNCTION paperclip_upgrade_jsonb(TEXT);

ALTER TABLE companies
    ALTER COLUMN require_board_approval_for_new_agents DROP DEFAULT,
    ALTER COLUMN require_board_approval_for_new_agents TYPE BOOLEAN
        USING require_board_approval_for_new_agents <> 0,
    ALTER COLUMN require_board_approval_for_new_agents SET DEFAULT FALSE;
