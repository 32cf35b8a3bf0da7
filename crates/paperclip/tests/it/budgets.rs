//! Cost events, rollups, budgets with soft alerts and hard stops, and the
//! dashboard, over HTTP.

mod dashboard;

use crate::common;

use std::time::Duration;

use common::TestServer;
use serde_json::{json, Value};

#[tokio::test]
async fn cost_events_are_attributed_rolled_up_and_unpriced_is_not_free() {
    let server = TestServer::start().await;
    let cid = server.company("Ledger Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let other = server.company("Other Ledger").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = server.agent(&cid, "Alice", None).await;
    let b = server.agent(&cid, "Bob", None).await;
    let goal = server
        .ok_post(
            &format!("/api/companies/{cid}/goals"),
            json!({ "title": "G" }),
        )
        .await;
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App", "goalId": goal["id"] }),
        )
        .await;
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Build", "projectId": project["id"] }),
        )
        .await;
    let foreign = server.issue(&other, json!({ "title": "Not ours" })).await;
    let costs_path = format!("/api/companies/{cid}/cost-events");
    let report = |body: Value| server.post(&costs_path, body);

    let (status, priced) = report(json!({ "agentId": a["id"], "issueId": issue["id"], "provider": "anthropic", "model": "claude-sonnet",
        "inputTokens": 1200, "outputTokens": 300, "costCents": 7, "occurredAt": chrono_now() })).await;
    assert_eq!(status, 201, "{priced}");
    assert_eq!(priced["costStatus"], "priced");
    assert_eq!(
        priced["projectId"], project["id"],
        "an issue's project and goal are attributed"
    );
    assert_eq!(priced["goalId"], goal["id"]);
    let (_, unpriced) =
        report(json!({ "agentId": b["id"], "model": "local-llama", "inputTokens": 50 })).await;
    assert_eq!(unpriced["costStatus"], "unpriced");
    assert!(unpriced["costCents"].is_null());
    report(json!({ "agentId": b["id"], "model": "claude-sonnet", "costCents": 3 })).await;
    let (status, body) = report(json!({ "agentId": a["id"], "costCents": -5 })).await;
    assert_eq!(status, 400, "negative amounts are refused: {body}");
    assert_eq!(body["details"][0]["path"], json!(["costCents"]));
    let (status, _) = report(json!({ "issueId": foreign["id"], "costCents": 1 })).await;
    assert_eq!(status, 404, "links must be in the same company");
    let (status, _) = report(json!({ "costCents": 1, "occurredAt": "yesterday" })).await;
    assert_eq!(status, 400);

    let summary = server
        .ok_get(&format!("/api/companies/{cid}/costs/summary"))
        .await;
    assert_eq!(summary["spendCents"], 10);
    assert_eq!(summary["eventCount"], 3);
    assert_eq!(summary["unpricedEventCount"], 1);
    let by_agent = server
        .ok_get(&format!("/api/companies/{cid}/costs/by-agent"))
        .await;
    assert_eq!(by_agent[0]["agentId"], a["id"]);
    assert_eq!(by_agent[0]["agentName"], "Alice");
    assert_eq!(by_agent[0]["costCents"], 7);
    assert_eq!(by_agent[1]["costCents"], 3);
    assert_eq!(by_agent[1]["unpricedEventCount"], 1);
    let by_model = server
        .ok_get(&format!("/api/companies/{cid}/costs/by-model"))
        .await;
    assert_eq!(by_model[0]["key"], "claude-sonnet");
    assert_eq!(by_model[0]["costCents"], 10);
    let by_project = server
        .ok_get(&format!("/api/companies/{cid}/costs/by-project"))
        .await;
    assert_eq!(by_project.as_array().unwrap().len(), 1);
    assert_eq!(by_project[0]["projectName"], "App");
    let by_issue = server
        .ok_get(&format!("/api/companies/{cid}/costs/by-issue"))
        .await;
    assert_eq!(by_issue[0]["label"], issue["identifier"]);
    let last_year = server
        .ok_get(&format!("/api/companies/{cid}/costs/summary?month=2020-01"))
        .await;
    assert_eq!(
        last_year["spendCents"], 0,
        "another month is another window"
    );
    let range = server
        .ok_get(&format!(
            "/api/companies/{cid}/costs/summary?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z"
        ))
        .await;
    assert_eq!(range["spendCents"], 10);
    let (status, _) = server
        .get(&format!(
            "/api/companies/{cid}/costs/summary?from=2000-01-01T00:00:00Z"
        ))
        .await;
    assert_eq!(status, 400, "a range needs both ends");
    assert_eq!(
        server
            .ok_get(&format!("/api/agents/{}", a["id"].as_str().unwrap()))
            .await["spentMonthlyCents"],
        7
    );
    assert_eq!(
        server.ok_get(&format!("/api/companies/{cid}")).await["spentMonthlyCents"],
        10
    );
    assert_eq!(
        server.ok_get(&format!("/api/companies/{other}")).await["spentMonthlyCents"],
        0
    );
}

fn chrono_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // Good enough for "now" in RFC 3339: seconds precision, UTC.
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil-date, to avoid a date dependency in tests.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[tokio::test]
async fn crossing_the_budget_warns_at_80_percent_and_stops_the_agent_at_100() {
    let server = TestServer::start().await;
    let cid = server.company("Spend Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .script_agent(&cid, "Spender", "sleep 30\n", json!({ "graceSec": 1 }))
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    server
        .ok_patch(
            &format!("/api/agents/{aid}/budgets"),
            json!({ "budgetMonthlyCents": 100 }),
        )
        .await;
    let (_, running) = server
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    let running = running["id"].as_str().unwrap().to_string();
    server
        .wait_for(&format!("/api/heartbeat-runs/{running}"), 10, |r| {
            r["status"] == "running"
        })
        .await;
    let (_, queued) = server
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    let queued = queued["id"].as_str().unwrap().to_string();
    let issue = server
        .issue(&cid, json!({ "title": "Expensive", "status": "todo" }))
        .await;

    server
        .ok_post(
            &format!("/api/companies/{cid}/cost-events"),
            json!({ "agentId": aid, "costCents": 80 }),
        )
        .await;
    let incidents = server
        .ok_get(&format!("/api/companies/{cid}/budget-incidents"))
        .await;
    assert_eq!(incidents.as_array().unwrap().len(), 1);
    assert_eq!(
        (
            incidents[0]["kind"].as_str(),
            incidents[0]["scopeType"].as_str()
        ),
        (Some("soft"), Some("agent"))
    );
    assert!(server
        .actions(&cid)
        .await
        .contains(&"budget.soft_alert".to_string()));
    assert_eq!(
        server.ok_get(&format!("/api/agents/{aid}")).await["status"],
        "running",
        "a warning stops nothing"
    );

    server
        .ok_post(
            &format!("/api/companies/{cid}/cost-events"),
            json!({ "agentId": aid, "costCents": 20 }),
        )
        .await;
    let agent_now = server.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(agent_now["status"], "paused");
    assert_eq!(agent_now["pauseReason"], "budget");
    let queued_now = server
        .ok_get(&format!("/api/heartbeat-runs/{queued}"))
        .await;
    assert_eq!(queued_now["status"], "cancelled");
    assert_eq!(queued_now["errorCode"], "budget_blocked");
    assert!(queued_now["startedAt"].is_null());
    let stopped = server
        .wait_for(&format!("/api/heartbeat-runs/{running}"), 10, |r| {
            r["status"] == "cancelled"
        })
        .await;
    assert_eq!(
        stopped["error"], "budget hard stop",
        "the running run was stopped gracefully"
    );
    let (status, body) = server
        .post(&format!("/api/agents/{aid}/heartbeat/invoke"), json!({}))
        .await;
    assert_eq!(status, 409);
    assert_eq!(body["details"]["skipReason"], "budget_blocked");
    let (status, body) = server
        .post(
            &format!("/api/issues/{}/checkout", issue["id"].as_str().unwrap()),
            json!({ "agentId": aid, "expectedStatuses": ["todo"] }),
        )
        .await;
    assert_eq!(status, 409);
    assert_eq!(body["code"], "budget_blocked");
    let hard = server
        .ok_get(&format!(
            "/api/companies/{cid}/budget-incidents?status=open"
        ))
        .await;
    assert!(hard
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["kind"] == "hard" && i["spendCents"] == 100));
    let dashboard = server
        .ok_get(&format!("/api/companies/{cid}/dashboard"))
        .await;
    assert!(dashboard["budgets"]["openIncidents"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["kind"] == "hard"));
    // Upstream's counts beside them.
    assert!(dashboard["budgets"]["activeIncidents"].as_i64().unwrap() >= 1);
    assert!(
        dashboard["budgets"]["pausedAgents"].as_i64().unwrap() >= 1,
        "{dashboard}"
    );

    // Raising the budget lifts the stop.
    server
        .ok_patch(
            &format!("/api/agents/{aid}/budgets"),
            json!({ "budgetMonthlyCents": 1000 }),
        )
        .await;
    let resumed = server.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(resumed["status"], "idle");
    assert!(resumed["pauseReason"].is_null());
    let open = server
        .ok_get(&format!(
            "/api/companies/{cid}/budget-incidents?status=open"
        ))
        .await;
    assert_eq!(open, json!([]));
    let (status, _) = server
        .post(&format!("/api/agents/{aid}/heartbeat/invoke"), json!({}))
        .await;
    assert_eq!(status, 202);
}

#[tokio::test]
async fn a_company_stop_pauses_every_agent_and_resuming_is_the_boards_override() {
    let server = TestServer::start().await;
    let cid = server.company("Capped Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = server.agent(&cid, "A", None).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let b = server.agent(&cid, "B", None).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    server
        .ok_patch(
            &format!("/api/companies/{cid}/budgets"),
            json!({ "budgetMonthlyCents": 50 }),
        )
        .await;
    server
        .ok_post(
            &format!("/api/companies/{cid}/cost-events"),
            json!({ "agentId": a, "costCents": 60 }),
        )
        .await;
    for agent in [&a, &b] {
        let now = server.ok_get(&format!("/api/agents/{agent}")).await;
        assert_eq!(
            (now["status"].as_str(), now["pauseReason"].as_str()),
            (Some("paused"), Some("budget"))
        );
    }
    let resumed = server.lever(&b, "resume").await;
    assert_eq!(resumed["status"], "idle");
    server
        .ok_post(
            &format!("/api/companies/{cid}/cost-events"),
            json!({ "agentId": b, "costCents": 5 }),
        )
        .await;
    assert_eq!(
        server.ok_get(&format!("/api/agents/{b}")).await["status"],
        "idle",
        "an override holds for the month"
    );
    let incidents = server
        .ok_get(&format!(
            "/api/companies/{cid}/budget-incidents?status=resolved"
        ))
        .await;
    assert!(incidents
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["resolution"] == "override"));
}

#[tokio::test]
async fn no_run_starts_after_the_stop_even_under_100_concurrent_reports() {
    let server = TestServer::start().await;
    let cid = server.company("Race Spend").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .script_agent(&cid, "Busy", "sleep 0.2\n", json!({ "graceSec": 1 }))
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    server
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "runtimeConfig": { "heartbeat": { "maxConcurrentRuns": 5 } } }),
        )
        .await;
    server
        .ok_patch(
            &format!("/api/agents/{aid}/budgets"),
            json!({ "budgetMonthlyCents": 1000 }),
        )
        .await;
    // 100 reports of 15 cents: the budget is crossed around the 67th.
    let reports = (0..100).map(|_| {
        let req = server
            .client()
            .post(server.url(&format!("/api/companies/{cid}/cost-events")))
            .json(&json!({ "agentId": aid, "costCents": 15, "model": "m" }));
        async move { req.send().await.unwrap().status().as_u16() }
    });
    let wakes = (0..40).map(|i| {
        let req = server
            .client()
            .post(server.url(&format!("/api/agents/{aid}/wakeup")))
            .json(&json!({ "reason": format!("w{i}") }));
        async move { req.send().await.unwrap().status().as_u16() }
    });
    let (statuses, wake_statuses) = futures::join!(
        futures::future::join_all(reports),
        futures::future::join_all(wakes)
    );
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    assert!(
        wake_statuses.iter().all(|s| *s == 202 || *s == 409),
        "{wake_statuses:?}"
    );
    // Every run the wakes made has started or been refused, and settled.
    server.quiesce().await;

    let summary = server
        .ok_get(&format!("/api/companies/{cid}/costs/summary"))
        .await;
    assert_eq!(summary["spendCents"], 1500, "every report counted");
    let incidents = server
        .ok_get(&format!("/api/companies/{cid}/budget-incidents"))
        .await;
    let hard: Vec<&Value> = incidents
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "hard")
        .collect();
    assert_eq!(hard.len(), 1, "the stop is decided once");
    assert_eq!(
        hard[0]["spendCents"], 1005,
        "at the first report that reached the budget"
    );
    let stop_at = hard[0]["createdAt"].as_str().unwrap().to_string();
    let agent_now = server.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(agent_now["status"], "paused");
    let runs = server
        .ok_get(&format!(
            "/api/companies/{cid}/heartbeat-runs?agentId={aid}&limit=1000"
        ))
        .await;
    for run in runs.as_array().unwrap() {
        assert!(
            !["queued", "running"].contains(&run["status"].as_str().unwrap()),
            "nothing left in flight: {run}"
        );
        if let Some(started) = run["startedAt"].as_str() {
            assert!(
                started <= stop_at.as_str(),
                "run {} started at {started}, after the stop at {stop_at}",
                run["id"]
            );
        }
    }
}

/// Usage an adapter reports at the end of a run is a cost event of that run's
/// agent and issue, and counts against the budget like any other.
#[tokio::test]
async fn usage_reported_by_a_run_becomes_a_cost_event() {
    use axum::routing::post;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let app = axum::Router::new().route(
        "/hook",
        post(move |headers: axum::http::HeaderMap| {
            let tx = tx.clone();
            async move {
                tx.send(headers["authorization"].to_str().unwrap().to_string())
                    .unwrap();
                axum::http::StatusCode::ACCEPTED
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let server = TestServer::start().await;
    let cid = server.company("Usage Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Remote", "adapterType": "http",
            "adapterConfig": { "url": hook, "async": true, "forwardAuth": true } }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Summarise", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let auth = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .unwrap()
        .unwrap();
    let token = auth.strip_prefix("Bearer ").unwrap();
    let run = server.runs_of(&cid, aid).await.pop().unwrap();
    let run_id = run["id"].as_str().unwrap();
    let (status, _) = server
        .as_agent(token, None, "POST", &format!("/api/heartbeat-runs/{run_id}/callback"), Some(json!({
            "status": "succeeded",
            "usage": { "provider": "openai", "model": "gpt-6.1", "inputTokens": 900, "outputTokens": 100, "costUsd": 0.12 }
        })))
        .await;
    assert_eq!(status, 200);
    let events = server
        .ok_get(&format!("/api/companies/{cid}/cost-events"))
        .await;
    assert_eq!(events.as_array().unwrap().len(), 1);
    let event = &events[0];
    assert_eq!(event["costCents"], 12);
    assert_eq!(event["agentId"], aid);
    assert_eq!(event["issueId"], issue["id"]);
    assert_eq!(event["heartbeatRunId"], run_id);
    assert_eq!(event["model"], "gpt-6.1");
    assert_eq!(
        server.ok_get(&format!("/api/agents/{aid}")).await["spentMonthlyCents"],
        12
    );
}
