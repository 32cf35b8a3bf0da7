//! Issue-tree control and supervision on upstream's routes: a pause over a
//! subtree keeps its queued runs from starting until released; a monitor
//! wakes the assignee with `issue_monitor_due` exactly once per firing (at
//! once through `check-now`, or when due through the runtime's tick) and
//! ends at its bounds; the watchdog, recovery actions and stalled-review
//! decision answer as upstream does; bad input is 400/404/409/422.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

async fn runs_with(server: &TestServer, company: &str, agent: &str, reason: &str) -> Vec<Value> {
    server
        .runs_of(company, agent)
        .await
        .into_iter()
        .filter(|r| r["wakeReason"] == reason)
        .collect()
}

fn iso_in(secs: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::seconds(secs))
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[tokio::test]
async fn holds_pause_a_subtree_and_monitors_wake_the_assignee_once() {
    let server = TestServer::start().await;
    let company = server.company("Holds").await;
    let cid = company["id"].as_str().unwrap();
    let coder = server.agent(cid, "Coder", None).await;
    let coder_id = coder["id"].as_str().unwrap();
    let other = server.agent(cid, "Other", None).await;
    let other_id = other["id"].as_str().unwrap();

    // A pause over the parent holds the child: its wake queues a run that
    // is not started, while another agent's run on free work goes through.
    let parent = server.issue(cid, json!({ "title": "Release 1.0" })).await;
    let pid = parent["identifier"].as_str().unwrap();
    let child = server
        .issue(
            cid,
            json!({ "title": "Write notes", "parentId": parent["id"] }),
        )
        .await;
    let child_id = child["identifier"].as_str().unwrap();
    let (status, bad) = server
        .post(
            &format!("/api/issues/{pid}/tree-holds"),
            json!({ "mode": "freeze" }),
        )
        .await;
    assert_eq!(status, 400, "{bad}");
    let (status, body) = server
        .post(
            &format!("/api/issues/{pid}/tree-holds"),
            json!({ "mode": "cancel" }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let preview = server
        .ok_post(
            &format!("/api/issues/{pid}/tree-control/preview"),
            json!({ "mode": "pause" }),
        )
        .await;
    assert_eq!(preview["totals"]["totalIssues"], 2, "{preview}");
    assert_eq!(preview["totals"]["affectedIssues"], 2);
    let (status, created) = server
        .post(
            &format!("/api/issues/{pid}/tree-holds"),
            json!({ "mode": "pause", "reason": "Freeze for the audit" }),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let hold = created["hold"]["id"].as_str().unwrap().to_string();
    assert_eq!(created["hold"]["status"], "active");
    assert_eq!(created["hold"]["members"].as_array().unwrap().len(), 2);
    let state = server
        .ok_get(&format!("/api/issues/{child_id}/tree-control/state"))
        .await;
    assert_eq!(state["activePauseHold"]["holdId"], hold.as_str(), "{state}");
    assert_eq!(state["activePauseHold"]["isRoot"], false);
    let prefix = company["issuePrefix"].as_str().unwrap();
    let page = common::visible_text(&server.page(&format!("/{prefix}/tasks/{child_id}")).await);
    assert!(
        page.contains("Paused: a task above this one put its whole tree on hold")
            && page.contains("Release"),
        "the board shows the hold"
    );
    let again = server
        .ok_post(
            &format!("/api/issues/{pid}/tree-control/preview"),
            json!({ "mode": "pause" }),
        )
        .await;
    assert_eq!(again["issues"][1]["skipReason"], "already_held", "{again}");

    server
        .ok_patch(
            &format!("/api/issues/{child_id}"),
            json!({ "assigneeAgentId": coder_id, "status": "todo" }),
        )
        .await;
    let free = server.issue(cid, json!({ "title": "Free work" })).await;
    server
        .ok_patch(
            &format!("/api/issues/{}", free["id"].as_str().unwrap()),
            json!({ "assigneeAgentId": other_id, "status": "todo" }),
        )
        .await;
    server.only_run_succeeded(cid, other_id).await;
    let held = server.runs_of(cid, coder_id).await;
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(held[0]["status"], "queued", "the held task's run waits");
    // A task made under the paused one is held too.
    let late = server
        .issue(
            cid,
            json!({ "title": "Late subtask", "parentId": child["id"],
                "assigneeAgentId": other_id, "status": "todo" }),
        )
        .await;
    let late_runs = server
        .ok_get(&format!(
            "/api/issues/{}/live-runs",
            late["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(late_runs[0]["status"], "queued", "{late_runs}");

    let listed = server
        .ok_get(&format!(
            "/api/issues/{pid}/tree-holds?status=active&includeMembers=true"
        ))
        .await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(
        listed[0]["members"].as_array().unwrap().len(),
        3,
        "the late task joined"
    );
    let (status, _) = server
        .get(&format!("/api/issues/{pid}/tree-holds/not-a-uuid"))
        .await;
    assert_eq!(status, 400);
    let (status, _) = server
        .get(&format!(
            "/api/issues/{pid}/tree-holds/00000000-0000-7000-8000-000000000000"
        ))
        .await;
    assert_eq!(status, 404);
    let released = server
        .ok_post(
            &format!("/api/issues/{pid}/tree-holds/{hold}/release"),
            json!({ "reason": "Audit done" }),
        )
        .await;
    assert_eq!(released["status"], "released", "{released}");
    assert_eq!(released["releaseReason"], "Audit done");
    server.only_run_succeeded(cid, coder_id).await;
    server.quiesce().await;
    let others = server.runs_of(cid, other_id).await;
    assert!(
        others.len() == 2 && others.iter().all(|r| r["status"] == "succeeded"),
        "{others:?}"
    );
    let (status, _) = server
        .post(
            &format!("/api/issues/{pid}/tree-holds/{hold}/release"),
            json!({}),
        )
        .await;
    assert_eq!(status, 409);
    let state = server
        .ok_get(&format!("/api/issues/{child_id}/tree-control/state"))
        .await;
    assert_eq!(state["activePauseHold"], Value::Null);

    // A monitor: only on an agent's work in progress, checked field by field.
    let watched = server
        .issue(cid, json!({ "title": "Wait for the deploy", "assigneeAgentId": other_id, "status": "in_progress" }))
        .await;
    let wid = watched["identifier"].as_str().unwrap().to_string();
    let path = format!("/api/issues/{wid}");
    let (status, body) = server
        .patch(
            &path,
            json!({ "executionPolicy": { "monitor": { "nextCheckAt": "soon" } } }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("nextCheckAt"), "{body}");
    let (status, body) = server
        .patch(
            &format!("/api/issues/{}", free["identifier"].as_str().unwrap()),
            json!({ "executionPolicy": { "monitor": { "nextCheckAt": iso_in(3600) } } }),
        )
        .await;
    assert_eq!(status, 422, "a todo task cannot be monitored: {body}");
    let (status, _) = server
        .post(&format!("{path}/monitor/check-now"), json!({}))
        .await;
    assert_eq!(status, 409, "no monitor yet");
    let monitor = json!({ "nextCheckAt": iso_in(3600), "serviceName": "deploy",
        "externalRef": "job-7781", "maxAttempts": 2, "notes": "Check the rollout" });
    let scheduled = server
        .ok_patch(&path, json!({ "executionPolicy": { "monitor": monitor } }))
        .await;
    let issue = &scheduled;
    assert!(issue["monitorNextCheckAt"].is_string(), "{scheduled}");
    assert_eq!(issue["monitorScheduledBy"], "assignee");
    assert_eq!(
        issue["executionPolicy"]["monitor"]["externalRef"],
        "[redacted]"
    );
    assert_eq!(issue["executionState"]["monitor"]["status"], "scheduled");
    assert!(!scheduled.to_string().contains("job-7781"));
    let page = server.page(&format!("/{prefix}/tasks/{wid}")).await;
    assert!(
        common::visible_text(&page).contains("attempt 1 of 2"),
        "the board says when"
    );

    server.quiesce().await;
    let ok = server
        .ok_post(&format!("{path}/monitor/check-now"), json!({}))
        .await;
    assert_eq!(ok, json!({ "ok": true }));
    let after = server.ok_get(&path).await;
    assert_eq!(after["monitorAttemptCount"], 1, "{after}");
    assert_eq!(after["monitorNextCheckAt"], Value::Null);
    assert_eq!(after["executionState"]["monitor"]["status"], "triggered");
    let (status, _) = server
        .post(&format!("{path}/monitor/check-now"), json!({}))
        .await;
    assert_eq!(status, 409, "a fired monitor is gone until scheduled again");
    server.quiesce().await;

    // Due in the past: the runtime's tick fires it once.
    let due = json!({ "nextCheckAt": iso_in(-1), "maxAttempts": 2 });
    server
        .ok_patch(&path, json!({ "executionPolicy": { "monitor": due } }))
        .await;
    server
        .wait_for(&path, 20, |i| i["monitorAttemptCount"] == 2)
        .await;
    server.quiesce().await;
    let woken = runs_with(&server, cid, other_id, "issue_monitor_due").await;
    assert_eq!(woken.len(), 2, "one wake per firing: {woken:?}");
    assert!(
        woken.iter().all(|r| r["status"] == "succeeded"),
        "{woken:?}"
    );
    let (status, body) = server
        .patch(&path, json!({ "executionPolicy": { "monitor": { "nextCheckAt": iso_in(60), "maxAttempts": 2 } } }))
        .await;
    assert_eq!(status, 422, "the attempts are spent: {body}");
    server
        .ok_patch(
            &path,
            json!({ "executionPolicy": { "monitor": { "nextCheckAt": iso_in(60) } } }),
        )
        .await;
    let done = server.ok_patch(&path, json!({ "status": "done" })).await;
    assert_eq!(done["monitorNextCheckAt"], Value::Null, "{done}");
    assert_eq!(done["executionState"]["monitor"]["clearReason"], "done");

    // The watchdog.
    let wd = format!("/api/issues/{child_id}/watchdog");
    assert_eq!(server.ok_get(&wd).await, Value::Null);
    let (status, _) = server
        .put(&wd, json!({ "agentId": other_id, "extra": 1 }))
        .await;
    assert_eq!(status, 400);
    let (status, _) = server
        .put(
            &wd,
            json!({ "agentId": "00000000-0000-7000-8000-000000000000" }),
        )
        .await;
    assert_eq!(status, 404);
    let (status, set) = server
        .put(
            &wd,
            json!({ "agentId": other_id, "instructions": "Nudge if stuck" }),
        )
        .await;
    assert_eq!(status, 200, "{set}");
    assert_eq!(set["watchdogAgentId"], other_id);
    assert_eq!(server.ok_get(&wd).await["status"], "active");
    let (status, gone) = server.delete(&wd).await;
    assert_eq!((status.as_u16(), gone), (200, json!({ "ok": true })));
    assert_eq!(server.ok_get(&wd).await, Value::Null);

    // Recovery actions: none ever here; resolving one is a 404.
    let actions = server
        .ok_get(&format!("/api/issues/{child_id}/recovery-actions"))
        .await;
    assert_eq!(actions, json!({ "active": null, "actions": [] }));
    let resolve = format!("/api/issues/{child_id}/recovery-actions/resolve");
    let (status, _) = server
        .post(
            &resolve,
            json!({ "outcome": "fixed", "sourceIssueStatus": "todo" }),
        )
        .await;
    assert_eq!(status, 400);
    let (status, _) = server
        .post(
            &resolve,
            json!({ "outcome": "restored", "sourceIssueStatus": "todo" }),
        )
        .await;
    assert_eq!(status, 404);

    // A stalled review: only one in review; sending it back needs a note.
    let review = format!("/api/issues/{child_id}/stalled-review-decision");
    let (status, _) = server.post(&review, json!({ "action": "approve" })).await;
    assert_eq!(status, 409, "not in review");
    server
        .ok_patch(
            &format!("/api/issues/{child_id}"),
            json!({ "status": "in_progress" }),
        )
        .await;
    server
        .ok_patch(
            &format!("/api/issues/{child_id}"),
            json!({ "status": "in_review" }),
        )
        .await;
    let (status, _) = server
        .post(&review, json!({ "action": "request_changes" }))
        .await;
    assert_eq!(status, 400);
    let decided = server
        .ok_post(&review, json!({ "action": "approve" }))
        .await;
    assert_eq!(decided["issue"]["status"], "done", "{decided}");
    assert_eq!(decided["wakeQueued"], false);
    let actions = server.actions(cid).await;
    for action in [
        "issue.tree_hold_created",
        "issue.tree_hold_released",
        "issue.monitor_triggered",
        "issue.watchdog_created",
        "issue.watchdog_removed",
    ] {
        assert!(
            actions.iter().any(|a| a == action),
            "{action} in {actions:?}"
        );
    }
}
