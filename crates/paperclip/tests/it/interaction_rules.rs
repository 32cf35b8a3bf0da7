//! Issue-thread interactions under attack and in a race: bad payloads,
//! callers who may not resolve a card, people answering at once on either
//! engine, and the less common kinds (checklists, verdicts, withdrawals,
//! addressed cards).

use crate::common;

use common::asking::{asker, id, questions, wakes};
use common::{until, TestServer};
use serde_json::{json, Value};

#[tokio::test]
async fn cards_refuse_bad_input_and_callers_who_may_not_resolve_them() {
    let server = TestServer::start().await;
    let a = asker(&server, "Rules Co").await;
    let create = format!("/api/issues/{}/interactions", a.issue);
    // Without its run id an agent is refused.
    let (status, body) = server
        .as_agent(&a.key, None, "POST", &create, Some(questions()))
        .await;
    assert_eq!(status, 401, "{body}");
    // Another company's agent sees nothing and changes nothing.
    let other = asker(&server, "Other Co").await;
    let (status, _) = other.call(&server, "POST", &create, questions()).await;
    assert!(status == 403 || status == 404, "{status}");
    let (status, _) = server
        .as_agent(&other.key, Some(&other.run), "GET", &create, None)
        .await;
    assert!(status == 403 || status == 404, "{status}");
    // Bad payloads: a 400 naming the field, or a 422 for a rule.
    let many: Vec<Value> = (0..65)
        .map(|i| {
            json!({ "id": format!("q{i}"), "prompt": "?", "selectionMode": "single",
            "options": [{ "id": "o", "label": "O" }] })
        })
        .collect();
    for (body, want) in [
        (
            json!({ "kind": "ask_user_questions", "payload": { "questions": many } }),
            400,
        ),
        (
            json!({ "kind": "ask_user_questions", "payload": { "questions": [] } }),
            400,
        ),
        (
            json!({ "kind": "request_confirmation", "payload": { "prompt": "nul\u{0}byte" } }),
            400,
        ),
        (
            json!({ "kind": "request_confirmation", "payload": { "prompt": "p".repeat(1001) } }),
            400,
        ),
        (
            json!({ "kind": "request_confirmation", "idempotencyKey": "k".repeat(256), "payload": { "prompt": "p" } }),
            400,
        ),
        (json!({ "kind": "ask_everyone", "payload": {} }), 400),
        (
            json!({ "kind": "request_confirmation", "payload": { "prompt": "p", "version": 9007199254740993u64 } }),
            400,
        ),
        (json!({ "kind": "connection_intent", "payload": {} }), 422),
        (
            json!({ "kind": "request_confirmation", "payload": { "prompt": "p", "toolAction": {} } }),
            422,
        ),
        (
            json!({ "kind": "request_confirmation", "addresseeAgentId": a.agent, "addresseeUserId": "u", "payload": { "prompt": "p" } }),
            422,
        ),
        (
            json!({ "kind": "request_confirmation", "addresseeAgentId": a.agent, "payload": { "prompt": "p" } }),
            422,
        ),
        (
            json!({ "kind": "request_confirmation", "addresseeAgentId": other.agent, "payload": { "prompt": "p" } }),
            422,
        ),
        (
            json!({ "kind": "request_confirmation", "sourceCommentId": a.issue, "payload": { "prompt": "p" } }),
            422,
        ),
    ] {
        let (status, reply) = a.call(&server, "POST", &create, body.clone()).await;
        assert_eq!(status, want, "{body} -> {reply}");
        assert!(reply["error"].is_string(), "{reply}");
    }
    assert!(
        server.ok_get(&create).await.as_array().unwrap().is_empty(),
        "nothing was stored"
    );

    // The same key and body is the same card; another body under it is 409.
    let keyed = json!({ "kind": "request_confirmation", "idempotencyKey": "deploy:1",
        "resolverPolicy": "board_only", "payload": { "prompt": "Deploy?" } });
    let first = a.ask(&server, keyed.clone()).await;
    let again = a.ask(&server, keyed.clone()).await;
    assert_eq!(first["id"], again["id"]);
    assert_eq!(
        first["effectiveResolverPolicy"], "human_only",
        "the alias is read"
    );
    let mut changed = keyed.clone();
    changed["payload"]["prompt"] = json!("Deploy now?");
    let (status, _) = a.call(&server, "POST", &create, changed).await;
    assert_eq!(status, 409);
    // A person's card: the agent may neither accept nor skip it.
    let card = format!("{create}/{}", id(&first));
    for verb in ["accept", "skip", "cancel"] {
        let (status, body) = a
            .call(&server, "POST", &format!("{card}/{verb}"), json!({}))
            .await;
        assert!(status == 403 || status == 422, "{verb}: {status} {body}");
    }
    assert_eq!(server.ok_get(&create).await[0]["status"], "pending");
    // The board skips it: closed, and nobody is woken for it.
    let skipped = server
        .ok_post(&format!("{card}/skip"), json!({ "reason": "not now" }))
        .await;
    assert_eq!(skipped["status"], "cancelled");
    assert_eq!(skipped["result"]["outcome"], "skipped");
    assert!(wakes(&server, &a.agent)
        .await
        .iter()
        .all(|w| w["payload"]["interactionId"] != first["id"]));

    // A person's comment supersedes a pending question; the card says so.
    let question = a.ask(&server, questions()).await;
    let comment = server
        .ok_post(
            &format!("/api/issues/{}/comments", a.issue),
            json!({ "body": "Use Postgres." }),
        )
        .await;
    let cards = server.ok_get(&create).await;
    let q = cards
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == question["id"])
        .unwrap();
    assert_eq!(q["status"], "expired", "{q}");
    assert_eq!(q["result"]["expirationReason"], "superseded_by_comment");
    assert_eq!(q["result"]["commentId"], comment["id"]);
    let (status, _) = server
        .post(
            &format!("{create}/{}/respond", id(&question)),
            json!({ "answers": [] }),
        )
        .await;
    assert_eq!(status, 409);
    // A newer question from the agent replaces its older pending one.
    let q1 = a.ask(&server, questions()).await;
    let q2 = a.ask(&server, questions()).await;
    let cards = server.ok_get(&create).await;
    let old = cards
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == q1["id"])
        .unwrap();
    assert_eq!(
        old["result"]["supersededByInteractionId"], q2["id"],
        "{old}"
    );

    // A closed task takes no cards, and its pending ones read as expired.
    server
        .ok_patch(
            &format!("/api/issues/{}", a.issue),
            json!({ "status": "cancelled" }),
        )
        .await;
    let (status, _) = a.call(&server, "POST", &create, questions()).await;
    assert_eq!(status, 409);
    let cards = server.ok_get(&create).await;
    let last = cards
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == q2["id"])
        .unwrap();
    assert_eq!(last["status"], "expired");
    assert_eq!(last["result"]["outcome"], "issue_closed");
}

#[tokio::test]
async fn people_answering_at_once_get_one_answer_and_one_wake() {
    let server = TestServer::start().await;
    let a = asker(&server, "Race Co").await;
    let card = a.ask(&server, questions()).await;
    let respond = format!("/api/issues/{}/interactions/{}/respond", a.issue, id(&card));
    let answers = ["pg", "lite", "pg", "lite", "pg", "lite", "pg", "lite"];
    let replies = futures::future::join_all(answers.iter().map(|o| {
        server.post(
            &respond,
            json!({ "answers": [{ "questionId": "db", "optionIds": [o] }] }),
        )
    }))
    .await;
    let won: Vec<&Value> = replies
        .iter()
        .filter(|(s, _)| *s == 200)
        .map(|(_, v)| v)
        .collect();
    assert_eq!(won.len(), 1, "{replies:?}");
    assert!(
        replies.iter().all(|(s, _)| *s == 200 || *s == 409),
        "{replies:?}"
    );
    // What is stored is the winner's answer, and it woke the agent once.
    let stored = server
        .ok_get(&format!("/api/issues/{}/interactions", a.issue))
        .await;
    assert_eq!(stored[0]["result"], won[0]["result"]);
    let woken: Vec<Value> = wakes(&server, &a.agent)
        .await
        .into_iter()
        .filter(|w| w["payload"]["interactionId"] == card["id"])
        .collect();
    assert_eq!(woken.len(), 1, "{woken:?}");
    let actions = server.actions(&a.cid).await;
    let answered = actions
        .iter()
        .filter(|x| *x == "issue.thread_interaction_answered")
        .count();
    assert_eq!(answered, 1, "{actions:?}");
}

#[tokio::test]
async fn checklists_verdicts_withdrawals_and_addressed_cards() {
    let server = TestServer::start().await;
    let a = asker(&server, "More Co").await;
    let base = format!("/api/issues/{}/interactions", a.issue);
    // A checklist: the selection must respect the card's bounds.
    let list = a
        .ask(&server, json!({ "kind": "request_checkbox_confirmation", "payload": {
            "prompt": "Which environments?", "minSelected": 1, "maxSelected": 2,
            "options": [{ "id": "dev", "label": "Dev" }, { "id": "stage", "label": "Stage" }, { "id": "prod", "label": "Prod" }] } }))
        .await;
    let accept = format!("{base}/{}/accept", id(&list));
    let (status, _) = server
        .post(&accept, json!({ "selectedOptionIds": [] }))
        .await;
    assert_eq!(status, 422);
    let (status, _) = server
        .post(
            &accept,
            json!({ "selectedOptionIds": ["dev", "stage", "prod"] }),
        )
        .await;
    assert_eq!(status, 422);
    let (status, _) = server
        .post(&accept, json!({ "selectedOptionIds": ["moon"] }))
        .await;
    assert_eq!(status, 422);
    let ok = server
        .ok_post(&accept, json!({ "selectedOptionIds": ["dev", "stage"] }))
        .await;
    assert_eq!(ok["result"]["selectedOptionIds"], json!(["dev", "stage"]));
    let wake = until(30, "the checklist's wake", async || {
        wakes(&server, &a.agent)
            .await
            .into_iter()
            .find(|w| w["payload"]["interactionId"] == list["id"])
    })
    .await;
    assert_eq!(
        wake["payload"]["checkboxSelection"]["selectedOptionIds"],
        json!(["dev", "stage"])
    );

    // Verdicts: pending until every item has one; a rejection needs a reason.
    let review = a
        .ask(
            &server,
            json!({ "kind": "request_item_verdicts", "payload": { "prompt": "Review these",
            "items": [{ "id": "a", "label": "Logo A" }, { "id": "b", "label": "Logo B" }] } }),
        )
        .await;
    let verdicts = format!("{base}/{}/verdicts", id(&review));
    let (status, _) = server
        .post(
            &verdicts,
            json!({ "verdicts": [{ "id": "b", "verdict": "reject" }] }),
        )
        .await;
    assert_eq!(status, 422, "a rejection without a reason");
    let (status, _) = server
        .post(
            &verdicts,
            json!({ "verdicts": [{ "id": "b", "verdict": "maybe" }] }),
        )
        .await;
    assert_eq!(status, 400, "an unknown verdict");
    let half = server
        .ok_post(
            &verdicts,
            json!({ "verdicts": [{ "id": "a", "verdict": "approve" }] }),
        )
        .await;
    assert_eq!(half["status"], "pending", "{half}");
    assert_eq!(half["result"]["complete"], false);
    let full = server
        .ok_post(
            &verdicts,
            json!({ "verdicts": [{ "id": "b", "verdict": "reject", "reason": "Too busy" }] }),
        )
        .await;
    assert_eq!(full["status"], "answered", "{full}");
    assert_eq!(full["result"]["items"].as_array().unwrap().len(), 2);

    // The author withdraws its own card; another agent may not.
    let other = id(&server.agent(&a.cid, "Other", None).await);
    let stale = a
        .ask(
            &server,
            json!({ "kind": "request_confirmation", "payload": { "prompt": "Old idea?" } }),
        )
        .await;
    let other_key = server.key(&other).await;
    let (status, _) = server
        .as_agent(
            &other_key,
            Some(&a.run),
            "POST",
            &format!("{base}/{}/withdraw", id(&stale)),
            Some(json!({})),
        )
        .await;
    assert!(status == 401 || status == 403, "{status}");
    let (status, gone) = a
        .call(
            &server,
            "POST",
            &format!("{base}/{}/withdraw", id(&stale)),
            json!({ "reason": "Moot" }),
        )
        .await;
    assert_eq!(status, 200, "{gone}");
    assert_eq!(gone["result"]["outcome"], "withdrawn");

    // A card addressed to another agent wakes it at once.
    let addressed = a
        .ask(
            &server,
            json!({ "kind": "request_confirmation", "addresseeAgentId": other,
            "payload": { "prompt": "Can you review the schema?" } }),
        )
        .await;
    let wake = until(30, "the addressee's wake", async || {
        wakes(&server, &other)
            .await
            .into_iter()
            .find(|w| w["payload"]["interactionId"] == addressed["id"])
    })
    .await;
    assert_eq!(wake["reason"], "interaction_pending", "{wake}");
}

/// A card's "what this is about" link comes from the agent: the board links
/// only to the web or to its own pages, never to a script or another site
/// dressed as a path.
#[tokio::test]
async fn a_cards_link_is_shown_only_when_it_is_safe_to_follow() {
    let server = TestServer::start().await;
    let a = asker(&server, "Links Co").await;
    let issue = server.ok_get(&format!("/api/issues/{}", a.issue)).await;
    let identifier = issue["identifier"].as_str().unwrap().to_string();
    let prefix = identifier.split('-').next().unwrap().to_string();
    let hrefs = [
        "javascript:alert(document.cookie)",
        "data:text/html,<script>alert(1)</script>",
        "//evil.example/login",
        "https://github.com/acme/app/pull/7",
    ];
    for (i, href) in hrefs.iter().enumerate() {
        a.ask(
            &server,
            json!({ "kind": "request_confirmation", "idempotencyKey": format!("link-{i}"),
                "payload": { "prompt": format!("Merge {i}?"),
                    "target": { "type": "custom", "key": format!("k{i}"), "href": href } } }),
        )
        .await;
    }
    let page = server.page(&format!("/{prefix}/tasks/{identifier}")).await;
    for bad in ["javascript:", "data:text/html", "//evil.example"] {
        assert!(!page.contains(&format!("href=\"{bad}")), "{bad} linked");
    }
    assert!(page.contains("href=\"https://github.com/acme/app/pull/7\""));
}
