//! The skill's "asking the board" steps with a real coding CLI: `claude`,
//! driven by the scripted provider, asks a question in its task's thread
//! and hands the task over; a person answers in the browser; the agent's
//! next run has the answer in its prompt (once) and finishes the task.

use crate::clis;
use crate::common;

use clis::Cli;
use common::TestServer;
use paperclip_scripted_provider::{ScriptedProvider, Turn};
use serde_json::{json, Value};

const AUTH: &str = r#"-H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'Content-Type: application/json'"#;
const TASK: &str = r#""$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID"#;
const NOTE: &str = "The board answered your requests on this task";

fn bash(command: String) -> Turn {
    Turn::Bash { command }
}

fn turns() -> Vec<Turn> {
    let question = json!({ "kind": "ask_user_questions", "idempotencyKey": "questions:db:1",
        "payload": { "questions": [
            { "id": "db", "prompt": "Which database?", "selectionMode": "single", "required": true,
              "options": [{ "id": "pg", "label": "Postgres" }, { "id": "lite", "label": "SQLite" }] },
            { "id": "notes", "prompt": "Anything else?", "selectionMode": "single",
              "options": [{ "id": "free", "label": "Tell us", "freeText": true }] } ] } });
    vec![
        // Run 1: check out, ask, hand over for review.
        bash(format!(
            r#"curl -sSf -X POST {TASK}/checkout" {AUTH} -d "{{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\"]}}""#
        )),
        bash(format!(
            r#"curl -sSf -X POST {TASK}/interactions" {AUTH} -d '{question}'"#
        )),
        bash(format!(
            r#"curl -sSf -X PATCH {TASK}" {AUTH} -d '{{"status":"in_review","comment":"Waiting for the board to pick a database."}}'"#
        )),
        Turn::Answer {
            text: "Asked the board which database to use; waiting.".into(),
        },
        // Run 2: woken with the answer, it finishes.
        bash(format!(
            r#"curl -sSf -X PATCH {TASK}" {AUTH} -d '{{"status":"done","comment":"Built it on Postgres, as the board chose."}}'"#
        )),
        Turn::Answer {
            text: "Done, on Postgres.".into(),
        },
        // Run 3: a later comment; nothing new from the board's cards.
        Turn::Answer {
            text: "Noted.".into(),
        },
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_asks_the_board_and_works_on_with_the_answer_given_in_the_browser() {
    let Some(cli) = Cli::find("claude_local") else {
        return;
    };
    if !common::browser::ready() {
        return;
    }
    let provider = ScriptedProvider::start(turns()).await;
    let s = TestServer::start().await;
    let cid = s.company("Question Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Builder", "role": "engineer", "adapterType": "claude_local",
                "adapterConfig": cli.config(&provider) }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let issue = s
        .issue(
            &cid,
            json!({ "title": "Set up storage", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let iid = issue["id"].as_str().unwrap().to_string();
    let runs_path = format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}");
    let settled = |n: usize| {
        move |r: &Value| {
            r.as_array()
                .is_some_and(|r| r.len() == n && r.iter().all(|run| run["status"] == "succeeded"))
        }
    };
    s.wait_for(&runs_path, 180, settled(1)).await;
    let cards = s.ok_get(&format!("/api/issues/{iid}/interactions")).await;
    assert_eq!(cards.as_array().unwrap().len(), 1, "{cards}");
    assert_eq!(cards[0]["status"], "pending");
    assert_eq!(
        s.ok_get(&format!("/api/issues/{iid}")).await["status"],
        "in_review"
    );

    common::browser::run("interactions", &s.base, std::time::Duration::from_secs(120)).await;

    s.wait_for(&runs_path, 180, settled(2)).await;
    let task = s.ok_get(&format!("/api/issues/{iid}")).await;
    assert_eq!(task["status"], "done", "{task}");
    // The second run's prompt carried the answer: the option chosen and
    // what the person typed.
    let requests = provider.turn_requests();
    let second = requests[4].body.to_string();
    assert_eq!(
        second.matches(NOTE).count(),
        1,
        "the answer note once in run 2"
    );
    assert!(
        second.contains("Postgres") && second.contains("Keep it boring"),
        "{second}"
    );

    // A later wake does not hand the same answer again: the resumed
    // conversation holds it once, from run 2, and run 3 adds nothing.
    s.ok_post(
        &format!("/api/issues/{iid}/comments"),
        json!({ "body": "Thanks, looks good." }),
    )
    .await;
    s.wait_for(&runs_path, 180, settled(3)).await;
    let third = provider.turn_requests()[6].body.to_string();
    assert!(
        third.matches(NOTE).count() <= 1,
        "run 3 was handed the answer again: {third}"
    );
    let runs = s.ok_get(&runs_path).await;
    let wakes: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["wakeReason"].as_str())
        .collect();
    assert_eq!(
        wakes,
        // The board's comment on the done task reopened it (upstream's rule).
        [
            "issue_reopened_via_comment",
            "issue_commented",
            "issue_assigned"
        ],
        "{runs}"
    );
}
