//! What an agent's adapter is given and what comes back: prompt templates
//! with known variables only, secrets kept out of logs, excerpts and events,
//! and HTTP agents (a 2xx, a failure, a 202 finished later by callback).

use crate::common;

use std::time::Duration;

use common::streams::event_stream;
use common::TestServer;
use serde_json::{json, Value};

#[tokio::test]
async fn prompt_templates_render_known_variables_and_refuse_unknown_ones() {
    let server = TestServer::start().await;
    let cid = server.company("Prompt Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = server
        .post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "P", "adapterType": "process", "adapterConfig": { "command": "cat", "promptTemplate": "Hi {{agent.name}} {{agent.salary}}" } }),
        )
        .await;
    assert_eq!(status, 422);
    assert!(
        body["error"].as_str().unwrap().contains("agent.salary"),
        "{body}"
    );
    let agent = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Reader", "adapterType": "process",
                "adapterConfig": { "command": "cat", "promptTemplate": "You are {{agent.name}} of {{company.name}}. Work on {{task.identifier}}: {{task.title}} ({{heartbeat.reason}})." } }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    let (status, _) = server
        .patch(
            &format!("/api/agents/{aid}"),
            json!({ "adapterConfig": { "promptTemplate": "{{run.nope}}" } }),
        )
        .await;
    assert_eq!(status, 422, "an edit is checked too");
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Write the spec", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let runs = server.only_run_succeeded(&cid, aid).await;
    let expected = format!(
        "You are Reader of Prompt Co. Work on {}: Write the spec (issue_assigned).",
        issue["identifier"].as_str().unwrap()
    );
    assert_eq!(runs[0]["stdoutExcerpt"].as_str().unwrap().trim(), expected);
}

#[tokio::test]
async fn secrets_never_reach_logs_excerpts_or_events() {
    let server = TestServer::start().await;
    let cid = server.company("Secret Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let secret = "sk-test-9f8e7d6c5b4a3210";
    let script = "echo \"key is $OPENAI_API_KEY and token $PAPERCLIP_API_KEY\"\necho \"stderr $OPENAI_API_KEY\" >&2\nexit 1\n";
    let agent = server
        .script_agent(
            &cid,
            "Leaky",
            script,
            json!({ "env": { "OPENAI_API_KEY": secret } }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    let mut sse = event_stream(&server, &cid).await;
    let (_, run) = server
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    let run_id = run["id"].as_str().unwrap().to_string();
    let run = server
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 15, |r| {
            r["status"] == "failed"
        })
        .await;
    let log = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/log"))
        .await;
    let events = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/events"))
        .await;
    let activity = server
        .ok_get(&format!("/api/companies/{cid}/activity?limit=1000"))
        .await;
    let mut live = String::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while std::time::Instant::now() < deadline && !live.contains("heartbeat.run.finished") {
        if let Ok(Ok(Some(chunk))) =
            tokio::time::timeout(Duration::from_millis(500), sse.chunk()).await
        {
            live.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
    assert!(
        live.contains("heartbeat.run.log"),
        "the live stream carried the output: {live}"
    );
    for (what, text) in [
        ("run", run.to_string()),
        ("log", log.to_string()),
        ("events", events.to_string()),
        ("activity", activity.to_string()),
        ("live events", live.clone()),
    ] {
        assert!(
            !text.contains(secret),
            "{what} leaks the configured secret: {text}"
        );
        assert!(!text.contains("eyJ"), "{what} leaks the run token: {text}");
    }
    assert!(log["content"]
        .as_str()
        .unwrap()
        .contains("key is [REDACTED] and token [REDACTED]"));
    assert!(run["stderrExcerpt"]
        .as_str()
        .unwrap()
        .contains("stderr [REDACTED]"));
    let agent = server.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(
        agent["adapterConfig"]["env"]["OPENAI_API_KEY"], "[REDACTED]",
        "secrets are write-only, for the board too"
    );
}

#[tokio::test]
async fn http_agents_succeed_on_2xx_fail_otherwise_and_can_finish_by_callback() {
    use axum::routing::post;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, Value)>();
    let app = axum::Router::new()
        .route(
            "/sync",
            post(|body: axum::Json<Value>| async move {
                axum::Json(json!({ "ok": true, "echo": body.0["runId"] }))
            }),
        )
        .route(
            "/fail",
            post(|| async { (axum::http::StatusCode::BAD_GATEWAY, "upstream down") }),
        )
        .route(
            "/async",
            post(
                move |headers: axum::http::HeaderMap, body: axum::Json<Value>| {
                    let tx = tx.clone();
                    async move {
                        let auth = headers
                            .get("authorization")
                            .unwrap()
                            .to_str()
                            .unwrap()
                            .to_string();
                        tx.send((auth, body.0)).unwrap();
                        axum::http::StatusCode::ACCEPTED
                    }
                },
            ),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let server = TestServer::start().await;
    let cid = server.company("Hook Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agents_path = format!("/api/companies/{cid}/agents");
    let mk = |name: &str, config: Value| json!({ "name": name, "adapterType": "http", "adapterConfig": config });
    let sync = server
        .ok_post(
            &agents_path,
            mk("Sync", json!({ "url": format!("{hook}/sync") })),
        )
        .await;
    let fail = server
        .ok_post(
            &agents_path,
            mk("Fail", json!({ "url": format!("{hook}/fail") })),
        )
        .await;
    let later = server
        .ok_post(
            &agents_path,
            mk(
                "Later",
                json!({ "url": format!("{hook}/async"), "async": true, "forwardAuth": true }),
            ),
        )
        .await;
    let wake_path = |agent: &Value| format!("/api/agents/{}/wakeup", agent["id"].as_str().unwrap());

    let (_, run) = server.post(&wake_path(&sync), json!({})).await;
    let run = server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", run["id"].as_str().unwrap()),
            10,
            |r| r["status"] == "succeeded",
        )
        .await;
    assert_eq!(run["resultJson"]["echo"], run["id"]);
    let (_, run) = server.post(&wake_path(&fail), json!({})).await;
    let run = server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", run["id"].as_str().unwrap()),
            10,
            |r| r["status"] == "failed",
        )
        .await;
    assert!(run["error"].as_str().unwrap().contains("502"), "{run}");

    let (_, run) = server.post(&wake_path(&later), json!({})).await;
    let run_id = run["id"].as_str().unwrap().to_string();
    let (auth, body) = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body["runId"], run_id);
    // The executor lets go of a run it handed off (no live entry left), and
    // only then: had the 202 ended the run, it would be final by now.
    server
        .wait_for("/api/instance/quiescence", 10, |q| {
            q["liveProcesses"] == 0 && q["queuedRuns"] == 0
        })
        .await;
    let waiting = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}"))
        .await;
    assert_eq!(
        waiting["status"], "running",
        "202 leaves the run open for the callback"
    );
    let token = auth.strip_prefix("Bearer ").unwrap();
    let (status, _) = server
        .as_agent(
            token,
            None,
            "POST",
            "/api/heartbeat-runs/not-this-run/callback",
            Some(json!({ "status": "succeeded" })),
        )
        .await;
    assert_eq!(status, 403, "a run token completes only its own run");
    let (status, done) = server
        .as_agent(
            token,
            None,
            "POST",
            &format!("/api/heartbeat-runs/{run_id}/callback"),
            Some(json!({ "status": "succeeded", "result": { "summary": "done" } })),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "succeeded");
    assert_eq!(done["resultJson"]["summary"], "done");
    let (status, _) = server
        .as_agent(
            token,
            None,
            "GET",
            &format!("/api/agents/{}", later["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, 401, "a run token dies with its run");
}
