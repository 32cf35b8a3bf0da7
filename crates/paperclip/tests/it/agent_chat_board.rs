//! Agent Chat in the board (issue 41): `tests/browser/agent_chat.mjs` opens Chat
//! from the navigation, chats with a process agent whose reply streams in,
//! starts a fresh session with `/new`, and makes a message a task; then
//! chats with a real `claude` (driven by the scripted provider), whose turn
//! streams in and whose reply arrives, and whose next turn after `/new`
//! starts a fresh CLI session.

use crate::clis;
use crate::common;

use std::time::Duration;

use clis::Cli;
use common::TestServer;
use paperclip_scripted_provider::{ScriptedProvider, Turn};
use serde_json::json;

/// One chat turn of claude's: once the page has seen the turn stream in (a
/// gate file per run, bounded), reply on the chat with the run's key; end.
fn reply(gate: &str, text: &str) -> [Turn; 2] {
    [
        Turn::Bash {
            command: format!(
                r#"n=0; while [ ! -e "{gate}$PAPERCLIP_RUN_ID" ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done; curl -sSf -X POST "$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID/comments" -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'Content-Type: application/json' -d '{{"body":"{text}"}}'"#
            ),
        },
        Turn::Answer {
            text: "Replied in the chat.".into(),
        },
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_chats_with_an_agent_in_the_board() {
    if !common::browser::ready() {
        return;
    }
    let Some(cli) = Cli::find("claude_local") else {
        return;
    };
    let gate = common::browser::shots_dir("agent_chat").join("claude-gate-");
    let gate = gate.display().to_string();
    let turns = [
        reply(&gate, "Claude here: the plan is three steps."),
        reply(&gate, "Fresh start: what shall we do?"),
    ]
    .concat();
    let provider = ScriptedProvider::start(turns).await;
    let server = TestServer::start().await;
    // The scenario's second company: a claude agent (the first it makes itself).
    let cid = server.company("Claude Chat").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Claude", "role": "engineer", "adapterType": "claude_local",
                "adapterConfig": cli.config(&provider) }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    common::browser::run("agent_chat", &server.base, Duration::from_secs(180)).await;

    // Two turns, two CLI sessions: the turn after `/new` did not resume the
    // first one (its first request carries only the new message).
    // The reply is on the page before claude asks for its last turn: wait
    // for both turns to end (a failed one shows here with its error).
    let runs = server.settled_runs(&cid, aid, 2, 240).await;
    for run in &runs {
        assert_eq!(run["status"], "succeeded", "{run}");
    }
    let requests = provider.turn_requests();
    assert_eq!(requests.len(), 4, "two chat turns of two requests each");
    let messages = |i: usize| requests[i].body["messages"].as_array().unwrap().len();
    assert_eq!(messages(0), 1, "{}", requests[0].body);
    assert_eq!(messages(2), 1, "after /new: {}", requests[2].body);
    let first = requests[0].body.to_string();
    assert!(first.contains("Plan the launch"), "{first}");
    let second = requests[2].body.to_string();
    assert!(second.contains("Start over with the docs"), "{second}");
    assert!(!second.contains("Plan the launch"), "{second}");
}
