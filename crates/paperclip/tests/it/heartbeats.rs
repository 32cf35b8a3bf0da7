//! The heartbeat loop with real processes: wake on assignment, run a shell
//! agent that talks to the API with its run token, record everything.

use crate::common;

use std::time::Duration;

use common::TestServer;
use serde_json::{json, Value};

/// A worker that does its task through the API: checkout, comment, done.
const WORKER: &str = r#"
set -e
api() { curl -sS -f -X "$1" -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'content-type: application/json' "$PAPERCLIP_API_URL$2" -d "$3"; }
echo "woke for $PAPERCLIP_WAKE_REASON on $PAPERCLIP_TASK_ID"
api POST "/api/issues/$PAPERCLIP_TASK_ID/checkout" "{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\"]}" >/dev/null
api POST "/api/issues/$PAPERCLIP_TASK_ID/comments" '{"body":"Done: the landing page is live."}' >/dev/null
api PATCH "/api/issues/$PAPERCLIP_TASK_ID" '{"status":"done"}' >/dev/null
echo "finished"
"#;

#[tokio::test]
async fn an_assigned_process_agent_does_its_task_through_the_api() {
    let server = TestServer::start().await;
    let cid = server.company("Heartbeat Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .script_agent(&cid, "Builder", WORKER, json!({}))
        .await;
    let aid = agent["id"].as_str().unwrap();
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Ship the landing page", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let iid = issue["id"].as_str().unwrap();

    let runs = server.only_run_succeeded(&cid, aid).await;
    let run = &runs[0];
    assert_eq!(run["invocationSource"], "assignment");
    assert_eq!(run["wakeReason"], "issue_assigned");
    assert_eq!(run["issueId"], iid);
    assert_eq!(run["exitCode"], 0);
    let run_id = run["id"].as_str().unwrap();

    let done = server.ok_get(&format!("/api/issues/{iid}")).await;
    assert_eq!(done["status"], "done");
    assert_eq!(done["assigneeAgentId"], aid);
    assert_eq!(done["checkoutRunId"], run_id);
    let comments = server.ok_get(&format!("/api/issues/{iid}/comments")).await;
    assert_eq!(comments[0]["authorAgentId"], aid);
    assert_eq!(comments[0]["authorType"], "agent");
    assert_eq!(comments[0]["createdByRunId"], run_id);

    let activity = server
        .ok_get(&format!("/api/companies/{cid}/activity?runId={run_id}"))
        .await;
    let actions: Vec<&str> = activity
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    for expected in ["issue.checked_out", "issue.comment_added", "issue.updated"] {
        assert!(
            actions.contains(&expected),
            "{expected} carries the run id: {actions:?}"
        );
    }
    assert!(activity
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["actorType"] == "agent" && a["actorId"] == aid));

    let log = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/log"))
        .await;
    assert_eq!(log["store"], "local_file");
    let lines: Vec<Value> = log["content"]
        .as_str()
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.iter().any(|l| l["chunk"]
        .as_str()
        .unwrap()
        .contains("woke for issue_assigned")));
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["seq"], i as u64 + 1, "log lines are numbered in order");
        assert!(line["ts"].is_string() && line["stream"].is_string());
    }
    assert!(run["stdoutExcerpt"].as_str().unwrap().contains("finished"));
    let events = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/events"))
        .await;
    let seqs: Vec<i64> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as i64).collect::<Vec<_>>(),
        "the timeline is gapless"
    );
    let later = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/events?afterSeq=2"))
        .await;
    assert_eq!(later.as_array().unwrap().len(), seqs.len() - 2);
    let agent_now = server.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(agent_now["status"], "idle");
    assert!(agent_now["lastHeartbeatAt"].is_string());
}

#[tokio::test]
async fn wakes_during_a_run_coalesce_into_one_more_run() {
    let server = TestServer::start().await;
    let cid = server.company("Coalesce Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .script_agent(&cid, "Sleeper", "sleep 1.5\n", json!({}))
        .await;
    let aid = agent["id"].as_str().unwrap();
    let (status, first) = server
        .post(
            &format!("/api/agents/{aid}/wakeup"),
            json!({ "reason": "first" }),
        )
        .await;
    assert_eq!(status, 202, "{first}");
    server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", first["id"].as_str().unwrap()),
            10,
            |r| r["status"] == "running",
        )
        .await;
    let mut follow_up = Vec::new();
    for i in 0..10 {
        let (status, run) = server
            .post(
                &format!("/api/agents/{aid}/wakeup"),
                json!({ "reason": format!("wake {i}") }),
            )
            .await;
        assert_eq!(status, 202);
        follow_up.push(run);
    }
    let ids: std::collections::HashSet<&str> = follow_up
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 1, "all ten wakes fold into one queued run");
    assert_eq!(follow_up[0]["wakeupRequest"]["status"], "queued");
    assert_eq!(follow_up[9]["wakeupRequest"]["status"], "coalesced");
    let second = follow_up[0]["id"].as_str().unwrap();
    let done = server
        .wait_for(&format!("/api/heartbeat-runs/{second}"), 20, |r| {
            r["status"] == "succeeded"
        })
        .await;
    assert_eq!(done["coalescedCount"], 9);
    assert_eq!(done["wakeReason"], "wake 9", "the latest reason is kept");
    server.quiesce().await;
    assert_eq!(
        server.runs_of(&cid, aid).await.len(),
        2,
        "exactly one more run"
    );
}

fn alive(pid: i64) -> bool {
    // A zombie is dead for our purposes: it runs nothing and holds nothing.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(") ")
            .next()
            .is_some_and(|rest| rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Starts a run whose script leaves a grandchild `sleep`; returns (run id, grandchild pid).
async fn long_run(server: &TestServer, cid: &str, name: &str) -> (String, String, i64) {
    let pidfile = server.data_dir.join(format!("{name}.pid"));
    let script = format!("sleep 60 &\necho $! > {}\nsleep 60\n", pidfile.display());
    let agent = server
        .script_agent(cid, name, &script, json!({ "graceSec": 2 }))
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let (_, run) = server
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    let run_id = run["id"].as_str().unwrap().to_string();
    server
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 10, |r| {
            r["processGroupId"].is_i64()
        })
        .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let pid = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
        {
            break pid;
        }
        assert!(std::time::Instant::now() < deadline, "script never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(alive(pid));
    (aid, run_id, pid)
}

#[tokio::test]
async fn cancel_and_pause_stop_the_whole_process_group_within_the_grace() {
    let server = TestServer::start().await;
    let cid = server.company("Stop Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();

    let (_, run_id, grandchild) = long_run(&server, &cid, "cancelme").await;
    let started = std::time::Instant::now();
    let run = server
        .ok_post(&format!("/api/heartbeat-runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(run["status"], "cancelled");
    assert_eq!(run["errorCode"], "cancelled");
    assert!(
        started.elapsed() < Duration::from_secs(2 + 3),
        "stopped within the grace"
    );
    assert!(!alive(grandchild), "the grandchild died with its group");
    let (status, _) = server
        .post(&format!("/api/heartbeat-runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 409, "a finished run cannot be cancelled again");

    let (aid, run_id, grandchild) = long_run(&server, &cid, "pauseme").await;
    let queued = server
        .ok_post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    let paused = server
        .ok_post(&format!("/api/agents/{aid}/pause"), json!({}))
        .await;
    assert_eq!(paused["status"], "paused");
    let run = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}"))
        .await;
    assert_eq!(run["status"], "cancelled");
    assert_eq!(run["error"], "agent paused");
    assert!(!alive(grandchild));
    let queued = server
        .ok_get(&format!(
            "/api/heartbeat-runs/{}",
            queued["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        queued["status"], "cancelled",
        "the paused agent's queued wake is cancelled"
    );
    assert!(queued["startedAt"].is_null(), "and never started");
    let (status, body) = server
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    assert_eq!(status, 409, "a paused agent gets no new runs: {body}");
    assert_eq!(body["details"]["skipReason"], "agent_paused");
}

#[tokio::test]
async fn a_run_past_its_timeout_is_timed_out() {
    let server = TestServer::start().await;
    let cid = server.company("Slow Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .script_agent(
            &cid,
            "Slow",
            "echo starting\nsleep 30\n",
            json!({ "timeoutSec": 1, "graceSec": 1 }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    let (_, run) = server
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    let run = server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", run["id"].as_str().unwrap()),
            15,
            |r| r["status"] == "timed_out",
        )
        .await;
    assert_eq!(run["errorCode"], "timeout");
    assert_eq!(run["signal"], "SIGTERM");
    assert!(run["stdoutExcerpt"].as_str().unwrap().contains("starting"));
    let agent = server.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(
        agent["status"], "error",
        "a timed-out run leaves its agent in error"
    );
    assert!(agent["errorReason"].is_string());
}

#[tokio::test]
async fn failed_starts_say_why() {
    let server = TestServer::start().await;
    let cid = server.company("Broken Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let missing = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Ghost", "adapterType": "process", "adapterConfig": { "command": "no-such-binary-xyz" } }),
        )
        .await;
    let (_, run) = server
        .post(
            &format!("/api/agents/{}/wakeup", missing["id"].as_str().unwrap()),
            json!({}),
        )
        .await;
    let run = server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", run["id"].as_str().unwrap()),
            10,
            |r| r["status"] == "failed",
        )
        .await;
    assert_eq!(run["errorCode"], "adapter_not_installed");
    assert!(run["error"]
        .as_str()
        .unwrap()
        .contains("no-such-binary-xyz"));

    let exits = server
        .script_agent(
            &cid,
            "Quitter",
            "echo 'fatal: repository not found' >&2\nexit 3\n",
            json!({}),
        )
        .await;
    let (_, run) = server
        .post(
            &format!("/api/agents/{}/wakeup", exits["id"].as_str().unwrap()),
            json!({}),
        )
        .await;
    let run = server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", run["id"].as_str().unwrap()),
            10,
            |r| r["status"] == "failed",
        )
        .await;
    assert_eq!(run["errorCode"], "nonzero_exit");
    assert_eq!(run["exitCode"], 3);
    assert!(
        run["error"]
            .as_str()
            .unwrap()
            .contains("repository not found"),
        "{run}"
    );
    assert!(run["stderrExcerpt"]
        .as_str()
        .unwrap()
        .contains("repository not found"));

    let (status, body) = server
        .post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Bad", "adapterType": "process", "adapterConfig": { "command": "x", "args": [1] } }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["details"][0]["path"],
        json!(["adapterConfig", "args", "0"])
    );
}

#[tokio::test]
async fn comments_and_mentions_wake_the_agents_they_concern() {
    let server = TestServer::start().await;
    let cid = server.company("Talk Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let echo_env = "env | grep '^PAPERCLIP_' | grep -v API_KEY | sort\n";
    let owner = server
        .script_agent(&cid, "Owner", echo_env, json!({}))
        .await;
    let cto = server.script_agent(&cid, "CTO", echo_env, json!({})).await;
    let (oid, ctoid) = (owner["id"].as_str().unwrap(), cto["id"].as_str().unwrap());
    // Assigned in backlog with assignment wakes off: the comment is the only trigger.
    server
        .ok_patch(
            &format!("/api/agents/{oid}"),
            json!({ "runtimeConfig": { "heartbeat": { "wakeOnAssignment": false } } }),
        )
        .await;
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Plan Q3", "status": "todo", "assigneeAgentId": oid }),
        )
        .await;
    let iid = issue["id"].as_str().unwrap();
    assert_eq!(
        server.runs_of(&cid, oid).await.len(),
        0,
        "wakeOnAssignment=false: no run"
    );
    let skipped = server
        .ok_get(&format!(
            "/api/companies/{cid}/activity?action=heartbeat.skipped"
        ))
        .await;
    assert_eq!(skipped[0]["details"]["skipReason"], "disabled_by_policy");

    let comment = server
        .ok_post(
            &format!("/api/issues/{iid}/comments"),
            json!({ "body": "Please draft it, and @cto review." }),
        )
        .await;
    let cid_comment = comment["id"].as_str().unwrap();
    for (agent, reason) in [(oid, "issue_commented"), (ctoid, "issue_comment_mentioned")] {
        let runs = server.only_run_succeeded(&cid, agent).await;
        assert_eq!(runs[0]["wakeReason"], reason);
        let log = server
            .ok_get(&format!(
                "/api/heartbeat-runs/{}/log",
                runs[0]["id"].as_str().unwrap()
            ))
            .await;
        let text = log["content"].as_str().unwrap();
        assert!(
            text.contains(&format!("PAPERCLIP_WAKE_COMMENT_ID={cid_comment}")),
            "{text}"
        );
        assert!(text.contains(&format!("PAPERCLIP_TASK_ID={iid}")));
        assert!(text.contains(&format!("PAPERCLIP_WAKE_REASON={reason}")));
        assert!(text.contains("PAPERCLIP_WAKE_PAYLOAD_JSON="));
    }
}

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
    let mut sse = server
        .client()
        .get(server.url(&format!("/api/companies/{cid}/events")))
        .send()
        .await
        .unwrap();
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

#[tokio::test]
async fn timer_heartbeats_wake_enabled_agents_once_per_interval() {
    // Timers run on the test clock, started at the real time (the agent's
    // last heartbeat is stamped with it); setting the clock runs a pass.
    let t0 = chrono::Utc::now();
    let server = TestServer::start_args(&["--test-clock", &t0.to_rfc3339()]).await;
    let cid = server.company("Clock Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ticking = server
        .script_agent(&cid, "Ticker", "echo tick\n", json!({}))
        .await;
    let quiet = server
        .script_agent(&cid, "Quiet", "echo tick\n", json!({}))
        .await;
    let (tid, qid) = (
        ticking["id"].as_str().unwrap(),
        quiet["id"].as_str().unwrap(),
    );
    server
        .ok_patch(
            &format!("/api/agents/{tid}"),
            // It has nothing to do: only an agent that asks for idle timer
            // wakes gets them (see tests/thrift.rs).
            json!({ "runtimeConfig": { "heartbeat": { "enabled": true, "intervalSec": 30, "wakeWhenIdle": true } } }),
        )
        .await;
    let set_clock = async |at: chrono::DateTime<chrono::Utc>| {
        server
            .ok_post(
                "/api/instance/test-clock",
                json!({ "now": at.to_rfc3339() }),
            )
            .await["timersWoken"]
            .as_u64()
            .unwrap()
    };
    // The first pass wakes it (the loop's own pass may have been first: the
    // wake is keyed by its interval slot, so it happens once either way).
    set_clock(t0).await;
    let runs = server.only_run_succeeded(&cid, tid).await;
    assert_eq!(runs[0]["invocationSource"], "timer");
    assert_eq!(runs[0]["wakeReason"], "heartbeat_timer");
    let last = server.ok_get(&format!("/api/agents/{tid}")).await["lastHeartbeatAt"]
        .as_str()
        .unwrap()
        .parse::<chrono::DateTime<chrono::Utc>>()
        .unwrap();
    // A tick within the 30 s interval: nothing.
    assert_eq!(set_clock(last + chrono::Duration::seconds(10)).await, 0);
    server.quiesce().await;
    assert_eq!(server.runs_of(&cid, tid).await.len(), 1);
    // The first tick past it: the second run.
    assert_eq!(set_clock(last + chrono::Duration::seconds(31)).await, 1);
    server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={tid}"),
            30,
            |r| {
                r.as_array()
                    .is_some_and(|r| r.len() == 2 && r.iter().all(|r| r["status"] == "succeeded"))
            },
        )
        .await;
    server.quiesce().await;
    assert!(
        server.runs_of(&cid, qid).await.is_empty(),
        "timers are off by default"
    );
}

#[tokio::test]
async fn idempotent_wakes_and_policy_refusals_are_recorded_not_run() {
    let server = TestServer::start().await;
    let cid = server.company("Policy Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .script_agent(&cid, "Picky", "echo ok\n", json!({}))
        .await;
    let aid = agent["id"].as_str().unwrap();
    let body = json!({ "reason": "deploy", "idempotencyKey": "deploy-42", "source": "automation", "triggerDetail": "callback" });
    let (status, first) = server
        .post(&format!("/api/agents/{aid}/wakeup"), body.clone())
        .await;
    assert_eq!(status, 202, "{first}");
    assert_eq!(first["invocationSource"], "automation");
    assert_eq!(first["triggerDetail"], "callback");
    let (status, again) = server
        .post(&format!("/api/agents/{aid}/wakeup"), body)
        .await;
    assert_eq!(status, 202);
    assert_eq!(
        again["id"], first["id"],
        "the same idempotency key is the same wake"
    );
    server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", first["id"].as_str().unwrap()),
            10,
            |r| r["status"] == "succeeded",
        )
        .await;
    assert_eq!(server.runs_of(&cid, aid).await.len(), 1);

    let (status, body) = server
        .post(
            &format!("/api/agents/{aid}/wakeup"),
            json!({ "source": "sometimes" }),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["details"][0]["path"], json!(["source"]));
    server
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "runtimeConfig": { "heartbeat": { "wakeOnOnDemand": false } } }),
        )
        .await;
    let (status, body) = server
        .post(&format!("/api/agents/{aid}/heartbeat/invoke"), json!({}))
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["details"]["skipReason"], "disabled_by_policy");
    server
        .ok_post(&format!("/api/agents/{aid}/terminate"), json!({}))
        .await;
    let (status, body) = server
        .post(
            &format!("/api/agents/{aid}/wakeup"),
            json!({ "source": "automation" }),
        )
        .await;
    assert_eq!(status, 409);
    assert_eq!(body["details"]["skipReason"], "agent_terminated");
    assert_eq!(
        server.runs_of(&cid, aid).await.len(),
        1,
        "refused wakes start nothing"
    );
}
