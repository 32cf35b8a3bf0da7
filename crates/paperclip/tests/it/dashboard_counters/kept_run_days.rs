//! The run days Postgres keeps (migration 22) equal the runs they count.

use crate::common;

use chrono::{Duration, Utc};
use common::TestServer;
use serde_json::Value;

use super::{activity, check, id, Raw};

/// Postgres keeps the runs of days that can no longer change (migration
/// 22), found the first time a dashboard needs them: what it keeps equals
/// the runs, later dashboards read it rather than the runs, and deleting an
/// agent (its runs go with it) drops it. SQLite keeps every day by triggers;
/// the chart must equal the runs there too.
#[tokio::test]
async fn kept_run_days_equal_the_runs_and_follow_a_deleted_agent() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Kept Co").await);
    activity(&server, &cid).await;
    let db = Raw::open(&server).await;
    let runs = db
        .rows(
            "SELECT CAST(id AS TEXT), status, 0 FROM heartbeat_runs WHERE company_id = $1",
            &[&cid],
        )
        .await;
    assert!(runs.len() >= 3, "{runs:?}");
    // As if made three and five days ago, before any dashboard kept them.
    for (i, (run, _, _)) in runs.iter().enumerate() {
        let days = if i % 2 == 0 { 3 } else { 5 };
        let at = (Utc::now() - Duration::days(days))
            .format("%Y-%m-%dT12:00:00.000Z")
            .to_string();
        db.exec(
            "UPDATE heartbeat_runs SET created_at = $1 WHERE id = $2",
            &[&at, run],
        )
        .await;
    }
    db.exec("DELETE FROM run_day_totals WHERE company_id = $1", &[&cid])
        .await;
    check(&server, &cid).await;

    let postgres = server.database_url.is_some();
    let kept_sql =
        "SELECT day, status, n FROM run_day_totals WHERE company_id = $1 AND status <> ''";
    if postgres {
        let kept = db.rows(kept_sql, &[&cid]).await;
        let raw = db
            .rows(
                "SELECT SUBSTR(created_at, 1, 10), status, COUNT(*) FROM heartbeat_runs \
                 WHERE company_id = $1 GROUP BY SUBSTR(created_at, 1, 10), status",
                &[&cid],
            )
            .await;
        assert_eq!(kept, raw, "kept days equal their runs");
        // Every fortnight day before yesterday is kept, with runs or none.
        let days = db
            .scalar(
                "SELECT COUNT(DISTINCT day) FROM run_day_totals WHERE company_id = $1",
                &[&cid],
            )
            .await;
        assert!(days >= 12, "{days} days kept");
        // Read from what was kept: a kept day changed behind the server's
        // back (which nothing in it does) shows as kept.
        let before = server
            .ok_get(&format!("/api/companies/{cid}/dashboard"))
            .await;
        db.exec(
            "UPDATE run_day_totals SET n = n + 100 WHERE company_id = $1 AND status <> ''",
            &[&cid],
        )
        .await;
        let after = server
            .ok_get(&format!("/api/companies/{cid}/dashboard"))
            .await;
        let total = |d: &Value| -> i64 {
            d["runChart"]["last14Days"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_i64().unwrap())
                .sum()
        };
        assert_eq!(total(&after), total(&before) + 100 * kept.len() as i64);
        db.exec(
            "UPDATE run_day_totals SET n = n - 100 WHERE company_id = $1 AND status <> ''",
            &[&cid],
        )
        .await;
    }

    // The failing agent goes, and its runs with it: the chart follows.
    let agents = server.ok_get(&format!("/api/companies/{cid}/agents")).await;
    let fails = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "Fails")
        .map(id)
        .expect("the failing agent");
    let (status, body) = server.delete(&format!("/api/agents/{fails}")).await;
    assert_eq!(status, 200, "{body}");
    check(&server, &cid).await;
    if postgres {
        let kept = db.rows(kept_sql, &[&cid]).await;
        assert!(
            kept.iter().all(|(_, status, _)| status == "succeeded"),
            "only the remaining agent's runs are kept: {kept:?}"
        );
    }
}
