//! Issue-thread interactions, black-box: an agent asks the board through
//! its task's thread (questions, confirmations, a plan approval, suggested
//! tasks) and the board's answer reaches the agent's next run once.

use crate::common;

use common::asking::{asker, id, questions, wakes};

use common::{until, TestServer};
use serde_json::{json, Value};

/// A process agent following the skill: on assignment it asks the board and
/// hands the task over for review; woken with the answer it records what it
/// was told and finishes. The log holds one line per run.
const SKILL_AGENT: &str = r#"api() { curl -sS -o /dev/null -w '%{http_code}\n' -X "$1" "$PAPERCLIP_API_URL$2" \
  -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" \
  -H 'Content-Type: application/json' -d "$3"; }
LOG="$(dirname "$0")/asker.log"
printf 'run=%s reason=%s payload=%s\n' "$PAPERCLIP_RUN_ID" "$PAPERCLIP_WAKE_REASON" "$PAPERCLIP_WAKE_PAYLOAD_JSON" >> "$LOG"
T="$PAPERCLIP_TASK_ID"
case "$PAPERCLIP_WAKE_REASON" in
issue_assigned)
  api POST "/api/issues/$T/checkout" "{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\"]}" >> "$LOG"
  api POST "/api/issues/$T/interactions" "{\"kind\":\"ask_user_questions\",\"idempotencyKey\":\"questions:$T:1\",\"payload\":{\"questions\":[{\"id\":\"db\",\"prompt\":\"Which database?\",\"selectionMode\":\"single\",\"required\":true,\"options\":[{\"id\":\"pg\",\"label\":\"Postgres\"},{\"id\":\"lite\",\"label\":\"SQLite\"}]}]}}" >> "$LOG"
  api PATCH "/api/issues/$T" '{"status":"in_review","comment":"Waiting for the board to pick a database"}' >> "$LOG"
  ;;
issue_commented)
  api PATCH "/api/issues/$T" '{"status":"done","comment":"Built it on the database the board chose"}' >> "$LOG"
  ;;
esac
"#;

#[tokio::test]
async fn an_agent_asks_the_board_and_its_next_run_gets_the_answer_once() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Ask Co").await);
    let agent = id(&server
        .script_agent(&cid, "Asker", SKILL_AGENT, json!({}))
        .await);
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Pick a database", "status": "todo", "assigneeAgentId": agent }),
        )
        .await;
    let issue_id = id(&issue);
    let path = format!("/api/issues/{issue_id}/interactions");
    // The agent asks and waits: the card is pending, the task in review.
    let cards = server
        .wait_for(&path, 30, |c| c.as_array().is_some_and(|c| c.len() == 1))
        .await;
    let card = cards[0].clone();
    assert_eq!(card["status"], "pending", "{card}");
    assert_eq!(card["kind"], "ask_user_questions");
    assert_eq!(card["createdByAgentId"], json!(agent));
    assert!(
        card["sourceRunId"].is_string(),
        "an agent's card names its run: {card}"
    );
    assert_eq!(
        card["payload"]["supersedeOnUserComment"], true,
        "defaults are filled in"
    );
    server
        .wait_for(&format!("/api/issues/{issue_id}"), 30, |i| {
            i["status"] == "in_review"
        })
        .await;
    until(30, "the first run to end", async || {
        let runs = server.runs_of(&cid, &agent).await;
        (runs.len() == 1 && runs[0]["status"] == "succeeded").then_some(())
    })
    .await;

    // The board sees it where it looks: the inbox and the task's thread.
    let prefix = server.ok_get(&format!("/api/companies/{cid}")).await["issuePrefix"]
        .as_str()
        .unwrap()
        .to_string();
    let identifier = issue["identifier"].as_str().unwrap();
    let inbox = server.page(&format!("/{prefix}/inbox")).await;
    assert!(
        inbox.contains(&format!("data-interaction=\"{}\"", id(&card))),
        "{inbox}"
    );
    assert!(inbox.contains("Which database?"));
    assert!(
        inbox.contains("id=\"pending-questions\""),
        "the sidebar counts it"
    );
    let page = server.page(&format!("/{prefix}/tasks/{identifier}")).await;
    assert!(
        page.contains("data-interaction-status=\"pending\""),
        "{page}"
    );
    assert!(
        page.contains(&format!("data-url=\"{path}/{}/respond\"", id(&card))),
        "{page}"
    );

    // A wrong answer is refused and changes nothing.
    let respond = format!("{path}/{}/respond", id(&card));
    let (status, body) = server
        .post(
            &respond,
            json!({ "answers": [{ "questionId": "db", "optionIds": ["oracle"] }] }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let (status, body) = server.post(&respond, json!({ "answers": [] })).await;
    assert_eq!(status, 422, "a required question unanswered: {body}");

    // The board answers: the card is answered, and the agent runs again with
    // the answer in its wake.
    let answered = server
        .ok_post(
            &respond,
            json!({ "answers": [{ "questionId": "db", "optionIds": ["pg"] }] }),
        )
        .await;
    assert_eq!(answered["status"], "answered", "{answered}");
    assert_eq!(answered["resolvedByUserId"], "local-board");
    assert!(answered["result"]["summaryMarkdown"]
        .as_str()
        .unwrap()
        .contains("Postgres"));
    server
        .wait_for(&format!("/api/issues/{issue_id}"), 30, |i| {
            i["status"] == "done"
        })
        .await;
    let page = server.page(&format!("/{prefix}/tasks/{identifier}")).await;
    assert!(
        page.contains("data-interaction-status=\"answered\""),
        "{page}"
    );
    assert!(
        !page.contains("data-interaction-form"),
        "an answered card has no form"
    );
    let inbox = server.page(&format!("/{prefix}/inbox")).await;
    assert!(
        !inbox.contains("data-interaction=\""),
        "answered: out of the inbox"
    );
    assert!(!inbox.contains("id=\"pending-questions\""));
    let log = std::fs::read_to_string(server.data_dir.join("asker.log")).unwrap();
    let second = log
        .lines()
        .find(|l| l.contains("reason=issue_commented"))
        .unwrap_or_else(|| panic!("no answered run in {log}"));
    let payload: Value = serde_json::from_str(second.split("payload=").nth(1).unwrap()).unwrap();
    assert_eq!(payload["interactionId"], card["id"], "{payload}");
    assert_eq!(payload["interactionStatus"], "answered");
    assert!(
        payload["questionResponse"]["summaryMarkdown"]
            .as_str()
            .unwrap()
            .contains("Postgres"),
        "{payload}"
    );

    // Once: answering again is a conflict and wakes nobody; the agent ran
    // exactly twice and the answer's wake is one row.
    let (status, body) = server
        .post(
            &respond,
            json!({ "answers": [{ "questionId": "db", "optionIds": ["lite"] }] }),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    let runs = until(30, "the second run to end", async || {
        let runs = server.runs_of(&cid, &agent).await;
        runs.iter()
            .all(|r| r["status"] == "succeeded")
            .then_some(runs)
    })
    .await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    let answer_wakes: Vec<Value> = wakes(&server, &agent)
        .await
        .into_iter()
        .filter(|w| w["payload"]["interactionId"] == card["id"])
        .collect();
    assert_eq!(answer_wakes.len(), 1, "{answer_wakes:?}");
    let actions = server.actions(&cid).await;
    for action in [
        "issue.thread_interaction_created",
        "issue.thread_interaction_answered",
    ] {
        assert!(
            actions.iter().any(|a| a == action),
            "{action} missing from {actions:?}"
        );
    }
}

#[tokio::test]
async fn a_plan_sent_back_for_changes_returns_to_its_author_and_is_approved_on_revision() {
    let server = TestServer::start().await;
    let a = asker(&server, "Plan Co").await;
    let plan_path = format!("/api/issues/{}/documents/plan", a.issue);
    let (status, v1) = a
        .call(
            &server,
            "PUT",
            &plan_path,
            json!({ "format": "markdown", "body": "1. Use SQLite" }),
        )
        .await;
    assert_eq!(status, 201, "{v1}");
    let checkout = json!({ "agentId": a.agent, "expectedStatuses": ["todo"] });
    let (status, body) = a
        .call(
            &server,
            "POST",
            &format!("/api/issues/{}/checkout", a.issue),
            checkout,
        )
        .await;
    assert!(status.is_success(), "{body}");
    let (status, body) = a
        .call(
            &server,
            "PATCH",
            &format!("/api/issues/{}", a.issue),
            json!({ "status": "in_review" }),
        )
        .await;
    assert!(status.is_success(), "{body}");
    let plan_card = |revision: &Value| {
        json!({ "kind": "request_confirmation", "idempotencyKey": format!("confirmation:plan:{revision}"),
            "payload": { "prompt": "Approve the plan?", "rejectRequiresReason": true,
                "acceptLabel": "Approve plan", "rejectLabel": "Request changes",
                "target": { "type": "issue_document", "key": "plan", "revisionId": revision } } })
    };
    let card = a.ask(&server, plan_card(&v1["latestRevisionId"])).await;
    assert_eq!(
        card["continuationPolicy"], "none",
        "a confirmation's default"
    );
    let card_path = format!("/api/issues/{}/interactions/{}", a.issue, id(&card));

    // Request changes: a reason is required; with it, the task goes back to
    // the agent as todo and the agent is woken with the reason.
    let (status, body) = server.post(&format!("{card_path}/reject"), json!({})).await;
    assert_eq!(status, 422, "{body}");
    let rejected = server
        .ok_post(
            &format!("{card_path}/reject"),
            json!({ "reason": "Use Postgres, we need concurrent writers" }),
        )
        .await;
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(
        rejected["result"]["reason"],
        "Use Postgres, we need concurrent writers"
    );
    let task = server.ok_get(&format!("/api/issues/{}", a.issue)).await;
    assert_eq!(task["status"], "todo", "{task}");
    assert_eq!(task["assigneeAgentId"], json!(a.agent));
    let wake = until(30, "the rejection's wake", async || {
        wakes(&server, &a.agent)
            .await
            .into_iter()
            .find(|w| w["payload"]["interactionId"] == card["id"])
    })
    .await;
    assert_eq!(wake["reason"], "issue_commented", "{wake}");
    assert_eq!(
        wake["payload"]["paperclipAgentMessage"]["text"],
        "Use Postgres, we need concurrent writers"
    );
    assert_eq!(
        wake["payload"]["planReviewInteraction"]["status"],
        "rejected"
    );
    let (status, _) = server.post(&format!("{card_path}/accept"), json!({})).await;
    assert_eq!(status, 409, "a resolved card stays resolved");

    // The revised plan: a card on the old revision is stale, on the new one
    // it is approved.
    let (status, v2) = a
        .call(
            &server,
            "PUT",
            &plan_path,
            json!({ "format": "markdown", "body": "1. Use Postgres" }),
        )
        .await;
    assert_eq!(status, 200, "{v2}");
    let (status, body) = a
        .call(&server, "POST", &format!("/api/issues/{}/interactions", a.issue),
            json!({ "kind": "request_confirmation", "payload": { "prompt": "Again?",
                "target": { "type": "issue_document", "key": "plan", "revisionId": v1["latestRevisionId"] } } }))
        .await;
    assert_eq!(status, 409, "a stale plan revision: {body}");
    let card2 = a.ask(&server, plan_card(&v2["latestRevisionId"])).await;
    // A newer revision written while a card waits makes that card stale.
    let (status, v3) = a
        .call(
            &server,
            "PUT",
            &plan_path,
            json!({ "format": "markdown", "body": "1. Use Postgres 16" }),
        )
        .await;
    assert_eq!(status, 200, "{v3}");
    let cards = server
        .ok_get(&format!("/api/issues/{}/interactions", a.issue))
        .await;
    let old = cards
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == card2["id"])
        .unwrap();
    assert_eq!(old["status"], "expired", "{old}");
    assert_eq!(old["result"]["outcome"], "stale_target");
    let card2 = a.ask(&server, plan_card(&v3["latestRevisionId"])).await;
    let accepted = server
        .ok_post(
            &format!("/api/issues/{}/interactions/{}/accept", a.issue, id(&card2)),
            json!({}),
        )
        .await;
    assert_eq!(accepted["status"], "accepted", "{accepted}");
    assert_eq!(accepted["result"]["outcome"], "accepted");
    let actions = server.actions(&a.cid).await;
    for action in [
        "issue.thread_interaction_rejected",
        "issue.thread_interaction_accepted",
        "issue.updated",
    ] {
        assert!(actions.iter().any(|x| x == action), "{action} missing");
    }
}

#[tokio::test]
async fn accepted_suggestions_become_tasks_parents_first() {
    let server = TestServer::start().await;
    let a = asker(&server, "Suggest Co").await;
    let card = a
        .ask(
            &server,
            json!({ "kind": "suggest_tasks", "payload": { "tasks": [
            { "clientKey": "api", "title": "Build the API", "assigneeAgentId": a.agent },
            { "clientKey": "tests", "parentClientKey": "api", "title": "Test the API" },
            { "clientKey": "docs", "title": "Write the docs" } ] } }),
        )
        .await;
    let accept = format!("/api/issues/{}/interactions/{}/accept", a.issue, id(&card));
    let (status, body) = server
        .post(&accept, json!({ "selectedClientKeys": ["tests"] }))
        .await;
    assert_eq!(status, 422, "a child without its parent: {body}");
    let (status, body) = server
        .post(&accept, json!({ "selectedClientKeys": ["nope"] }))
        .await;
    assert_eq!(status, 422, "{body}");
    let done = server
        .ok_post(&accept, json!({ "selectedClientKeys": ["tests", "api"] }))
        .await;
    let created = done["result"]["createdTasks"].as_array().unwrap();
    assert_eq!(created.len(), 2, "{done}");
    assert_eq!(created[0]["clientKey"], "api", "parents first");
    assert_eq!(done["result"]["skippedClientKeys"], json!(["docs"]));
    let api = server
        .ok_get(&format!(
            "/api/issues/{}",
            created[0]["identifier"].as_str().unwrap()
        ))
        .await;
    let tests = server
        .ok_get(&format!(
            "/api/issues/{}",
            created[1]["issueId"].as_str().unwrap()
        ))
        .await;
    assert_eq!(api["title"], "Build the API");
    assert_eq!(
        api["parentId"],
        json!(a.issue),
        "under the task that suggested it"
    );
    assert_eq!(api["status"], "todo", "assigned, so ready");
    assert_eq!(tests["parentId"], api["id"]);
    assert_eq!(tests["status"], "backlog");
    assert_eq!(created[1]["parentIdentifier"], api["identifier"]);
}

#[tokio::test]
async fn a_task_waiting_on_the_board_spends_no_timer_wakes() {
    let server = TestServer::start().await;
    let a = asker(&server, "Wait Co").await;
    // A timer slot far off, so only the test's own ticks come.
    server
        .ok_patch(
            &format!("/api/agents/{}", a.agent),
            json!({ "runtimeConfig": { "heartbeat": { "enabled": true, "intervalSec": 86400 } } }),
        )
        .await;
    let timer = format!("/api/agents/{}/wakeup", a.agent);
    let tick = json!({ "source": "timer", "triggerDetail": "system" });
    // With the task to do, a timer wake runs the agent.
    let (status, run) = server.post(&timer, tick.clone()).await;
    assert_eq!(status, 202, "{run}");
    until(30, "the timer run to end", async || {
        let runs = server.runs_of(&a.cid, &a.agent).await;
        runs.iter()
            .all(|r| r["status"] == "succeeded")
            .then_some(())
    })
    .await;
    // Waiting on the board's answer, it has nothing to act on.
    let card = a.ask(&server, questions()).await;
    let (status, body) = server.post(&timer, tick.clone()).await;
    assert_eq!(status, 409, "{body}");
    let last = wakes(&server, &a.agent).await;
    assert_eq!(last[0]["skipReason"], "no_work", "{:?}", last[0]);
    // The answer is work again: it wakes the agent on the task, and while
    // that run is queued or running a timer adds nothing (it would start
    // after it with nothing left to do).
    server
        .ok_post(
            &format!("/api/issues/{}/interactions/{}/respond", a.issue, id(&card)),
            json!({ "answers": [{ "questionId": "db", "optionIds": ["lite"] }] }),
        )
        .await;
    let (status, body) = server.post(&timer, tick.clone()).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(wakes(&server, &a.agent).await[0]["skipReason"], "no_work");
    until(30, "the answer's run to end", async || {
        let runs = server.runs_of(&a.cid, &a.agent).await;
        runs.iter()
            .all(|r| r["status"] != "queued" && r["status"] != "running")
            .then_some(())
    })
    .await;
    // Its task still open and no run on it, a timer runs the agent again.
    let (status, body) = server.post(&timer, tick).await;
    assert_eq!(status, 202, "{body}");
}
