//! A database made by the previous release (schema 7: before the scale
//! indexes and the kept task counts) upgrades in place on start: nothing is
//! lost, the dashboard's counts are filled from the tasks it holds and stay
//! right afterwards, and filtered lists answer as before.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

/// Removes everything migrations 8 and 9 made and restores the indexes they
/// replaced: the schema the previous release created.
const BACK_TO_7_SQLITE: &[&str] = &[
    "DROP TRIGGER issue_status_counts_insert",
    "DROP TRIGGER issue_status_counts_delete",
    "DROP TRIGGER issue_status_counts_update",
];
const BACK_TO_7_POSTGRES: &[&str] = &[
    "DROP TRIGGER issue_status_counts_insert_delete ON issues",
    "DROP TRIGGER issue_status_counts_update ON issues",
    "DROP FUNCTION issue_status_counts_follow()",
];
const BACK_TO_7_BOTH: &[&str] = &[
    "DROP TABLE issue_status_counts",
    "DROP INDEX issues_company_created",
    "DROP INDEX issues_company_status_assignee",
    "DROP INDEX issues_company_assignee_number",
    "DROP INDEX issues_company_project_number",
    "DROP INDEX issues_company_parent_number",
    "DROP INDEX issues_company_status_number",
    // Replaced by migration 15 (which stays applied here).
    "DROP INDEX IF EXISTS heartbeat_runs_company_created",
    "DROP INDEX cost_events_company_time_cents",
    "DROP INDEX cost_events_agent_time_cents",
    "CREATE INDEX issues_company_status ON issues (company_id, status)",
    "CREATE INDEX cost_events_company_time ON cost_events (company_id, occurred_at)",
    "CREATE INDEX cost_events_agent_time ON cost_events (agent_id, occurred_at)",
    "DELETE FROM schema_migrations WHERE version IN (8, 9)",
];

fn by_status(dashboard: &Value) -> Value {
    dashboard["tasks"]["byStatus"].clone()
}

#[tokio::test]
async fn a_schema_7_database_upgrades_without_loss() {
    let server = TestServer::start().await;
    let cid = server.company("Old Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server.agent(&cid, "Ada", None).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut identifiers = Vec::new();
    for (title, status, assignee) in [
        ("Write the spec", "todo", Some(agent.as_str())),
        ("Fix the login", "blocked", Some(agent.as_str())),
        ("Plan the launch", "backlog", None),
        ("Price the plans", "todo", None),
        ("Hire a designer", "cancelled", None),
    ] {
        let issue = server
            .issue(
                &cid,
                json!({ "title": title, "status": status, "assigneeAgentId": assignee }),
            )
            .await;
        identifiers.push(issue["identifier"].as_str().unwrap().to_string());
    }
    let before = server
        .ok_get(&format!("/api/companies/{cid}/dashboard"))
        .await;
    assert_eq!(
        by_status(&before),
        json!({ "backlog": 1, "blocked": 1, "cancelled": 1, "todo": 2 })
    );
    let (data_dir, database_url) = server.stop_keeping_data();

    let url = common::database_url(&data_dir, &database_url);
    let pool = common::database(&url).await;
    let engine_only = if url.starts_with("postgres") {
        BACK_TO_7_POSTGRES
    } else {
        BACK_TO_7_SQLITE
    };
    if url.starts_with("postgres") {
        // Schema 7 had text ids (step 27 runs again).
        for sql in common::postgres_ids_back_to_text() {
            sqlx::query(&sql).execute(&pool).await.unwrap();
        }
    }
    for sql in engine_only.iter().chain(BACK_TO_7_BOTH) {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    for sql in common::before_secrets_and_teams() {
        sqlx::query(&sql).execute(&pool).await.unwrap();
    }
    // A task the old release wrote (no trigger to count it).
    sqlx::query(
        "INSERT INTO issues (id, company_id, title, status, priority, issue_number, identifier, \
         origin_kind, created_at, updated_at) SELECT '0193a6f4-6b2a-7c4e-9d1f-1e9ac7000001', id, 'Legacy chore', 'in_review', \
         'medium', issue_counter + 1, issue_prefix || '-' || CAST(issue_counter + 1 AS TEXT), 'manual', \
         '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z' FROM companies WHERE id = $1",
    )
    .bind(&cid)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("UPDATE companies SET issue_counter = issue_counter + 1 WHERE id = $1")
        .bind(&cid)
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    let server = TestServer::start_with(data_dir, database_url, &[]).await;
    let after = server
        .ok_get(&format!("/api/companies/{cid}/dashboard"))
        .await;
    assert_eq!(
        by_status(&after),
        json!({ "backlog": 1, "blocked": 1, "cancelled": 1, "in_review": 1, "todo": 2 }),
        "counts filled from the tasks on upgrade"
    );
    for identifier in &identifiers {
        let (status, _) = server.get(&format!("/api/issues/{identifier}")).await;
        assert_eq!(status, 200, "{identifier} kept");
    }
    let mine = server
        .ok_get(&format!(
            "/api/companies/{cid}/issues?assigneeAgentId={agent}"
        ))
        .await;
    let titles: Vec<&str> = mine
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Fix the login", "Write the spec"]);

    // And the kept counts follow changes made after the upgrade.
    server
        .ok_patch(
            &format!("/api/issues/{}", identifiers[0]),
            json!({ "status": "cancelled" }),
        )
        .await;
    server.issue(&cid, json!({ "title": "New work" })).await;
    let now = server
        .ok_get(&format!("/api/companies/{cid}/dashboard"))
        .await;
    assert_eq!(
        by_status(&now),
        json!({ "backlog": 2, "blocked": 1, "cancelled": 2, "in_review": 1, "todo": 1 })
    );
}

/// A database of schema 19 (before the kept relation flags) gets them filled
/// on start: the default list, which reads the flag, shows every label and
/// blocker it had.
#[tokio::test]
async fn a_schema_19_database_gets_its_relation_flags() {
    let server = TestServer::start().await;
    let cid = server.company("Flags Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let label = server
        .ok_post(
            &format!("/api/companies/{cid}/labels"),
            json!({ "name": "urgent", "color": "#ff0000" }),
        )
        .await;
    let first = server.issue(&cid, json!({ "title": "Blocker" })).await;
    server
        .issue(
            &cid,
            json!({ "title": "Blocked", "blockedByIssueIds": [first["id"]], "labelIds": [label["id"]] }),
        )
        .await;
    server.issue(&cid, json!({ "title": "Plain" })).await;
    let (data_dir, database_url) = server.stop_keeping_data();

    let url = common::database_url(&data_dir, &database_url);
    let pool = common::database(&url).await;
    let back_to_19: &[&str] = if url.starts_with("postgres") {
        &[]
    } else {
        &[
            "DROP TRIGGER issue_labels_flag_insert",
            "DROP TRIGGER issue_labels_flag_delete",
            "DROP TRIGGER issue_blockers_flag_insert",
            "DROP TRIGGER issue_blockers_flag_delete",
            "ALTER TABLE issues DROP COLUMN relation_count",
        ]
    };
    for sql in back_to_19 {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    sqlx::query("DELETE FROM schema_migrations WHERE version = 20")
        .execute(&pool)
        .await
        .unwrap();
    pool.close().await;

    let server = TestServer::start_with(data_dir, database_url, &[]).await;
    let list = server.ok_get(&format!("/api/companies/{cid}/issues")).await;
    let by_title = |t: &str| -> Value {
        list.as_array()
            .unwrap()
            .iter()
            .find(|i| i["title"] == t)
            .cloned()
            .unwrap()
    };
    let blocked = by_title("Blocked");
    assert_eq!(blocked["labelIds"], json!([label["id"]]));
    assert_eq!(blocked["blockedBy"][0]["id"], first["id"]);
    assert_eq!(by_title("Blocker")["blocks"][0]["title"], "Blocked");
    assert_eq!(by_title("Plain")["labels"], json!([]));
}

/// A database of schema 23 (labels without their tasks' numbers) gets them
/// on start: a label's list, read from those numbers, pages through every
/// task it had, and a label given after the upgrade joins them.
#[tokio::test]
async fn a_schema_23_database_gets_its_label_numbers() {
    let server = TestServer::start().await;
    let cid = server.company("Numbers Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let label = server
        .ok_post(
            &format!("/api/companies/{cid}/labels"),
            json!({ "name": "infra", "color": "#00ff00" }),
        )
        .await;
    let mut labelled = Vec::new();
    for n in 0..3 {
        let task = server
            .issue(
                &cid,
                json!({ "title": format!("Labelled {n}"), "labelIds": [label["id"]] }),
            )
            .await;
        labelled.push(task["identifier"].as_str().unwrap().to_string());
        server
            .issue(&cid, json!({ "title": format!("Plain {n}") }))
            .await;
    }
    let (data_dir, database_url) = server.stop_keeping_data();
    let url = common::database_url(&data_dir, &database_url);
    let pool = common::database(&url).await;
    let back_to_23: &[&str] = if url.starts_with("postgres") {
        &[
            "DROP TRIGGER issue_labels_number ON issue_labels",
            "DROP FUNCTION issue_labels_number()",
        ]
    } else {
        &["DROP TRIGGER issue_labels_number"]
    };
    let common_steps = [
        "DROP INDEX issue_labels_label_number",
        "CREATE INDEX issue_labels_label ON issue_labels (label_id)",
        "ALTER TABLE issue_labels DROP COLUMN task_number",
        "DELETE FROM schema_migrations WHERE version = 24",
    ];
    for sql in back_to_23.iter().chain(&common_steps) {
        sqlx::query(sql).execute(&pool).await.unwrap();
    }
    pool.close().await;

    let server = TestServer::start_with(data_dir, database_url, &[]).await;
    assert!(
        server
            .startup
            .iter()
            .any(|l| l == "Upgrading the database: step 24 (label_numbers)…"),
        "the upgrade says what it does: {:?}",
        server.startup
    );
    let later = server
        .issue(
            &cid,
            json!({ "title": "Labelled later", "labelIds": [label["id"]] }),
        )
        .await;
    labelled.push(later["identifier"].as_str().unwrap().to_string());
    labelled.reverse();
    let label_id = label["id"].as_str().unwrap();
    let seen: Vec<String> = server
        .pages(&format!(
            "/api/companies/{cid}/issues?labelId={label_id}&limit=1"
        ))
        .await
        .into_iter()
        .flat_map(|(page, _)| page)
        .map(|i| i["identifier"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(seen, labelled, "newest first, each once");
}

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
