//! The dashboard's charts and month figures and the costs reports come from
//! counters kept by triggers (migration 13). After a mix of runs, task
//! changes, cost reports and deletions, including rows on either side of a
//! UTC day and month boundary, every figure equals a count of the raw rows;
//! and a database from before migration 13 upgrades with the counters filled.

mod before_migration_13;
mod kept_run_days;

use crate::common;

use chrono::{Datelike, Duration, TimeZone, Utc};
use common::{until, TestServer};
use serde_json::{json, Value};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// A direct connection to the server's database, to count behind its back.
struct Raw(sqlx::AnyPool, bool);

impl Raw {
    async fn open(server: &TestServer) -> Raw {
        Raw::at(&common::database_url(
            &server.data_dir,
            &server.database_url,
        ))
        .await
    }

    async fn at(url: &str) -> Raw {
        Raw(common::database(url).await, url.starts_with("postgres"))
    }

    async fn exec(&self, sql: &str, binds: &[&str]) {
        let sql = common::bound_as_text(sql, self.1);
        let mut q = sqlx::query(&sql);
        for b in binds {
            q = q.bind(*b);
        }
        q.execute(&self.0).await.unwrap();
    }

    async fn rows(&self, sql: &str, binds: &[&str]) -> Vec<(String, String, i64)> {
        let sql = common::bound_as_text(sql, self.1);
        let mut q = sqlx::query_as(&sql);
        for b in binds {
            q = q.bind(*b);
        }
        let mut rows: Vec<(String, String, i64)> = q.fetch_all(&self.0).await.unwrap();
        rows.sort();
        rows
    }

    async fn scalar(&self, sql: &str, binds: &[&str]) -> i64 {
        let sql = common::bound_as_text(sql, self.1);
        let mut q = sqlx::query_as(&sql);
        for b in binds {
            q = q.bind(*b);
        }
        let (n,): (i64,) = q.fetch_one(&self.0).await.unwrap();
        n
    }
}

/// `[start, end)` stamps of the UTC month `months_back` before this one.
fn month(months_back: u32) -> (String, String, String) {
    let now = Utc::now();
    let mut first = Utc
        .with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0)
        .unwrap();
    for _ in 0..months_back {
        first = Utc
            .with_ymd_and_hms(
                (first - Duration::days(1)).year(),
                (first - Duration::days(1)).month(),
                1,
                0,
                0,
                0,
            )
            .unwrap();
    }
    let next = Utc
        .with_ymd_and_hms(
            (first + Duration::days(32)).year(),
            (first + Duration::days(32)).month(),
            1,
            0,
            0,
            0,
        )
        .unwrap();
    let stamp = |t: chrono::DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    (stamp(first), stamp(next), first.format("%Y-%m").to_string())
}

/// A chart's days as `(day, status, n)`, counts above zero only.
fn chart(dash: &Value, key: &str) -> Vec<(String, String, i64)> {
    let mut out = Vec::new();
    for d in dash[key]["days"].as_array().unwrap() {
        for (status, n) in d["byStatus"].as_object().unwrap() {
            out.push((
                d["day"].as_str().unwrap().to_string(),
                status.clone(),
                n.as_i64().unwrap(),
            ));
        }
    }
    out.sort();
    out
}

/// A breakdown as `(key or "", cents, input tokens, events)`, sorted.
fn breakdown(rows: &Value) -> Vec<(String, i64, i64, i64)> {
    let mut out: Vec<_> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                // by-agent and by-project name their key as upstream does.
                ["agentId", "projectId", "key"]
                    .iter()
                    .find_map(|k| r.get(*k))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                r["costCents"].as_i64().unwrap(),
                r["inputTokens"].as_i64().unwrap(),
                r["eventCount"].as_i64().unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Every counted figure against the raw rows.
async fn check(server: &TestServer, cid: &str) {
    let dash = server
        .ok_get(&format!("/api/companies/{cid}/dashboard"))
        .await;
    let db = Raw::open(server).await;
    let days: Vec<String> = dash["runChart"]["days"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["day"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(days.len(), 14, "{dash}");
    assert_eq!(days[13], Utc::now().format("%Y-%m-%d").to_string());
    let (first, last) = (days[0].as_str(), days[13].as_str());
    for (key, table) in [("runChart", "heartbeat_runs"), ("taskActivity", "issues")] {
        let raw = db
            .rows(
                &format!(
                    "SELECT SUBSTR(created_at, 1, 10), status, COUNT(*) FROM {table} \
                     WHERE company_id = $1 AND SUBSTR(created_at, 1, 10) BETWEEN $2 AND $3 \
                     GROUP BY SUBSTR(created_at, 1, 10), status"
                ),
                &[cid, first, last],
            )
            .await;
        assert_eq!(chart(&dash, key), raw, "{key} per day");
        assert!(!raw.is_empty(), "{key}: the test made some");
    }
    let mut last14: Vec<(String, i64)> = dash["runChart"]["last14Days"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
        .collect();
    last14.sort();
    let raw: Vec<(String, i64)> = db
        .rows(
            "SELECT status, '', COUNT(*) FROM heartbeat_runs WHERE company_id = $1 \
             AND SUBSTR(created_at, 1, 10) BETWEEN $2 AND $3 GROUP BY status",
            &[cid, first, last],
        )
        .await
        .into_iter()
        .map(|(s, _, n)| (s, n))
        .collect();
    assert_eq!(last14, raw, "runs of the 14 days by status");

    // This month's figures.
    let (start, end, _) = month(0);
    let w = [cid, start.as_str(), end.as_str()];
    let t = &dash["thrift"];
    let in_month = "company_id = $1 AND occurred_at >= $2 AND occurred_at < $3";
    let tokens = "input_tokens + cached_input_tokens + output_tokens";
    for (field, sql) in [
        ("taskSpendCents", format!("SELECT CAST(COALESCE(SUM(cost_cents), 0) AS BIGINT) FROM cost_events WHERE {in_month} AND issue_id IS NOT NULL")),
        ("idleSpendCents", format!("SELECT CAST(COALESCE(SUM(cost_cents), 0) AS BIGINT) FROM cost_events WHERE {in_month} AND issue_id IS NULL")),
        ("tokens", format!("SELECT CAST(COALESCE(SUM({tokens}), 0) AS BIGINT) FROM cost_events WHERE {in_month}")),
        ("unpricedTokens", format!("SELECT CAST(COALESCE(SUM({tokens}), 0) AS BIGINT) FROM cost_events WHERE {in_month} AND cost_cents IS NULL")),
        ("runs", "SELECT COUNT(*) FROM heartbeat_runs WHERE company_id = $1 AND created_at >= $2 AND created_at < $3".into()),
        ("tasksDone", "SELECT COUNT(*) FROM issues WHERE company_id = $1 AND status = 'done' AND completed_at >= $2 AND completed_at < $3".into()),
    ] {
        assert_eq!(t[field].as_i64().unwrap(), db.scalar(&sql, &w).await, "thrift {field}: {t}");
    }
    let spend = db
        .scalar(
            &format!("SELECT CAST(COALESCE(SUM(cost_cents), 0) AS BIGINT) FROM cost_events WHERE {in_month}"),
            &w,
        )
        .await;
    assert_eq!(dash["costs"]["monthSpendCents"].as_i64().unwrap(), spend);

    // The costs reports, this month and the one before.
    for back in [0, 1] {
        let (start, end, key) = month(back);
        let w = [cid, start.as_str(), end.as_str()];
        let summary = server
            .ok_get(&format!("/api/companies/{cid}/costs/summary?month={key}"))
            .await;
        for (field, sql) in [
            ("spendCents", "CAST(COALESCE(SUM(cost_cents), 0) AS BIGINT)"),
            ("eventCount", "COUNT(*)"),
            (
                "unpricedEventCount",
                "CAST(COALESCE(SUM(CASE WHEN cost_cents IS NULL THEN 1 ELSE 0 END), 0) AS BIGINT)",
            ),
        ] {
            let raw = db
                .scalar(
                    &format!("SELECT {sql} FROM cost_events WHERE {in_month}"),
                    &w,
                )
                .await;
            assert_eq!(summary[field].as_i64().unwrap(), raw, "{key} {field}");
        }
        for (route, column, only_set) in [
            ("by-agent", "agent_id", false),
            ("by-project", "project_id", true),
            ("by-model", "model", false),
            ("by-issue", "issue_id", true),
        ] {
            let shown = server
                .ok_get(&format!("/api/companies/{cid}/costs/{route}?month={key}"))
                .await;
            let raw: Vec<(String, i64, i64, i64)> = {
                let sql = format!(
                    "SELECT COALESCE(CAST({column} AS TEXT), ''), CAST(COALESCE(SUM(cost_cents), 0) AS BIGINT), \
                     CAST(SUM(input_tokens) AS BIGINT), COUNT(*) FROM cost_events WHERE {in_month}{} \
                     GROUP BY {column}",
                    if only_set { format!(" AND {column} IS NOT NULL") } else { String::new() }
                );
                let sql = common::bound_as_text(&sql, db.1);
                let mut q = sqlx::query_as(&sql);
                for b in w {
                    q = q.bind(b);
                }
                let mut rows: Vec<(String, i64, i64, i64)> = q.fetch_all(&db.0).await.unwrap();
                rows.sort();
                rows
            };
            assert_eq!(breakdown(&shown), raw, "{key} {route}");
        }
    }
}

/// Waits until no run of the company is queued or running.
async fn runs_settle(server: &TestServer, cid: &str) {
    until(60, "runs to finish", async || {
        let runs = server
            .ok_get(&format!("/api/companies/{cid}/heartbeat-runs"))
            .await;
        let runs = runs.as_array()?;
        runs.iter()
            .all(|r| !matches!(r["status"].as_str(), Some("queued" | "running")))
            .then_some(())
    })
    .await;
}

async fn cost(server: &TestServer, cid: &str, body: Value) {
    server
        .ok_post(&format!("/api/companies/{cid}/cost-events"), body)
        .await;
}

/// Runs that succeed and fail, tasks in every state, priced and unpriced
/// cost reports on tasks, projects and none, at this month's and the last
/// month's edges. Returns (an agent, the tasks).
async fn activity(server: &TestServer, cid: &str) -> (String, Vec<String>) {
    let ok = id(&server.script_agent(cid, "Oks", "exit 0", json!({})).await);
    let bad = id(&server.script_agent(cid, "Fails", "exit 1", json!({})).await);
    for agent in [&ok, &bad, &ok] {
        server.wake(&agent, json!({})).await;
        runs_settle(server, cid).await;
    }
    let project = id(&server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Launch" }),
        )
        .await);
    let mut tasks = Vec::new();
    for (i, status) in [
        "backlog",
        "todo",
        "in_review",
        "done",
        "blocked",
        "cancelled",
        "todo",
    ]
    .iter()
    .enumerate()
    {
        let t = server
            .issue(
                cid,
                json!({ "title": format!("Task {i}"), "status": status }),
            )
            .await;
        tasks.push(t["identifier"].as_str().unwrap().to_string());
    }
    // Moved along, finished, given up.
    for (task, status) in [
        (0, "todo"),
        (2, "done"),
        (1, "blocked"),
        (1, "todo"),
        (6, "cancelled"),
    ] {
        server
            .ok_patch(
                &format!("/api/issues/{}", tasks[task]),
                json!({ "status": status }),
            )
            .await;
    }
    let (this_start, _, _) = month(0);
    let (_, last_end, _) = month(1);
    let last_ms = (chrono::DateTime::parse_from_rfc3339(&last_end).unwrap()
        - Duration::milliseconds(1))
    .with_timezone(&Utc)
    .format("%Y-%m-%dT%H:%M:%S%.3fZ")
    .to_string();
    let yesterday_end = format!(
        "{}T23:59:59.999Z",
        (Utc::now() - Duration::days(1)).format("%Y-%m-%d")
    );
    for (at, body) in [
        (
            None,
            json!({ "agentId": ok, "costCents": 120, "inputTokens": 1000, "outputTokens": 50, "model": "m-large", "provider": "acme", "issueId": tasks[1] }),
        ),
        (
            None,
            json!({ "agentId": bad, "inputTokens": 700, "model": "m-small", "provider": "acme" }),
        ),
        (
            None,
            json!({ "agentId": ok, "costCents": 7, "inputTokens": 3, "projectId": project, "model": "m-small", "provider": "beta" }),
        ),
        (
            Some(this_start.clone()),
            json!({ "agentId": bad, "costCents": 30, "inputTokens": 10, "issueId": tasks[2] }),
        ),
        (
            Some(last_ms.clone()),
            json!({ "agentId": bad, "costCents": 40, "inputTokens": 20, "issueId": tasks[2], "model": "m-large" }),
        ),
        (Some(last_ms), json!({ "costCents": 5, "inputTokens": 1 })),
        (
            Some(yesterday_end),
            json!({ "agentId": ok, "costCents": 11, "inputTokens": 2, "issueId": tasks[4], "projectId": project }),
        ),
    ] {
        let mut body = body;
        if let Some(at) = at {
            body["occurredAt"] = json!(at);
        }
        cost(server, cid, body).await;
    }
    (ok, tasks)
}

/// Moves rows to either side of the last UTC midnight and of the month's
/// start, as rows made then would be: the counters follow every change.
async fn move_in_time(server: &TestServer, cid: &str) {
    let db = Raw::open(server).await;
    let today = Utc::now().format("%Y-%m-%d").to_string();
    let yesterday = (Utc::now() - Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    let long_ago = (Utc::now() - Duration::days(20))
        .format("%Y-%m-%d")
        .to_string();
    let (_, last_end, _) = month(1);
    let prev_month_day = (chrono::DateTime::parse_from_rfc3339(&last_end).unwrap()
        - Duration::days(1))
    .format("%Y-%m-%d")
    .to_string();
    let runs = db
        .rows(
            "SELECT CAST(id AS TEXT), status, 0 FROM heartbeat_runs WHERE company_id = $1",
            &[cid],
        )
        .await;
    assert!(runs.len() >= 3, "{runs:?}");
    for ((run, _, _), at) in runs.iter().zip([
        format!("{yesterday}T23:59:59.999Z"),
        format!("{today}T00:00:00.000Z"),
        format!("{long_ago}T12:00:00.000Z"),
    ]) {
        db.exec(
            "UPDATE heartbeat_runs SET created_at = $1 WHERE id = $2",
            &[&at, run],
        )
        .await;
    }
    db.exec(
        "UPDATE heartbeat_runs SET status = 'cancelled' WHERE id = $1",
        &[&runs[0].0],
    )
    .await;
    // Made then, their days were never kept as they were (migration 22).
    db.exec("DELETE FROM run_day_totals WHERE company_id = $1", &[cid])
        .await;
    let tasks = db
        .rows(
            "SELECT CAST(id AS TEXT), status, issue_number FROM issues WHERE company_id = $1",
            &[cid],
        )
        .await;
    for ((task, _, _), at) in tasks.iter().zip([
        format!("{yesterday}T23:59:59.999Z"),
        format!("{today}T00:00:00.000Z"),
        format!("{long_ago}T00:00:00.000Z"),
    ]) {
        db.exec(
            "UPDATE issues SET created_at = $1 WHERE id = $2",
            &[&at, task],
        )
        .await;
    }
    // A task finished last month no longer counts as done this month.
    db.exec(
        "UPDATE issues SET completed_at = $1 WHERE company_id = $2 AND status = 'done' \
         AND id = (SELECT id FROM issues WHERE company_id = $2 AND status = 'done' ORDER BY id LIMIT 1)",
        &[&format!("{prev_month_day}T23:59:59.999Z"), cid],
    )
    .await;
}

#[tokio::test]
async fn the_counted_figures_equal_the_raw_rows() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Count Co").await);
    let (_, tasks) = activity(&server, &cid).await;
    check(&server, &cid).await;

    move_in_time(&server, &cid).await;
    check(&server, &cid).await;

    // Deleting a task with spend makes its spend idle (SET NULL); a new
    // task and a finished one count at once.
    let (status, body) = server.delete(&format!("/api/issues/{}", tasks[1])).await;
    assert_eq!(status, 200, "{body}");
    let after = server
        .issue(&cid, json!({ "title": "After", "status": "in_review" }))
        .await;
    server
        .ok_patch(
            &format!("/api/issues/{}", id(&after)),
            json!({ "status": "done" }),
        )
        .await;
    check(&server, &cid).await;

    // costs/by-issue is paged, biggest spend first; bad paging is a 400.
    cost(
        &server,
        &cid,
        json!({ "costCents": 2, "issueId": tasks[0] }),
    )
    .await;
    let all = server
        .ok_get(&format!("/api/companies/{cid}/costs/by-issue"))
        .await;
    let all = all.as_array().unwrap().clone();
    assert!(all.len() >= 2, "{all:?}");
    for (i, row) in all.iter().enumerate() {
        let page = server
            .ok_get(&format!(
                "/api/companies/{cid}/costs/by-issue?limit=1&offset={i}"
            ))
            .await;
        assert_eq!(page, json!([row]), "page {i}");
    }
    let cents: Vec<i64> = all
        .iter()
        .map(|r| r["costCents"].as_i64().unwrap())
        .collect();
    assert!(cents.windows(2).all(|w| w[0] >= w[1]), "{cents:?}");
    for bad in ["limit=0", "limit=1001", "offset=-1", "offset=x"] {
        let (status, body) = server
            .get(&format!("/api/companies/{cid}/costs/by-issue?{bad}"))
            .await;
        assert_eq!(status, 400, "{bad}: {body}");
    }
    // The costs page names the biggest task by identifier, with its spend.
    let prefix = server.ok_get(&format!("/api/companies/{cid}")).await["issuePrefix"]
        .as_str()
        .unwrap()
        .to_string();
    let costs = server.page(&format!("/{prefix}/costs")).await;
    let top = all[0]["label"].as_str().unwrap();
    assert!(
        costs.contains(&format!("href=\"/{prefix}/tasks/{top}\"")),
        "{top} on the costs page"
    );

    // Another company's activity is not counted here.
    let other = id(&server.company("Other Co").await);
    server.issue(&other, json!({ "title": "Elsewhere" })).await;
    cost(&server, &other, json!({ "costCents": 999 })).await;
    check(&server, &cid).await;
}
