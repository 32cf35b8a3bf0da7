//! A database of schema 24 (JSON, times, flags and ids as text and
//! integers) upgrades in place: on Postgres its columns get native types,
//! everything it held reads back the same, and writes after it work.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

/// The columns migration 25 gives native types on Postgres.
const JSON_COLUMNS: &[(&str, &str)] = &[
    ("agents", "adapter_config"),
    ("agents", "runtime_config"),
    ("agents", "permissions"),
    ("agents", "metadata"),
    ("agent_config_revisions", "adapter_config"),
    ("agent_config_revisions", "runtime_config"),
    ("agent_config_revisions", "redacted_paths"),
    ("activity_log", "details"),
    ("approvals", "payload"),
    ("heartbeat_runs", "context_snapshot"),
    ("heartbeat_runs", "usage_json"),
    ("heartbeat_runs", "result_json"),
    ("heartbeat_run_events", "payload"),
    ("agent_wakeup_requests", "payload"),
    ("agent_task_sessions", "session_params_json"),
];

/// JSON columns of tables made after schema 24 (jsonb from the start); the
/// downgrade drops their tables.
const LATER_JSON_COLUMNS: &[(&str, &str)] = &[
    ("issue_work_products", "metadata"),
    ("routines", "variables"),
    ("routine_revisions", "snapshot"),
    ("routine_runs", "trigger_payload"),
    ("issue_thread_interactions", "payload"),
    ("issue_thread_interactions", "result"),
    ("execution_workspaces", "metadata"),
    ("run_workspace_changes", "files"),
    ("workspace_operations", "metadata"),
    ("workspace_task_changes", "files"),
    ("workspace_task_changes", "commits"),
    ("projects", "execution_workspace_policy"),
    ("projects", "env"),
    ("routines", "env"),
    ("company_skills", "categories"),
    ("company_skills", "metadata"),
    ("company_skill_versions", "files"),
    ("issue_tree_holds", "release_policy"),
    ("issue_tree_holds", "release_metadata"),
    ("issues", "execution_policy"),
    ("issues", "execution_state"),
    ("decisions", "options"),
    ("decisions", "inputs"),
    ("decisions", "input_values"),
    ("decisions", "target_snapshots"),
    ("decisions", "metadata"),
    ("decision_effect_executions", "result"),
    ("agent_quota_snapshots", "windows"),
    ("agent_config_revisions", "identity"),
    ("issue_comments", "presentation"),
    ("issue_comments", "metadata"),
    ("companies", "interaction_resolver_governance"),
];

/// Postgres columns of a type, as `(table, column)`.
async fn columns_of_type(pool: &sqlx::AnyPool, data_type: &str) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT CAST(table_name AS TEXT), CAST(column_name AS TEXT) FROM information_schema.columns \
         WHERE table_schema = current_schema() AND data_type = $1 ORDER BY 1, 2",
    )
    .bind(data_type)
    .fetch_all(pool)
    .await
    .unwrap()
}

/// Undoes migrations 25 and 26 on Postgres: JSON, times and the flag back to
/// the text and integers of schema 24.
async fn back_to_24_postgres(pool: &sqlx::AnyPool) -> Vec<String> {
    let mut steps = vec![
        "DROP TRIGGER issue_day_counts_update ON issues".to_string(),
        "DROP TRIGGER task_search_comment_change ON issue_comments".to_string(),
    ];
    let times = columns_of_type(pool, "timestamp with time zone").await;
    assert!(times.len() > 50, "every time is a timestamptz: {times:?}");
    for (table, column) in &times {
        // The first 24 characters: the store's own text form.
        steps.push(format!(
            "ALTER TABLE {table} ALTER COLUMN {column} TYPE TEXT USING SUBSTR({column}, 1, 24)"
        ));
    }
    steps.push(
        "CREATE TRIGGER issue_day_counts_update AFTER UPDATE OF status, company_id, created_at, \
         completed_at ON issues FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status \
         OR OLD.company_id IS DISTINCT FROM NEW.company_id OR OLD.created_at IS DISTINCT FROM \
         NEW.created_at OR OLD.completed_at IS DISTINCT FROM NEW.completed_at) \
         EXECUTE FUNCTION issue_day_counts_follow()"
            .into(),
    );
    steps.push(
        "CREATE TRIGGER task_search_comment_change AFTER INSERT OR DELETE OR UPDATE OF body, \
         deleted_at, issue_id ON issue_comments FOR EACH ROW EXECUTE FUNCTION \
         task_search_comment_follow()"
            .into(),
    );
    steps.push("DROP FUNCTION substr(TIMESTAMPTZ, INTEGER, INTEGER)".into());
    let json: Vec<(String, String)> = columns_of_type(pool, "jsonb")
        .await
        .into_iter()
        .filter(|(t, c)| !LATER_JSON_COLUMNS.contains(&(t.as_str(), c.as_str())))
        .collect();
    let expected: Vec<(String, String)> = {
        let mut v: Vec<_> = JSON_COLUMNS
            .iter()
            .map(|(t, c)| (t.to_string(), c.to_string()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(json, expected, "JSON is jsonb");
    for (table, column) in &json {
        steps.push(format!(
            "ALTER TABLE {table} ALTER COLUMN {column} DROP DEFAULT, \
             ALTER COLUMN {column} TYPE TEXT USING {column}::text"
        ));
    }
    steps.push(
        "ALTER TABLE companies ALTER COLUMN require_board_approval_for_new_agents DROP DEFAULT, \
         ALTER COLUMN require_board_approval_for_new_agents TYPE BIGINT \
         USING CASE WHEN require_board_approval_for_new_agents THEN 1 ELSE 0 END"
            .into(),
    );
    steps
}

#[tokio::test]
async fn a_schema_24_database_keeps_its_json_times_flags_and_ids_as_native_types() {
    let server = TestServer::start().await;
    let company = server
        .ok_post(
            "/api/companies",
            json!({ "name": "Native Co", "requireBoardApprovalForNewAgents": true }),
        )
        .await;
    let cid = company["id"].as_str().unwrap().to_string();
    let runtime = json!({ "heartbeat": { "enabled": false, "intervalSec": 3600 } });
    let agent = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Nova", "adapterType": "process",
                "adapterConfig": { "command": "true", "env": { "MODE": "quiet" } },
                "runtimeConfig": runtime, "metadata": { "team": "core" } }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let task = server.issue(&cid, json!({ "title": "Keep me" })).await;
    let tid = task["id"].as_str().unwrap().to_string();
    let done = server
        .issue(&cid, json!({ "title": "Finished", "status": "done" }))
        .await;
    server
        .ok_post(
            &format!("/api/issues/{tid}/comments"),
            json!({ "body": "A note kept with its time" }),
        )
        .await;
    let before_agent = server.ok_get(&format!("/api/agents/{aid}")).await;
    let before_task = server.ok_get(&format!("/api/issues/{tid}")).await;
    let before_done = server
        .ok_get(&format!("/api/issues/{}", done["id"].as_str().unwrap()))
        .await;
    let before_comments = server.ok_get(&format!("/api/issues/{tid}/comments")).await;
    let before_log = server
        .ok_get(&format!("/api/companies/{cid}/activity"))
        .await;
    let before_dashboard = server
        .ok_get(&format!("/api/companies/{cid}/dashboard"))
        .await;
    let (data_dir, database_url) = server.stop_keeping_data();
    let url = common::database_url(&data_dir, &database_url);
    let postgres = url.starts_with("postgres");
    let pool = common::database(&url).await;
    let mut back_to_24: Vec<String> = Vec::new();
    let mut foreign_keys = 0;
    if postgres {
        (foreign_keys,) = sqlx::query_as(
            "SELECT COUNT(*) FROM pg_constraint WHERE contype = 'f' \
             AND connamespace = current_schema()::regnamespace",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        for sql in common::postgres_ids_back_to_text() {
            sqlx::query(&sql).execute(&pool).await.unwrap();
        }
        back_to_24 = back_to_24_postgres(&pool).await;
        // Text the previous release accepted but that is not JSON (edited
        // by hand): kept, as a JSON string.
        back_to_24.push(format!(
            "UPDATE agents SET metadata = 'hand-edited' WHERE id = '{aid}'"
        ));
        // A trigger as an earlier build made it (more columns, no WHEN):
        // the upgrade keeps it as it finds it.
        back_to_24.push("DROP TRIGGER task_search_issue_update ON issues".into());
        back_to_24.push(
            "CREATE TRIGGER task_search_issue_update AFTER UPDATE OF identifier, title, \
             description, company_id, issue_number ON issues FOR EACH ROW \
             EXECUTE FUNCTION task_search_issue_follow()"
                .into(),
        );
    }
    back_to_24.push("DELETE FROM schema_migrations WHERE version IN (25, 26, 27)".into());
    // Migration 35 (run log retention) added a time column: it runs again
    // after 26, which makes times native.
    back_to_24.extend([
        "ALTER TABLE heartbeat_runs DROP COLUMN log_removed_at".to_string(),
        "ALTER TABLE companies DROP COLUMN run_log_retention_days".to_string(),
        "DELETE FROM schema_migrations WHERE version = 35".to_string(),
    ]);
    back_to_24.extend(common::before_secrets_and_teams());
    for sql in &back_to_24 {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    pool.close().await;

    let server = TestServer::start_with(data_dir.clone(), database_url.clone(), &[]).await;
    for step in [
        "step 25 (native_json)",
        "step 26 (native_times)",
        "step 27 (native_ids)",
    ] {
        assert!(
            server
                .startup
                .iter()
                .any(|l| *l == format!("Upgrading the database: {step}…")),
            "the upgrade says what it does: {:?}",
            server.startup
        );
    }
    let company = server.ok_get(&format!("/api/companies/{cid}")).await;
    assert_eq!(company["requireBoardApprovalForNewAgents"], true);
    let after_agent = server.ok_get(&format!("/api/agents/{aid}")).await;
    for field in [
        "adapterConfig",
        "runtimeConfig",
        "permissions",
        "createdAt",
        "updatedAt",
    ] {
        assert_eq!(after_agent[field], before_agent[field], "{field}");
    }
    let metadata = match postgres {
        true => json!("hand-edited"),
        false => json!({ "team": "core" }),
    };
    assert_eq!(after_agent["metadata"], metadata);
    // Every time to the millisecond, in the same text.
    assert_eq!(
        server.ok_get(&format!("/api/issues/{tid}")).await,
        before_task
    );
    let after_done = server
        .ok_get(&format!("/api/issues/{}", done["id"].as_str().unwrap()))
        .await;
    assert_eq!(after_done, before_done);
    assert!(after_done["completedAt"].as_str().unwrap().ends_with('Z'));
    let comments = server.ok_get(&format!("/api/issues/{tid}/comments")).await;
    assert_eq!(comments, before_comments);
    let after_log = server
        .ok_get(&format!("/api/companies/{cid}/activity"))
        .await;
    assert_eq!(
        after_log, before_log,
        "every entry and its details, unchanged"
    );
    let created = after_log
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "issue.created" && e["entityId"] == tid.as_str())
        .unwrap();
    assert_eq!(created["details"]["identifier"], task["identifier"]);
    let dashboard = server
        .ok_get(&format!("/api/companies/{cid}/dashboard"))
        .await;
    assert_eq!(dashboard, before_dashboard);

    // Writes after the upgrade: the flag, the configs, a task finished (the
    // day counts follow it), a new entry, and lists paged by time.
    let company = server
        .ok_patch(
            &format!("/api/companies/{cid}"),
            json!({ "requireBoardApprovalForNewAgents": false }),
        )
        .await;
    assert_eq!(company["requireBoardApprovalForNewAgents"], false);
    let patched = server
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "metadata": { "team": "platform" } }),
        )
        .await;
    assert_eq!(patched["metadata"]["team"], "platform");
    let cancelled = server
        .ok_patch(
            &format!("/api/issues/{tid}"),
            json!({ "status": "cancelled" }),
        )
        .await;
    let at = |v: &Value, f: &str| v[f].as_str().unwrap().to_string();
    assert!(at(&cancelled, "cancelledAt") >= at(&before_task, "updatedAt"));
    let finished = server
        .issue(&cid, json!({ "title": "Finished after", "status": "done" }))
        .await;
    assert!(at(&finished, "completedAt") >= at(&before_done, "completedAt"));
    let later = server.issue(&cid, json!({ "title": "After" })).await;
    assert!(later["createdAt"].as_str().unwrap() >= before_task["createdAt"].as_str().unwrap());
    let log = server
        .ok_get(&format!(
            "/api/companies/{cid}/activity?action=issue.created"
        ))
        .await;
    assert_eq!(log[0]["details"]["identifier"], later["identifier"]);
    assert_eq!(log[0]["details"]["title"], "After");
    let dashboard = server
        .ok_get(&format!("/api/companies/{cid}/dashboard"))
        .await;
    assert_eq!(dashboard["tasks"]["done"], 2, "{dashboard}");
    assert_eq!(
        dashboard["tasks"]["byStatus"]["cancelled"], 1,
        "{dashboard}"
    );
    assert_eq!(dashboard["tasks"]["total"], 4, "{dashboard}");
    let (data_dir, database_url) = server.stop_keeping_data();

    if postgres {
        let pool = common::database(&common::database_url(&data_dir, &database_url)).await;
        let json = columns_of_type(&pool, "jsonb").await;
        // Migrations 30 to 32 add their own.
        assert_eq!(json.len(), JSON_COLUMNS.len() + LATER_JSON_COLUMNS.len());
        let times = columns_of_type(&pool, "timestamp with time zone").await;
        assert!(times.len() > 50, "{times:?}");
        assert!(columns_of_type(&pool, "text")
            .await
            .iter()
            .all(|(_, c)| !c.ends_with("_at") || c == "applied_at"));
        // Ids are uuid, people's and clients' ids text; every key is back.
        let ids = columns_of_type(&pool, "uuid").await;
        for column in [
            ("issues", "id"),
            ("issues", "assignee_agent_id"),
            ("agents", "reports_to"),
        ] {
            assert!(
                ids.contains(&(column.0.into(), column.1.into())),
                "{column:?} in {ids:?}"
            );
        }
        assert!(ids.len() > 90, "{ids:?}");
        let text = columns_of_type(&pool, "text").await;
        assert!(text.contains(&("issues".into(), "assignee_user_id".into())));
        assert!(text.contains(&("activity_log".into(), "entity_id".into())));
        let (keys,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM pg_constraint WHERE contype = 'f' \
             AND connamespace = current_schema()::regnamespace",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(keys, foreign_keys, "every foreign key is made again");
        let (trigger,): (String,) = sqlx::query_as(
            "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgname = 'task_search_issue_update'",
        )
        .fetch_one(&pool)
        .await
        .unwrap();
        assert!(
            trigger.contains("UPDATE OF identifier, title, description, company_id, issue_number"),
            "{trigger}"
        );
        let (triggers,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM pg_trigger WHERE NOT tgisinternal")
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!(triggers, 13, "every trigger is there once");
        let (flag,): (String,) = sqlx::query_as(
            "SELECT CAST(require_board_approval_for_new_agents AS TEXT) FROM companies \
             WHERE CAST(id AS TEXT) = $1",
        )
        .bind(&cid)
        .fetch_one(&pool)
        .await
        .unwrap();
        assert_eq!(flag, "false");
    }
}
