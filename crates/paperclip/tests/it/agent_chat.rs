//! Agent Chat through the API (issue 41), on the original's routes: a person
//! opens a chat with an agent, writes (each message needs a request id and
//! wakes the agent once, a retry sends nothing twice), the agent answers
//! with a comment and the chat is parked for the person; `/new` starts a
//! fresh session the next turn's context shows; chats stay out of the task
//! list unless searched; nobody else writes in someone's chat, and its agent
//! cannot close it.

use crate::common;

use common::repos::str_of as s;
use common::teams::{self, call, Session};
use common::TestServer;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// The chat agent's turn: it tries to close the chat (refused), then answers
/// in one comment naming the answer it got.
const AGENT: &str = r#"set -e
H="Authorization: Bearer $PAPERCLIP_API_KEY"
R="X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID"
J="Content-Type: application/json"
T="$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID"
echo "reading the chat"
code=$(curl -s -o /dev/null -w '%{http_code}' -X PATCH "$T" -H "$H" -H "$R" -H "$J" -d '{"status":"done"}')
curl -sSf -X POST "$T/comments" -H "$H" -H "$R" -H "$J" -d "{\"body\":\"Hello from Coder (close: $code)\"}" > /dev/null
"#;

async fn as_person(
    server: &TestServer,
    who: &Session,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    call(server, method, path, Some(who), body).await
}

async fn ended_runs(
    server: &TestServer,
    who: &Session,
    cid: &str,
    aid: &str,
    n: usize,
) -> Vec<Value> {
    let path = format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}");
    let runs = common::until(60, "the chat's runs to end", async || {
        let (_, runs) = as_person(server, who, Method::GET, &path, None).await;
        let list = runs.as_array()?.clone();
        let ended = list
            .iter()
            .all(|r| r["status"] != "queued" && r["status"] != "running");
        (list.len() == n && ended).then_some(list)
    })
    .await;
    let mut runs = runs;
    runs.reverse();
    runs
}

async fn chat_state(server: &TestServer, who: &Session, chat: &str) -> Value {
    as_person(
        server,
        who,
        Method::GET,
        &format!("/api/issues/{chat}"),
        None,
    )
    .await
    .1
}

#[tokio::test]
async fn a_person_chats_with_an_agent_and_starts_over_with_new() {
    let (server, ada) = teams::instance(&[]).await;
    let (status, company) = as_person(
        &server,
        &ada,
        Method::POST,
        "/api/companies",
        Some(json!({ "name": "Chatty" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{company}");
    let cid = s(&company["id"]).to_string();
    let script = server.data_dir.join("chat-agent.sh");
    std::fs::write(&script, AGENT).unwrap();
    let (status, agent) = as_person(
        &server,
        &ada,
        Method::POST,
        &format!("/api/companies/{cid}/agents"),
        Some(json!({ "name": "Coder", "adapterType": "process",
            "adapterConfig": { "command": "sh", "args": [script.to_str().unwrap()], "graceSec": 2 } })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{agent}");
    let aid = s(&agent["id"]).to_string();

    // No chat yet; opening one (by url key) makes it, opening again finds it.
    let at = format!("/api/companies/{cid}/chats/{}", s(&agent["urlKey"]));
    let (status, none) = as_person(&server, &ada, Method::GET, &at, None).await;
    assert_eq!((status, none), (StatusCode::OK, Value::Null));
    let (status, chat) = as_person(&server, &ada, Method::POST, &at, None).await;
    assert_eq!(status, StatusCode::OK, "{chat}");
    assert_eq!(chat["title"], "Chat with Coder");
    assert_eq!(chat["status"], "in_review");
    assert_eq!(chat["conversationState"], "waiting");
    assert_eq!(chat["assigneeAgentId"], aid.as_str());
    assert_eq!(chat["conversationAgentId"], aid.as_str());
    assert_eq!(chat["conversationUserId"], ada.user_id.as_str());
    assert_eq!(chat["conversationSessionGeneration"], 0);
    let chat_id = s(&chat["id"]).to_string();
    let by_id = format!("/api/companies/{cid}/chats/{aid}");
    let (_, again) = as_person(&server, &ada, Method::POST, &by_id, None).await;
    assert_eq!(again["id"], chat["id"], "one chat per person and agent");
    let (_, found) = as_person(&server, &ada, Method::GET, &by_id, None).await;
    assert_eq!(found["id"], chat["id"]);

    // Someone else: no chat of theirs, and no writing in Ada's.
    let bob = teams::join(&server, &ada, &cid, "operator", "bob@example.com").await;
    let (_, theirs) = as_person(&server, &bob, Method::GET, &at, None).await;
    assert_eq!(theirs, Value::Null);
    let comments = format!("/api/issues/{chat_id}/comments");
    let (status, body) = as_person(
        &server,
        &bob,
        Method::POST,
        &comments,
        Some(json!({ "body": "psst", "clientRequestId": "b1" })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // A message needs its request id, and goes through the comments route.
    let (status, body) = as_person(
        &server,
        &ada,
        Method::POST,
        &comments,
        Some(json!({ "body": "Hi" })),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, body) = as_person(
        &server,
        &ada,
        Method::PATCH,
        &format!("/api/issues/{chat_id}"),
        Some(json!({ "comment": "Hi" })),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");

    // A message and its retry: one comment, one turn.
    let hello = json!({ "body": "Hello Coder", "clientRequestId": "m1" });
    let (status, first) =
        as_person(&server, &ada, Method::POST, &comments, Some(hello.clone())).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let (status, retry) = as_person(&server, &ada, Method::POST, &comments, Some(hello)).await;
    assert!(status.is_success(), "{retry}");
    assert_eq!(retry["id"], first["id"]);
    let runs = ended_runs(&server, &ada, &cid, &aid, 1).await;
    let run = &runs[0];
    assert_eq!(run["status"], "succeeded", "{run}");
    let context = &run["contextSnapshot"];
    assert_eq!(context["conversationMode"], true, "{context}");
    assert_eq!(context["conversationSessionGeneration"], 0, "{context}");
    assert_eq!(context["wakeReason"], "issue_commented", "{context}");
    assert_eq!(context["wakeCommentId"], first["id"], "{context}");

    // The agent answered in its run (its close refused) and the chat waits.
    let (_, thread) = as_person(
        &server,
        &ada,
        Method::GET,
        &format!("{comments}?order=asc"),
        None,
    )
    .await;
    let thread = thread.as_array().unwrap().clone();
    assert_eq!(thread.len(), 2, "{thread:?}");
    assert_eq!(thread[1]["authorAgentId"], aid.as_str());
    assert_eq!(thread[1]["createdByRunId"], run["id"]);
    assert_eq!(thread[1]["body"], "Hello from Coder (close: 422)");
    let parked = chat_state(&server, &ada, &chat_id).await;
    assert_eq!(parked["status"], "in_review", "{parked}");
    assert_eq!(parked["conversationState"], "waiting", "{parked}");

    // `/new`: a fresh session, no turn.
    let (status, reset) = as_person(
        &server,
        &ada,
        Method::POST,
        &comments,
        Some(json!({ "body": "/new", "clientRequestId": "m2" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{reset}");
    let fresh = chat_state(&server, &ada, &chat_id).await;
    assert_eq!(fresh["conversationSessionGeneration"], 1, "{fresh}");
    assert_eq!(
        fresh["conversationBoundaryCommentId"], reset["id"],
        "{fresh}"
    );
    let (_, stored) = as_person(
        &server,
        &ada,
        Method::GET,
        &format!("{comments}/{}", s(&reset["id"])),
        None,
    )
    .await;
    assert_eq!(stored["conversationSessionGeneration"], 1, "{stored}");
    let (status, body) = as_person(
        &server,
        &ada,
        Method::POST,
        &comments,
        Some(json!({ "body": "Let us start over", "clientRequestId": "m3" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let runs = ended_runs(&server, &ada, &cid, &aid, 2).await;
    assert_eq!(runs[1]["status"], "succeeded", "{}", runs[1]);
    assert_eq!(
        runs[1]["contextSnapshot"]["conversationSessionGeneration"],
        1
    );
    assert_eq!(runs[1]["contextSnapshot"]["conversationMode"], true);

    // A chat has no subtasks: real work is an ordinary task.
    let (status, body) = as_person(
        &server,
        &ada,
        Method::POST,
        &format!("/api/companies/{cid}/issues"),
        Some(json!({ "title": "Release notes", "parentId": chat_id })),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");

    // Chats stay out of the task list, and are found by search.
    let (_, listed) = as_person(
        &server,
        &ada,
        Method::GET,
        &format!("/api/companies/{cid}/issues"),
        None,
    )
    .await;
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["id"] != chat["id"]),
        "{listed}"
    );
    let (_, searched) = as_person(
        &server,
        &ada,
        Method::GET,
        &format!("/api/companies/{cid}/issues?q=Chat%20with"),
        None,
    )
    .await;
    assert!(
        searched
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["id"] == chat["id"]),
        "{searched}"
    );
    // The person's chats, with the last message.
    let (_, mine) = as_person(
        &server,
        &ada,
        Method::GET,
        &format!("/api/companies/{cid}/chats"),
        None,
    )
    .await;
    assert_eq!(mine.as_array().unwrap().len(), 1, "{mine}");
    assert_eq!(mine[0]["agentName"], "Coder");
    assert_eq!(mine[0]["lastMessage"], "Hello from Coder (close: 422)");

    // Invariants from the activity log: opened once, one new session, and
    // the chat never closed.
    let (_, log) = as_person(
        &server,
        &ada,
        Method::GET,
        &format!("/api/companies/{cid}/activity?limit=1000"),
        None,
    )
    .await;
    let count = |action: &str| {
        log.as_array()
            .unwrap()
            .iter()
            .filter(|a| a["action"] == action && a["entityId"] == chat["id"])
            .count()
    };
    assert_eq!(count("issue.conversation_opened"), 1);
    assert_eq!(count("issue.conversation_session_started"), 1);
    let last = chat_state(&server, &ada, &chat_id).await;
    assert!(
        last["completedAt"].is_null() && last["cancelledAt"].is_null(),
        "{last}"
    );
    assert_eq!(last["conversationState"], "waiting", "{last}");
}
