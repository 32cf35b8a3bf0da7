//! Each finished run says whether it moved its work forward (upstream's
//! livenessState, livenessReason, lastUsefulActionAt), from what its agent
//! changed on the board, whether it wrote anything, and where its task ended.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

const API: &str = r#"api() { curl -sS -f -X "$1" -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'content-type: application/json' "$PAPERCLIP_API_URL$2" -d "$3" >/dev/null; }
checkout() { api POST "/api/issues/$PAPERCLIP_TASK_ID/checkout" "{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\"]}"; }
"#;

/// The verdict of the first run of an agent running `script` on a new task.
async fn first_run(s: &TestServer, cid: &str, name: &str, script: &str) -> Value {
    let agent = s
        .script_agent(cid, name, &format!("set -e\n{API}{script}"), json!({}))
        .await;
    let aid = agent["id"].as_str().unwrap();
    s.issue(
        cid,
        json!({ "title": format!("Task for {name}"), "status": "todo", "assigneeAgentId": aid }),
    )
    .await;
    let runs = s
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            30,
            |runs| {
                runs.as_array().is_some_and(|r| {
                    r.last()
                        .is_some_and(|first| first["livenessState"].is_string())
                })
            },
        )
        .await;
    let first = runs.as_array().unwrap().last().unwrap().clone();
    // The single run reads the same.
    let one = s
        .ok_get(&format!(
            "/api/heartbeat-runs/{}",
            first["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(one["livenessState"], first["livenessState"]);
    first
}

#[tokio::test]
async fn every_finished_run_says_whether_it_moved_its_work() {
    let s = TestServer::start().await;
    let cid = s.company("Verdict Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();

    let run = first_run(
        &s,
        &cid,
        "Commenter",
        "checkout\napi POST \"/api/issues/$PAPERCLIP_TASK_ID/comments\" '{\"body\":\"Halfway there\"}'\n",
    )
    .await;
    assert_eq!(run["livenessState"], "advanced", "{run}");
    let reason = run["livenessReason"].as_str().unwrap();
    assert!(
        reason.contains("1 comment") && reason.contains("1 other change"),
        "{reason}"
    );
    let at = run["lastUsefulActionAt"].as_str().unwrap();
    assert!(at >= run["startedAt"].as_str().unwrap() && at <= run["finishedAt"].as_str().unwrap());

    let run = first_run(
        &s,
        &cid,
        "Finisher",
        "checkout\napi PATCH \"/api/issues/$PAPERCLIP_TASK_ID\" '{\"status\":\"done\"}'\n",
    )
    .await;
    assert_eq!(run["livenessState"], "completed", "{run}");
    assert_eq!(run["livenessReason"], "Its task is done");

    let run = first_run(&s, &cid, "Talker", "echo 'I will look at this later'\n").await;
    assert_eq!(run["livenessState"], "needs_followup", "{run}");
    assert!(run["lastUsefulActionAt"].is_null());

    let run = first_run(&s, &cid, "Silent", "true\n").await;
    assert_eq!(run["livenessState"], "empty_response", "{run}");

    let run = first_run(&s, &cid, "Crasher", "echo broken >&2\nexit 3\n").await;
    assert_eq!(run["livenessState"], "failed", "{run}");
    assert!(run["livenessReason"]
        .as_str()
        .unwrap()
        .starts_with("Run ended failed"));
}
