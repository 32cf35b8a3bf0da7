//! Web Push end to end, against a fake push service on loopback that does
//! what a real one and a browser do together: it checks each message's
//! VAPID JWT (ES256, with the public key the server publishes; `aud` its own
//! origin, `exp` within a day) and decrypts the aes128gcm body (RFC 8291)
//! with the subscription's private key and auth secret, which the test made
//! as a browser would. Then: an approval requested is pushed naming the
//! agent and the task; its Approve link approves it exactly once; a tampered
//! or forged link and an expired one are refused; a card's Reply link posts
//! the answer; a failed run is pushed; a 410 removes the subscription; bad
//! subscriptions are 400s naming the field. Also the installable app in
//! Chromium (`tests/browser/pwa.mjs`).

mod fake;

use crate::common;

use std::time::Duration;

use common::asking::{asker, id, questions};
use common::TestServer;
use fake::{Device, FakePush};
use serde_json::{json, Value};

/// The payload pushed to device `dev` whose `kind` is `kind` (waits for it).
async fn pushed(fake: &FakePush, dev: &str, kind: &str, about: &str) -> Value {
    common::until(30, &format!("a {kind} push about {about}"), async || {
        fake.received(dev)
            .into_iter()
            .find(|p| p["kind"] == kind && p.to_string().contains(about))
    })
    .await
}

/// The link of the notification's action `action`.
fn link(payload: &Value, action: &str) -> String {
    payload["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == action)
        .and_then(|a| a["link"].as_str())
        .unwrap_or_else(|| panic!("no {action} link in {payload}"))
        .to_string()
}

async fn subscribe(server: &TestServer, fake: &FakePush, name: &str) -> Value {
    let device = Device::new();
    let body = device.subscription(&fake.url(&format!("/push/{name}")));
    fake.add(name, device);
    let (status, sub) = server.post("/api/push/subscriptions", body).await;
    assert_eq!(status, 201, "{sub}");
    sub
}

fn refused_paths(body: &Value) -> Vec<String> {
    body["details"]
        .as_array()
        .map(|d| {
            d.iter()
                .map(|e| {
                    e["path"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|p| p.as_str().unwrap_or("").to_string())
                        .collect::<Vec<_>>()
                        .join(".")
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn notifications_reach_a_device_and_their_actions_act_once() {
    let start = chrono::Utc::now();
    let server = TestServer::start_args(&["--test-clock", &start.to_rfc3339()]).await;
    let fake = FakePush::start().await;
    let key = server.ok_get("/api/push/vapid-public-key").await;
    fake.expect_key(key["publicKey"].as_str().unwrap());

    // Bad subscriptions: a 400 naming each field.
    let good = Device::new().subscription(&fake.url("/push/x"));
    let with = |path: &[&str], value: Value| {
        let mut body = good.clone();
        let mut at = &mut body;
        for p in &path[..path.len() - 1] {
            at = &mut at[*p];
        }
        at[path[path.len() - 1]] = value;
        body
    };
    for (body, field) in [
        (
            with(&["endpoint"], json!("ftp://push.example.com/1")),
            "endpoint",
        ),
        (
            with(&["endpoint"], json!("http://push.example.com/1")),
            "endpoint",
        ),
        (with(&["endpoint"], json!("/push/relative")), "endpoint"),
        (with(&["keys", "p256dh"], json!("AAAA")), "keys.p256dh"),
        (
            with(&["keys", "p256dh"], json!("not base64!")),
            "keys.p256dh",
        ),
        (with(&["keys", "auth"], json!("c2hvcnQ")), "keys.auth"),
    ] {
        let (status, refused) = server.post("/api/push/subscriptions", body).await;
        assert_eq!(status, 400, "{refused}");
        assert_eq!(
            refused_paths(&refused),
            vec![field.to_string()],
            "{refused}"
        );
    }
    let (status, refused) = server
        .post(
            "/api/push/subscriptions",
            json!({ "endpoint": fake.url("/push/x") }),
        )
        .await;
    assert_eq!(status, 400, "keys missing: {refused}");
    let (status, _) = server
        .patch("/api/push/preferences", json!({ "everything": true }))
        .await;
    assert_eq!(status, 400, "an unknown kind");
    let prefs = server
        .ok_patch("/api/push/preferences", json!({ "budgetStops": false }))
        .await;
    assert_eq!(
        prefs,
        json!({ "questions": true, "approvals": true, "failedRuns": true, "budgetStops": false })
    );

    // A phone and a browser the push service has forgotten (410).
    subscribe(&server, &fake, "phone").await;
    subscribe(&server, &fake, "gone").await;
    let sent = server.ok_post("/api/push/test", json!({})).await;
    assert_eq!(
        sent,
        json!({ "delivered": 1, "removed": 1, "failed": 0 }),
        "errors at the fake: {:?}",
        fake.errors()
    );
    pushed(&fake, "phone", "test", "notifications work").await;
    let subs = server.ok_get("/api/push/subscriptions").await;
    let endpoints: Vec<&str> = subs
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["endpoint"].as_str().unwrap())
        .collect();
    assert_eq!(
        endpoints,
        vec![fake.url("/push/phone")],
        "the gone one is removed"
    );
    assert!(
        !subs.to_string().contains("p256dh"),
        "keys never come back: {subs}"
    );

    // An approval requested by an agent: pushed, naming agent and task.
    let a = asker(&server, "Push Works").await;
    let task = server.ok_get(&format!("/api/issues/{}", a.issue)).await;
    let ident = task["identifier"].as_str().unwrap().to_string();
    let request = |title: &str| {
        json!({ "type": "request_board_approval", "issueIds": [a.issue],
            "payload": { "title": title } })
    };
    let (status, approval) = server
        .as_agent(
            &a.key,
            None,
            "POST",
            &format!("/api/companies/{}/approvals", a.cid),
            Some(request("Ship the pricing page")),
        )
        .await;
    assert_eq!(status, 201, "{approval}");
    let approval_id = id(&approval);
    let note = pushed(&fake, "phone", "approval", &approval_id).await;
    let body = note["body"].as_str().unwrap();
    assert!(body.contains("Asker") && body.contains(&ident), "{note}");
    assert!(body.contains("Ship the pricing page"), "{note}");
    assert!(
        !body.contains(&a.issue),
        "tasks by identifier, never id: {note}"
    );
    assert!(note["url"]
        .as_str()
        .unwrap()
        .ends_with(&format!("/approvals/{approval_id}")));
    let approve = link(&note, "approve");
    let reject = link(&note, "reject");
    assert!(!approve.contains(&a.key), "no credential in the payload");

    // A tampered link and one this server never signed are refused.
    let token = approve.rsplit('/').next().unwrap().to_string();
    let (claims, sig) = token.split_once('.').unwrap();
    let mut tampered: Vec<char> = claims.chars().collect();
    tampered[10] = if tampered[10] == 'A' { 'B' } else { 'A' };
    let tampered: String = tampered.into_iter().collect();
    let forged = fake::sign_link(&[7u8; 32], &approval_id);
    for bad in [format!("{tampered}.{sig}"), forged, "garbage".to_string()] {
        let (status, body) = server
            .post(&format!("/api/push/actions/{bad}"), json!({}))
            .await;
        assert_eq!(status, 403, "{body}");
        assert_eq!(body["details"]["reason"], "action_link_invalid");
    }

    // Approve from the notification: once.
    let (status, done) = server.post(&approve, json!({})).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["approval"]["status"], "approved");
    let (status, again) = server.post(&approve, json!({})).await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["details"]["reason"], "action_link_used");
    let (status, late) = server.post(&reject, json!({})).await;
    assert_eq!(status, 409, "rejecting what is approved: {late}");
    let now = server
        .ok_get(&format!("/api/approvals/{approval_id}"))
        .await;
    assert_eq!(now["status"], "approved");
    assert_eq!(now["decidedByUserId"], "local-board");
    let rows = server
        .ok_get(&format!(
            "/api/companies/{}/activity?action=approval.approved",
            a.cid
        ))
        .await;
    let rows: Vec<&Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["entityId"] == json!(approval_id))
        .collect();
    assert_eq!(rows.len(), 1, "one decision, one activity row: {rows:?}");

    // A card's question: pushed with a reply action that answers in the thread.
    a.ask(&server, questions()).await;
    let note = pushed(&fake, "phone", "question", &ident).await;
    assert!(note["title"].as_str().unwrap().contains("Asker"), "{note}");
    let reply = link(&note, "reply");
    let (status, empty) = server.post(&reply, json!({})).await;
    assert_eq!(status, 400, "a reply link needs a reply: {empty}");
    let (status, answered) = server
        .post(&reply, json!({ "reply": "Postgres, please" }))
        .await;
    assert_eq!(status, 200, "{answered}");
    let comments = server
        .ok_get(&format!("/api/issues/{}/comments", a.issue))
        .await;
    assert!(
        comments.to_string().contains("Postgres, please"),
        "{comments}"
    );
    let (status, _) = server.post(&reply, json!({ "reply": "Again" })).await;
    assert_eq!(status, 409);

    // A failed run is pushed with the agent's name.
    let breaker = server
        .ok_post(
            &format!("/api/companies/{}/agents", a.cid),
            json!({ "name": "Breaker",
            "adapterType": "process", "adapterConfig": { "command": "false" } }),
        )
        .await;
    server.wake(&id(&breaker), json!({})).await;
    let failed = pushed(&fake, "phone", "failed_run", "Breaker").await;
    assert_eq!(
        failed["actions"],
        json!([{ "action": "open", "title": "Open" }])
    );

    // A link past its day is refused, and acts on nothing.
    let (_, second) = server
        .as_agent(
            &a.key,
            None,
            "POST",
            &format!("/api/companies/{}/approvals", a.cid),
            Some(request("Hire a designer")),
        )
        .await;
    let second_id = id(&second);
    let note = pushed(&fake, "phone", "approval", &second_id).await;
    let later = start + chrono::Duration::hours(25);
    server
        .ok_post(
            "/api/instance/test-clock",
            json!({ "now": later.to_rfc3339() }),
        )
        .await;
    let (status, expired) = server.post(&link(&note, "approve"), json!({})).await;
    assert_eq!(status, 401, "{expired}");
    assert_eq!(expired["details"]["reason"], "action_link_expired");
    let still = server.ok_get(&format!("/api/approvals/{second_id}")).await;
    assert_eq!(still["status"], "pending");

    assert!(
        fake.errors().is_empty(),
        "the fake push service refused: {:?}",
        fake.errors()
    );
}

#[tokio::test]
async fn the_board_installs_as_an_app_and_has_an_offline_shell() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    common::browser::run("pwa", &server.base, Duration::from_secs(90)).await;
}

#[tokio::test]
async fn on_an_authenticated_instance_push_is_a_signed_in_persons_over_https() {
    use common::teams::{call, instance};
    use reqwest::Method;
    let (server, admin) = instance(&[]).await;
    // The browser fetches the manifest and the worker without a session.
    for path in ["/manifest.webmanifest", "/sw.js", "/ui/icons/icon-192.png"] {
        let resp = server.client().get(server.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{path}");
    }
    let (status, _) = server.get("/api/push/vapid-public-key").await;
    assert_eq!(status, 401, "no one signed in");
    let (status, key) = call(
        &server,
        Method::GET,
        "/api/push/vapid-public-key",
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, 200, "{key}");
    // Plain http is for a local trusted instance on loopback only.
    let device = Device::new();
    let (status, refused) = call(
        &server,
        Method::POST,
        "/api/push/subscriptions",
        Some(&admin),
        Some(device.subscription("http://127.0.0.1:9/push/1")),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused_paths(&refused), vec!["endpoint".to_string()]);
    let (status, sub) = call(
        &server,
        Method::POST,
        "/api/push/subscriptions",
        Some(&admin),
        Some(device.subscription("https://push.example.net/send/abc")),
    )
    .await;
    assert_eq!(status, 201, "{sub}");
    let (status, mine) = call(
        &server,
        Method::GET,
        "/api/push/subscriptions",
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(
        (status, mine.as_array().map(Vec::len)),
        (reqwest::StatusCode::OK, Some(1))
    );
    // A forged link is refused here too, before anything is read.
    let forged = fake::sign_link(&[1u8; 32], "0190c0de-0000-7000-8000-000000000001");
    let (status, body) = server
        .post(&format!("/api/push/actions/{forged}"), json!({}))
        .await;
    assert_eq!(status, 403, "{body}");
}
