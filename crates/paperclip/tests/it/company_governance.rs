//! A company's interaction resolver governance and its feedback
//! data-sharing consent (upstream's company fields): both set by the board
//! with `PATCH /api/companies/{id}`, validated strictly, logged, and the
//! governance applied when a card is made and when it is resolved.

use crate::common;

use common::asking::{asker, id, questions};
use common::TestServer;
use serde_json::{json, Value};

/// A second agent of the company with a finished run of its own, so it can
/// speak inside a run as resolving a card needs.
async fn helper(s: &TestServer, cid: &str) -> (String, String) {
    let agent = id(&s.agent(cid, "Helper", None).await);
    s.issue(
        cid,
        json!({ "title": "Help out", "status": "todo", "assigneeAgentId": agent }),
    )
    .await;
    let runs = s.only_run_succeeded(cid, &agent).await;
    (s.key(&agent).await, id(&runs[0]))
}

#[tokio::test]
async fn governance_is_validated_stored_and_holds_the_cards_made_under_it() {
    let s = TestServer::start().await;
    let a = asker(&s, "Governed Co").await;
    let company = format!("/api/companies/{}", a.cid);
    assert_eq!(
        s.ok_get(&company).await["interactionResolverGovernance"],
        json!({})
    );
    for (body, path) in [
        (
            json!({ "connection_intent": { "cap": "human_only" } }),
            json!(["interactionResolverGovernance", "connection_intent"]),
        ),
        (
            json!({ "suggest_tasks": { "floor": "anyone" } }),
            json!(["interactionResolverGovernance", "suggest_tasks", "floor"]),
        ),
        (
            json!({ "suggest_tasks": { "cap": "nobody" } }),
            json!(["interactionResolverGovernance", "suggest_tasks", "cap"]),
        ),
    ] {
        let (status, reply) = s
            .patch(&company, json!({ "interactionResolverGovernance": body }))
            .await;
        assert_eq!(status, 400, "{body} -> {reply}");
        assert_eq!(reply["details"][0]["path"], path, "{reply}");
    }
    let rule = json!({
        "suggest_tasks": { "cap": "human_only" },
        "ask_user_questions": { "defaultPolicy": "not_creator" },
        // Upstream's older name is read as the canonical one.
        "request_confirmation": { "cap": "board_only" },
    });
    let set = s
        .ok_patch(&company, json!({ "interactionResolverGovernance": rule }))
        .await;
    let stored = json!({
        "suggest_tasks": { "cap": "human_only" },
        "ask_user_questions": { "defaultPolicy": "not_creator" },
        "request_confirmation": { "cap": "human_only" },
    });
    assert_eq!(set["interactionResolverGovernance"], stored);
    assert_eq!(
        s.ok_get(&company).await["interactionResolverGovernance"],
        stored
    );
    let log = s.ok_get(&format!("{company}/activity")).await;
    let updated = log
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "company.updated")
        .expect("the change is logged");
    assert_eq!(
        updated["details"]["changes"]["interactionResolverGovernance"]["to"],
        stored
    );

    // A card asking `anyone` under a `human_only` cap is a person's.
    let base = format!("/api/issues/{}/interactions", a.issue);
    let capped = a
        .ask(
            &s,
            json!({ "kind": "suggest_tasks", "resolverPolicy": "anyone",
            "payload": { "tasks": [{ "clientKey": "t1", "title": "Write docs" }] } }),
        )
        .await;
    assert_eq!(capped["requestedResolverPolicy"], "anyone", "{capped}");
    assert_eq!(capped["effectiveResolverPolicy"], "human_only");
    assert_eq!(capped["effectiveResolverPolicySource"], "company_cap");
    assert_eq!(capped["resolverPolicyProvenance"], "explicit");
    let (helper_key, helper_run) = helper(&s, &a.cid).await;
    let accept = format!("{base}/{}/accept", id(&capped));
    let (status, reply) = s
        .as_agent(
            &helper_key,
            Some(&helper_run),
            "POST",
            &accept,
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 403, "{reply}");
    let accepted = s.ok_post(&accept, json!({})).await;
    assert_eq!(accepted["status"], "accepted", "the board may");

    // The company's default for a kind fills a card that names none: its
    // author may not answer it, another agent may.
    let inherited = a.ask(&s, questions()).await;
    assert_eq!(inherited["requestedResolverPolicy"], "not_creator");
    assert_eq!(inherited["effectiveResolverPolicy"], "not_creator");
    assert_eq!(inherited["resolverPolicyProvenance"], "inherited");
    assert_eq!(inherited["effectiveResolverPolicySource"], "requested");
    let respond = format!("{base}/{}/respond", id(&inherited));
    let answer = json!({ "answers": [{ "questionId": "db", "optionIds": ["pg"] }] });
    let (status, reply) = a.call(&s, "POST", &respond, answer.clone()).await;
    assert_eq!(status, 403, "{reply}");
    let (status, reply) = s
        .as_agent(
            &helper_key,
            Some(&helper_run),
            "POST",
            &respond,
            Some(answer),
        )
        .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["status"], "answered");

    // An ungoverned kind keeps what it asks for; a card already stricter
    // than the cap keeps its own policy.
    let plain = a
        .ask(
            &s,
            json!({ "kind": "request_checkbox_confirmation", "payload": { "prompt": "Which?",
            "options": [{ "id": "x", "label": "X" }] } }),
        )
        .await;
    assert_eq!(plain["effectiveResolverPolicy"], "anyone");
    assert_eq!(plain["resolverPolicyProvenance"], "inherited");

    // Clearing the rule frees new cards; the cards made under it keep theirs.
    s.ok_patch(&company, json!({ "interactionResolverGovernance": {} }))
        .await;
    let free = a
        .ask(
            &s,
            json!({ "kind": "request_confirmation", "payload": { "prompt": "Ship it?" } }),
        )
        .await;
    assert_eq!(free["effectiveResolverPolicy"], "anyone");
    let cards = s.ok_get(&base).await;
    let kept = cards
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == capped["id"])
        .unwrap();
    assert_eq!(kept["effectiveResolverPolicy"], "human_only");
}

#[tokio::test]
async fn feedback_consent_is_recorded_by_the_server_and_only_from_a_person() {
    let s = TestServer::start().await;
    let company = s.company("Consent Co").await;
    let cid = id(&company);
    let path = format!("/api/companies/{cid}");
    assert_eq!(company["feedbackDataSharingEnabled"], false);
    for key in [
        "feedbackDataSharingConsentAt",
        "feedbackDataSharingConsentByUserId",
        "feedbackDataSharingTermsVersion",
    ] {
        assert_eq!(company[key], Value::Null, "{key}");
    }
    // Who agreed and when are the server's to record, and terms travel
    // with an agreement.
    for (body, field) in [
        (
            json!({ "feedbackDataSharingConsentAt": "2020-01-01T00:00:00Z" }),
            "feedbackDataSharingConsentAt",
        ),
        (
            json!({ "feedbackDataSharingEnabled": true, "feedbackDataSharingConsentByUserId": "someone" }),
            "feedbackDataSharingConsentByUserId",
        ),
        (
            json!({ "feedbackDataSharingTermsVersion": "v2" }),
            "feedbackDataSharingTermsVersion",
        ),
        (
            json!({ "feedbackDataSharingEnabled": true, "feedbackDataSharingTermsVersion": "" }),
            "feedbackDataSharingTermsVersion",
        ),
        (
            json!({ "feedbackDataSharingEnabled": "yes" }),
            "feedbackDataSharingEnabled",
        ),
    ] {
        let (status, reply) = s.patch(&path, body.clone()).await;
        assert_eq!(status, 400, "{body} -> {reply}");
        assert_eq!(reply["details"][0]["path"], json!([field]), "{reply}");
    }
    assert_eq!(s.ok_get(&path).await["feedbackDataSharingEnabled"], false);

    let on = s
        .ok_patch(&path, json!({ "feedbackDataSharingEnabled": true }))
        .await;
    assert_eq!(on["feedbackDataSharingEnabled"], true);
    assert_eq!(on["feedbackDataSharingConsentByUserId"], "local-board");
    assert_eq!(
        on["feedbackDataSharingTermsVersion"],
        "feedback-data-sharing-v1"
    );
    let at = on["feedbackDataSharingConsentAt"].as_str().unwrap();
    assert!(chrono::DateTime::parse_from_rfc3339(at).is_ok(), "{at}");
    // Saying yes again records nothing new; new terms are a new agreement.
    let again = s
        .ok_patch(&path, json!({ "feedbackDataSharingEnabled": true }))
        .await;
    assert_eq!(again["feedbackDataSharingConsentAt"], at);
    let v2 = s
        .ok_patch(
            &path,
            json!({ "feedbackDataSharingEnabled": true, "feedbackDataSharingTermsVersion": "v2" }),
        )
        .await;
    assert_eq!(v2["feedbackDataSharingTermsVersion"], "v2");
    // Withdrawn: the record of the last agreement stays.
    let off = s
        .ok_patch(&path, json!({ "feedbackDataSharingEnabled": false }))
        .await;
    assert_eq!(off["feedbackDataSharingEnabled"], false);
    assert_eq!(off["feedbackDataSharingTermsVersion"], "v2");
    assert_eq!(off["feedbackDataSharingConsentByUserId"], "local-board");

    // Even the CEO agent cannot consent for the company.
    let ceo = s
        .ok_post(
            &format!("{path}/agents"),
            json!({ "name": "Chief", "role": "ceo", "adapterType": "process",
                "adapterConfig": { "command": "true" } }),
        )
        .await;
    let key = s.key(&id(&ceo)).await;
    let (status, reply) = s
        .as_agent(
            &key,
            None,
            "PATCH",
            &path,
            Some(json!({ "feedbackDataSharingEnabled": true })),
        )
        .await;
    assert_eq!(status, 400, "{reply}");
    assert_eq!(s.ok_get(&path).await["feedbackDataSharingEnabled"], false);

    let log = s.ok_get(&format!("{path}/activity")).await;
    let consents: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["action"] == "company.updated"
                && e["details"]["changes"]["feedbackDataSharingEnabled"].is_object()
        })
        .collect();
    assert_eq!(consents.len(), 2, "given and withdrawn: {log}");
}
