//! A project's setup and cleanup commands: setup runs in a task's new
//! worktree before its agent (again while it last failed, and a failure
//! fails the run with the command's words), cleanup before the worktree is
//! removed; both are recorded operations with logs.

use std::path::Path;

use serde_json::json;

use super::lifecycle::{ended, runs_ended, workspace_of};
use super::{project_on_repository, s};
use crate::common::TestServer;

#[tokio::test]
async fn setup_runs_in_a_new_worktree_a_failure_says_why_and_cleanup_runs_on_close() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Setup").await["id"]).to_string();
    let (_repo, pid) = project_on_repository(&server, &cid).await;
    let declared = server
        .ok_get(&format!("/api/projects/{pid}/workspaces"))
        .await;
    let path = format!("/api/projects/{pid}/workspaces/{}", s(&declared[0]["id"]));
    let cleaned = server.data_dir.join("cleaned");
    let broken =
        "echo \"installing for $PAPERCLIP_TASK_IDENTIFIER\"; echo 'no such package' >&2; exit 3";
    let set = server
        .ok_patch(
            &path,
            json!({ "setupCommand": broken,
                    "cleanupCommand": format!("echo cleaning; touch '{}'", cleaned.display()) }),
        )
        .await;
    assert_eq!(set["setupCommand"], broken);
    let script = "[ -f .setup-done ] && echo setup=yes || echo setup=no\n";
    let agent = server.script_agent(&cid, "Coder", script, json!({})).await;
    let aid = s(&agent["id"]).to_string();
    let task = server
        .issue(
            &cid,
            json!({ "title": "Build", "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
        )
        .await;
    let tid = s(&task["id"]).to_string();

    // The broken setup fails the run, saying what the command said.
    let failed = runs_ended(&server, &cid, &aid, 1).await.remove(0);
    assert_eq!(failed["status"], "failed", "{failed}");
    let error = s(&failed["error"]);
    assert!(
        error.contains("setup command") && error.contains("exited 3"),
        "{error}"
    );
    assert!(error.contains("no such package"), "{error}");
    let ops = server
        .ok_get(&format!(
            "/api/heartbeat-runs/{}/workspace-operations",
            s(&failed["id"])
        ))
        .await;
    let provision = ops
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["phase"] == "workspace_provision")
        .unwrap_or_else(|| panic!("no provision step: {ops}"))
        .clone();
    assert_eq!(
        (provision["status"].as_str(), provision["exitCode"].as_i64()),
        (Some("failed"), Some(3))
    );
    let log = server
        .ok_get(&format!(
            "/api/workspace-operations/{}/log",
            s(&provision["id"])
        ))
        .await;
    assert!(s(&log["content"]).contains("installing for SET-1"), "{log}");

    // Fixed, the next run sets the (reused) worktree up before its agent.
    server
        .ok_patch(&path, json!({ "setupCommand": "echo done > .setup-done" }))
        .await;
    let again = server
        .wake(&aid, json!({ "reason": "fixed", "issueId": tid }))
        .await;
    let run = ended(&server, s(&again["id"])).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    assert!(s(&run["stdoutExcerpt"]).contains("setup=yes"), "{run}");
    // Set up once: the run after does not run it again.
    let third = server
        .wake(&aid, json!({ "reason": "more", "issueId": tid }))
        .await;
    let third = ended(&server, s(&third["id"])).await;
    let ops = server
        .ok_get(&format!(
            "/api/heartbeat-runs/{}/workspace-operations",
            s(&third["id"])
        ))
        .await;
    assert!(
        ops.as_array()
            .unwrap()
            .iter()
            .all(|o| o["phase"] != "workspace_provision"),
        "{ops}"
    );

    // Closing runs the cleanup command in the worktree first.
    let ws = workspace_of(&server, &cid, &tid).await;
    let wid = s(&ws["id"]);
    server
        .ok_patch(
            &format!("/api/execution-workspaces/{wid}"),
            json!({ "status": "archived" }),
        )
        .await;
    assert!(cleaned.is_file(), "the cleanup command ran");
    assert!(!Path::new(s(&ws["cwd"])).exists());
    let ops = server
        .ok_get(&format!(
            "/api/execution-workspaces/{wid}/workspace-operations"
        ))
        .await;
    let last = ops.as_array().unwrap().last().unwrap();
    let log = server
        .ok_get(&format!("/api/workspace-operations/{}/log", s(&last["id"])))
        .await;
    assert!(s(&log["content"]).contains("cleaning"), "{log}");
}

#[tokio::test]
async fn the_board_can_turn_isolation_off_for_a_project_and_back_on() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Policy").await["id"]).to_string();
    let (repo, pid) = project_on_repository(&server, &cid).await;
    let project = format!("/api/projects/{pid}");
    // Upstream's keys we do not serve are refused, never dropped.
    let (status, body) = server
        .patch(
            &project,
            json!({ "executionWorkspacePolicy": { "enabled": true, "workspaceStrategy": { "type": "git_worktree" } } }),
        )
        .await;
    assert!(status == 400 || status == 422, "{status} {body}");
    assert!(body.to_string().contains("workspaceStrategy"), "{body}");
    let off = server
        .ok_patch(
            &project,
            json!({ "executionWorkspacePolicy": { "enabled": false } }),
        )
        .await;
    assert_eq!(
        off["executionWorkspacePolicy"],
        json!({ "enabled": false }),
        "{off}"
    );
    // Off: the agent works where its own config says, and no worktree is made.
    let own = repo.to_str().unwrap();
    let agent = server
        .script_agent(&cid, "Coder", "pwd\n", json!({ "cwd": own }))
        .await;
    let aid = s(&agent["id"]).to_string();
    let task = server
        .issue(&cid, json!({ "title": "Shared", "status": "todo", "projectId": pid, "assigneeAgentId": aid }))
        .await;
    let run = runs_ended(&server, &cid, &aid, 1).await.remove(0);
    assert_eq!(run["status"], "succeeded", "{run}");
    assert!(s(&run["stdoutExcerpt"]).starts_with(own), "{run}");
    let none = server
        .ok_get(&format!("/api/companies/{cid}/execution-workspaces"))
        .await;
    assert_eq!(none, json!([]));
    // Back to the default (null): the next run gets the task's worktree.
    let on = server
        .ok_patch(&project, json!({ "executionWorkspacePolicy": null }))
        .await;
    assert_eq!(on["executionWorkspacePolicy"], serde_json::Value::Null);
    let again = server
        .wake(
            &aid,
            json!({ "reason": "isolated", "issueId": s(&task["id"]) }),
        )
        .await;
    let run = ended(&server, s(&again["id"])).await;
    let ws = workspace_of(&server, &cid, s(&task["id"])).await;
    assert!(s(&run["stdoutExcerpt"]).starts_with(s(&ws["cwd"])), "{run}");
    assert!(server
        .actions(&cid)
        .await
        .contains(&"project.updated".to_string()));
}
