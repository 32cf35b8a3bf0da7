//! Execution workspaces end to end with real git: a project declares a
//! repository, each task of it runs in its own worktree on its own branch,
//! the main checkout is untouched, and what each run changed is readable
//! through the API.

use crate::common;

mod clone;
mod lifecycle;
mod retention;
mod setup;

use std::path::Path;

use common::TestServer;
use serde_json::json;

use common::repos::{git, project_on_repository, repository, str_of as s};

#[tokio::test]
async fn a_declared_path_must_be_an_absolute_git_repository() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Paths").await["id"]).to_string();
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App" }),
        )
        .await;
    let path = format!("/api/projects/{}/workspaces", s(&project["id"]));
    let plain = std::env::temp_dir().join(format!("paperclip-plain-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&plain).unwrap();
    let bad = [
        json!({ "cwd": "relative/repo" }),
        json!({ "cwd": "/no/such/paperclip/repo" }),
        json!({ "cwd": plain.to_str().unwrap() }),
        json!({}),
        json!({ "sourceType": "git_repo", "repoUrl": "file:///no/such/paperclip/repo.git" }),
        json!({ "sourceType": "remote_managed", "cwd": "/tmp" }),
    ];
    for body in bad {
        let (status, answer) = server.post(&path, body.clone()).await;
        assert_eq!(status, 422, "{body} -> {answer}");
        assert!(!s(&answer["error"]).is_empty(), "{answer}");
    }
    assert_eq!(server.ok_get(&path).await, json!([]));
    let repo = repository();
    let inner = repo.join("src");
    std::fs::create_dir_all(&inner).unwrap();
    // A folder inside the repository declares the repository itself.
    let made = server
        .ok_post(
            &path,
            json!({ "cwd": inner.to_str().unwrap(), "name": "app" }),
        )
        .await;
    assert_eq!(made["cwd"], repo.to_str().unwrap());
    assert_eq!(made["sourceType"], "local_path");
    assert_eq!(made["isPrimary"], true);
    let wid = s(&made["id"]).to_string();
    let changed = server
        .ok_patch(&format!("{path}/{wid}"), json!({ "defaultRef": "main" }))
        .await;
    assert_eq!(changed["defaultRef"], "main");
    let other = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Other" }),
        )
        .await;
    let (status, _) = server
        .request(
            "DELETE",
            &format!("/api/projects/{}/workspaces/{wid}", s(&other["id"])),
            None,
        )
        .await;
    assert_eq!(
        status, 404,
        "a workspace is reached through its own project only"
    );
    let actions = server.actions(&cid).await;
    assert!(
        actions.contains(&"project.workspace_created".to_string()),
        "{actions:?}"
    );
    assert!(
        actions.contains(&"project.workspace_updated".to_string()),
        "{actions:?}"
    );
    let gone = server
        .request("DELETE", &format!("{path}/{wid}"), None)
        .await;
    assert_eq!(gone.0, 200, "{}", gone.1);
    assert_eq!(server.ok_get(&path).await, json!([]));
}

#[tokio::test]
async fn each_task_runs_in_its_own_worktree_and_its_changes_are_readable() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Worktrees").await["id"]).to_string();
    let (repo, pid) = project_on_repository(&server, &cid).await;
    // The agent names its cwd and writes a file named after its task there;
    // then it waits (bounded) until the other task's run has started too
    // and says whether it did, so the test knows the two ran side by side.
    let barrier = server.data_dir.join("barrier");
    std::fs::create_dir_all(&barrier).unwrap();
    let script = format!(
        "pwd\necho \"ws=$PAPERCLIP_WORKSPACE_CWD\"\n\
         echo \"made by $PAPERCLIP_TASK_ID\" > \"task-$PAPERCLIP_TASK_ID.txt\"\n\
         touch '{b}'/\"$PAPERCLIP_TASK_ID\"\n\
         i=0; while [ \"$(ls '{b}' | wc -l)\" -lt 2 ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\n\
         [ \"$(ls '{b}' | wc -l)\" -ge 2 ] && echo together\n",
        b = barrier.display()
    );
    let script = script.as_str();
    let agent = server
        .script_agent(
            &cid,
            "Coder",
            script,
            json!({ "cwd": repo.to_str().unwrap() }),
        )
        .await;
    let aid = s(&agent["id"]).to_string();
    server
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "runtimeConfig": { "heartbeat": { "maxConcurrentRuns": 2 } } }),
        )
        .await;
    let mut tasks = Vec::new();
    for title in ["Add the pricing page", "Fix the footer"] {
        let issue = server
            .issue(
                &cid,
                json!({ "title": title, "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
            )
            .await;
        tasks.push(issue);
    }
    let runs = server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            60,
            |runs| {
                runs.as_array().is_some_and(|r| {
                    r.len() >= 2
                        && r.iter()
                            .all(|run| run["status"] != "queued" && run["status"] != "running")
                })
            },
        )
        .await;
    let workspaces = server
        .ok_get(&format!("/api/companies/{cid}/execution-workspaces"))
        .await;
    assert_eq!(workspaces.as_array().unwrap().len(), 2, "{workspaces}");
    let mut dirs = Vec::new();
    for task in &tasks {
        let tid = s(&task["id"]);
        let run = runs
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["issueId"] == tid)
            .unwrap_or_else(|| panic!("no run of {tid}: {runs}"));
        assert_eq!(run["status"], "succeeded", "{run}");
        let ws = workspaces
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["sourceIssueId"] == tid)
            .unwrap_or_else(|| panic!("no workspace of {tid}: {workspaces}"));
        let dir = s(&ws["cwd"]).to_string();
        assert!(
            !dir.starts_with(repo.to_str().unwrap()),
            "worktree outside the repo: {dir}"
        );
        assert_eq!(ws["providerType"], "git_worktree");
        assert_eq!(ws["mode"], "isolated_workspace");
        assert_eq!(ws["baseRef"], "main");
        let identifier = s(&task["identifier"]);
        assert!(s(&ws["branchName"]).starts_with(identifier), "{ws}");
        // The run worked there, and was told so, whatever its own config said.
        let out = s(&run["stdoutExcerpt"]);
        assert!(out.starts_with(&format!("{dir}\nws={dir}\n")), "{out}");
        assert!(out.contains("together"), "the two runs overlapped: {out}");
        let one = server
            .ok_get(&format!("/api/execution-workspaces/{}", s(&ws["id"])))
            .await;
        assert_eq!(one["id"], ws["id"]);
        // What the run changed: the one file it added.
        let changes = server
            .ok_get(&format!(
                "/api/heartbeat-runs/{}/workspace-changes",
                s(&run["id"])
            ))
            .await;
        let file = format!("task-{tid}.txt");
        assert_eq!(changes["filesChanged"], 1, "{changes}");
        assert_eq!(changes["insertions"], 1, "{changes}");
        assert_eq!(changes["files"][0]["path"], file.as_str());
        assert_eq!(changes["files"][0]["kind"], "added");
        assert!(
            s(&changes["patch"]).contains(&format!("+made by {tid}")),
            "{changes}"
        );
        assert_eq!(changes["truncated"], false);
        let listed = server
            .ok_get(&format!(
                "/api/execution-workspaces/{}/changes",
                s(&ws["id"])
            ))
            .await;
        assert_eq!(listed[0]["runId"], run["id"]);
        assert!(Path::new(&dir).join(&file).is_file());
        dirs.push((dir, file));
    }
    assert_ne!(dirs[0].0, dirs[1].0, "two tasks never share a worktree");
    assert!(
        !Path::new(&dirs[0].0).join(&dirs[1].1).exists(),
        "task 1 sees task 2's file"
    );
    assert!(
        !Path::new(&dirs[1].0).join(&dirs[0].1).exists(),
        "task 2 sees task 1's file"
    );
    assert_eq!(
        git(&repo, &["status", "--porcelain"]),
        "",
        "the main checkout is untouched"
    );
    assert_eq!(
        git(&repo, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    // The task's next run works in the same worktree, where its file still is.
    let tid = s(&tasks[0]["id"]);
    let again = server
        .wake(&aid, json!({ "reason": "again", "issueId": tid }))
        .await;
    let again = server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", s(&again["id"])),
            30,
            |r| r["status"] != "queued" && r["status"] != "running",
        )
        .await;
    assert_eq!(again["status"], "succeeded", "{again}");
    assert!(s(&again["stdoutExcerpt"]).starts_with(&format!("{}\n", dirs[0].0)));
    let after = server
        .ok_get(&format!(
            "/api/companies/{cid}/execution-workspaces?issueId={tid}"
        ))
        .await;
    assert_eq!(after.as_array().unwrap().len(), 1, "{after}");
    assert_eq!(after[0]["cwd"], dirs[0].0.as_str());
    assert!(Path::new(&dirs[0].0).join(&dirs[0].1).is_file());
}

#[tokio::test]
async fn a_run_whose_repository_is_gone_fails_saying_why() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Gone").await["id"]).to_string();
    let (repo, pid) = project_on_repository(&server, &cid).await;
    std::fs::remove_dir_all(&repo).unwrap();
    let agent = server.script_agent(&cid, "Coder", "pwd\n", json!({})).await;
    let aid = s(&agent["id"]).to_string();
    server
        .issue(
            &cid,
            json!({ "title": "Anything", "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
        )
        .await;
    let runs = server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            30,
            |runs| {
                runs.as_array()
                    .is_some_and(|r| r.len() == 1 && r[0]["status"] == "failed")
            },
        )
        .await;
    let error = s(&runs[0]["error"]);
    assert!(error.contains("task's workspace"), "{error}");
    assert_eq!(runs[0]["errorCode"], "run_setup_failed", "{}", runs[0]);
    let none = server
        .ok_get(&format!("/api/companies/{cid}/execution-workspaces"))
        .await;
    assert_eq!(none, json!([]));
}

#[tokio::test]
async fn unknown_workspaces_and_changes_are_not_found() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Mine").await["id"]).to_string();
    let repo = repository();
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App" }),
        )
        .await;
    server
        .ok_post(
            &format!("/api/projects/{}/workspaces", s(&project["id"])),
            json!({ "cwd": repo.to_str().unwrap() }),
        )
        .await;
    for id in ["00000000-0000-0000-0000-000000000000", "nope"] {
        let (status, _) = server.get(&format!("/api/execution-workspaces/{id}")).await;
        assert_eq!(status, 404, "{id}");
        let (status, _) = server
            .get(&format!("/api/execution-workspaces/{id}/changes"))
            .await;
        assert_eq!(status, 404, "{id}");
        let (status, _) = server
            .get(&format!("/api/heartbeat-runs/{id}/workspace-changes"))
            .await;
        assert_eq!(status, 404, "{id}");
        let (status, _) = server.get(&format!("/api/projects/{id}/workspaces")).await;
        assert_eq!(status, 404, "{id}");
    }
    let (status, list) = server
        .get(&format!(
            "/api/companies/{cid}/execution-workspaces?projectId=nope&issueId=nope"
        ))
        .await;
    assert_eq!((status.as_u16(), list), (200, json!([])));
}
