//! A database made by the previous release (schema 7: before the scale
//! indexes and the kept task counts) upgrades in place on start: nothing is
//! lost, the dashboard's counts are filled from the tasks it holds and stay
//! right afterwards, and filtered lists answer as before.

mod native_types;

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
    // Rows migration 51 gives more to: Ada's first run (from her task) and
    // a dismissal.
    let runs = server.settled_runs(&cid, &agent, 1, 30).await;
    let dismissals = format!("/api/companies/{cid}/inbox-dismissals");
    let dismissal = server
        .ok_post(&dismissals, json!({ "itemKey": "approval:legacy" }))
        .await;
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
    // Migration 51 gave the dismissal an id, kept when it is dismissed
    // again, and dated Ada's runtime state from her first run.
    let listed = server.ok_get(&dismissals).await;
    assert_eq!(listed[0]["itemKey"], "approval:legacy", "{listed}");
    assert_eq!(listed[0]["id"].as_str().unwrap().len(), 36, "{listed}");
    assert_eq!(listed[0]["createdAt"], dismissal["createdAt"]);
    let again = server
        .ok_post(&dismissals, json!({ "itemKey": "approval:legacy" }))
        .await;
    assert_eq!(again["id"], listed[0]["id"]);
    let state = server
        .ok_get(&format!("/api/agents/{agent}/runtime-state"))
        .await;
    assert_eq!(state["createdAt"], runs[0]["createdAt"], "{state}");

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
