//! Issue 19, "compatibility you can rely on": the routes whose answers had
//! our own field names or structure now answer in upstream's, checked key by
//! key (and type by type) against the recorded upstream samples
//! (`fixtures/upstream-samples.jsonl`) where one exists, and against
//! upstream's documented row shapes where the recording has none.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

fn sample(step: &str) -> Value {
    include_str!("fixtures/upstream-samples.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|s| s["step"] == step)
        .unwrap_or_else(|| panic!("no sample {step}"))["response"]
        .clone()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every key of `theirs` is in `ours` with the same JSON type (null matches
/// anything), recursively; lists compare their first items. `omitted` names
/// upstream keys we do not support (left out, never renamed).
fn same_shape(at: &str, theirs: &Value, ours: &Value, omitted: &[&str]) {
    let (a, b) = (kind(theirs), kind(ours));
    assert!(
        a == b || a == "null" || b == "null",
        "{at}: {b} here but {a} upstream: {ours}"
    );
    match (theirs, ours) {
        (Value::Object(t), Value::Object(o)) => {
            for (key, value) in t {
                if omitted.contains(&key.as_str()) {
                    assert!(!o.contains_key(key), "{at}.{key} is omitted, not renamed");
                    continue;
                }
                let mine = o
                    .get(key)
                    .unwrap_or_else(|| panic!("{at}: missing upstream key {key}: {ours}"));
                same_shape(&format!("{at}.{key}"), value, mine, omitted);
            }
        }
        (Value::Array(t), Value::Array(o)) => {
            if let (Some(t), Some(o)) = (t.first(), o.first()) {
                same_shape(&format!("{at}[0]"), t, o, omitted);
            }
        }
        _ => {}
    }
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

#[tokio::test]
async fn cost_rollups_and_the_dashboard_answer_in_upstreams_shape() {
    let s = TestServer::start().await;
    let cid = s.company("Shapes").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    s.ok_patch(
        &format!("/api/companies/{cid}/budgets"),
        json!({ "budgetMonthlyCents": 50_000 }),
    )
    .await;
    let ceo = s.agent(&cid, "CEO", None).await;
    let aid = ceo["id"].as_str().unwrap();
    let project = s
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App" }),
        )
        .await;
    let pid = project["id"].as_str().unwrap();
    s.ok_post(
        &format!("/api/companies/{cid}/cost-events"),
        json!({ "agentId": aid, "projectId": pid, "provider": "anthropic", "model": "claude-sonnet",
            "inputTokens": 1200, "outputTokens": 300, "costCents": 7,
            "billingType": "subscription_included" }),
    )
    .await;

    // costs/by-agent: upstream's row, whole. The event's tokens were on a
    // subscription; it names no run, so no run is counted.
    let by_agent = s
        .ok_get(&format!("/api/companies/{cid}/costs/by-agent"))
        .await;
    same_shape("by-agent", &sample("cost.by_agent"), &by_agent, &[]);
    let row = &by_agent[0];
    assert_eq!(row["subscriptionInputTokens"], 1200, "{row}");
    assert_eq!(row["subscriptionOutputTokens"], 300, "{row}");
    assert_eq!(row["subscriptionRunCount"], 0, "{row}");
    assert_eq!(row["apiRunCount"], 0, "{row}");
    // A billing type is one of upstream's words.
    let (status, body) = s
        .post(
            &format!("/api/companies/{cid}/cost-events"),
            json!({ "agentId": aid, "costCents": 1, "billingType": "api" }),
        )
        .await;
    assert_eq!(status, reqwest::StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(row["agentId"], aid);
    assert_eq!(row["agentName"], "CEO");
    assert_eq!(row["agentStatus"], "idle");
    assert_eq!(row["costCents"], 7);
    assert_eq!(row["inputTokens"], 1200);
    assert!(
        row.get("key").is_none() && row.get("label").is_none(),
        "{row}"
    );

    // costs/by-project: the recording's list is empty; upstream's row is
    // projectId, projectName and the four sums.
    let by_project = s
        .ok_get(&format!("/api/companies/{cid}/costs/by-project"))
        .await;
    let row = &by_project[0];
    for key in [
        "projectId",
        "projectName",
        "costCents",
        "inputTokens",
        "cachedInputTokens",
        "outputTokens",
    ] {
        assert!(row.get(key).is_some(), "by-project lacks {key}: {row}");
    }
    assert_eq!(row["projectId"], pid);
    assert_eq!(row["projectName"], "App");
    assert_eq!(row["outputTokens"], 300);
    assert!(
        row.get("key").is_none() && row.get("label").is_none(),
        "{row}"
    );

    s.issue(&cid, json!({ "title": "Open one", "status": "todo" }))
        .await;
    s.issue(&cid, json!({ "title": "Done one", "status": "done" }))
        .await;
    let dash = s.ok_get(&format!("/api/companies/{cid}/dashboard")).await;
    same_shape("dashboard", &sample("dashboard"), &dash, &[]);
    assert_eq!(
        dash["agents"]["active"], 1,
        "an idle agent is active: {dash}"
    );
    assert_eq!(dash["tasks"]["open"], 1);
    assert_eq!(dash["tasks"]["done"], 1);
    assert_eq!(dash["costs"]["monthSpendCents"], 7);
    assert_eq!(dash["costs"]["monthBudgetCents"], 50_000);
    assert_eq!(dash["costs"]["monthUtilizationPercent"], 0.01);
    assert_eq!(dash["budgets"]["activeIncidents"], 0);
    let days = dash["runActivity"]
        .as_array()
        .expect("runActivity is a list");
    assert_eq!(days.len(), 14);
    assert_eq!(
        keys(&days[13]),
        keys(&sample("dashboard")["runActivity"][13]),
        "a day has upstream's keys and no others"
    );
    // Ours, beside upstream's keys.
    assert_eq!(dash["runChart"]["days"].as_array().unwrap().len(), 14);
    assert_eq!(dash["taskActivity"]["days"].as_array().unwrap().len(), 14);
}

#[tokio::test]
async fn configuration_and_revisions_use_upstreams_names() {
    let s = TestServer::start().await;
    let cid = s.company("Config").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = s.agent(&cid, "Worker", None).await;
    let aid = agent["id"].as_str().unwrap();
    let config = s.ok_get(&format!("/api/agents/{aid}/configuration")).await;
    assert_eq!(config["id"], aid, "{config}");
    assert!(config.get("agentId").is_none(), "{config}");
    assert_eq!(config["adapterType"], "process");

    s.ok_patch(
        &format!("/api/agents/{aid}"),
        json!({ "adapterConfig": { "command": "echo" } }),
    )
    .await;
    let revisions = s
        .ok_get(&format!("/api/agents/{aid}/config-revisions"))
        .await;
    let latest = &revisions[0];
    for key in [
        "id",
        "companyId",
        "agentId",
        "createdByAgentId",
        "createdByUserId",
        "source",
        "rolledBackFromRevisionId",
        "changedKeys",
        "beforeConfig",
        "afterConfig",
        "createdAt",
    ] {
        assert!(latest.get(key).is_some(), "revision lacks {key}: {latest}");
    }
    assert!(latest.get("changedByActorId").is_none(), "{latest}");
    assert_eq!(latest["createdByUserId"], "local-board");
    assert!(latest["createdByAgentId"].is_null());
    assert_eq!(latest["source"], "patch");
    assert_eq!(latest["changedKeys"], json!(["adapterConfig"]));
    assert_eq!(latest["beforeConfig"]["adapterConfig"]["command"], "true");
    assert_eq!(latest["afterConfig"]["adapterConfig"]["command"], "echo");
    let first = revisions.as_array().unwrap().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let one = s
        .ok_get(&format!(
            "/api/agents/{aid}/config-revisions/{}",
            latest["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(one["changedKeys"], latest["changedKeys"]);
    assert_eq!(one["beforeConfig"], latest["beforeConfig"]);

    s.ok_post(
        &format!("/api/agents/{aid}/config-revisions/{first}/rollback"),
        json!({}),
    )
    .await;
    let revisions = s
        .ok_get(&format!("/api/agents/{aid}/config-revisions"))
        .await;
    assert_eq!(revisions[0]["source"], "rollback", "{}", revisions[0]);
    assert_eq!(revisions[0]["rolledBackFromRevisionId"], first.as_str());
}

#[tokio::test]
async fn company_stats_is_served_and_board_only() {
    let s = TestServer::start().await;
    let cid = s.company("Stats").await["id"].as_str().unwrap().to_string();
    let agent = s.agent(&cid, "A", None).await;
    s.issue(&cid, json!({ "title": "One" })).await;
    s.issue(&cid, json!({ "title": "Two" })).await;
    let empty = s.company("Empty").await["id"].as_str().unwrap().to_string();
    let stats = s.ok_get("/api/companies/stats").await;
    assert_eq!(
        stats[&cid],
        json!({ "agentCount": 1, "issueCount": 2 }),
        "{stats}"
    );
    assert!(
        stats.get(&empty).is_none(),
        "a company with neither is left out"
    );
    let token = s.key(agent["id"].as_str().unwrap()).await;
    let (status, body) = s
        .as_agent(&token, None, "GET", "/api/companies/stats", None)
        .await;
    assert_eq!(status, 403, "{body}");
}

#[tokio::test]
async fn comments_list_newest_first_by_default() {
    let s = TestServer::start().await;
    let cid = s.company("Talk").await["id"].as_str().unwrap().to_string();
    let issue = s.issue(&cid, json!({ "title": "Chat" })).await;
    let iid = issue["id"].as_str().unwrap();
    let mut ids = Vec::new();
    for body in ["first", "second", "third"] {
        let c = s
            .ok_post(
                &format!("/api/issues/{iid}/comments"),
                json!({ "body": body }),
            )
            .await;
        ids.push(c["id"].as_str().unwrap().to_string());
    }
    let bodies = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|c| c["body"].as_str().unwrap().to_string())
            .collect()
    };
    let listed = s.ok_get(&format!("/api/issues/{iid}/comments")).await;
    assert_eq!(bodies(&listed), ["third", "second", "first"]);
    same_shape("comment", &sample("comment.list")[0], &listed[0], &[]);
    let asc = s
        .ok_get(&format!("/api/issues/{iid}/comments?order=asc"))
        .await;
    assert_eq!(bodies(&asc), ["first", "second", "third"]);
    // `after` (or upstream's `afterCommentId`) still reads what is new, in order.
    for param in ["after", "afterCommentId"] {
        let after = s
            .ok_get(&format!("/api/issues/{iid}/comments?{param}={}", ids[0]))
            .await;
        assert_eq!(bodies(&after), ["second", "third"], "{param}");
    }
    // The task page keeps the thread in chronological order.
    let prefix = s.ok_get(&format!("/api/companies/{cid}")).await["issuePrefix"]
        .as_str()
        .unwrap()
        .to_string();
    let page = s
        .page(&format!(
            "/{prefix}/tasks/{}",
            issue["identifier"].as_str().unwrap()
        ))
        .await;
    let (a, b) = (page.find("first").unwrap(), page.find("third").unwrap());
    assert!(a < b, "the task page lists comments oldest first");
}

#[tokio::test]
async fn run_routes_of_a_task_answer_upstreams_summaries() {
    let s = TestServer::start().await;
    let cid = s.company("Runs").await["id"].as_str().unwrap().to_string();
    // Runs until the test removes its gate file: live for as long as needed.
    let gate = std::env::temp_dir().join(format!("compat-gate-{}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&gate, "").unwrap();
    let script = format!("while [ -e '{}' ]; do sleep 0.1; done\n", gate.display());
    let agent = s.script_agent(&cid, "Sleeper", &script, json!({})).await;
    let aid = agent["id"].as_str().unwrap();
    let issue = s
        .issue(
            &cid,
            json!({ "title": "Work", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let iid = issue["id"].as_str().unwrap();

    let live = s
        .wait_for(&format!("/api/issues/{iid}/live-runs"), 30, |v| {
            v.as_array()
                .is_some_and(|l| l.iter().any(|r| r["status"] == "running"))
        })
        .await;
    let run = &live[0];
    for key in [
        "id",
        "status",
        "invocationSource",
        "triggerDetail",
        "startedAt",
        "finishedAt",
        "createdAt",
        "agentId",
        "agentName",
        "adapterType",
    ] {
        assert!(run.get(key).is_some(), "live run lacks {key}: {run}");
    }
    assert_eq!(run["agentName"], "Sleeper");
    assert_eq!(run["adapterType"], "process");
    assert!(
        run.get("contextSnapshot").is_none(),
        "a summary, not the row: {run}"
    );
    let run_id = run["id"].as_str().unwrap().to_string();
    let company_live = s.ok_get(&format!("/api/companies/{cid}/live-runs")).await;
    assert_eq!(keys(&company_live[0]), keys(run));
    let active = s.ok_get(&format!("/api/issues/{iid}/active-run")).await;
    assert_eq!(active["id"], run_id.as_str());
    assert_eq!(active["agentName"], "Sleeper");
    assert_eq!(active["adapterType"], "process");
    assert!(
        active.get("contextSnapshot").is_some(),
        "the run row, named: {active}"
    );

    std::fs::remove_file(&gate).unwrap();
    s.wait_for(&format!("/api/heartbeat-runs/{run_id}"), 30, |r| {
        r["status"] == "succeeded"
    })
    .await;
    assert_eq!(
        s.ok_get(&format!("/api/issues/{iid}/live-runs")).await,
        json!([])
    );
    assert_eq!(
        s.ok_get(&format!("/api/issues/{iid}/active-run")).await,
        Value::Null
    );

    let runs = s.ok_get(&format!("/api/issues/{iid}/runs")).await;
    let first = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["runId"] == run_id.as_str())
        .unwrap_or_else(|| panic!("the run is among the task's: {runs}"));
    for key in [
        "runId",
        "status",
        "agentId",
        "adapterType",
        "startedAt",
        "finishedAt",
        "createdAt",
        "invocationSource",
        "usageJson",
        "resultJson",
    ] {
        assert!(first.get(key).is_some(), "issue run lacks {key}: {first}");
    }
    let touched = s
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/issues"))
        .await;
    assert_eq!(
        touched,
        json!([{ "issueId": iid, "identifier": issue["identifier"], "title": "Work",
            "status": s.ok_get(&format!("/api/issues/{iid}")).await["status"], "priority": issue["priority"] }])
    );

    let (status, _) = s.get("/api/issues/NOPE-999/live-runs").await;
    assert_eq!(status, 404);
    let (status, _) = s
        .get("/api/heartbeat-runs/00000000-0000-4000-8000-000000000000/issues")
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn the_board_writes_activity_entries_and_agents_may_not() {
    let s = TestServer::start().await;
    let cid = s.company("Log").await["id"].as_str().unwrap().to_string();
    let agent = s.agent(&cid, "A", None).await;
    let aid = agent["id"].as_str().unwrap();
    let path = format!("/api/companies/{cid}/activity");
    let (status, entry) = s
        .post(
            &path,
            json!({ "actorType": "plugin", "actorId": "importer", "action": "import.finished",
                "entityType": "company", "entityId": cid, "agentId": aid, "details": { "rows": 3 } }),
        )
        .await;
    assert_eq!(status, 201, "{entry}");
    let theirs = &sample("activity")[0];
    for key in [
        "id",
        "companyId",
        "actorType",
        "actorId",
        "action",
        "entityType",
        "entityId",
        "agentId",
        "runId",
        "details",
        "createdAt",
    ] {
        assert!(theirs.get(key).is_some(), "fixture sanity: {key}");
        assert!(entry.get(key).is_some(), "entry lacks {key}: {entry}");
    }
    assert_eq!(entry["actorType"], "plugin");
    assert_eq!(entry["details"]["rows"], 3);
    let listed = s.ok_get(&format!("{path}?action=import.finished")).await;
    assert_eq!(listed[0]["id"], entry["id"]);

    let (status, body) = s
        .post(
            &path,
            json!({ "actorId": "x", "action": "", "entityType": "company", "entityId": cid }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["details"][0]["path"], json!(["action"]));
    let (status, body) = s
        .post(&path, json!({ "actorType": "robot", "actorId": "x", "action": "a", "entityType": "c", "entityId": "e" }))
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = s
        .post(
            &path,
            json!({ "actorId": "x", "action": "a", "entityType": "c", "entityId": "e",
                "agentId": "00000000-0000-4000-8000-000000000000" }),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    let token = s.key(aid).await;
    let (status, body) = s
        .as_agent(
            &token,
            None,
            "POST",
            &path,
            Some(json!({ "actorId": "x", "action": "a", "entityType": "c", "entityId": "e" })),
        )
        .await;
    assert_eq!(status, 403, "{body}");
}
