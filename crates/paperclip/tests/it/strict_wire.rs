//! Strict on what comes in, exact about what goes out: a JSON body is one
//! value (trailing whitespace aside), a header the server decides on is
//! text or the request is a 400 naming it, and every routine response
//! matches the schema `/api/openapi.json` declares for it.

use crate::common;

use std::collections::BTreeSet;

use common::routine_clock::{acme_with, clock_server, START};
use common::spec::Spec;
use common::TestServer;
use reqwest::header::HeaderValue;
use serde_json::{json, Value};

/// Sends `body` as it is, declared JSON, with extra raw headers.
async fn raw(
    server: &TestServer,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
    headers: &[(&str, &[u8])],
) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut req = server.client().request(method, server.url(path));
    if let Some(body) = body {
        req = req
            .header("content-type", "application/json")
            .body(body.to_vec());
    }
    for (name, value) in headers {
        req = req.header(*name, HeaderValue::from_bytes(value).unwrap());
    }
    let resp = req.send().await.expect("request failed");
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

#[tokio::test]
async fn a_json_body_is_one_value_and_nothing_after_it() {
    let server = TestServer::start().await;
    let cid = server.company("Acme").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/api/companies/{cid}/issues");
    for bad in [
        &br#"{"title":"a"} xyz"#[..],
        br#"{"title":"a"}{"title":"b"}"#,
        br#"{"title":"a"} 1"#,
        b"{\"title\":\"a\"}\n\0",
    ] {
        let (status, body) = raw(&server, "POST", &path, Some(bad), &[]).await;
        assert_eq!(status, 400, "{}: {body}", String::from_utf8_lossy(bad));
        assert_eq!(body["error"], "Malformed JSON body", "{body}");
        assert_eq!(body["details"][0]["code"], "invalid_json", "{body}");
        assert_eq!(body["details"][0]["path"], json!([]), "{body}");
    }
    assert_eq!(
        server.ok_get(&path).await,
        json!([]),
        "a refused body creates nothing"
    );
    // Whitespace after the value is still one value.
    let (status, body) = raw(
        &server,
        "POST",
        &path,
        Some(b"{\"title\":\"a\"} \r\n\t \n"),
        &[],
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let list = server.ok_get(&path).await;
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["title"], "a");
    // The same rule on a PATCH body.
    let issue = list[0]["id"].as_str().unwrap();
    let (status, _) = raw(
        &server,
        "PATCH",
        &format!("/api/issues/{issue}"),
        Some(br#"{"title":"b"}]"#),
        &[],
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(
        server.ok_get(&format!("/api/issues/{issue}")).await["title"],
        "a"
    );
}

#[tokio::test]
async fn a_header_the_server_decides_on_is_text_or_a_400_naming_it() {
    let server = TestServer::start().await;
    let cid = server.company("Acme").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server.agent(&cid, "A", None).await;
    let token = server.key(agent["id"].as_str().unwrap()).await;
    let bearer = format!("Bearer {token}");
    let refused = |(status, body): (u16, Value), header: &str| {
        assert_eq!(status, 400, "{header}: {body}");
        assert_eq!(body["details"]["code"], "invalid_header", "{body}");
        assert_eq!(body["details"]["header"], header, "{body}");
        assert!(body["error"].as_str().unwrap().contains(header), "{body}");
    };
    let latin1 = b"run-\xe9".as_slice();
    let utf8 = "run-\u{e9}".as_bytes();

    // The run id, from the board and from an agent (which was answered 200
    // as if it had sent none).
    let (status, _) = raw(&server, "GET", "/api/companies", None, &[]).await;
    assert_eq!(status, 200);
    for run in [latin1, utf8] {
        let header = [("x-paperclip-run-id", run)];
        refused(
            raw(&server, "GET", "/api/companies", None, &header).await,
            "x-paperclip-run-id",
        );
        let header = [
            ("x-paperclip-run-id", run),
            ("authorization", bearer.as_bytes()),
        ];
        refused(
            raw(&server, "GET", "/api/agents/me", None, &header).await,
            "x-paperclip-run-id",
        );
    }
    let (status, me) = raw(
        &server,
        "GET",
        "/api/agents/me",
        None,
        &[("authorization", bearer.as_bytes())],
    )
    .await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["id"], agent["id"]);

    // A credential that is not text is not "no credential" (401).
    let garbled = [b"Bearer ".as_slice(), token.as_bytes(), b"\xff"].concat();
    refused(
        raw(
            &server,
            "GET",
            "/api/agents/me",
            None,
            &[("authorization", &garbled)],
        )
        .await,
        "authorization",
    );

    // What the guard decides on: where a request comes from, and its body type.
    let path = format!("/api/companies/{cid}/issues");
    refused(
        raw(
            &server,
            "GET",
            &path,
            None,
            &[("origin", b"http://caf\xe9.test")],
        )
        .await,
        "origin",
    );
    refused(
        raw(
            &server,
            "GET",
            &path,
            None,
            &[("sec-fetch-site", b"cross-site\xa0")],
        )
        .await,
        "sec-fetch-site",
    );
    let resp = server
        .client()
        .post(server.url(&path))
        .header(
            "content-type",
            HeaderValue::from_bytes(b"application/json; charset=\xff").unwrap(),
        )
        .body(r#"{"title":"typed"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    refused((400, resp.json().await.unwrap()), "content-type");
    assert_eq!(server.ok_get(&path).await, json!([]), "nothing was created");

    // A header nobody decides on may hold any bytes.
    let (status, _) = raw(&server, "GET", &path, None, &[("x-note", latin1)]).await;
    assert_eq!(status, 200);
}

/// Every routine route, called for real: each 2xx body must match the
/// schema the route declares for that status in the server's own spec, and
/// every operation tagged `routines` must have been checked.
#[tokio::test]
async fn routine_responses_match_the_spec_they_are_served_with() {
    let server = clock_server().await;
    let spec = Spec::of(&server).await;
    // (method, route) pairs whose response was checked.
    let seen = std::cell::RefCell::new(BTreeSet::new());
    let checked = |method: &str, path: &str, status: u16, body: &Value| {
        let route = spec
            .route_of(method, path.split('?').next().unwrap())
            .unwrap_or_else(|| panic!("{method} {path} is not in the spec"));
        spec.assert_response(method, &route, status, body);
        seen.borrow_mut()
            .insert((method.to_ascii_lowercase(), route));
    };
    let (cid, aid) = acme_with(&server, "Reporter").await;

    let call = async |method: &str, path: &str, body: Option<Value>| -> Value {
        let (status, value) = server.request(method, path, body).await;
        assert!(status.is_success(), "{method} {path} -> {status}: {value}");
        checked(method, path, status.as_u16(), &value);
        value
    };

    let routines = format!("/api/companies/{cid}/routines");
    let r = call(
        "POST",
        &routines,
        Some(json!({
            "title": "Report {{topic}}", "description": "On {{date}}",
            "assigneeAgentId": aid, "priority": "high",
            "variables": [
                { "name": "topic", "label": "Topic", "type": "select",
                  "options": ["sales", "ops"], "defaultValue": "sales" },
                { "name": "depth", "type": "number", "required": false }
            ]
        })),
    )
    .await;
    assert_eq!(r["concurrencyPolicy"], "coalesce_if_active");
    assert_eq!(r["activityGatePolicy"], "always");
    let rid = r["id"].as_str().unwrap().to_string();
    // A second one with every other policy value, never run.
    let other = call(
        "POST",
        &routines,
        Some(json!({
            "title": "Quiet", "status": "paused",
            "concurrencyPolicy": "always_enqueue",
            "catchUpPolicy": "enqueue_missed_with_cap",
            "activityGatePolicy": "require_external_activity",
            "activityGateScope": "company"
        })),
    )
    .await;
    let other_id = other["id"].as_str().unwrap().to_string();

    // One trigger of each kind (and each webhook signing mode).
    let triggers = format!("/api/routines/{rid}/triggers");
    let schedule = call(
        "POST",
        &triggers,
        Some(
            json!({ "kind": "schedule", "cronExpression": "0 10 * * *", "timezone": "UTC",
            "label": "daily" }),
        ),
    )
    .await;
    let api = call("POST", &triggers, Some(json!({ "kind": "api" }))).await;
    let mut hooks = Vec::new();
    for mode in ["bearer", "hmac_sha256", "github_hmac", "none"] {
        let hook = call(
            "POST",
            &triggers,
            Some(json!({ "kind": "webhook", "signingMode": mode, "replayWindowSec": 60 })),
        )
        .await;
        assert!(
            hook["secretMaterial"]["webhookSecret"].is_string(),
            "{hook}"
        );
        hooks.push(hook);
    }
    let bearer = &hooks[0];
    let schedule_id = schedule["trigger"]["id"].as_str().unwrap();
    call(
        "PATCH",
        &format!("/api/routine-triggers/{schedule_id}"),
        Some(json!({ "label": "every day" })),
    )
    .await;
    let bearer_id = bearer["trigger"]["id"].as_str().unwrap();
    let rotated = call(
        "POST",
        &format!("/api/routine-triggers/{bearer_id}/rotate-secret"),
        None,
    )
    .await;
    let secret = rotated["secretMaterial"]["webhookSecret"].as_str().unwrap();

    // Runs from every source: manual, api (coalesced into the live task:
    // the same variables, so the same dispatch),
    // the schedule on the test clock, and the public webhook.
    let run = call(
        "POST",
        &format!("/api/routines/{rid}/run"),
        Some(json!({ "variables": { "topic": "ops" } })),
    )
    .await;
    assert_eq!(run["status"], "issue_created", "{run}");
    let coalesced = call(
        "POST",
        &format!("/api/routines/{rid}/run"),
        Some(json!({ "triggerId": api["trigger"]["id"], "source": "api",
            "idempotencyKey": "k-1", "variables": { "topic": "ops" } })),
    )
    .await;
    assert_eq!(coalesced["status"], "coalesced", "{coalesced}");
    let ticked = call(
        "POST",
        "/api/instance/test-clock",
        Some(json!({ "now": "2026-01-05T10:00:05Z" })),
    )
    .await;
    assert_eq!(
        ticked["dispatched"], 1,
        "{ticked} (clock started at {START})"
    );
    let public_id = bearer["trigger"]["publicId"].as_str().unwrap();
    let fire = format!("/api/routine-triggers/public/{public_id}/fire");
    let auth = format!("Bearer {secret}");
    let (status, fired) = raw(
        &server,
        "POST",
        &fire,
        Some(br#"{"event":"push"}"#),
        &[
            ("authorization", auth.as_bytes()),
            ("idempotency-key", b"d-1"),
        ],
    )
    .await;
    assert_eq!(status, 202, "{fired}");
    checked("POST", &fire, status, &fired);
    // An idempotency key that is not text is refused, not dropped (which
    // would have made a second run of a redelivery).
    let runs_before = server.ok_get(&format!("/api/routines/{rid}/runs")).await;
    let (status, body) = raw(
        &server,
        "POST",
        &fire,
        Some(br#"{"event":"push"}"#),
        &[
            ("authorization", auth.as_bytes()),
            ("idempotency-key", b"d-\xe9"),
        ],
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["details"]["header"], "idempotency-key", "{body}");
    assert_eq!(
        server.ok_get(&format!("/api/routines/{rid}/runs")).await,
        runs_before
    );

    // Reads: the list, each routine, its runs and revisions.
    let list = call("GET", &routines, None).await;
    assert_eq!(list.as_array().unwrap().len(), 2, "{list}");
    let detail = call("GET", &format!("/api/routines/{rid}"), None).await;
    assert_eq!(detail["triggers"].as_array().unwrap().len(), 6, "{detail}");
    assert!(detail["activeIssue"].is_object(), "{detail}");
    call("GET", &format!("/api/routines/{other_id}"), None).await;
    let runs = call("GET", &format!("/api/routines/{rid}/runs?limit=20"), None).await;
    let sources: BTreeSet<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["source"].as_str().unwrap())
        .collect();
    assert_eq!(
        sources,
        BTreeSet::from(["api", "manual", "schedule", "webhook"]),
        "{runs}"
    );
    call("GET", &format!("/api/routines/{other_id}/runs"), None).await;

    // Edits, a restore, a deleted trigger, an archived routine.
    call(
        "PATCH",
        &format!("/api/routines/{rid}"),
        Some(json!({ "title": "Report v2 {{topic}}", "catchUpPolicy": "enqueue_missed_with_cap" })),
    )
    .await;
    let revisions = call("GET", &format!("/api/routines/{rid}/revisions"), None).await;
    let first = revisions
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["revisionNumber"] == 1)
        .unwrap_or_else(|| panic!("no first revision: {revisions}"));
    let (status, gone) = server
        .delete(&format!("/api/routine-triggers/{bearer_id}"))
        .await;
    assert_eq!(status, 204, "{gone}");
    checked(
        "DELETE",
        &format!("/api/routine-triggers/{bearer_id}"),
        204,
        &gone,
    );
    let restored = call(
        "POST",
        &format!(
            "/api/routines/{rid}/revisions/{}/restore",
            first["id"].as_str().unwrap()
        ),
        None,
    )
    .await;
    assert!(restored["routine"]["id"] == rid.as_str(), "{restored}");
    call(
        "PATCH",
        &format!("/api/routines/{other_id}"),
        Some(json!({ "status": "archived" })),
    )
    .await;
    call("GET", &routines, None).await;
    call("GET", &format!("/api/routines/{rid}"), None).await;

    let routine_ops: BTreeSet<(String, String)> = spec
        .operations()
        .into_iter()
        .filter(|(method, route)| {
            spec.doc()["paths"][route][method]["tags"]
                .as_array()
                .is_some_and(|tags| tags.iter().any(|t| t == "routines"))
        })
        .collect();
    let seen = seen.into_inner();
    let unchecked: Vec<_> = routine_ops.difference(&seen).collect();
    assert!(
        unchecked.is_empty(),
        "routine operations no response was checked for: {unchecked:?}"
    );
}
