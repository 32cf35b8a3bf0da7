//! The heartbeat loop with real processes: wake on assignment, run a shell
//! agent that talks to the API with its run token, record everything.

mod adapters;
mod run_ends;

use crate::common;

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
    // Run logs live in the database on Postgres (any instance reads them).
    let on_pg = std::env::var("PAPERCLIP_TEST_PG_URL").is_ok_and(|u| !u.is_empty());
    assert_eq!(log["store"], if on_pg { "postgres" } else { "local_file" });
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
    server.lever(&aid, "terminate").await;
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
