//! A task's run in a git worktree: the CLI lists the run's workspace
//! operations and reads one operation's log.

use serde_json::json;

use super::More;
use crate::common::repos::repository;

#[tokio::test]
async fn upstream_cli_reads_a_runs_workspace_operation_log() {
    let Some((s, mut t)) = More::start().await else {
        return;
    };
    let cid = t.var("cid");
    let project = s
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App" }),
        )
        .await;
    let pid = project["id"].as_str().unwrap().to_string();
    let repo = repository();
    s.ok_post(
        &format!("/api/projects/{pid}/workspaces"),
        json!({ "cwd": repo.to_str().unwrap() }),
    )
    .await;
    let agent = s
        .script_agent(&cid, "Coder", "echo done > done.txt\n", json!({}))
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    s.issue(
        &cid,
        json!({ "title": "Add a file", "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
    )
    .await;
    let runs = s.settled_runs(&cid, &aid, 1, 120).await;
    assert_eq!(runs[0]["status"], "succeeded", "{}", runs[0]);
    t.set("rid", &runs[0]);

    let ops = t.json("run workspace-operations {rid}").await;
    let prepare = ops
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["phase"] == "worktree_prepare")
        .unwrap_or_else(|| panic!("{ops}"))
        .clone();
    let opid = t.set("opid", &prepare);
    let log = t.json("run workspace-log {opid}").await;
    let ours = s
        .ok_get(&format!("/api/workspace-operations/{opid}/log"))
        .await;
    assert_eq!(log, ours);
    assert!(
        log["content"].as_str().is_some_and(|c| !c.is_empty()),
        "{log}"
    );
    t.ran("workspace operation log", 2);
}
