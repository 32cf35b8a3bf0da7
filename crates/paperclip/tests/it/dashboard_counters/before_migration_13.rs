//! A database from before migration 13 upgrades with its counters filled.

use crate::common;

use chrono::{Duration, Utc};
use common::TestServer;
use serde_json::json;

use super::{activity, check, cost, id, Raw};

/// Removes what migration 13 made: the schema before it. On SQLite also
/// migration 15 (its run counters live in migration 13's table), which then
/// runs again after 13.
const BEFORE_13_SQLITE: &[&str] = &[
    "DROP TRIGGER run_day_counts_insert",
    "DROP TRIGGER run_day_counts_delete",
    "DROP TRIGGER run_day_counts_update",
    "DROP INDEX heartbeat_runs_failures",
    "DROP INDEX heartbeat_runs_retries",
    "DROP INDEX heartbeat_runs_company_created_status",
    "CREATE INDEX heartbeat_runs_company_created ON heartbeat_runs (company_id, created_at)",
    "DELETE FROM schema_migrations WHERE version = 15",
    "DROP TRIGGER issue_day_counts_insert",
    "DROP TRIGGER issue_day_counts_delete",
    "DROP TRIGGER issue_day_counts_update",
    "DROP TRIGGER cost_month_totals_insert",
    "DROP TRIGGER cost_month_totals_delete",
    "DROP TRIGGER cost_month_totals_update",
];
const BEFORE_13_POSTGRES: &[&str] = &[
    "DROP TRIGGER issue_day_counts_insert_delete ON issues",
    "DROP TRIGGER issue_day_counts_update ON issues",
    "DROP TRIGGER cost_month_totals_insert_delete ON cost_events",
    "DROP TRIGGER cost_month_totals_update ON cost_events",
    "DROP FUNCTION issue_day_counts_follow()",
    "DROP FUNCTION cost_month_totals_follow()",
];
const BEFORE_13_BOTH: &[&str] = &[
    "DROP TABLE company_day_counts",
    "DROP TABLE cost_month_totals",
    "DELETE FROM schema_migrations WHERE version = 13",
];

#[tokio::test]
async fn a_database_from_before_migration_13_fills_the_counters() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Old Co").await);
    activity(&server, &cid).await;
    let (data_dir, database_url) = server.stop_keeping_data();

    let url = common::database_url(&data_dir, &database_url);
    let db = Raw::at(&url).await;
    let engine_only = if url.starts_with("postgres") {
        BEFORE_13_POSTGRES
    } else {
        BEFORE_13_SQLITE
    };
    if url.starts_with("postgres") {
        // Schema 12 had text ids (step 27 runs again): the company is named
        // by a literal below, which either type takes.
        for sql in common::postgres_ids_back_to_text() {
            db.exec(&sql, &[]).await;
        }
    }
    for sql in engine_only.iter().chain(BEFORE_13_BOTH) {
        db.exec(sql, &[]).await;
    }
    // Rows the old release changed, with no trigger to count them.
    let yesterday = (Utc::now() - Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    db.exec(
        &format!(
            "UPDATE heartbeat_runs SET created_at = $1 WHERE id = (SELECT id FROM heartbeat_runs \
             WHERE company_id = '{cid}' ORDER BY id LIMIT 1)"
        ),
        &[&format!("{yesterday}T08:00:00.000Z")],
    )
    .await;
    db.exec(
        &format!(
            "UPDATE issues SET status = 'done', completed_at = created_at \
             WHERE company_id = '{cid}' AND status = 'todo'"
        ),
        &[],
    )
    .await;
    db.0.close().await;

    let server = TestServer::start_with(data_dir, database_url, &[]).await;
    check(&server, &cid).await;
    // And they follow what happens after the upgrade.
    server
        .issue(&cid, json!({ "title": "New work", "status": "done" }))
        .await;
    cost(&server, &cid, json!({ "costCents": 3, "inputTokens": 9 })).await;
    check(&server, &cid).await;
}
