//! A project's codebase declared by URL: cloned into the data dir, its
//! tasks' worktrees made from the remote's latest (fetched for each new
//! task), credentials kept out of what is shown, and no transport that
//! would run a command.

use std::path::Path;

use serde_json::json;

use super::lifecycle::{runs_ended, workspace_of};
use super::{git, repository, s};
use crate::common::TestServer;

#[tokio::test]
async fn a_repository_declared_by_url_is_cloned_and_new_tasks_start_from_its_latest() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Remote").await["id"]).to_string();
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App" }),
        )
        .await;
    let pid = s(&project["id"]).to_string();
    let path = format!("/api/projects/{pid}/workspaces");
    let origin = repository();
    let bare = origin.with_extension("git");
    git(
        &origin,
        &[
            "clone",
            "-q",
            "--bare",
            origin.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    git(
        &origin,
        &["remote", "add", "upstream", bare.to_str().unwrap()],
    );

    // Refused, saying why, leaving nothing behind: a command transport, a
    // remote that is not there (whose credentials never show).
    let marker = server.data_dir.join("pwned");
    let refusals = [
        format!("ext::sh -c touch% {}", marker.display()),
        "--upload-pack=touch /tmp/x".to_string(),
        "https://me:hunter2@127.0.0.1:9/x.git".to_string(),
    ];
    for url in &refusals {
        let (status, body) = server.post(&path, json!({ "repoUrl": url })).await;
        assert_eq!(status, 422, "{url}: {body}");
        assert!(!body.to_string().contains("hunter2"), "{body}");
    }
    assert!(!marker.exists());
    assert_eq!(server.ok_get(&path).await, json!([]));
    let repos = server.data_dir.join("repos");
    assert!(!repos.exists() || std::fs::read_dir(&repos).unwrap().next().is_none());

    let url = format!("file://{}", bare.display());
    let made = server.ok_post(&path, json!({ "repoUrl": url })).await;
    assert_eq!(made["sourceType"], "git_repo", "{made}");
    assert_eq!(made["repoUrl"], url.as_str());
    let clone = s(&made["cwd"]).to_string();
    assert!(
        clone.starts_with(server.data_dir.canonicalize().unwrap().to_str().unwrap()),
        "{clone}"
    );

    let agent = server
        .script_agent(&cid, "Coder", "ls > seen.txt\n", json!({}))
        .await;
    let aid = s(&agent["id"]).to_string();
    let first = server
        .issue(
            &cid,
            json!({ "title": "One", "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
        )
        .await;
    let run = runs_ended(&server, &cid, &aid, 1).await.remove(0);
    assert_eq!(run["status"], "succeeded", "{run}");
    let ws = workspace_of(&server, &cid, s(&first["id"])).await;
    assert_eq!(ws["baseRef"], "origin/main", "{ws}");
    assert!(Path::new(s(&ws["cwd"])).join("README.md").is_file());

    // The remote moves on; the next task's worktree has its latest.
    std::fs::write(origin.join("NEW.md"), "new\n").unwrap();
    git(&origin, &["add", "NEW.md"]);
    git(&origin, &["commit", "-q", "-m", "new"]);
    git(&origin, &["push", "-q", "upstream", "main"]);
    let second = server
        .issue(
            &cid,
            json!({ "title": "Two", "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
        )
        .await;
    let runs = runs_ended(&server, &cid, &aid, 2).await;
    assert_eq!(runs[1]["status"], "succeeded", "{}", runs[1]);
    let ws2 = workspace_of(&server, &cid, s(&second["id"])).await;
    let seen = std::fs::read_to_string(Path::new(s(&ws2["cwd"])).join("seen.txt")).unwrap();
    assert!(seen.contains("NEW.md"), "{seen}");
    // The remote itself got no branch of ours, and the clone's checkout
    // stays clean.
    let branches = git(&bare, &["branch", "--list"]);
    assert_eq!(branches.trim(), "* main", "{branches}");
    assert_eq!(git(Path::new(&clone), &["status", "--porcelain"]), "");
}
