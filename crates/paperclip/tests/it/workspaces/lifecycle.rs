//! A workspace's life after its first run, with real git: each run's work
//! is committed on the task branch (the next run starts from it, and each
//! run's diff is its own), the whole task's changes and the operations are
//! readable, closing removes the worktree and keeps unmerged work, and it
//! is refused while a run is live.

use std::path::Path;

use serde_json::{json, Value};

use super::{git, project_on_repository, s};
use crate::common::TestServer;

/// Waits for the run to end; the run.
pub(super) async fn ended(server: &TestServer, run_id: &str) -> Value {
    server
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 60, |r| {
            r["status"] != "queued" && r["status"] != "running"
        })
        .await
}

/// The task's runs, oldest first, once `n` have ended.
pub(super) async fn runs_ended(server: &TestServer, cid: &str, aid: &str, n: usize) -> Vec<Value> {
    server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            60,
            |runs| {
                runs.as_array().is_some_and(|r| {
                    r.len() >= n
                        && r.iter()
                            .all(|run| run["status"] != "queued" && run["status"] != "running")
                })
            },
        )
        .await;
    server.runs_of(cid, aid).await
}

/// The task's open workspace.
pub(super) async fn workspace_of(server: &TestServer, cid: &str, tid: &str) -> Value {
    let list = server
        .ok_get(&format!(
            "/api/companies/{cid}/execution-workspaces?issueId={tid}"
        ))
        .await;
    let open: Vec<&Value> = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["closedAt"].is_null())
        .collect();
    assert_eq!(open.len(), 1, "{list}");
    open[0].clone()
}

#[tokio::test]
async fn each_run_is_committed_so_the_next_starts_from_it_and_diffs_only_its_own_work() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Commits").await["id"]).to_string();
    let (repo, pid) = project_on_repository(&server, &cid).await;
    // Each run appends a line and says how many commits its branch has.
    let script = "echo \"line $(date +%s%N)\" >> notes.txt\n\
                  echo \"commits=$(git rev-list --count HEAD)\"\n";
    let agent = server.script_agent(&cid, "Coder", script, json!({})).await;
    let aid = s(&agent["id"]).to_string();
    let task = server
        .issue(
            &cid,
            json!({ "title": "Keep notes", "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
        )
        .await;
    let tid = s(&task["id"]).to_string();
    let first = runs_ended(&server, &cid, &aid, 1).await.remove(0);
    assert_eq!(first["status"], "succeeded", "{first}");
    assert!(s(&first["stdoutExcerpt"]).contains("commits=1"), "{first}");
    let again = server
        .wake(&aid, json!({ "reason": "again", "issueId": tid }))
        .await;
    let second = ended(&server, s(&again["id"])).await;
    assert_eq!(second["status"], "succeeded", "{second}");
    // The first run's work was committed: the second run saw its commit.
    assert!(
        s(&second["stdoutExcerpt"]).contains("commits=2"),
        "{second}"
    );

    // Each run's diff is its own: the second changed one line of a file
    // the first added.
    let c1 = server
        .ok_get(&format!(
            "/api/heartbeat-runs/{}/workspace-changes",
            s(&first["id"])
        ))
        .await;
    let c2 = server
        .ok_get(&format!(
            "/api/heartbeat-runs/{}/workspace-changes",
            s(&second["id"])
        ))
        .await;
    assert_eq!(c1["files"][0]["kind"], "added", "{c1}");
    assert_eq!(c2["files"][0]["kind"], "modified", "{c2}");
    assert_eq!(
        (c2["insertions"].as_u64(), c2["deletions"].as_u64()),
        (Some(1), Some(0))
    );

    // The whole task against main: one file, two lines, two commits.
    let ws = workspace_of(&server, &cid, &tid).await;
    let wid = s(&ws["id"]).to_string();
    let task_changes = server
        .ok_get(&format!("/api/execution-workspaces/{wid}/task-changes"))
        .await;
    assert_eq!(task_changes["filesChanged"], 1, "{task_changes}");
    assert_eq!(task_changes["insertions"], 2, "{task_changes}");
    assert_eq!(
        task_changes["commits"].as_array().unwrap().len(),
        2,
        "{task_changes}"
    );
    let subject = s(&task_changes["commits"][0]["subject"]);
    assert!(subject.starts_with(s(&task["identifier"])), "{subject}");
    let branch = s(&ws["branchName"]);
    let head = git(&repo, &["rev-parse", &format!("refs/heads/{branch}")]);
    assert_eq!(task_changes["headCommit"], head.trim());
    assert_eq!(
        git(&repo, &["status", "--porcelain"]),
        "",
        "main checkout untouched"
    );

    // The operations, per run and per workspace, with readable logs.
    let ops = server
        .ok_get(&format!(
            "/api/heartbeat-runs/{}/workspace-operations",
            s(&second["id"])
        ))
        .await;
    let phases: Vec<&str> = ops
        .as_array()
        .unwrap()
        .iter()
        .map(|o| s(&o["phase"]))
        .collect();
    assert_eq!(phases, ["worktree_prepare", "workspace_finalize"], "{ops}");
    assert_eq!(ops[0]["metadata"]["origin"], "reused", "{ops}");
    assert_eq!(ops[1]["status"], "succeeded", "{ops}");
    let log = server
        .ok_get(&format!(
            "/api/workspace-operations/{}/log",
            s(&ops[1]["id"])
        ))
        .await;
    assert!(
        s(&log["content"]).contains("Committed what the run left"),
        "{log}"
    );
    assert_eq!(log["nextOffset"], Value::Null);
    // The run's page shows the same steps, each with its log.
    let prefix = s(&task["identifier"])
        .split('-')
        .next()
        .unwrap()
        .to_string();
    let page = server
        .page(&format!(
            "/{prefix}/agents/{}/runs/{}",
            s(&agent["urlKey"]),
            s(&second["id"])
        ))
        .await;
    assert!(page.contains("data-phase=\"worktree_prepare\""), "{page}");
    assert!(page.contains("data-phase=\"workspace_finalize\""), "{page}");
    assert!(page.contains("Committed what the run left"), "{page}");
    let all = server
        .ok_get(&format!(
            "/api/execution-workspaces/{wid}/workspace-operations"
        ))
        .await;
    assert_eq!(all.as_array().unwrap().len(), 4, "{all}");
    assert_eq!(all[0]["metadata"]["origin"], "new_branch", "{all}");

    // The branch is the task's work product, its summary current.
    let products = server
        .ok_get(&format!("/api/issues/{tid}/work-products"))
        .await;
    let branch_product = products
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "branch")
        .unwrap_or_else(|| panic!("no branch product: {products}"));
    assert_eq!(branch_product["title"], branch);
    assert!(
        s(&branch_product["summary"]).starts_with("changed 1 file, +2"),
        "{branch_product}"
    );

    // The overview counts it and its disk.
    let overview = server
        .ok_get(&format!("/api/companies/{cid}/workspace-overview"))
        .await;
    assert_eq!(overview["openCount"], 1, "{overview}");
    assert!(overview["diskBytes"].as_u64().unwrap() > 0, "{overview}");
    assert_eq!(overview["diskBudgetBytes"], 10u64 * 1024 * 1024 * 1024);
    assert_eq!(overview["retentionDays"], 7);
}

#[tokio::test]
async fn closing_removes_the_worktree_keeps_unmerged_work_and_waits_for_live_runs() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Close").await["id"]).to_string();
    let (repo, pid) = project_on_repository(&server, &cid).await;
    // The run writes a file, then holds until the test lets it go.
    let gate = server.data_dir.join("gate");
    let script = format!(
        "echo work > work.txt\n\
         i=0; while [ ! -e '{g}' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n",
        g = gate.display()
    );
    let agent = server.script_agent(&cid, "Coder", &script, json!({})).await;
    let aid = s(&agent["id"]).to_string();
    let task = server
        .issue(
            &cid,
            json!({ "title": "Close me", "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
        )
        .await;
    let tid = s(&task["id"]).to_string();
    let ws = server
        .wait_for(
            &format!("/api/companies/{cid}/execution-workspaces?issueId={tid}"),
            30,
            |l| l.as_array().is_some_and(|l| l.len() == 1),
        )
        .await[0]
        .clone();
    let wid = s(&ws["id"]).to_string();
    let dir = s(&ws["cwd"]).to_string();
    let path = format!("/api/execution-workspaces/{wid}");

    // While the run is live: blocked, and closing is refused.
    let ready = server.ok_get(&format!("{path}/close-readiness")).await;
    assert_eq!(ready["state"], "blocked", "{ready}");
    let (status, body) = server.patch(&path, json!({ "status": "archived" })).await;
    assert_eq!(status, 409, "{body}");
    assert!(s(&body["error"]).contains("run"), "{body}");
    assert!(Path::new(&dir).is_dir());

    std::fs::write(&gate, "").unwrap();
    let run = runs_ended(&server, &cid, &aid, 1).await.remove(0);
    assert_eq!(run["status"], "succeeded", "{run}");
    // A person's uncommitted edit in the worktree is kept too.
    std::fs::write(Path::new(&dir).join("by-hand.txt"), "mine\n").unwrap();
    let ready = server.ok_get(&format!("{path}/close-readiness")).await;
    assert_eq!(ready["state"], "ready_with_warnings", "{ready}");
    assert_eq!(ready["git"]["aheadCount"], 1, "{ready}");
    assert_eq!(ready["git"]["untrackedEntryCount"], 1, "{ready}");
    assert_eq!(ready["git"]["dirtyEntryCount"], 0, "{ready}");
    assert_eq!(ready["git"]["isMergedIntoBase"], false, "{ready}");
    assert_eq!(ready["deliveryState"], "unmerged", "{ready}");
    assert_eq!(ready["linkedIssues"][0]["identifier"], "CLO-1", "{ready}");

    // Only "archived" can be asked for; an agent cannot close.
    let (status, body) = server.patch(&path, json!({ "status": "active" })).await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = server.patch(&path, json!({ "status": "gone" })).await;
    assert_eq!(status, 400, "{body}");
    let token = server.key(&aid).await;
    let (status, body) = server
        .as_agent(
            &token,
            None,
            "PATCH",
            &path,
            Some(json!({ "status": "archived" })),
        )
        .await;
    assert_eq!(status, 403, "{body}");

    let closed = server
        .ok_patch(
            &path,
            json!({ "status": "archived", "cleanupReason": "shipped" }),
        )
        .await;
    assert_eq!(closed["status"], "archived", "{closed}");
    assert!(closed["closedAt"].is_string(), "{closed}");
    assert!(!Path::new(&dir).exists(), "the worktree is removed");
    let listed = git(&repo, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        listed.matches("worktree ").count(),
        1,
        "only the main checkout: {listed}"
    );
    // The branch is unmerged, so it stays, with the run's work and the
    // person's edit committed on it.
    let branch = s(&ws["branchName"]);
    let files = git(
        &repo,
        &["ls-tree", "--name-only", &format!("refs/heads/{branch}")],
    );
    assert!(
        files.contains("work.txt") && files.contains("by-hand.txt"),
        "{files}"
    );
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    let ops = server.ok_get(&format!("{path}/workspace-operations")).await;
    let cleanup = ops.as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (cleanup["phase"].as_str(), cleanup["status"].as_str()),
        (Some("worktree_cleanup"), Some("succeeded"))
    );
    let log = server
        .ok_get(&format!(
            "/api/workspace-operations/{}/log",
            s(&cleanup["id"])
        ))
        .await;
    assert!(s(&log["content"]).contains("Kept branch"), "{log}");
    let (status, _) = server.patch(&path, json!({ "status": "archived" })).await;
    assert_eq!(status, 409, "closing twice");
    assert!(server
        .actions(&cid)
        .await
        .contains(&"execution_workspace.archived".to_string()));

    // The task's next run gets a fresh worktree on its kept branch.
    let again = server
        .wake(&aid, json!({ "reason": "again", "issueId": tid }))
        .await;
    let again = ended(&server, s(&again["id"])).await;
    assert_eq!(again["status"], "succeeded", "{again}");
    let reopened = workspace_of(&server, &cid, &tid).await;
    assert_ne!(reopened["id"], ws["id"]);
    assert_eq!(reopened["branchName"], ws["branchName"]);
    assert!(Path::new(s(&reopened["cwd"])).join("by-hand.txt").is_file());
}
