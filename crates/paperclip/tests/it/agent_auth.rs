//! Agent identity and the permission matrix: what an agent key may and may
//! not do, and that every agent write names one of its own runs.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

struct Setup {
    cid: String,
    other_cid: String,
    agent: String,
    peer: String,
    token: String,
    run: String,
    issue: String,
    other_issue: String,
}

/// An agent with a key and a live run (its script waits), a peer agent, an
/// issue, and a second company with an issue of its own.
async fn setup(server: &TestServer) -> Setup {
    let cid = server.company("Matrix Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let other_cid = server.company("Elsewhere Inc").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .script_agent(&cid, "Worker", "sleep 30\n", json!({}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let peer = server.agent(&cid, "Peer", None).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let token = server.key(&agent).await;
    let (_, run) = server
        .post(&format!("/api/agents/{agent}/wakeup"), json!({}))
        .await;
    let run = run["id"].as_str().unwrap().to_string();
    server
        .wait_for(&format!("/api/heartbeat-runs/{run}"), 10, |r| {
            r["status"] == "running"
        })
        .await;
    let issue = server
        .issue(&cid, json!({ "title": "Matrix task", "status": "todo" }))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let other_issue = server
        .issue(&other_cid, json!({ "title": "Not yours" }))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    Setup {
        cid,
        other_cid,
        agent,
        peer,
        token,
        run,
        issue,
        other_issue,
    }
}

#[tokio::test]
async fn keys_are_shown_once_and_stored_only_as_a_hash() {
    let server = TestServer::start().await;
    let cid = server.company("Key Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server.agent(&cid, "Holder", None).await;
    let aid = agent["id"].as_str().unwrap();
    let created = server
        .ok_post(&format!("/api/agents/{aid}/keys"), json!({ "name": "ci" }))
        .await;
    let token = created["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("pcp_") && token.len() > 40);
    let listed = server.ok_get(&format!("/api/agents/{aid}/keys")).await;
    assert_eq!(listed[0]["name"], "ci");
    assert!(
        listed[0].get("token").is_none(),
        "the token is never shown again"
    );
    let (status, me) = server
        .as_agent(&token, None, "GET", "/api/agents/me", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(me["id"], aid);
    if server.database_url.is_none() {
        let db = std::fs::read(server.data_dir.join("paperclip.db")).unwrap();
        let wal = std::fs::read(server.data_dir.join("paperclip.db-wal")).unwrap_or_default();
        let haystack = [db, wal].concat();
        assert!(
            !haystack.windows(token.len()).any(|w| w == token.as_bytes()),
            "the plaintext token is not in the database"
        );
    }
    let revoked = server
        .request(
            "DELETE",
            &format!("/api/agents/{aid}/keys/{}", created["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(revoked.0, 200);
    assert!(revoked.1["revokedAt"].is_string());
    let (status, body) = server
        .as_agent(&token, None, "GET", "/api/agents/me", None)
        .await;
    assert_eq!(status, 401, "a revoked key stops working: {body}");
    let (status, _) = server
        .as_agent("pcp_not-a-key", None, "GET", "/api/agents/me", None)
        .await;
    assert_eq!(status, 401);
    let (status, _) = server.get("/api/agents/me").await;
    assert_eq!(status, 401, "the board is not an agent");
}

#[tokio::test]
async fn agents_are_refused_board_actions_with_403() {
    let server = TestServer::start().await;
    let s = setup(&server).await;
    let forbidden: Vec<(&str, String, Option<Value>)> = vec![
        (
            "POST",
            "/api/companies".into(),
            Some(json!({ "name": "Rogue" })),
        ),
        ("DELETE", format!("/api/companies/{}", s.cid), None),
        (
            "POST",
            format!("/api/companies/{}/archive", s.cid),
            Some(json!({})),
        ),
        (
            "POST",
            format!("/api/companies/{}/agents", s.cid),
            Some(json!({ "name": "Clone" })),
        ),
        (
            "PATCH",
            format!("/api/agents/{}", s.peer),
            Some(json!({ "title": "Demoted" })),
        ),
        ("DELETE", format!("/api/agents/{}", s.peer), None),
        (
            "POST",
            format!("/api/agents/{}/pause", s.peer),
            Some(json!({})),
        ),
        (
            "POST",
            format!("/api/agents/{}/resume", s.peer),
            Some(json!({})),
        ),
        (
            "POST",
            format!("/api/agents/{}/terminate", s.peer),
            Some(json!({})),
        ),
        (
            "POST",
            format!("/api/agents/{}/pause", s.agent),
            Some(json!({})),
        ),
        (
            "POST",
            format!("/api/agents/{}/keys", s.agent),
            Some(json!({ "name": "more" })),
        ),
        ("GET", format!("/api/agents/{}/keys", s.agent), None),
        ("DELETE", format!("/api/agents/{}/keys/any", s.agent), None),
        (
            "POST",
            format!("/api/heartbeat-runs/{}/cancel", s.run),
            Some(json!({})),
        ),
        (
            "POST",
            format!("/api/issues/{}/admin/force-release", s.issue),
            Some(json!({})),
        ),
        ("DELETE", format!("/api/issues/{}", s.issue), None),
    ];
    for (method, path, body) in forbidden {
        let (status, resp) = server
            .as_agent(&s.token, Some(&s.run), method, &path, body)
            .await;
        assert_eq!(status, 403, "{method} {path}: {resp}");
        assert_eq!(resp["error"], "Board access required", "{method} {path}");
    }
    // A company's own PATCH: upstream lets its CEO agent change the
    // branding there, so another agent is told what it lacks.
    let company = format!("/api/companies/{}", s.cid);
    let body = json!({ "budgetMonthlyCents": 1 });
    let (status, resp) = server
        .as_agent(&s.token, Some(&s.run), "PATCH", &company, Some(body))
        .await;
    assert_eq!(status, 403, "{resp}");
    assert_eq!(resp["error"], "Only CEO agents can manage company settings");
    let peer = server.ok_get(&format!("/api/agents/{}", s.peer)).await;
    assert_eq!(peer["status"], "idle", "nothing was changed");
    assert!(peer["title"].is_null());
}

#[tokio::test]
async fn an_agent_key_never_reaches_another_company() {
    let server = TestServer::start().await;
    let s = setup(&server).await;
    let attempts: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", format!("/api/companies/{}", s.other_cid), None),
        (
            "GET",
            format!("/api/companies/{}/issues", s.other_cid),
            None,
        ),
        (
            "GET",
            format!("/api/companies/{}/agents", s.other_cid),
            None,
        ),
        (
            "GET",
            format!("/api/companies/{}/activity", s.other_cid),
            None,
        ),
        (
            "GET",
            format!("/api/companies/{}/heartbeat-runs", s.other_cid),
            None,
        ),
        (
            "POST",
            format!("/api/companies/{}/issues", s.other_cid),
            Some(json!({ "title": "intrusion" })),
        ),
        ("GET", format!("/api/issues/{}", s.other_issue), None),
        (
            "PATCH",
            format!("/api/issues/{}", s.other_issue),
            Some(json!({ "title": "pwned" })),
        ),
        (
            "POST",
            format!("/api/issues/{}/comments", s.other_issue),
            Some(json!({ "body": "hi" })),
        ),
        (
            "GET",
            format!("/api/companies/{}/events", s.other_cid),
            None,
        ),
    ];
    for (method, path, body) in attempts {
        let (status, resp) = server
            .as_agent(&s.token, Some(&s.run), method, &path, body)
            .await;
        assert_eq!(status, 403, "{method} {path}: {resp}");
        assert_eq!(resp["error"], "Agent key cannot access another company");
        assert!(!resp.to_string().contains("Not yours"));
    }
    let (_, companies) = server
        .as_agent(&s.token, None, "GET", "/api/companies", None)
        .await;
    assert_eq!(
        companies.as_array().unwrap().len(),
        1,
        "an agent lists only its own company"
    );
    let untouched = server
        .ok_get(&format!("/api/issues/{}", s.other_issue))
        .await;
    assert_eq!(untouched["title"], "Not yours");
}

#[tokio::test]
async fn agent_writes_need_a_run_of_their_own() {
    let server = TestServer::start().await;
    let s = setup(&server).await;
    let writes: Vec<(&str, String, Value)> = vec![
        (
            "PATCH",
            format!("/api/issues/{}", s.issue),
            json!({ "priority": "high" }),
        ),
        (
            "POST",
            format!("/api/issues/{}/checkout", s.issue),
            json!({ "agentId": s.agent, "expectedStatuses": ["todo"] }),
        ),
        (
            "POST",
            format!("/api/issues/{}/release", s.issue),
            json!({}),
        ),
        (
            "POST",
            format!("/api/issues/{}/comments", s.issue),
            json!({ "body": "hello" }),
        ),
    ];
    for (method, path, body) in &writes {
        let (status, resp) = server
            .as_agent(&s.token, None, method, path, Some(body.clone()))
            .await;
        assert_eq!(status, 401, "{method} {path}: {resp}");
        assert_eq!(resp["error"], "Agent run id required");
    }
    let (status, resp) = server
        .as_agent(
            &s.token,
            Some("not-a-run"),
            "PATCH",
            &writes[0].1,
            Some(writes[0].2.clone()),
        )
        .await;
    assert_eq!(status, 401, "an unknown run is refused: {resp}");
    // The peer's run may not be borrowed.
    let peer_token = server.key(&s.peer).await;
    let (status, _) = server
        .as_agent(
            &peer_token,
            Some(&s.run),
            "PATCH",
            &writes[0].1,
            Some(writes[0].2.clone()),
        )
        .await;
    assert_eq!(status, 401, "a run of another agent is refused");
    let (status, _) = server
        .as_agent(
            &s.token,
            Some(&s.run),
            "POST",
            &writes[1].1,
            Some(json!({ "agentId": s.peer, "expectedStatuses": ["todo"] })),
        )
        .await;
    assert_eq!(status, 403, "an agent checks out only for itself");

    let (status, checked) = server
        .as_agent(
            &s.token,
            Some(&s.run),
            "POST",
            &writes[1].1,
            Some(writes[1].2.clone()),
        )
        .await;
    assert_eq!(status, 200, "{checked}");
    assert_eq!(checked["checkoutRunId"], s.run.as_str());
    let (status, comment) = server
        .as_agent(
            &s.token,
            Some(&s.run),
            "POST",
            &writes[3].1,
            Some(writes[3].2.clone()),
        )
        .await;
    assert_eq!(status, 201);
    assert_eq!(comment["authorAgentId"], s.agent.as_str());
    assert_eq!(comment["createdByRunId"], s.run.as_str());
    let (status, _) = server
        .as_agent(
            &s.token,
            None,
            "GET",
            &format!("/api/issues/{}", s.issue),
            None,
        )
        .await;
    assert_eq!(status, 200, "reads need no run");
    let (status, inbox) = server
        .as_agent(&s.token, None, "GET", "/api/agents/me/inbox-lite", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(inbox[0]["identifier"], checked["identifier"]);
    assert_eq!(inbox[0]["dependencyReady"], true);
    let (status, ctx) = server
        .as_agent(
            &s.token,
            None,
            "GET",
            &format!(
                "/api/issues/{}/heartbeat-context?wakeCommentId={}",
                s.issue,
                comment["id"].as_str().unwrap()
            ),
            None,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(ctx["issue"]["identifier"], checked["identifier"]);
    assert_eq!(ctx["commentCursor"]["totalComments"], 1);
    assert_eq!(ctx["wakeComment"]["body"], "hello");
    let (status, released) = server
        .as_agent(
            &s.token,
            Some(&s.run),
            "POST",
            &writes[2].1,
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 200, "{released}");

    // A second run of the same agent may not write over the first run's checkout.
    let (status, _) = server
        .as_agent(
            &s.token,
            Some(&s.run),
            "POST",
            &writes[1].1,
            Some(writes[1].2.clone()),
        )
        .await;
    assert_eq!(status, 200);
    server
        .ok_patch(
            &format!("/api/agents/{}", s.agent),
            json!({ "runtimeConfig": { "heartbeat": { "maxConcurrentRuns": 2 } } }),
        )
        .await;
    let (_, second) = server
        .post(&format!("/api/agents/{}/wakeup", s.agent), json!({}))
        .await;
    let second = second["id"].as_str().unwrap().to_string();
    server
        .wait_for(&format!("/api/heartbeat-runs/{second}"), 10, |r| {
            r["status"] == "running"
        })
        .await;
    let (status, body) = server
        .as_agent(
            &s.token,
            Some(&second),
            "PATCH",
            &writes[0].1,
            Some(writes[0].2.clone()),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "Issue run ownership conflict");
    assert_eq!(body["details"]["checkoutRunId"], s.run.as_str());
}

#[tokio::test]
async fn the_run_token_is_the_agents_identity_during_its_run() {
    let server = TestServer::start().await;
    let cid = server.company("Token Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The script proves what its token can do by calling the API, then prints the answers.
    let script = r#"
me=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $PAPERCLIP_API_KEY" "$PAPERCLIP_API_URL/api/agents/me")
pause=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $PAPERCLIP_API_KEY" "$PAPERCLIP_API_URL/api/agents/$PAPERCLIP_AGENT_ID/pause")
other=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: someone-else" "$PAPERCLIP_API_URL/api/agents/me")
echo "me=$me pause=$pause other=$other"
"#;
    let agent = server.script_agent(&cid, "Self", script, json!({})).await;
    let (_, run) = server
        .post(
            &format!("/api/agents/{}/wakeup", agent["id"].as_str().unwrap()),
            json!({}),
        )
        .await;
    let run = server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", run["id"].as_str().unwrap()),
            15,
            |r| r["status"] == "succeeded",
        )
        .await;
    assert_eq!(
        run["stdoutExcerpt"].as_str().unwrap().trim(),
        "me=200 pause=403 other=401"
    );
}

/// Upstream's agents send their API key with the id of a run that may have
/// ended (the recorded scenario checks out, conflicts and creates a child
/// task that way). That works here too, attributed to the run, but an ended
/// run holds no lock, so nothing is left for a restart or a reaper to clear.
#[tokio::test]
async fn an_agent_key_with_its_finished_run_works_but_locks_nothing() {
    let server = TestServer::start().await;
    let cid = server.company("Afterwards Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut finished = Vec::new();
    for name in ["Closer", "Latecomer"] {
        let agent = server.script_agent(&cid, name, "true\n", json!({})).await["id"]
            .as_str()
            .unwrap()
            .to_string();
        server.wake(&agent, json!({})).await;
        let runs = server.only_run_succeeded(&cid, &agent).await;
        let run = runs[0]["id"].as_str().unwrap().to_string();
        let key = server.key(&agent).await;
        finished.push((agent, key, run));
    }
    let (agent, key, run) = &finished[0];
    let (peer, peer_key, peer_run) = &finished[1];
    let issue = server
        .issue(&cid, json!({ "title": "After the bell", "status": "todo" }))
        .await;
    let iid = issue["id"].as_str().unwrap();
    let checkout = format!("/api/issues/{iid}/checkout");

    let (status, me) = server
        .as_agent(key, Some(run), "GET", "/api/agents/me", None)
        .await;
    assert_eq!(status, 200, "{me}");
    let (status, theirs) = server
        .as_agent(key, Some(peer_run), "GET", "/api/agents/me", None)
        .await;
    assert_eq!(
        status, 401,
        "another agent's run is still refused: {theirs}"
    );
    assert_eq!(theirs["error"], "Run belongs to another agent");

    let body = json!({ "agentId": agent, "expectedStatuses": ["todo", "backlog", "blocked"] });
    let (status, taken) = server
        .as_agent(key, Some(run), "POST", &checkout, Some(body))
        .await;
    assert_eq!(status, 200, "{taken}");
    assert_eq!(taken["status"], "in_progress");
    assert_eq!(taken["assigneeAgentId"], agent.as_str());
    assert_eq!(
        taken["checkoutRunId"],
        Value::Null,
        "an ended run locks nothing"
    );
    assert_eq!(taken["executionRunId"], Value::Null);

    let body = json!({ "agentId": peer, "expectedStatuses": ["todo", "backlog", "blocked"] });
    let (status, conflict) = server
        .as_agent(peer_key, Some(peer_run), "POST", &checkout, Some(body))
        .await;
    assert_eq!(status, 409, "{conflict}");
    assert_eq!(conflict["error"], "Issue checkout conflict");
    assert_eq!(conflict["details"]["assigneeAgentId"], agent.as_str());

    let (status, comment) = server
        .as_agent(
            key,
            Some(run),
            "POST",
            &format!("/api/issues/{iid}/comments"),
            Some(json!({ "body": "Wrapping up" })),
        )
        .await;
    assert_eq!(status, 201, "{comment}");
    assert_eq!(comment["createdByRunId"], run.as_str());
    let (status, child) = server
        .as_agent(
            key,
            Some(run),
            "POST",
            &format!("/api/companies/{cid}/issues"),
            Some(json!({ "title": "Follow-up", "parentId": iid, "assigneeAgentId": peer, "status": "backlog" })),
        )
        .await;
    assert_eq!(status, 201, "{child}");
    assert_eq!(child["createdByAgentId"], agent.as_str());
    assert_eq!(child["parentId"], iid);

    let activity = server
        .ok_get(&format!("/api/companies/{cid}/activity"))
        .await;
    let entry = activity
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == "issue.checked_out")
        .expect("the checkout is in the activity log");
    assert_eq!(entry["runId"], run.as_str(), "{entry}");
    assert_eq!(entry["details"]["unlocked"], true, "{entry}");
    // Nothing anywhere is locked by a run that is not live.
    let issues = server.ok_get(&format!("/api/companies/{cid}/issues")).await;
    for issue in issues.as_array().unwrap() {
        assert_eq!(issue["checkoutRunId"], Value::Null, "{issue}");
    }
}
