//! A real `claude -p`, pointed at the scripted provider, configured with
//! Paperclip's MCP server: first the stdio bridge (`paperclip mcp`), then the
//! HTTP endpoint. Scripted to list tasks, create one and comment on it; the
//! task and its comment exist, written by the local board (the person).

use std::process::Stdio;
use std::time::Duration;

use paperclip_scripted_provider::{ScriptedProvider, Turn};
use serde_json::{json, Value};

use crate::clis::Cli;
use crate::common::TestServer;

fn tool(name: &str, input: Value) -> Turn {
    Turn::Tool {
        name: format!("mcp__paperclip__{name}"),
        input,
    }
}

/// The turns of one session: list, create `title`, comment on `identifier`.
fn script(title: &str, identifier: &str, comment: &str) -> Vec<Turn> {
    vec![
        tool("list_tasks", json!({ "limit": 10 })),
        tool("create_task", json!({ "title": title, "priority": "high" })),
        tool(
            "add_comment",
            json!({ "task": identifier, "body": comment }),
        ),
        Turn::Answer {
            text: "Done.".into(),
        },
    ]
}

async fn run_claude(cli: &Cli, provider: &ScriptedProvider, mcp: Value) -> String {
    let home = cli.home.display().to_string();
    let config = cli.home.join("mcp.json");
    std::fs::write(&config, mcp.to_string()).unwrap();
    let tools = ["list_tasks", "create_task", "add_comment"]
        .map(|t| format!("mcp__paperclip__{t}"))
        .join(",");
    let child = tokio::process::Command::new("claude")
        .args([
            "-p",
            "Track the launch in Paperclip.",
            "--model",
            "claude-sonnet-4-5",
        ])
        .arg("--mcp-config")
        .arg(&config)
        .args(["--strict-mcp-config", "--allowedTools", &tools])
        .env("HOME", &home)
        .env("CLAUDE_CONFIG_DIR", format!("{home}/.claude"))
        .env("ANTHROPIC_BASE_URL", provider.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("MCP_TIMEOUT", "20000")
        .env_remove("PAPERCLIP_API_KEY")
        .current_dir(&cli.home)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("claude starts");
    let out = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
        .await
        .expect("claude finishes within 90 s")
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "claude failed: {text}");
    text
}

/// The comment on `identifier` with `body`, written by the local board.
async fn check(s: &TestServer, cid: &str, identifier: &str, title: &str, body: &str) {
    let task = s.ok_get(&format!("/api/issues/{identifier}")).await;
    assert_eq!(task["title"], title, "{task}");
    assert_eq!(task["createdByUserId"], "local-board", "{task}");
    let id = task["id"].as_str().unwrap();
    let comments = s.ok_get(&format!("/api/issues/{id}/comments")).await;
    let comment = comments
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["body"] == body)
        .unwrap_or_else(|| panic!("the comment on {identifier}: {comments}"));
    assert_eq!(comment["authorUserId"], "local-board", "{comment}");
    let log = s
        .ok_get(&format!("/api/companies/{cid}/activity?limit=200"))
        .await;
    for action in ["issue.created", "issue.comment_added"] {
        assert!(
            log.as_array().unwrap().iter().any(|a| a["action"] == action
                && a["entityId"] == id
                && a["actorType"] == "user"
                && a["actorId"] == "local-board"),
            "{action} on {identifier} by the board: {log}"
        );
    }
}

#[tokio::test]
async fn claude_lists_creates_and_comments_through_paperclip_mcp() {
    let Some(cli) = Cli::find("claude_local") else {
        return;
    };
    let s = TestServer::start().await;
    let company = s.company("Acme").await;
    let cid = company["id"].as_str().unwrap();

    // (a) The stdio bridge: claude starts `paperclip mcp` as the server.
    let provider = ScriptedProvider::start(script("Launch checklist", "ACM-1", "Via stdio")).await;
    let bridge = json!({ "mcpServers": { "paperclip": {
        "command": env!("CARGO_BIN_EXE_paperclip"),
        "args": ["mcp", "--api-base", s.base],
    } } });
    run_claude(&cli, &provider, bridge).await;
    assert_eq!(provider.remaining(), 0, "every scripted turn was used");
    check(&s, cid, "ACM-1", "Launch checklist", "Via stdio").await;
    // The tool's result went back to the model (Claude Code sends it the
    // structured content).
    let sent: Vec<String> = provider
        .turn_requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    assert!(
        sent.iter()
            .any(|b| b.contains("tool_result") && b.contains(r#"\"identifier\":\"ACM-1\""#)),
        "the create_task result reached the model"
    );

    // (b) The HTTP endpoint, named directly.
    let provider = ScriptedProvider::start(script("Press kit", "ACM-2", "Via HTTP")).await;
    let http = json!({ "mcpServers": { "paperclip": {
        "type": "http", "url": format!("{}/api/mcp", s.base),
    } } });
    run_claude(&cli, &provider, http).await;
    assert_eq!(provider.remaining(), 0, "every scripted turn was used");
    check(&s, cid, "ACM-2", "Press kit", "Via HTTP").await;
}
