//! Reopening from every client: a coding CLI's session resumed in the same
//! worktree, our CLI, upstream's `paperclipai`, and the board in a browser.

use super::{ended_runs, project_on_repository, s};
use crate::common;

use std::time::Duration;

use common::cli::{cli, context_file, ok, text};
use common::task_worker::{CHECKOUT, MARK_DONE, SCRIPT_START};
use common::upstream::{upstream_cli, Cli};
use common::TestServer;
use serde_json::{json, Value};

/// A stand-in for `claude`: it does the task (a line in `notes.txt` where it
/// works), logs its arguments and where it ran, and reports a session.
fn fake_claude(log: &std::path::Path) -> String {
    let log = log.display();
    format!(
        "#!/bin/sh\ncat > /dev/null\n{SCRIPT_START}echo \"args: $*\" >> '{log}'\n\
         echo \"cwd: $(pwd)\" >> '{log}'\n{CHECKOUT}\necho run >> notes.txt\n\
         echo \"lines: $(wc -l < notes.txt | tr -d ' ')\" >> '{log}'\n{MARK_DONE}\n\
         echo '{{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"sess-reopen\",\"model\":\"claude-sonnet-4-5\",\"tools\":[]}}'\n\
         echo '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"Done.\",\"session_id\":\"sess-reopen\",\"num_turns\":1,\"usage\":{{\"input_tokens\":1,\"output_tokens\":1}}}}'\n"
    )
}

#[tokio::test]
async fn a_reopened_task_resumes_its_agents_session_in_the_same_worktree() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Sessions").await["id"]).to_string();
    let pid = project_on_repository(&server, &cid).await;
    let log = server.data_dir.join("claude.log");
    let script = server.data_dir.join("fake-claude");
    std::fs::write(&script, fake_claude(&log)).unwrap();
    std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    let agent = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Coder", "adapterType": "claude_local",
                    "adapterConfig": { "command": script.to_str().unwrap() } }),
        )
        .await;
    let aid = s(&agent["id"]).to_string();
    let task = server
        .issue(
            &cid,
            json!({ "title": "Add a FAQ", "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
        )
        .await;
    let tid = s(&task["id"]).to_string();
    let runs = ended_runs(&server, &cid, &aid, 1).await;
    assert_eq!(runs[0]["status"], "succeeded", "{}", runs[0]);
    assert_eq!(
        server.ok_get(&format!("/api/issues/{tid}")).await["status"],
        "done"
    );
    let sessions = server
        .ok_get(&format!("/api/agents/{aid}/task-sessions"))
        .await;
    assert!(
        sessions.to_string().contains("sess-reopen"),
        "the session is kept while the task is done: {sessions}"
    );

    let posted = server
        .ok_post(
            &format!("/api/issues/{tid}/comments"),
            json!({ "body": "Also answer the pricing question" }),
        )
        .await;
    assert_eq!(posted["reopened"], true, "{posted}");
    let runs = ended_runs(&server, &cid, &aid, 2).await;
    assert_eq!(runs[1]["status"], "succeeded", "{}", runs[1]);
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let args: Vec<&String> = lines.iter().filter(|l| l.starts_with("args: ")).collect();
    let cwds: Vec<&String> = lines.iter().filter(|l| l.starts_with("cwd: ")).collect();
    assert_eq!(args.len(), 2, "{lines:?}");
    assert!(!args[0].contains("--resume"), "{lines:?}");
    assert!(
        args[1].contains("--resume sess-reopen"),
        "the reopened task's run resumes the session: {lines:?}"
    );
    assert_eq!(cwds[0], cwds[1], "the same worktree: {lines:?}");
    let workspaces = server
        .ok_get(&format!(
            "/api/companies/{cid}/execution-workspaces?issueId={tid}"
        ))
        .await;
    assert_eq!(format!("cwd: {}", s(&workspaces[0]["cwd"])), *cwds[0]);
    assert_eq!(
        lines.last().map(String::as_str),
        Some("lines: 2"),
        "{lines:?}"
    );
}

#[tokio::test]
async fn our_cli_reopens_a_task_and_says_when_a_note_wakes_nobody() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Cli Co").await["id"]).to_string();
    let ctx = context_file(&server);
    let agent = server.agent(&cid, "Builder", None).await;
    let done = server
        .issue(
            &cid,
            json!({ "title": "Ship it", "status": "done", "assigneeAgentId": agent["id"] }),
        )
        .await;
    let ident = s(&done["identifier"]).to_string();
    let c = ["--company", cid.as_str()];

    let out = ok(
        &server.base,
        &ctx,
        &[
            &c[..],
            &["issue", "comment", &ident, "Noted", "--no-reopen"],
        ]
        .concat(),
    );
    assert!(
        out.contains(&format!("{ident} is done, so Builder was not woken")),
        "{out}"
    );
    assert_eq!(
        server.ok_get(&format!("/api/issues/{ident}")).await["status"],
        "done"
    );

    let out = ok(
        &server.base,
        &ctx,
        &[
            &c[..],
            &["issue", "reopen", &ident, "--comment", "Also the FAQ"],
        ]
        .concat(),
    );
    assert!(out.contains(&format!("Reopened {ident} (todo)")), "{out}");
    let stored = server.ok_get(&format!("/api/issues/{ident}")).await;
    assert_eq!(stored["status"], "todo");
    let comments = server
        .ok_get(&format!("/api/issues/{ident}/comments"))
        .await;
    assert_eq!(comments[0]["body"], "Also the FAQ");

    // An open task has nothing to reopen, and the CLI says so.
    let out = cli(
        &server.base,
        &ctx,
        &[&c[..], &["issue", "reopen", &ident]].concat(),
    );
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("not done or cancelled"), "{err}");
}

#[tokio::test]
async fn the_upstream_cli_reopens_with_a_comment_and_with_a_status() {
    let Some(path) = upstream_cli() else { return };
    let server = TestServer::start().await;
    let cli = Cli::new(path, &server);
    let cid = s(&server.company("Upstream Reopen").await["id"]).to_string();
    let done = server
        .issue(
            &cid,
            json!({ "title": "Finished", "status": "done", "assigneeUserId": "local-board" }),
        )
        .await;
    let ident = s(&done["identifier"]).to_string();
    let path = format!("/api/issues/{ident}");

    let posted = cli
        .ok(&[
            "issue",
            "comment",
            &ident,
            "--body",
            "One more thing",
            "--reopen",
            "--json",
        ])
        .await
        .json();
    assert_eq!(posted["body"], "One more thing", "{posted}");
    assert_eq!(posted["reopened"], true, "{posted}");
    assert_eq!(server.ok_get(&path).await["status"], "todo");

    for status in ["in_progress", "done"] {
        server.ok_patch(&path, json!({ "status": status })).await;
    }
    let updated: Value = cli
        .ok(&["issue", "update", &ident, "--status", "todo", "--json"])
        .await
        .json();
    assert_eq!(updated["status"], "todo", "{updated}");
    server
        .ok_patch(&path, json!({ "status": "cancelled" }))
        .await;
    let resumed = cli
        .ok(&[
            "issue", "comment", &ident, "--body", "Back on", "--resume", "--json",
        ])
        .await
        .json();
    assert_eq!(resumed["reopenedFrom"], "cancelled", "{resumed}");
    assert_eq!(server.ok_get(&path).await["status"], "todo");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_reopens_a_done_task_in_the_browser() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    common::browser::run("reopen", &server.base, Duration::from_secs(150)).await;
}
