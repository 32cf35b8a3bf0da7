//! Behind the server's back: one connection onto its database, SQL that the
//! Any driver binds as text, and the steps that take a schema back to an
//! older release's.

/// One connection onto a server's database (`url`), for tests that count
/// or plant rows behind its back, or rewrite a stopped server's schema back
/// to an older release's. One on purpose: with a pool of several, a statement
/// on one connection right after schema changes on another failed now and
/// then on SQLite with "no such table: issues" (about half the runs here,
/// the database all in its WAL after the kill; never seen from the server,
/// which changes its schema on one connection before opening the others).
pub async fn database(url: &str) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .expect("open the server's database")
}

/// The URL of a stopped server's database: its Postgres URL, or the SQLite
/// file in its data dir.
pub fn database_url(data_dir: &std::path::Path, database_url: &Option<String>) -> String {
    database_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("paperclip.db").display()))
}

/// `sql` for the Any driver, which binds text only: on Postgres, where times
/// are `timestamptz` and ids `uuid`, a parameter a time or id column is
/// compared with or set to (`created_at >= $2`, `WHERE company_id = $1`) is
/// cast to one. (A selected id must be cast to text by the query itself.)
pub fn bound_as_text(sql: &str, postgres: bool) -> String {
    if !postgres {
        return sql.to_string();
    }
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        let (before, after) = rest.split_at(at);
        let digits = after[1..].chars().take_while(char::is_ascii_digit).count();
        let param = &after[..1 + digits];
        let lhs = before.trim_end();
        let column = ["<=", ">=", "=", "<", ">"]
            .iter()
            .find_map(|op| lhs.strip_suffix(op))
            .map(str::trim_end)
            .and_then(|l| {
                l.rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
            });
        out.push_str(before);
        match column {
            Some(c) if digits > 0 && (c.ends_with("_at") || c.ends_with("_until")) => {
                out.push_str(&format!("CAST({param} AS TIMESTAMPTZ)"))
            }
            Some(c) if digits > 0 && is_uuid_column(c) => {
                out.push_str(&format!("CAST({param} AS UUID)"))
            }
            _ => out.push_str(param),
        }
        rest = &after[param.len()..];
    }
    out.push_str(rest);
    out
}

/// Whether a column of this name is a `uuid` on Postgres (migration 27):
/// ids, but not people's, actors', entities' or clients' ones.
fn is_uuid_column(name: &str) -> bool {
    (name == "id" || name == "reports_to" || name.ends_with("_id"))
        && !name.ends_with("user_id")
        && ![
            "actor_id",
            "entity_id",
            "scope_id",
            "session_display_id",
            "client_request_id",
            "changed_by_actor_id",
            "requested_by_actor_id",
        ]
        .contains(&name)
}

/// Undoes migration 27 on Postgres: ids back to the text of schema 26 (for
/// tests that start from an older database). Each step is one statement.
pub fn postgres_ids_back_to_text() -> Vec<String> {
    let mut steps: Vec<String> = before_secrets_and_teams();
    steps.extend(
    [
        "DROP TRIGGER issue_status_counts_update ON issues",
        "DROP TRIGGER issue_day_counts_update ON issues",
        "DROP TRIGGER task_search_comment_change ON issue_comments",
        // Keys and the columns they join change together: dropped, changed,
        // and made again as they were, in one statement.
        "DO $$ DECLARE k RECORD; c RECORD; again TEXT[] := '{}'; step TEXT; BEGIN \
         FOR k IN SELECT conrelid::regclass::text AS tbl, conname, pg_get_constraintdef(oid) AS def \
             FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace LOOP \
             again := again || format('ALTER TABLE %s ADD CONSTRAINT %I %s', k.tbl, k.conname, k.def); \
             EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', k.tbl, k.conname); \
         END LOOP; \
         FOR c IN SELECT table_name, column_name FROM information_schema.columns \
             WHERE table_schema = current_schema() AND data_type = 'uuid' LOOP \
             EXECUTE format('ALTER TABLE %I ALTER COLUMN %I TYPE TEXT USING CAST(%I AS TEXT)', \
                 c.table_name, c.column_name, c.column_name); \
         END LOOP; \
         FOREACH step IN ARRAY again LOOP EXECUTE step; END LOOP; END $$",
        "DROP FUNCTION task_search_rebuild(UUID)",
        "DROP FUNCTION task_search_words(UUID)",
        "CREATE FUNCTION task_search_words(task TEXT) RETURNS tsvector LANGUAGE sql STABLE AS $$ \
         SELECT task_search_vector(i.identifier || ' ' || i.title || ' ' || COALESCE(i.description, '') \
         || ' ' || LEFT(COALESCE((SELECT string_agg(c.body, ' ' ORDER BY c.created_at, c.id) \
         FROM issue_comments c WHERE c.issue_id = i.id AND c.deleted_at IS NULL), ''), 1000000)) \
         FROM issues i WHERE i.id = task $$",
        "CREATE FUNCTION task_search_rebuild(task TEXT) RETURNS void LANGUAGE plpgsql AS $$ BEGIN \
         PERFORM 1 FROM task_search WHERE issue_id = task FOR UPDATE; \
         UPDATE task_search SET words = COALESCE(task_search_words(task), words) WHERE issue_id = task; \
         END $$",
        "CREATE TRIGGER issue_status_counts_update AFTER UPDATE OF status, company_id ON issues \
         FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.company_id IS DISTINCT \
         FROM NEW.company_id) EXECUTE FUNCTION issue_status_counts_follow()",
        "CREATE TRIGGER issue_day_counts_update AFTER UPDATE OF status, company_id, created_at, \
         completed_at ON issues FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status \
         OR OLD.company_id IS DISTINCT FROM NEW.company_id OR OLD.created_at IS DISTINCT FROM \
         NEW.created_at OR OLD.completed_at IS DISTINCT FROM NEW.completed_at) \
         EXECUTE FUNCTION issue_day_counts_follow()",
        "CREATE TRIGGER task_search_comment_change AFTER INSERT OR DELETE OR UPDATE OF body, \
         deleted_at, issue_id ON issue_comments FOR EACH ROW EXECUTE FUNCTION \
         task_search_comment_follow()",
    ]
    .iter()
    .map(|s| s.to_string()));
    steps.push("DELETE FROM schema_migrations WHERE version = 27".into());
    steps
}

fn on_postgres() -> bool {
    std::env::var("PAPERCLIP_TEST_PG_URL").is_ok_and(|u| !u.is_empty())
}

/// Undoes migrations 28 (company secrets) and 29 (teams), and the later tables that key to
/// them or to ids an older schema kept as text, for tests that start from a
/// database an earlier release made: it had no such tables.
pub fn before_secrets_and_teams() -> Vec<String> {
    [
        // Migration 59 (comment provenance): two partial indexes and
        // nullable columns.
        "DROP INDEX IF EXISTS issue_comments_derived_run",
        "DROP INDEX IF EXISTS issue_comments_deleted_by_run",
        if on_postgres() {
            "ALTER TABLE issue_comments DROP COLUMN IF EXISTS on_behalf_of_user_id"
        } else {
            "ALTER TABLE issue_comments DROP COLUMN on_behalf_of_user_id"
        },
        if on_postgres() {
            "ALTER TABLE issue_comments DROP COLUMN IF EXISTS derived_author_agent_id"
        } else {
            "ALTER TABLE issue_comments DROP COLUMN derived_author_agent_id"
        },
        if on_postgres() {
            "ALTER TABLE issue_comments DROP COLUMN IF EXISTS derived_created_by_run_id"
        } else {
            "ALTER TABLE issue_comments DROP COLUMN derived_created_by_run_id"
        },
        if on_postgres() {
            "ALTER TABLE issue_comments DROP COLUMN IF EXISTS derived_author_source"
        } else {
            "ALTER TABLE issue_comments DROP COLUMN derived_author_source"
        },
        if on_postgres() {
            "ALTER TABLE issue_comments DROP COLUMN IF EXISTS presentation"
        } else {
            "ALTER TABLE issue_comments DROP COLUMN presentation"
        },
        if on_postgres() {
            "ALTER TABLE issue_comments DROP COLUMN IF EXISTS metadata"
        } else {
            "ALTER TABLE issue_comments DROP COLUMN metadata"
        },
        if on_postgres() {
            "ALTER TABLE issue_comments DROP COLUMN IF EXISTS deleted_by_type"
        } else {
            "ALTER TABLE issue_comments DROP COLUMN deleted_by_type"
        },
        if on_postgres() {
            "ALTER TABLE issue_comments DROP COLUMN IF EXISTS deleted_by_agent_id"
        } else {
            "ALTER TABLE issue_comments DROP COLUMN deleted_by_agent_id"
        },
        if on_postgres() {
            "ALTER TABLE issue_comments DROP COLUMN IF EXISTS deleted_by_user_id"
        } else {
            "ALTER TABLE issue_comments DROP COLUMN deleted_by_user_id"
        },
        if on_postgres() {
            "ALTER TABLE issue_comments DROP COLUMN IF EXISTS deleted_by_run_id"
        } else {
            "ALTER TABLE issue_comments DROP COLUMN deleted_by_run_id"
        },
        "DELETE FROM schema_migrations WHERE version = 59",
        // Migration 58 (routine description documents): two tables.
        "DROP TABLE IF EXISTS routine_document_revisions",
        "DROP TABLE IF EXISTS routine_documents",
        "DELETE FROM schema_migrations WHERE version = 58",
        // Migration 57 (routine folders, env, responsible person, dispatch
        // fingerprints): a table, indexes and nullable or defaulted columns.
        "DROP INDEX IF EXISTS routine_runs_dispatch_fingerprint_idx",
        "DROP INDEX IF EXISTS routines_company_folder_idx",
        if on_postgres() {
            "ALTER TABLE IF EXISTS routine_runs DROP COLUMN IF EXISTS dispatch_fingerprint"
        } else {
            "ALTER TABLE routine_runs DROP COLUMN dispatch_fingerprint"
        },
        if on_postgres() {
            "ALTER TABLE IF EXISTS routine_runs DROP COLUMN IF EXISTS responsible_user_id"
        } else {
            "ALTER TABLE routine_runs DROP COLUMN responsible_user_id"
        },
        if on_postgres() {
            "ALTER TABLE IF EXISTS routine_revisions DROP COLUMN IF EXISTS responsible_user_id"
        } else {
            "ALTER TABLE routine_revisions DROP COLUMN responsible_user_id"
        },
        if on_postgres() {
            "ALTER TABLE IF EXISTS routines DROP COLUMN IF EXISTS responsible_user_id"
        } else {
            "ALTER TABLE routines DROP COLUMN responsible_user_id"
        },
        if on_postgres() {
            "ALTER TABLE IF EXISTS routines DROP COLUMN IF EXISTS env"
        } else {
            "ALTER TABLE routines DROP COLUMN env"
        },
        if on_postgres() {
            "ALTER TABLE IF EXISTS routines DROP COLUMN IF EXISTS origin_id"
        } else {
            "ALTER TABLE routines DROP COLUMN origin_id"
        },
        if on_postgres() {
            "ALTER TABLE IF EXISTS routines DROP COLUMN IF EXISTS origin_kind"
        } else {
            "ALTER TABLE routines DROP COLUMN origin_kind"
        },
        if on_postgres() {
            "ALTER TABLE IF EXISTS routines DROP COLUMN IF EXISTS folder_id"
        } else {
            "ALTER TABLE routines DROP COLUMN folder_id"
        },
        "DROP TABLE IF EXISTS folders",
        "DELETE FROM schema_migrations WHERE version = 57",
        // Migration 56 (company branding): two tables and defaulted or
        // nullable columns.
        "DROP TABLE IF EXISTS company_logos",
        "DROP TABLE IF EXISTS assets",
        if on_postgres() {
            "ALTER TABLE companies DROP COLUMN IF EXISTS interaction_resolver_governance"
        } else {
            "ALTER TABLE companies DROP COLUMN interaction_resolver_governance"
        },
        if on_postgres() {
            "ALTER TABLE companies DROP COLUMN IF EXISTS feedback_data_sharing_enabled"
        } else {
            "ALTER TABLE companies DROP COLUMN feedback_data_sharing_enabled"
        },
        if on_postgres() {
            "ALTER TABLE companies DROP COLUMN IF EXISTS feedback_data_sharing_consent_at"
        } else {
            "ALTER TABLE companies DROP COLUMN feedback_data_sharing_consent_at"
        },
        if on_postgres() {
            "ALTER TABLE companies DROP COLUMN IF EXISTS feedback_data_sharing_consent_by_user_id"
        } else {
            "ALTER TABLE companies DROP COLUMN feedback_data_sharing_consent_by_user_id"
        },
        if on_postgres() {
            "ALTER TABLE companies DROP COLUMN IF EXISTS feedback_data_sharing_terms_version"
        } else {
            "ALTER TABLE companies DROP COLUMN feedback_data_sharing_terms_version"
        },
        if on_postgres() {
            "ALTER TABLE IF EXISTS issue_thread_interactions DROP COLUMN IF EXISTS resolver_policy_provenance"
        } else {
            "ALTER TABLE issue_thread_interactions DROP COLUMN resolver_policy_provenance"
        },
        if on_postgres() {
            "ALTER TABLE IF EXISTS issue_thread_interactions DROP COLUMN IF EXISTS effective_resolver_policy_source"
        } else {
            "ALTER TABLE issue_thread_interactions DROP COLUMN effective_resolver_policy_source"
        },
        "DELETE FROM schema_migrations WHERE version = 56",
        // Migration 55 (billed cost events): an index.
        "DROP INDEX IF EXISTS cost_events_billed",
        "DELETE FROM schema_migrations WHERE version = 55",
        // Migration 54 (project icon and env): nullable columns.
        if on_postgres() {
            "ALTER TABLE projects DROP COLUMN IF EXISTS icon"
        } else {
            "ALTER TABLE projects DROP COLUMN icon"
        },
        if on_postgres() {
            "ALTER TABLE projects DROP COLUMN IF EXISTS env"
        } else {
            "ALTER TABLE projects DROP COLUMN env"
        },
        "DELETE FROM schema_migrations WHERE version = 54",
        // Migration 52 (cost billing type): a defaulted column.
        if on_postgres() {
            "ALTER TABLE cost_events DROP COLUMN IF EXISTS billing_type"
        } else {
            "ALTER TABLE cost_events DROP COLUMN billing_type"
        },
        "DELETE FROM schema_migrations WHERE version = 52",
        // Migration 51 (runtime state began, dismissal ids): an index and nullable columns.
        "DROP INDEX IF EXISTS inbox_dismissals_id",
        if on_postgres() {
            "ALTER TABLE inbox_dismissals DROP COLUMN IF EXISTS id"
        } else {
            "ALTER TABLE inbox_dismissals DROP COLUMN id"
        },
        if on_postgres() {
            "ALTER TABLE inbox_dismissals DROP COLUMN IF EXISTS updated_at"
        } else {
            "ALTER TABLE inbox_dismissals DROP COLUMN updated_at"
        },
        if on_postgres() {
            "ALTER TABLE agents DROP COLUMN IF EXISTS runtime_state_created_at"
        } else {
            "ALTER TABLE agents DROP COLUMN runtime_state_created_at"
        },
        "DELETE FROM schema_migrations WHERE version = 51",
        // Migration 50 (revision identity): a nullable column.
        if on_postgres() {
            "ALTER TABLE agent_config_revisions DROP COLUMN IF EXISTS identity"
        } else {
            "ALTER TABLE agent_config_revisions DROP COLUMN identity"
        },
        "DELETE FROM schema_migrations WHERE version = 50",
        // Migration 49 (context and quota): a table and nullable columns.
        "DROP TABLE IF EXISTS agent_quota_snapshots",
        if on_postgres() {
            "ALTER TABLE agent_task_sessions DROP COLUMN IF EXISTS context_tokens"
        } else {
            "ALTER TABLE agent_task_sessions DROP COLUMN context_tokens"
        },
        if on_postgres() {
            "ALTER TABLE agent_task_sessions DROP COLUMN IF EXISTS context_model"
        } else {
            "ALTER TABLE agent_task_sessions DROP COLUMN context_model"
        },
        "DELETE FROM schema_migrations WHERE version = 49",
        // Migration 48 (Agent Chat): an index and nullable or defaulted columns.
        "DROP INDEX IF EXISTS issues_one_chat",
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS conversation_agent_id"
        } else {
            "ALTER TABLE issues DROP COLUMN conversation_agent_id"
        },
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS conversation_user_id"
        } else {
            "ALTER TABLE issues DROP COLUMN conversation_user_id"
        },
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS conversation_state"
        } else {
            "ALTER TABLE issues DROP COLUMN conversation_state"
        },
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS conversation_session_generation"
        } else {
            "ALTER TABLE issues DROP COLUMN conversation_session_generation"
        },
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS conversation_boundary_comment_id"
        } else {
            "ALTER TABLE issues DROP COLUMN conversation_boundary_comment_id"
        },
        if on_postgres() {
            "ALTER TABLE issue_comments DROP COLUMN IF EXISTS conversation_session_generation"
        } else {
            "ALTER TABLE issue_comments DROP COLUMN conversation_session_generation"
        },
        "DELETE FROM schema_migrations WHERE version = 48",
        "DROP TABLE IF EXISTS decision_effect_executions",
        "DROP TABLE IF EXISTS decision_target_issues",
        "DROP TABLE IF EXISTS decisions",
        "DROP TABLE IF EXISTS decision_bundles",
        "DELETE FROM schema_migrations WHERE version = 46",
        "DROP TABLE IF EXISTS issue_tree_hold_members",
        "DROP TABLE IF EXISTS issue_tree_holds",
        "DROP TABLE IF EXISTS issue_watchdogs",
        "DROP INDEX IF EXISTS issues_monitor_due_idx",
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS execution_policy"
        } else {
            "ALTER TABLE issues DROP COLUMN execution_policy"
        },
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS execution_state"
        } else {
            "ALTER TABLE issues DROP COLUMN execution_state"
        },
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS monitor_next_check_at"
        } else {
            "ALTER TABLE issues DROP COLUMN monitor_next_check_at"
        },
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS monitor_wake_requested_at"
        } else {
            "ALTER TABLE issues DROP COLUMN monitor_wake_requested_at"
        },
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS monitor_last_triggered_at"
        } else {
            "ALTER TABLE issues DROP COLUMN monitor_last_triggered_at"
        },
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS monitor_attempt_count"
        } else {
            "ALTER TABLE issues DROP COLUMN monitor_attempt_count"
        },
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS monitor_notes"
        } else {
            "ALTER TABLE issues DROP COLUMN monitor_notes"
        },
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS monitor_scheduled_by"
        } else {
            "ALTER TABLE issues DROP COLUMN monitor_scheduled_by"
        },
        if on_postgres() {
            "ALTER TABLE issues DROP COLUMN IF EXISTS monitor_external_ref"
        } else {
            "ALTER TABLE issues DROP COLUMN monitor_external_ref"
        },
        "DELETE FROM schema_migrations WHERE version = 45",
        "DROP TABLE IF EXISTS company_skill_versions",
        "DROP TABLE IF EXISTS company_skills",
        "DELETE FROM schema_migrations WHERE version = 44",
        "DROP TABLE IF EXISTS company_secret_bindings",
        "DROP TABLE IF EXISTS company_secret_proposals",
        "DELETE FROM schema_migrations WHERE version = 42",
        "DROP TABLE IF EXISTS issue_inbox_archives",
        "DROP TABLE IF EXISTS issue_read_states",
        "DELETE FROM schema_migrations WHERE version = 43",
        // Migration 41 (model servers) made a new table only.
        "DROP TABLE IF EXISTS model_servers",
        "DELETE FROM schema_migrations WHERE version = 41",
        // Migration 40 (run logs in the database) made new tables only.
        "DROP TABLE IF EXISTS run_log_cuts",
        "DROP TABLE IF EXISTS run_log_chunks",
        "DELETE FROM schema_migrations WHERE version = 40",
        // Migration 39 (instances) made new tables, an index and a column.
        "DROP TABLE IF EXISTS live_event_spill",
        "DROP TABLE IF EXISTS singleton_leases",
        "DROP TABLE IF EXISTS instances",
        "DROP INDEX IF EXISTS heartbeat_runs_running_owner",
        if on_postgres() {
            "ALTER TABLE heartbeat_runs DROP COLUMN IF EXISTS owner_instance_id"
        } else {
            "ALTER TABLE heartbeat_runs DROP COLUMN owner_instance_id"
        },
        "DELETE FROM schema_migrations WHERE version = 39",
        // Migration 38 (Web Push) made new tables only.
        "DROP TABLE IF EXISTS push_action_uses",
        "DROP TABLE IF EXISTS push_preferences",
        "DROP TABLE IF EXISTS push_subscriptions",
        "DELETE FROM schema_migrations WHERE version = 38",
        // Migrations 36 and 37 (workspaces) made tables with keys to the
        // tables whose ids go back to text: an earlier release had none of
        // them (37's columns on companies go with it, to be made again).
        "DROP TABLE IF EXISTS workspace_task_changes",
        "DROP TABLE IF EXISTS workspace_operations",
        // Postgres runs these steps twice in one test (SQLite has no `IF
        // EXISTS` here, and runs them once).
        if on_postgres() {
            "ALTER TABLE companies DROP COLUMN IF EXISTS workspace_retention_days"
        } else {
            "ALTER TABLE companies DROP COLUMN workspace_retention_days"
        },
        if on_postgres() {
            "ALTER TABLE companies DROP COLUMN IF EXISTS workspace_disk_budget_mb"
        } else {
            "ALTER TABLE companies DROP COLUMN workspace_disk_budget_mb"
        },
        if on_postgres() {
            "ALTER TABLE projects DROP COLUMN IF EXISTS execution_workspace_policy"
        } else {
            "ALTER TABLE projects DROP COLUMN execution_workspace_policy"
        },
        "DELETE FROM schema_migrations WHERE version = 37",
        "DROP TABLE IF EXISTS run_workspace_changes",
        "DROP TABLE IF EXISTS execution_workspaces",
        "DROP TABLE IF EXISTS project_workspaces",
        "DELETE FROM schema_migrations WHERE version = 36",
        // Migration 34 changes a table dropped below: it runs again.
        "DELETE FROM schema_migrations WHERE version = 34",
        "DROP TABLE IF EXISTS issue_thread_interactions",
        "DELETE FROM schema_migrations WHERE version = 32",
        "DROP TABLE IF EXISTS routine_webhook_replays",
        "DROP TABLE IF EXISTS routine_runs",
        "DROP TABLE IF EXISTS routine_revisions",
        "DROP TABLE IF EXISTS routine_triggers",
        "DROP TABLE IF EXISTS routines",
        "DELETE FROM schema_migrations WHERE version = 31",
        "DROP TABLE IF EXISTS issue_work_products",
        "DROP TABLE IF EXISTS issue_attachments",
        "DELETE FROM schema_migrations WHERE version = 30",
        "DROP TABLE IF EXISTS board_api_key_companies",
        "DROP TABLE IF EXISTS board_api_keys",
        "DROP TABLE IF EXISTS invites",
        "DROP TABLE IF EXISTS company_memberships",
        "DROP TABLE IF EXISTS board_sessions",
        "DROP TABLE IF EXISTS board_users",
        "DELETE FROM schema_migrations WHERE version = 29",
        "DROP TABLE IF EXISTS company_secret_versions",
        "DROP TABLE IF EXISTS company_secrets",
        "DELETE FROM schema_migrations WHERE version = 28",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}
