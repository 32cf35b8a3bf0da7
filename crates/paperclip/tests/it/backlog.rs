//! Backlog means not started (upstream's rule): a task created or assigned
//! in the backlog wakes nobody, whoever its assignee; taking it out of the
//! backlog wakes its agent once.

use crate::common::repos::str_of as s;
use crate::common::TestServer;
use serde_json::json;

#[tokio::test]
async fn a_backlog_task_waits_until_it_is_taken_out_of_the_backlog() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Queue").await["id"]).to_string();
    let agent = server
        .script_agent(&cid, "Builder", "echo working\n", json!({}))
        .await;
    let aid = s(&agent["id"]).to_string();
    let runs = format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}");
    // Created in the backlog (the default) with an assignee, and assigned
    // while in the backlog: nothing starts.
    let queued = server
        .issue(&cid, json!({ "title": "Later", "assigneeAgentId": aid }))
        .await;
    assert_eq!(queued["status"], "backlog");
    let other = server.issue(&cid, json!({ "title": "Also later" })).await;
    server
        .ok_patch(
            &format!("/api/issues/{}", s(&other["id"])),
            json!({ "assigneeAgentId": aid }),
        )
        .await;
    server.quiesce().await;
    assert_eq!(
        server.ok_get(&runs).await,
        json!([]),
        "a backlog task started"
    );
    // Out of the backlog: its agent is woken once, for it.
    server
        .ok_patch(
            &format!("/api/issues/{}", s(&queued["id"])),
            json!({ "status": "todo" }),
        )
        .await;
    let list = server
        .wait_for(&runs, 30, |r| {
            r.as_array()
                .is_some_and(|r| r.len() == 1 && r[0]["status"] == "succeeded")
        })
        .await;
    assert_eq!(list[0]["issueId"], queued["id"], "{list}");
    server.quiesce().await;
    assert_eq!(server.ok_get(&runs).await.as_array().unwrap().len(), 1);
}
