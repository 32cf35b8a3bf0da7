//! The dashboard agrees with direct counts of the tables.

use crate::common;

use common::TestServer;
use serde_json::json;

/// The dashboard agrees with direct counts of the tables after a mixed workload.
#[tokio::test]
async fn the_dashboard_equals_what_the_tables_say() {
    let server = TestServer::start().await;
    let cid = server.company("Count Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut agents = Vec::new();
    for i in 0..6 {
        agents.push(
            server.agent(&cid, &format!("Agent {i}"), None).await["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    server
        .ok_post(&format!("/api/agents/{}/pause", agents[0]), json!({}))
        .await;
    server
        .ok_post(&format!("/api/agents/{}/terminate", agents[1]), json!({}))
        .await;
    let statuses = ["backlog", "todo", "done", "cancelled", "blocked"];
    for i in 0..40 {
        server
            .issue(
                &cid,
                json!({ "title": format!("t{i}"), "status": statuses[i % statuses.len()] }),
            )
            .await;
    }
    for i in 0..12u64 {
        let body = if i % 4 == 0 {
            json!({ "agentId": agents[2] })
        } else {
            json!({ "agentId": agents[2], "costCents": i * 3 })
        };
        server
            .ok_post(&format!("/api/companies/{cid}/cost-events"), body)
            .await;
    }
    server
        .ok_patch(
            &format!("/api/companies/{cid}/budgets"),
            json!({ "budgetMonthlyCents": 10_000 }),
        )
        .await;
    for _ in 0..3 {
        server
            .ok_post(
                &format!("/api/companies/{cid}/approvals"),
                json!({ "type": "request_board_approval" }),
            )
            .await;
    }
    let decided = server
        .ok_post(
            &format!("/api/companies/{cid}/approvals"),
            json!({ "type": "request_board_approval" }),
        )
        .await;
    server
        .ok_post(
            &format!("/api/approvals/{}/approve", decided["id"].as_str().unwrap()),
            json!({}),
        )
        .await;

    let dash = server
        .ok_get(&format!("/api/companies/{cid}/dashboard"))
        .await;
    let db = Db::open(&server).await;
    for (table, key) in [("agents", "agents"), ("issues", "tasks")] {
        let counted = db
            .grouped(
                &format!(
                    "SELECT status, COUNT(*) FROM {table} WHERE company_id = $1 GROUP BY status"
                ),
                &cid,
            )
            .await;
        let shown: Vec<(String, i64)> = dash[key]["byStatus"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
            .collect();
        assert_eq!(shown, counted, "{key} by status");
        assert_eq!(
            dash[key]["total"].as_i64().unwrap(),
            counted.iter().map(|c| c.1).sum::<i64>()
        );
    }
    let spend = db.scalar("SELECT CAST(COALESCE(SUM(cost_cents), 0) AS BIGINT) FROM cost_events WHERE company_id = $1", &cid).await;
    assert_eq!(dash["costs"]["monthSpendCents"].as_i64().unwrap(), spend);
    assert_eq!(
        spend,
        (1..12).filter(|i| i % 4 != 0).map(|i| i * 3).sum::<i64>()
    );
    assert_eq!(dash["costs"]["monthBudgetCents"], 10_000);
    let pending = db
        .scalar(
            "SELECT COUNT(*) FROM approvals WHERE company_id = $1 AND status = 'pending'",
            &cid,
        )
        .await;
    assert_eq!(dash["pendingApprovals"].as_i64().unwrap(), pending);
    assert_eq!(pending, 3);
    let activity = db
        .scalar(
            "SELECT COUNT(*) FROM activity_log WHERE company_id = $1",
            &cid,
        )
        .await;
    assert_eq!(
        dash["recentActivity"].as_array().unwrap().len() as i64,
        activity.min(10)
    );
}

/// A direct connection to the server's database, for counting behind its back.
struct Db(sqlx::AnyPool, bool);

impl Db {
    async fn open(server: &TestServer) -> Db {
        let url = common::database_url(&server.data_dir, &server.database_url);
        Db(common::database(&url).await, url.starts_with("postgres"))
    }

    async fn grouped(&self, sql: &str, company: &str) -> Vec<(String, i64)> {
        let sql = common::bound_as_text(sql, self.1);
        let mut rows: Vec<(String, i64)> = sqlx::query_as(&sql)
            .bind(company)
            .fetch_all(&self.0)
            .await
            .unwrap();
        rows.sort();
        rows
    }

    async fn scalar(&self, sql: &str, company: &str) -> i64 {
        let sql = common::bound_as_text(sql, self.1);
        let (n,): (i64,) = sqlx::query_as(&sql)
            .bind(company)
            .fetch_one(&self.0)
            .await
            .unwrap();
        n
    }
}
