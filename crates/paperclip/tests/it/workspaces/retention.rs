//! Bounds on workspaces: the retention sweep (on the test clock) removes
//! the worktrees of long-closed tasks and never one whose task is open or
//! has a live run; the disk budget refuses a new worktree with a reason;
//! a `kill -9` in the middle of making a worktree leaves a repository the
//! restarted server repairs and uses.

use std::path::Path;

use serde_json::{json, Value};

use super::lifecycle::{ended, runs_ended, workspace_of};
use super::{git, project_on_repository, s};
use crate::common::{self, TestServer};

fn iso(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[tokio::test]
async fn the_sweep_removes_long_closed_tasks_worktrees_and_never_open_or_live_ones() {
    let start = chrono::Utc::now();
    let server = TestServer::start_args(&["--test-clock", &iso(start)]).await;
    let cid = s(&server.company("Sweep").await["id"]).to_string();
    let (repo, pid) = project_on_repository(&server, &cid).await;
    // Runs of "Hold" wait for the gate: its run is live while the clock moves.
    let gate = server.data_dir.join("gate");
    let script = format!(
        "echo \"$PAPERCLIP_TASK_ID\" > mine.txt\n\
         case \"$PAPERCLIP_TASK_ID\" in {hold}) ;; *) exit 0 ;; esac\n\
         i=0; while [ ! -e '{g}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n",
        g = gate.display(),
        hold = "HOLD_ID"
    );
    let mut tasks = Vec::new();
    let agent = server
        .script_agent(&cid, "Coder", "true\n", json!({}))
        .await;
    let aid = s(&agent["id"]).to_string();
    server
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "runtimeConfig": { "heartbeat": { "maxConcurrentRuns": 3 } } }),
        )
        .await;
    for title in ["Done long ago", "Still open", "Hold"] {
        let issue = server
            .issue(
                &cid,
                json!({ "title": title, "status": "todo", "projectId": pid }),
            )
            .await;
        tasks.push(issue);
    }
    let hold_id = s(&tasks[2]["id"]).to_string();
    let script_path = server.data_dir.join("sweep.sh");
    std::fs::write(&script_path, script.replace("HOLD_ID", &hold_id)).unwrap();
    server
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "adapterConfig": { "command": "sh", "args": [script_path.to_str().unwrap()] } }),
        )
        .await;
    for task in &tasks {
        server
            .ok_patch(
                &format!("/api/issues/{}", s(&task["id"])),
                json!({ "assigneeAgentId": aid }),
            )
            .await;
    }
    // Two runs end; the third holds.
    server
        .wait_for(
            &format!("/api/companies/{cid}/execution-workspaces"),
            60,
            |l| l.as_array().is_some_and(|l| l.len() == 3),
        )
        .await;
    server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            60,
            |runs| {
                runs.as_array().is_some_and(|r| {
                    r.iter().filter(|run| run["status"] == "succeeded").count() == 2
                        && r.iter().any(|run| run["status"] == "running")
                })
            },
        )
        .await;
    let done = s(&tasks[0]["id"]).to_string();
    let open = s(&tasks[1]["id"]).to_string();
    for tid in [&done, &hold_id] {
        for status in ["in_progress", "done"] {
            server
                .ok_patch(&format!("/api/issues/{tid}"), json!({ "status": status }))
                .await;
        }
    }
    let done_ws = workspace_of(&server, &cid, &done).await;
    let open_ws = workspace_of(&server, &cid, &open).await;
    let hold_ws = workspace_of(&server, &cid, &hold_id).await;

    // Six days on: within the retention, nothing goes.
    let swept = set_clock(&server, start + chrono::Duration::days(6)).await;
    assert_eq!(swept["closedWorkspaces"], 0, "{swept}");
    // Eight days on: the done task's worktree goes, the open task's and the
    // live run's stay.
    let swept = set_clock(&server, start + chrono::Duration::days(8)).await;
    assert_eq!(swept["closedWorkspaces"], 1, "{swept}");
    assert!(!Path::new(s(&done_ws["cwd"])).exists());
    assert!(Path::new(s(&open_ws["cwd"])).is_dir());
    assert!(
        Path::new(s(&hold_ws["cwd"])).is_dir(),
        "never under a live run"
    );
    let closed = server
        .ok_get(&format!("/api/execution-workspaces/{}", s(&done_ws["id"])))
        .await;
    assert_eq!(closed["status"], "archived", "{closed}");
    // Idempotent: another pass at the same time closes nothing more.
    let swept = set_clock(&server, start + chrono::Duration::days(8)).await;
    assert_eq!(swept["closedWorkspaces"], 0, "{swept}");

    // Once the held run ends, the next pass takes its worktree too.
    std::fs::write(&gate, "").unwrap();
    runs_ended(&server, &cid, &aid, 3).await;
    let swept = set_clock(&server, start + chrono::Duration::days(9)).await;
    assert_eq!(swept["closedWorkspaces"], 1, "{swept}");
    assert!(!Path::new(s(&hold_ws["cwd"])).exists());
    assert!(Path::new(s(&open_ws["cwd"])).is_dir());
    let listed = git(&repo, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        listed.matches("worktree ").count(),
        2,
        "main + the open task: {listed}"
    );
    let actions = server.actions(&cid).await;
    assert_eq!(
        actions
            .iter()
            .filter(|a| *a == "execution_workspace.archived")
            .count(),
        2,
        "{actions:?}"
    );
}

async fn set_clock(server: &TestServer, at: chrono::DateTime<chrono::Utc>) -> Value {
    server
        .ok_post("/api/instance/test-clock", json!({ "now": iso(at) }))
        .await
}

#[tokio::test]
async fn past_the_disk_budget_a_new_worktree_is_refused_with_the_reason() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Budget").await["id"]).to_string();
    let (_repo, pid) = project_on_repository(&server, &cid).await;
    // Out-of-range and zero budgets are refused with the field named.
    for bad in [json!(0), json!(-1), json!(u64::MAX)] {
        let (status, body) = server
            .patch(
                &format!("/api/companies/{cid}"),
                json!({ "workspaceDiskBudgetMb": bad }),
            )
            .await;
        assert!(status == 400 || status == 422, "{bad}: {status} {body}");
        assert!(body.to_string().contains("workspaceDiskBudgetMb"), "{body}");
    }
    let company = server
        .ok_patch(
            &format!("/api/companies/{cid}"),
            json!({ "workspaceDiskBudgetMb": 1 }),
        )
        .await;
    assert_eq!(company["workspaceDiskBudgetMb"], 1);
    // The first task's run writes 2 MB: past the 1 MiB budget afterwards.
    let script = "head -c 2000000 /dev/zero > big.bin\n";
    let agent = server.script_agent(&cid, "Coder", script, json!({})).await;
    let aid = s(&agent["id"]).to_string();
    let first = server
        .issue(
            &cid,
            json!({ "title": "Big", "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
        )
        .await;
    let run = runs_ended(&server, &cid, &aid, 1).await.remove(0);
    assert_eq!(run["status"], "succeeded", "{run}");
    let overview = server
        .ok_get(&format!("/api/companies/{cid}/workspace-overview"))
        .await;
    assert!(
        overview["diskBytes"].as_u64().unwrap() >= 2_000_000,
        "{overview}"
    );
    // The first task goes on in its worktree; a second task gets none.
    let again = server
        .wake(
            &aid,
            json!({ "reason": "again", "issueId": s(&first["id"]) }),
        )
        .await;
    assert_eq!(ended(&server, s(&again["id"])).await["status"], "succeeded");
    server
        .issue(
            &cid,
            json!({ "title": "Small", "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
        )
        .await;
    let runs = runs_ended(&server, &cid, &aid, 3).await;
    let refused = runs.last().unwrap();
    assert_eq!(refused["status"], "failed", "{refused}");
    let error = s(&refused["error"]);
    assert!(
        error.contains("disk budget") && error.contains("workspaceDiskBudgetMb"),
        "{error}"
    );
}

/// Pids of `root`'s descendants (children first found, then theirs).
fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The fields after the command's closing parenthesis: state, ppid.
        let after = &stat[stat.rfind(')').unwrap_or(0) + 1..];
        if let Some(ppid) = after
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok())
        {
            parent_of.push((pid, ppid));
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

#[tokio::test]
async fn a_kill_during_worktree_creation_is_repaired_after_restart() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Crash").await["id"]).to_string();
    let (repo, pid) = project_on_repository(&server, &cid).await;
    // A smudge filter that hangs makes `git worktree add` stop mid-checkout.
    let marker = server.data_dir.join("checking-out");
    std::fs::write(repo.join(".gitattributes"), "slow.txt filter=slow\n").unwrap();
    std::fs::write(repo.join("slow.txt"), "slow\n").unwrap();
    git(&repo, &["add", ".gitattributes", "slow.txt"]);
    git(&repo, &["commit", "-q", "-m", "slow file"]);
    let smudge = format!("touch '{}'; sleep 600", marker.display());
    git(&repo, &["config", "filter.slow.smudge", &smudge]);
    let agent = server
        .script_agent(&cid, "Coder", "echo ok > ok.txt\n", json!({}))
        .await;
    let aid = s(&agent["id"]).to_string();
    let task = server
        .issue(&cid, json!({ "title": "Survive", "status": "todo", "projectId": pid, "assigneeAgentId": aid }))
        .await;
    let tid = s(&task["id"]).to_string();
    common::until(30, "the checkout to start", async || {
        marker.exists().then_some(())
    })
    .await;
    // A crash of the whole service: the server and the git it started.
    let children = descendants(server.pid());
    let (data_dir, database_url) = server.stop_keeping_data();
    for child in children {
        let _ = std::process::Command::new("kill")
            .args(["-9", &child.to_string()])
            .status();
    }
    git(&repo, &["config", "--unset", "filter.slow.smudge"]);
    let server = TestServer::start_with(data_dir, database_url, &[]).await;
    // Recovery settles the interrupted run; a wake (or its retry) runs the
    // task again.
    server
        .wake(&aid, json!({ "reason": "after the crash", "issueId": tid }))
        .await;
    let runs = server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            60,
            |runs| {
                runs.as_array()
                    .is_some_and(|r| r.iter().any(|run| run["status"] == "succeeded"))
            },
        )
        .await;
    let run = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|run| run["status"] == "succeeded")
        .unwrap()
        .clone();
    let ws = workspace_of(&server, &cid, &tid).await;
    let dir = Path::new(s(&ws["cwd"]));
    assert!(dir.join("ok.txt").is_file() && dir.join("slow.txt").is_file());
    let ops = server
        .ok_get(&format!(
            "/api/heartbeat-runs/{}/workspace-operations",
            s(&run["id"])
        ))
        .await;
    assert!(
        ops[0]["metadata"]["repairs"].as_u64().unwrap() >= 1,
        "{ops}"
    );
    git(&repo, &["fsck", "--no-progress"]);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    let listed = git(&repo, &["worktree", "list", "--porcelain"]);
    assert!(!listed.contains("locked"), "nothing left locked: {listed}");
    assert_eq!(listed.matches("worktree ").count(), 2, "{listed}");
}
