//! Routine webhooks: the secret is shown once and never again; bearer and
//! HMAC deliveries are checked (bad signature and stale timestamp 401, a
//! replay 409, also after a restart); disabled 409, unknown 404; the public
//! URL answers without a session on an authenticated instance.

use crate::common;

use common::teams::{call, instance};
use common::TestServer;
use hmac::{Hmac, Mac};
use reqwest::Method;
use serde_json::{json, Value};
use sha2::Sha256;

fn sign(secret: &str, parts: &[&[u8]]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    for p in parts {
        mac.update(p);
    }
    hex::encode(mac.finalize().into_bytes())
}

async fn fire(
    server: &TestServer,
    public_id: &str,
    body: &str,
    headers: &[(&str, String)],
) -> (u16, Value) {
    let mut req = server
        .client()
        .post(server.url(&format!("/api/routine-triggers/public/{public_id}/fire")))
        .header("content-type", "application/json")
        .body(body.to_string());
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

struct Hook {
    id: String,
    public_id: String,
    secret: String,
}

async fn webhook(server: &TestServer, rid: &str, mode: &str) -> Hook {
    let (status, t) = server
        .post(
            &format!("/api/routines/{rid}/triggers"),
            json!({ "kind": "webhook", "signingMode": mode, "replayWindowSec": 60 }),
        )
        .await;
    assert_eq!(status, 201, "{t}");
    let secret = t["secretMaterial"]["webhookSecret"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(secret.len(), 48);
    assert!(secret.bytes().all(|b| b.is_ascii_hexdigit()));
    let public_id = t["trigger"]["publicId"].as_str().unwrap().to_string();
    assert_eq!(public_id.len(), 24);
    let url = t["secretMaterial"]["webhookUrl"].as_str().unwrap();
    assert!(
        url.ends_with(&format!("/api/routine-triggers/public/{public_id}/fire")),
        "{url}"
    );
    assert_eq!(t["revision"]["routineId"], rid);
    Hook {
        id: t["trigger"]["id"].as_str().unwrap().to_string(),
        public_id,
        secret,
    }
}

/// Company "Acme" whose agent "A" is assigned a routine titled `title`
/// (a task per delivery, however many run at once): their ids.
async fn company_with_routine(server: &TestServer, title: &str) -> (String, String) {
    let cid = server.company("Acme").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server.agent(&cid, "A", None).await;
    let r = server
        .ok_post(
            &format!("/api/companies/{cid}/routines"),
            json!({ "title": title, "assigneeAgentId": agent["id"],
                "concurrencyPolicy": "always_enqueue" }),
        )
        .await;
    (cid, r["id"].as_str().unwrap().to_string())
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

#[tokio::test]
async fn webhooks_check_signatures_and_refuse_replays() {
    let server = TestServer::start().await;
    let (cid, rid) = company_with_routine(&server, "On push {{ref}}").await;
    let bearer = webhook(&server, &rid, "bearer").await;
    let hmac = webhook(&server, &rid, "hmac_sha256").await;
    let github = webhook(&server, &rid, "github_hmac").await;

    // Bearer.
    let body = r#"{"ref":"main"}"#;
    let good = [("authorization", format!("Bearer {}", bearer.secret))];
    let (status, run) = fire(&server, &bearer.public_id, body, &good).await;
    assert_eq!(status, 202, "{run}");
    assert_eq!(run["source"], "webhook");
    assert_eq!(run["status"], "issue_created");
    assert_eq!(run["triggerPayload"]["ref"], "main");
    let issue = server
        .ok_get(&format!(
            "/api/issues/{}",
            run["linkedIssueId"].as_str().unwrap()
        ))
        .await;
    assert_eq!(issue["title"], "On push main");
    let bad = [("authorization", format!("Bearer {}", hmac.secret))];
    assert_eq!(fire(&server, &bearer.public_id, body, &bad).await.0, 401);
    assert_eq!(fire(&server, &bearer.public_id, body, &[]).await.0, 401);

    // HMAC with a timestamp.
    let ts = now_secs().to_string();
    let sig = sign(&hmac.secret, &[ts.as_bytes(), b".", body.as_bytes()]);
    let signed = [
        ("x-paperclip-timestamp", ts.clone()),
        ("x-paperclip-signature", format!("sha256={sig}")),
    ];
    let (status, run) = fire(&server, &hmac.public_id, body, &signed).await;
    assert_eq!(status, 202, "{run}");
    let (status, again) = fire(&server, &hmac.public_id, body, &signed).await;
    assert_eq!(status, 409, "{again}");
    assert_eq!(again["error"], "Webhook replay detected");
    let wrong = [
        ("x-paperclip-timestamp", ts.clone()),
        ("x-paperclip-signature", sign(&hmac.secret, &[b"other"])),
    ];
    assert_eq!(fire(&server, &hmac.public_id, body, &wrong).await.0, 401);
    let old = (now_secs() - 3600).to_string();
    let stale = [
        ("x-paperclip-timestamp", old.clone()),
        (
            "x-paperclip-signature",
            sign(&hmac.secret, &[old.as_bytes(), b".", body.as_bytes()]),
        ),
    ];
    assert_eq!(fire(&server, &hmac.public_id, body, &stale).await.0, 401);
    // Milliseconds are accepted too.
    let ms = (now_secs() * 1000 + 7).to_string();
    let in_ms = [
        ("x-paperclip-timestamp", ms.clone()),
        (
            "x-paperclip-signature",
            sign(&hmac.secret, &[ms.as_bytes(), b".", body.as_bytes()]),
        ),
    ];
    assert_eq!(fire(&server, &hmac.public_id, body, &in_ms).await.0, 202);

    // GitHub style.
    let gh = [(
        "x-hub-signature-256",
        format!("sha256={}", sign(&github.secret, &[body.as_bytes()])),
    )];
    assert_eq!(fire(&server, &github.public_id, body, &gh).await.0, 202);
    // GitHub signs the body alone, with no time: the same signed delivery
    // sent again (a captured request) is a replay.
    let (status, again) = fire(&server, &github.public_id, body, &gh).await;
    assert_eq!(status, 409, "{again}");
    assert!(again["error"].as_str().unwrap().contains("replay"));
    let gh_bad = [(
        "x-hub-signature-256",
        format!("sha256={}", sign(&bearer.secret, &[body.as_bytes()])),
    )];
    assert_eq!(fire(&server, &github.public_id, body, &gh_bad).await.0, 401);

    // Unknown and malformed public ids; a disabled trigger.
    assert_eq!(
        fire(&server, "0123456789abcdef01234567", body, &good)
            .await
            .0,
        404
    );
    assert_eq!(fire(&server, "nope", body, &good).await.0, 404);
    server
        .ok_patch(
            &format!("/api/routine-triggers/{}", bearer.id),
            json!({ "enabled": false }),
        )
        .await;
    assert_eq!(fire(&server, &bearer.public_id, body, &good).await.0, 409);
    // Without the secret, nothing is learnt of the trigger's state.
    let (status, _) = fire(&server, &bearer.public_id, body, &bad).await;
    assert_eq!(status, 401);
    // A timestamp at i64's edge is outside the window, not a crash.
    for edge in [i64::MIN, i64::MAX] {
        let stamped = [
            ("x-paperclip-timestamp", edge.to_string()),
            (
                "x-paperclip-signature",
                sign(
                    &hmac.secret,
                    &[edge.to_string().as_bytes(), b".", body.as_bytes()],
                ),
            ),
        ];
        let (status, why) = fire(&server, &hmac.public_id, body, &stamped).await;
        assert_eq!(status, 401, "{why}");
        assert!(why["error"].as_str().unwrap().contains("replay window"));
    }

    // Rotating: the old secret stops working, the new one is shown once.
    let rotated = server
        .ok_post(
            &format!("/api/routine-triggers/{}/rotate-secret", github.id),
            json!({}),
        )
        .await;
    let fresh = rotated["secretMaterial"]["webhookSecret"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(fresh, github.secret);
    assert_eq!(fire(&server, &github.public_id, body, &gh).await.0, 401);
    let gh_new = [("x-hub-signature-256", sign(&fresh, &[body.as_bytes()]))];
    assert_eq!(fire(&server, &github.public_id, body, &gh_new).await.0, 202);
    let (status, _) = server
        .post(
            &format!(
                "/api/routine-triggers/{}/rotate-secret",
                uuid::Uuid::new_v4()
            ),
            json!({}),
        )
        .await;
    assert_eq!(status, 404);

    // No secret anywhere a reader can see.
    let mut seen = String::new();
    for path in [
        format!("/api/routines/{rid}"),
        format!("/api/companies/{cid}/routines"),
        format!("/api/routines/{rid}/revisions"),
        format!("/api/routines/{rid}/runs"),
        format!("/api/companies/{cid}/activity?limit=1000"),
    ] {
        seen.push_str(&server.ok_get(&path).await.to_string());
    }
    for secret in [&bearer.secret, &hmac.secret, &github.secret, &fresh] {
        assert!(!seen.contains(secret.as_str()), "a webhook secret leaked");
    }
    let actions = server.actions(&cid).await;
    for a in [
        "routine.trigger_created",
        "routine.trigger_updated",
        "routine.trigger_secret_rotated",
        "routine.run_triggered",
    ] {
        assert!(actions.iter().any(|x| x == a), "{a}");
    }
    let activity = server
        .ok_get(&format!("/api/companies/{cid}/activity?limit=1000"))
        .await;
    assert!(activity
        .as_array()
        .unwrap()
        .iter()
        .any(|a| { a["action"] == "routine.run_triggered" && a["actorId"] == "routine-webhook" }));

    // The replay is still refused after a restart (the key is stored).
    let (data_dir, db) = server.stop_keeping_data();
    let server = TestServer::start_with(data_dir, db, &[]).await;
    let (status, again) = fire(&server, &hmac.public_id, body, &signed).await;
    assert_eq!(status, 409, "{again}");

    // Deleting the trigger: 204, then its URL is gone.
    let (status, _) = server
        .delete(&format!("/api/routine-triggers/{}", hmac.id))
        .await;
    assert_eq!(status, 204);
    assert_eq!(fire(&server, &hmac.public_id, body, &signed).await.0, 404);
}

#[tokio::test]
async fn the_public_webhook_needs_no_session_on_an_authenticated_instance() {
    let (server, admin) = instance(&[]).await;
    let (status, company) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&admin),
        Some(json!({ "name": "Acme" })),
    )
    .await;
    assert_eq!(status, 201, "{company}");
    let cid = company["id"].as_str().unwrap();
    let (status, r) = call(
        &server,
        Method::POST,
        &format!("/api/companies/{cid}/routines"),
        Some(&admin),
        Some(json!({ "title": "Hook", "status": "paused" })),
    )
    .await;
    assert_eq!(status, 201, "{r}");
    let rid = r["id"].as_str().unwrap();
    // Without a session the board's routes are closed...
    let (status, _) = call(
        &server,
        Method::GET,
        &format!("/api/routines/{rid}"),
        None,
        None,
    )
    .await;
    assert_eq!(status, 401);
    let (status, t) = call(
        &server,
        Method::POST,
        &format!("/api/routines/{rid}/triggers"),
        Some(&admin),
        Some(json!({ "kind": "webhook", "signingMode": "bearer" })),
    )
    .await;
    assert_eq!(status, 201, "{t}");
    let public_id = t["trigger"]["publicId"].as_str().unwrap();
    let secret = t["secretMaterial"]["webhookSecret"].as_str().unwrap();
    // ...the webhook is answered on its own terms: it reached the handler,
    // which says the routine is paused (409); an unknown id is 404.
    let good = [("authorization", format!("Bearer {secret}"))];
    let (status, body) = fire(&server, public_id, "{}", &good).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        fire(&server, "0123456789abcdef01234567", "{}", &good)
            .await
            .0,
        404
    );
}

/// Restoring a revision makes its deleted triggers again: a schedule as it
/// was, a webhook under a new URL and secret, handed back once in
/// `secretMaterials` (as upstream's restore answers). The deleted webhook's
/// old URL stays dead, and the new secret is in no read or activity entry.
#[tokio::test]
async fn a_restore_makes_deleted_triggers_again_with_a_new_webhook_secret() {
    let server = TestServer::start().await;
    let (cid, rid) = company_with_routine(&server, "Nightly").await;
    let (status, schedule) = server
        .post(
            &format!("/api/routines/{rid}/triggers"),
            json!({ "kind": "schedule", "cronExpression": "15 2 * * *",
                "timezone": "Europe/Paris", "label": "night" }),
        )
        .await;
    assert_eq!(status, 201, "{schedule}");
    let old = webhook(&server, &rid, "bearer").await;
    let with_both = server.ok_get(&format!("/api/routines/{rid}")).await;
    let revision = with_both["latestRevisionId"].as_str().unwrap().to_string();
    for id in [schedule["trigger"]["id"].as_str().unwrap(), &old.id] {
        let (status, gone) = server.delete(&format!("/api/routine-triggers/{id}")).await;
        assert_eq!(status, 204, "{gone}");
    }
    let restored = server
        .ok_post(
            &format!("/api/routines/{rid}/revisions/{revision}/restore"),
            json!({}),
        )
        .await;
    let materials = restored["secretMaterials"].as_array().unwrap();
    assert_eq!(materials.len(), 1, "{restored}");
    let secret = materials[0]["webhookSecret"].as_str().unwrap().to_string();
    assert_eq!(secret.len(), 48);
    assert_ne!(secret, old.secret);

    let detail = server.ok_get(&format!("/api/routines/{rid}")).await;
    let triggers = detail["triggers"].as_array().unwrap();
    assert_eq!(triggers.len(), 2, "{detail}");
    let night = triggers.iter().find(|t| t["kind"] == "schedule").unwrap();
    assert_eq!(night["cronExpression"], "15 2 * * *");
    assert_eq!(night["timezone"], "Europe/Paris");
    assert_eq!(night["label"], "night");
    assert!(night["nextRunAt"].is_string());
    let hook = triggers.iter().find(|t| t["kind"] == "webhook").unwrap();
    assert_eq!(hook["signingMode"], "bearer");
    assert_eq!(hook["replayWindowSec"], 60);
    let public_id = hook["publicId"].as_str().unwrap();
    assert_ne!(public_id, old.public_id);
    assert!(materials[0]["webhookUrl"]
        .as_str()
        .unwrap()
        .ends_with(&format!("/api/routine-triggers/public/{public_id}/fire")));

    // The old URL is gone; the new one takes the new secret, not the old.
    let body = r#"{"n":1}"#;
    let auth = |s: &str| [("authorization", format!("Bearer {s}"))];
    let (status, _) = fire(&server, &old.public_id, body, &auth(&secret)).await;
    assert_eq!(status, 404);
    let (status, refused) = fire(&server, public_id, body, &auth(&old.secret)).await;
    assert_eq!(status, 401, "{refused}");
    let (status, run) = fire(&server, public_id, body, &auth(&secret)).await;
    assert_eq!(status, 202, "{run}");
    assert_eq!(run["status"], "issue_created");

    // Shown once: in no read, revision or activity entry.
    let activity = server
        .ok_get(&format!("/api/companies/{cid}/activity?limit=200"))
        .await;
    let revisions = server
        .ok_get(&format!("/api/routines/{rid}/revisions"))
        .await;
    for text in [
        activity.to_string(),
        revisions.to_string(),
        server
            .ok_get(&format!("/api/routines/{rid}"))
            .await
            .to_string(),
    ] {
        assert!(!text.contains(&secret));
    }
    assert!(activity
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["action"] == "routine.trigger_created" && a["entityId"] == hook["id"]));
}
