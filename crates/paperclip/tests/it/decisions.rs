//! Decisions on upstream's routes, end to end over HTTP: an agent's
//! issue-scoped run asks (single and bundled; idempotent; capped; bad
//! input refused with the reason), the board answers, the chosen option's
//! effects show on the issues, the origin agent wakes once with the
//! outcome, the attention feed lists the decision until it is answered, and
//! the activity log holds every step.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

fn decision(title: &str, key: &str, effects: Value) -> Value {
    json!({
        "title": title, "body": "Why it matters", "ruleKey": "routing.test",
        "options": [
            { "id": "apply", "label": "Apply", "effects": effects },
            { "id": "leave", "label": "Leave unchanged", "effects": [] }
        ],
        "idempotencyKey": key, "continuationPolicy": "wake_origin_agent"
    })
}

fn id(v: &Value) -> String {
    v["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id in {v}"))
        .to_string()
}

#[tokio::test]
async fn an_agents_decision_is_decided_by_the_board_and_its_effects_and_wake_follow() {
    let server = TestServer::start().await;
    let company = server.company("Decide Co").await;
    let (cid, prefix) = (
        id(&company),
        company["issuePrefix"].as_str().unwrap().to_string(),
    );
    let other_cid = id(&server.company("Elsewhere").await);
    let planner = id(&server
        .script_agent(&cid, "Planner", "true\n", json!({}))
        .await);
    let helper = id(&server
        .script_agent(&cid, "Helper", "true\n", json!({}))
        .await);
    let origin = server
        .issue(
            &cid,
            json!({ "title": "Plan the launch", "status": "todo", "assigneeAgentId": planner }),
        )
        .await;
    let run = server.only_run_succeeded(&cid, &planner).await[0].clone();
    let run_id = id(&run);
    let key = server.key(&planner).await;
    let helper_key = server.key(&helper).await;
    let review = id(&server
        .issue(&cid, json!({ "title": "Review copy", "status": "in_progress", "assigneeUserId": "local-board" }))
        .await);
    let reassign = id(&server
        .issue(&cid, json!({ "title": "Fix the footer", "status": "todo" }))
        .await);
    let foreign = id(&server
        .issue(&other_cid, json!({ "title": "Not ours" }))
        .await);
    let path = format!("/api/companies/{cid}/decisions");
    let ask = |body: Value| {
        let (key, run_id, path) = (key.clone(), run_id.clone(), path.clone());
        let server = &server;
        async move {
            server
                .as_agent(&key, Some(&run_id), "POST", &path, Some(body))
                .await
        }
    };

    // Provenance: no run, the board, another company's issue, bad shapes.
    let effects = json!([
        { "type": "update_issue_status", "targetIssueId": review, "staleness": "strict", "status": "in_review",
          "comment": "Moved by {{input.who}}" },
        { "type": "assign_issue", "targetIssueId": reassign, "staleness": "lenient", "assigneeAgentId": helper }
    ]);
    let mut body = decision(
        "Route the launch work?",
        "decision:launch:v1",
        effects.clone(),
    );
    body["inputs"] = json!([{ "id": "who", "label": "Who decided", "required": true }]);
    let (status, err) = server
        .as_agent(&key, None, "POST", &path, Some(body.clone()))
        .await;
    assert_eq!(status, 403, "an agent without a run: {err}");
    let (status, _) = server.post(&path, body.clone()).await;
    assert_eq!(status, 403, "the board does not ask");
    let (status, err) = ask(json!({ "title": "t", "body": "b", "options": [] })).await;
    assert_eq!(status, 400, "{err}");
    assert_eq!(err["details"][0]["path"], json!(["options"]), "{err}");
    let (status, err) = ask(json!({ "title": "t", "body": "b", "options": [{ "id": "a", "label": "A", "effects": [] }], "color": 1 })).await;
    assert_eq!(status, 400, "an unknown key: {err}");
    let (status, err) = ask(decision(
        "Dup",
        "dup",
        json!([{ "type": "assign_issue", "targetIssueId": review, "staleness": "strict" }]),
    ))
    .await;
    assert_eq!(status, 400, "an assignee is required: {err}");
    let (status, err) = ask(decision("Foreign", "foreign", json!([
        { "type": "comment_on_issue", "targetIssueId": foreign, "staleness": "lenient", "bodyMarkdown": "hi" }]))).await;
    assert_eq!(status, 422, "another company's issue: {err}");

    let (status, made) = ask(body.clone()).await;
    assert_eq!(status, 201, "{made}");
    let did = id(&made);
    assert_eq!(made["status"], "open");
    assert_eq!(made["originIssueId"], origin["id"]);
    assert_eq!(made["originRunId"], run_id.as_str());
    assert!(
        made["targetSnapshots"][&review]["updatedAt"].is_string(),
        "{made}"
    );
    let (status, again) = ask(body.clone()).await;
    assert_eq!(
        (status.as_u16(), id(&again)),
        (201, did.clone()),
        "the same key and payload answer the same decision"
    );
    let mut changed = body.clone();
    changed["title"] = json!("Something else");
    let (status, err) = ask(changed).await;
    assert_eq!(status, 409, "{err}");

    // A bundle is atomic: one bad decision makes none; 50 more pass the cap (429).
    let bundles = format!("/api/companies/{cid}/decision-bundles");
    let clear = decision(
        "Clear it?",
        "bundle:a",
        json!([{ "type": "comment_on_issue", "targetIssueId": reassign, "staleness": "lenient", "bodyMarkdown": "Cleared" }]),
    );
    let bad = decision(
        "Bad",
        "bundle:b",
        json!([{ "type": "comment_on_issue", "targetIssueId": foreign, "staleness": "lenient", "bodyMarkdown": "x" }]),
    );
    let (status, err) = server
        .as_agent(
            &key,
            Some(&run_id),
            "POST",
            &bundles,
            Some(json!({ "title": "B", "summary": "s", "decisions": [clear, bad] })),
        )
        .await;
    assert_eq!(status, 422, "{err}");
    let many: Vec<Value> = (0..50)
        .map(|n| decision(&format!("N{n}"), &format!("many:{n}"), json!([])))
        .collect();
    let (status, err) = server
        .as_agent(
            &key,
            Some(&run_id),
            "POST",
            &bundles,
            Some(json!({ "title": "Many", "summary": "s", "decisions": many })),
        )
        .await;
    assert_eq!(status, 429, "50 open per origin agent: {err}");
    let (status, err) = server
        .as_agent(
            &key,
            Some(&run_id),
            "POST",
            &bundles,
            Some(json!({ "title": "None", "summary": "s", "decisions": [] })),
        )
        .await;
    assert_eq!(status, 400, "{err}");
    let second = decision("Withdraw me?", "bundle:c", json!([]));
    let (status, bundle) = server
        .as_agent(&key, Some(&run_id), "POST", &bundles, Some(json!({ "title": "Launch choices", "summary": "Two", "decisions": [clear, second] })))
        .await;
    assert_eq!(status, 201, "{bundle}");
    let in_bundle: Vec<String> = bundle["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(id)
        .collect();
    assert_eq!(in_bundle.len(), 2);
    let open = server.ok_get(&format!("{path}?status=open")).await;
    assert_eq!(
        open.as_array().unwrap().len(),
        3,
        "only the good bundle was made: {open}"
    );
    assert_eq!(server.get(&format!("{path}?status=opened")).await.0, 400);
    assert_eq!(
        server
            .as_agent(&key, Some(&run_id), "GET", &path, None)
            .await
            .0,
        403,
        "the list is the board's"
    );

    // Reading: the origin agent its own, another agent never, unknown 404.
    let one = format!("/api/decisions/{did}");
    assert_eq!(
        server
            .as_agent(&key, Some(&run_id), "GET", &one, None)
            .await
            .0,
        200
    );
    assert_eq!(
        server
            .as_agent(&helper_key, None, "GET", &one, None)
            .await
            .0,
        403
    );
    assert_eq!(
        server
            .get("/api/decisions/0190a3c4-0000-7000-8000-000000000009")
            .await
            .0,
        404
    );
    let attention = format!("/api/companies/{cid}/attention?all=true");
    let feed = server.ok_get(&attention).await;
    let item = format!("decision:decision:{did}");
    let listed = feed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == item.as_str())
        .cloned();
    let listed = listed.unwrap_or_else(|| panic!("the open decision needs a person: {feed}"));
    assert_eq!(listed["relatedIssue"]["identifier"], origin["identifier"]);
    assert_eq!(feed["countsBySourceKind"]["decision"], 3, "{feed}");
    assert_eq!(
        server.as_agent(&key, None, "GET", &attention, None).await.0,
        403
    );
    let inbox = server.page(&format!("/{prefix}/inbox")).await;
    assert!(
        inbox.contains(&format!("data-decision=\"{did}\"")),
        "the inbox shows it with its options"
    );
    assert!(
        inbox.contains(&format!("/api/decisions/{did}/decide")),
        "an option's button decides it"
    );

    // The board decides: bad answers first, then the real one and a replay.
    let decide = format!("{one}/decide");
    let (status, _) = server
        .as_agent(
            &key,
            Some(&run_id),
            "POST",
            &decide,
            Some(json!({ "optionId": "apply" })),
        )
        .await;
    assert_eq!(status, 403, "an agent does not decide");
    assert_eq!(
        server
            .post(&decide, json!({ "optionId": "launch" }))
            .await
            .0,
        422
    );
    assert_eq!(
        server.post(&decide, json!({ "optionId": "apply" })).await.0,
        422,
        "a required input is missing"
    );
    let answer = json!({ "optionId": "apply", "inputValues": { "who": "the board" } });
    let (status, decided) = server.post(&decide, answer.clone()).await;
    assert_eq!(status, 200, "{decided}");
    assert_eq!(decided["status"], "decided");
    assert_eq!(decided["executionStatus"], "succeeded", "{decided}");
    let runs: Vec<&str> = decided["executions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(runs, ["executed", "executed"], "{decided}");
    let moved = server.ok_get(&format!("/api/issues/{review}")).await;
    assert_eq!(moved["status"], "in_review", "{moved}");
    let comments = server
        .ok_get(&format!("/api/issues/{review}/comments"))
        .await;
    assert!(
        comments.to_string().contains("Moved by the board"),
        "{comments}"
    );
    let handed = server.ok_get(&format!("/api/issues/{reassign}")).await;
    assert_eq!(handed["assigneeAgentId"], helper.as_str(), "{handed}");
    assert_eq!(
        server.post(&decide, answer).await.0,
        200,
        "a replay answers the outcome"
    );
    let (status, err) = server.post(&decide, json!({ "optionId": "leave" })).await;
    assert_eq!(
        (status.as_u16(), err["code"].as_str()),
        (409, Some("decision_already_resolved")),
        "{err}"
    );

    // The other two: dismissed by the board, withdrawn by the origin agent.
    let (status, dismissed) = server
        .post(
            &format!("/api/decisions/{}/dismiss", in_bundle[0]),
            json!({ "reason": "Not now" }),
        )
        .await;
    assert_eq!(status, 200, "{dismissed}");
    assert_eq!(
        (
            dismissed["chosenOptionId"].as_str(),
            dismissed["metadata"]["dismissed"].as_bool()
        ),
        (Some("leave"), Some(true))
    );
    let cancel = format!("/api/decisions/{}/cancel", in_bundle[1]);
    assert_eq!(
        server
            .as_agent(&helper_key, None, "POST", &cancel, None)
            .await
            .0,
        403
    );
    let (status, cancelled) = server
        .as_agent(&key, Some(&run_id), "POST", &cancel, None)
        .await;
    assert_eq!(
        (status.as_u16(), cancelled["status"].as_str()),
        (200, Some("cancelled")),
        "{cancelled}"
    );

    // The origin agent woke once per answer, with the decision and its outcome.
    server.quiesce().await;
    let wakes = server
        .ok_get(&format!("/api/agents/{planner}/wakeup-requests?limit=500"))
        .await;
    let of = |decision: &str| -> Vec<Value> {
        let list = wakes.as_array().unwrap().iter();
        list.filter(|w| w["payload"]["decisionId"] == decision)
            .cloned()
            .collect()
    };
    let woke = of(&did);
    assert_eq!(
        woke.len(),
        1,
        "exactly one wake for the decided decision: {wakes}"
    );
    assert_eq!(woke[0]["reason"], "decision_decided", "{wakes}");
    assert_eq!(woke[0]["issueId"], origin["id"]);
    assert_eq!(
        (
            woke[0]["payload"]["chosenOptionId"].as_str(),
            woke[0]["payload"]["executionStatus"].as_str()
        ),
        (Some("apply"), Some("succeeded"))
    );
    assert_eq!(of(&in_bundle[0]).len(), 1, "{wakes}");
    let withdrawn = of(&in_bundle[1]);
    assert_eq!(
        (withdrawn.len(), withdrawn[0]["reason"].as_str()),
        (1, Some("decision_cancelled")),
        "{wakes}"
    );

    let feed = server.ok_get(&attention).await;
    assert_eq!(
        feed["countsBySourceKind"]["decision"], 0,
        "answered decisions leave the feed: {feed}"
    );
    assert_eq!(
        feed["countsBySourceKind"]["review"], 1,
        "the task now in review waits for its person: {feed}"
    );
    let inbox = server.page(&format!("/{prefix}/inbox")).await;
    assert!(!inbox.contains("data-decision="), "and the inbox");
    let stats = server
        .ok_get(&format!("{path}/stats?groupBy=ruleKey"))
        .await;
    assert_eq!(
        stats["totals"],
        json!({ "proposed": 3, "accepted": 1, "rejected": 1, "expired": 0 }),
        "{stats}"
    );
    assert_eq!(
        stats["groups"][0]["chosenOptions"],
        json!([{ "optionId": "apply", "count": 1 }])
    );
    let (status, mine) = server
        .as_agent(
            &helper_key,
            None,
            "GET",
            &format!("{path}/stats?groupBy=ruleKey"),
            None,
        )
        .await;
    assert_eq!(
        (status.as_u16(), &mine["totals"]["proposed"]),
        (200, &json!(0)),
        "an agent reads its own: {mine}"
    );
    assert_eq!(server.get(&format!("{path}/stats")).await.0, 400);

    let activity = server
        .ok_get(&format!("/api/companies/{cid}/activity?limit=200"))
        .await
        .to_string();
    for action in [
        "decision.created",
        "decision.decided",
        "decision.effect_executed",
        "decision.dismissed",
        "decision.cancelled",
    ] {
        assert!(activity.contains(action), "{action} in the activity log");
    }
}
