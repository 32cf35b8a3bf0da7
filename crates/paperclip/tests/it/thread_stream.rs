//! The task thread is where a person watches (issue 37): a live run's output
//! streams into its card, a coding CLI's run reads as a transcript, and every
//! run line says when it ran, for how long and what came of it in words:
//! what it changed, or "did nothing: …" from its liveness verdict, with a
//! person's @mention named as such (not "an automation").

use crate::clis::Cli;
use crate::common;

use std::time::Duration;

use common::repos::str_of as s;
use common::task_worker::{CHECKOUT, MARK_DONE, SCRIPT_START};
use common::{until, visible_text, TestServer};
use paperclip_scripted_provider::{ScriptedProvider, Turn};
use serde_json::{json, Value};

/// An agent that works its task when assigned (waiting on `gate` in the
/// middle, so a test can act while it runs) and does nothing otherwise.
fn worker(gate: &std::path::Path) -> String {
    format!(
        "{SCRIPT_START}[ \"$PAPERCLIP_WAKE_REASON\" = issue_assigned ] || {{ echo \"nothing to do for $PAPERCLIP_WAKE_REASON\"; exit 0; }}\n\
         {CHECKOUT}\necho working\nwhile [ ! -e '{}' ]; do sleep 0.1; done\n\
         curl -sSf -X POST \"$T/comments\" -H \"$H\" -H \"$R\" -H \"$J\" -d '{{\"body\":\"Shipped.\"}}' > /dev/null\n{MARK_DONE}\n",
        gate.display()
    )
}

async fn runs(server: &TestServer, cid: &str, aid: &str, n: usize) -> Vec<Value> {
    server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            60,
            |r| {
                r.as_array().is_some_and(|r| {
                    r.len() == n
                        && r.iter()
                            .all(|x| x["status"] != "queued" && x["status"] != "running")
                })
            },
        )
        .await;
    server.runs_of(cid, aid).await
}

#[tokio::test]
async fn run_lines_say_what_a_run_changed_or_that_it_did_nothing() {
    let server = TestServer::start().await;
    let company = server.company("Outcomes").await;
    let (cid, p) = (
        s(&company["id"]).to_string(),
        s(&company["issuePrefix"]).to_string(),
    );
    let gate = std::env::temp_dir().join(format!("thread-gate-{}", uuid::Uuid::new_v4().simple()));
    let agent = server
        .script_agent(&cid, "Builder", &worker(&gate), json!({}))
        .await;
    let (aid, key) = (s(&agent["id"]).to_string(), s(&agent["urlKey"]).to_string());
    let task = server
        .issue(
            &cid,
            json!({ "title": "Ship the FAQ", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let (tid, ident) = (
        s(&task["id"]).to_string(),
        s(&task["identifier"]).to_string(),
    );
    server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            30,
            |r| r[0]["status"] == "running",
        )
        .await;
    // A person's @mention while it works: the agent is woken again for it.
    server
        .ok_post(
            &format!("/api/issues/{tid}/comments"),
            json!({ "body": "@Builder please also add pricing" }),
        )
        .await;
    std::fs::write(&gate, "").unwrap();
    let list = runs(&server, &cid, &aid, 2).await;
    let _ = std::fs::remove_file(&gate);
    let (first, second) = (&list[0], &list[1]);
    assert_eq!(first["status"], "succeeded", "{first}");
    assert_eq!(second["wakeReason"], "issue_comment_mentioned", "{second}");
    assert_eq!(second["livenessState"], "completed", "{second}");

    let page = server.page(&format!("/{p}/tasks/{ident}")).await;
    let text = visible_text(&page);
    for said in [
        "moved it to done, posted a comment",
        "Woken: assigned a task",
        "did nothing: its task is done",
        "Woken by a person's @mention",
    ] {
        assert!(text.contains(said), "the task page lacks {said:?}: {text}");
    }
    assert!(!text.contains("an automation"), "{text}");
    assert!(
        text.matches("started ").count() >= 2 && text.contains(" · ran "),
        "every run line has its start and duration: {text}"
    );
    assert!(page.contains(r#"data-outcome="nothing""#) && page.contains(r#"data-outcome="did""#));

    // The run page shows the verdict; the agent's tables the outcome, not the wake code.
    let run_page = visible_text(
        &server
            .page(&format!("/{p}/agents/{key}/runs/{}", s(&second["id"])))
            .await,
    );
    assert!(
        run_page.contains("Liveness completed · Its task is done"),
        "{run_page}"
    );
    assert!(
        run_page.contains("did nothing: its task is done"),
        "{run_page}"
    );
    assert!(
        run_page.contains("Woken by a person's @mention"),
        "{run_page}"
    );
    for path in [
        format!("/{p}/agents/{key}"),
        format!("/{p}/agents/{key}/runs"),
    ] {
        let html = visible_text(&server.page(&path).await);
        // The runs table: from its header to its end.
        let table = html.split("Run Task Outcome").nth(1).expect("a runs table");
        let table = table.split("API keys").next().unwrap();
        assert!(
            table.contains("did nothing: its task is done"),
            "{path}: {table}"
        );
        assert!(
            table.contains("finished: its task is done"),
            "{path}: {table}"
        );
        assert!(!table.contains("issue_"), "{path}: {table}");
    }
}

/// The real `claude` CLI against the scripted provider: checks out,
/// comments (naming its task by UUID) and finishes with three shell calls,
/// reads a file that is not there, delegates to a subagent (which runs a
/// shell call), then answers naming its task by UUID.
async fn claude_on_a_task(server: &TestServer) -> Option<(Cli, ScriptedProvider)> {
    let cli = Cli::find("claude_local")?;
    let auth = r#"-H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'Content-Type: application/json'"#;
    let api = r#""$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID"#;
    let provider = ScriptedProvider::start(vec![
        Turn::Bash {
            command: format!(
                r#"curl -sSf -X POST {api}/checkout" {auth} -d "{{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\"]}}""#
            ),
        },
        Turn::Bash {
            command: format!(r#"curl -sSf -X POST {api}/comments" {auth} -d "{{\"body\":\"Changelog written for $PAPERCLIP_TASK_ID.\"}}""#),
        },
        Turn::Bash { command: format!(r#"curl -sSf -X PATCH {api}" {auth} -d '{{"status":"done"}}'"#) },
        // A failed call: its row says so with the error's first line.
        Turn::Tool {
            name: "Read".into(),
            input: json!({ "file_path": "/nonexistent-paperclip-dir/NOTES.md" }),
        },
        // A subagent: its own shell call and answer nest under the call.
        Turn::Tool {
            name: "Agent".into(),
            input: json!({ "description": "Check the notes", "prompt": "Check the notes.", "subagent_type": "general-purpose", "run_in_background": false }),
        },
        Turn::Bash { command: "echo subagent checked".into() },
        Turn::Answer { text: "The notes are missing.".into() },
    ])
    .await;
    let company = server.company("Transcript Co").await;
    let cid = s(&company["id"]).to_string();
    let agent = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Coder", "adapterType": "claude_local", "adapterConfig": cli.config(&provider) }),
        )
        .await;
    let task = server
        .issue(&cid, json!({ "title": "Write the changelog", "status": "todo", "assigneeAgentId": agent["id"] }))
        .await;
    // The answer names the task by its UUID (known only now; the CLI is
    // still starting): the page shows its identifier.
    provider.push([Turn::Answer {
        text: format!(
            "Wrote the **changelog** for {} and marked the task done.",
            s(&task["id"])
        ),
    }]);
    Some((cli, provider))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_thread_streams_a_run_and_shows_a_cli_transcript_in_the_browser() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    // The CLI works in the background while the scenario watches the
    // process agent; the scenario then opens its task (or says it is skipped).
    let claude = claude_on_a_task(&server).await;
    let out = common::browser::run("thread", &server.base, Duration::from_secs(240)).await;
    if claude.is_some() {
        assert!(!out.contains("transcript part is skipped"), "{out}");
        let cid = until(5, "the CLI's company", async || {
            let list = server.ok_get("/api/companies").await;
            list.as_array()?
                .iter()
                .find(|c| c["name"] == "Transcript Co")
                .map(|c| s(&c["id"]).to_string())
        })
        .await;
        let runs = server
            .ok_get(&format!("/api/companies/{cid}/heartbeat-runs"))
            .await;
        assert_eq!(runs[0]["status"], "succeeded", "{runs}");
    }
}
