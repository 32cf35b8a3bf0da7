//! An authenticated deployment: the first administrator by the bootstrap
//! invite, people joining by invite links with roles, sessions with CSRF
//! tokens and expiry, board API keys, sign-in lockout, and what each kind of
//! caller may do in a company (the isolation matrix), on both engines.

use crate::common;

use common::teams::*;
use common::{until, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

#[tokio::test]
async fn the_first_administrator_comes_from_the_printed_invite_and_founds_companies() {
    let server = TestServer::start_args(AUTH).await;
    let (status, health) = call(&server, Method::GET, "/api/health", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(health["deploymentMode"], "authenticated");
    assert_eq!(health["bootstrapStatus"], "bootstrap_pending");
    assert_eq!(health["bootstrapInviteActive"], true);
    assert!(
        health.get("version").is_none(),
        "anonymous callers get the short health: {health}"
    );

    // Nobody is the board without signing in, not even on loopback.
    let (status, body) = call(&server, Method::GET, "/api/companies", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let page = server.client().get(server.url("/")).send().await.unwrap();
    assert!(page.url().path().starts_with("/login"), "{}", page.url());

    let token = bootstrap_token(&server);
    let someone = sign_up(&server, "Sam", "Sam@Example.com").await;
    // Signed up but a member of nothing, and no administrator: no company.
    let (status, body) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&someone),
        Some(json!({ "name": "Nope" })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["error"], "Instance admin required");
    let (status, _) = call(
        &server,
        Method::POST,
        &format!("/api/invites/{token}/accept"),
        None,
        Some(json!({ "requestType": "human" })),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = call(
        &server,
        Method::POST,
        &format!("/api/invites/{token}/accept"),
        Some(&someone),
        Some(json!({ "requestType": "human" })),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    // The link works once.
    let other = sign_up(&server, "Late", "late@example.com").await;
    let (status, _) = call(
        &server,
        Method::POST,
        &format!("/api/invites/{token}/accept"),
        Some(&other),
        Some(json!({ "requestType": "human" })),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    let (_, health) = call(&server, Method::GET, "/api/health", None, None).await;
    assert_eq!(health["bootstrapStatus"], "ready");
    assert_eq!(health["bootstrapInviteActive"], false);

    let (status, company) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&someone),
        Some(json!({ "name": "Acme" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{company}");
    let cid = company["id"].as_str().unwrap();
    let (_, me) = call(
        &server,
        Method::GET,
        "/api/cli-auth/me",
        Some(&someone),
        None,
    )
    .await;
    assert_eq!(me["source"], "session");
    assert_eq!(me["isInstanceAdmin"], true);
    assert_eq!(me["companyIds"], json!([cid]));
    assert_eq!(me["memberships"][0]["membershipRole"], "owner");
    // The late user sees no company at all.
    let (status, list) = call(&server, Method::GET, "/api/companies", Some(&other), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list, json!([]));
    let (status, _) = call(
        &server,
        Method::GET,
        &format!("/api/companies/{cid}"),
        Some(&other),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn a_browser_write_needs_the_sessions_csrf_token() {
    let (server, admin) = instance(&[]).await;
    let send = |csrf: Option<&str>, origin: Option<&str>| {
        let mut req = server
            .client()
            .post(server.url("/api/companies"))
            .header("cookie", &admin.cookie)
            .json(&json!({ "name": "Forged" }));
        if let Some(c) = csrf {
            req = req.header("x-paperclip-csrf", c);
        }
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        req.send()
    };
    let resp = send(None, None).await.unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["details"]["code"], "csrf_token_invalid");
    let resp = send(Some(&"0".repeat(64)), None).await.unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    // Another site cannot send it even with a token.
    let resp = send(Some(&admin.csrf), Some("https://evil.test"))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let resp = send(Some(&admin.csrf), None).await.unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    // Reads need no token.
    let (status, list) = call(&server, Method::GET, "/api/companies", Some(&admin), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(list.as_array().unwrap().len(), 1);
    // Sign-out ends the session.
    let (status, _) = call(
        &server,
        Method::POST,
        "/api/auth/sign-out",
        Some(&admin),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = call(&server, Method::GET, "/api/companies", Some(&admin), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_session_ends_at_its_expiry() {
    let (server, admin) = instance(&["--session-ttl", "2"]).await;
    let (status, _) = call(
        &server,
        Method::GET,
        "/api/auth/get-session",
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    until(20, "the session to expire", async || {
        let (status, body) = call(&server, Method::GET, "/api/companies", Some(&admin), None).await;
        (status == StatusCode::UNAUTHORIZED).then_some(body)
    })
    .await;
    let (status, _) = call(
        &server,
        Method::GET,
        "/api/auth/get-session",
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn repeated_wrong_passwords_lock_the_account_not_others() {
    let (server, _admin) = instance(&[]).await;
    sign_up(&server, "Bob", "bob@example.com").await;
    sign_up(&server, "Cy", "cy@example.com").await;
    for _ in 0..5 {
        let (status, _, body) = sign_in(&server, "bob@example.com", "wrong password!").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    }
    let (status, session, body) =
        sign_in(&server, "bob@example.com", "correct horse battery").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(session.is_none());
    assert!(body["error"].as_str().unwrap().contains("locked"), "{body}");
    let (status, session, _) = sign_in(&server, "cy@example.com", "correct horse battery").await;
    assert_eq!(status, StatusCode::OK);
    assert!(session.is_some());
    // An unknown address is refused like a wrong password.
    let (status, _, _) = sign_in(&server, "nobody@example.com", "whatever123").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn invites_are_one_time_revocable_and_roles_keep_an_owner() {
    let (server, owner) = instance(&[]).await;
    let (_, company) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Acme" })),
    )
    .await;
    let cid = company["id"].as_str().unwrap().to_string();
    let viewer = join(&server, &owner, &cid, "viewer", "vic@example.com").await;

    // A revoked invite cannot be used.
    let (_, invite) = call(
        &server,
        Method::POST,
        &format!("/api/companies/{cid}/invites"),
        Some(&owner),
        Some(json!({ "humanRole": "admin" })),
    )
    .await;
    let (status, revoked) = call(
        &server,
        Method::POST,
        &format!("/api/invites/{}/revoke", invite["id"].as_str().unwrap()),
        Some(&owner),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{revoked}");
    assert_eq!(revoked["state"], "revoked");
    let (status, _) = call(
        &server,
        Method::GET,
        &format!("/api/invites/{}", invite["token"].as_str().unwrap()),
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // A viewer cannot invite.
    let (status, body) = call(
        &server,
        Method::POST,
        &format!("/api/companies/{cid}/invites"),
        Some(&viewer),
        Some(json!({ "humanRole": "owner" })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    let (_, members) = call(
        &server,
        Method::GET,
        &format!("/api/companies/{cid}/members"),
        Some(&owner),
        None,
    )
    .await;
    let list = members["members"].as_array().unwrap();
    assert_eq!(list.len(), 2);
    let mine = list
        .iter()
        .find(|m| m["principalId"] == owner.user_id.as_str())
        .unwrap();
    let theirs = list
        .iter()
        .find(|m| m["principalId"] == viewer.user_id.as_str())
        .unwrap();
    // The last owner stays.
    let (status, body) = call(
        &server,
        Method::PATCH,
        &format!(
            "/api/companies/{cid}/members/{}",
            mine["id"].as_str().unwrap()
        ),
        Some(&owner),
        Some(json!({ "membershipRole": "admin" })),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    // Suspending takes effect at once, on the next request.
    let theirs_id = theirs["id"].as_str().unwrap();
    let (status, _) = call(
        &server,
        Method::GET,
        &format!("/api/companies/{cid}/issues"),
        Some(&viewer),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = call(
        &server,
        Method::PATCH,
        &format!("/api/companies/{cid}/members/{theirs_id}"),
        Some(&owner),
        Some(json!({ "status": "suspended" })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = call(
        &server,
        Method::GET,
        &format!("/api/companies/{cid}/issues"),
        Some(&viewer),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, _) = call(
        &server,
        Method::POST,
        &format!("/api/companies/{cid}/members/{theirs_id}/archive"),
        Some(&owner),
        Some(json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (_, list) = call(
        &server,
        Method::GET,
        &format!("/api/companies/{cid}/activity?limit=1000"),
        Some(&owner),
        None,
    )
    .await;
    let actions: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["action"].as_str())
        .collect();
    for a in [
        "invite.created",
        "invite.revoked",
        "member.joined",
        "member.suspended",
        "member.removed",
    ] {
        assert!(actions.contains(&a), "{a} in {actions:?}");
    }
}

#[tokio::test]
async fn board_api_keys_act_as_their_person_within_their_scope() {
    let (server, owner) = instance(&[]).await;
    let (_, a) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Alpha" })),
    )
    .await;
    let (_, b) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Beta" })),
    )
    .await;
    let (a, b) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());
    let (status, key) = call(
        &server,
        Method::POST,
        "/api/board-api-keys",
        Some(&owner),
        Some(json!({ "name": "ci", "requestedCompanyId": a })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{key}");
    let token = key["token"].as_str().unwrap().to_string();
    assert!(token.starts_with("pcp_board_"));
    let with_key = |method: Method, path: &str, body: Option<Value>| {
        let mut req = server
            .client()
            .request(method, server.url(path))
            .bearer_auth(&token);
        if let Some(b) = body {
            req = req.json(&b);
        }
        req.send()
    };
    // No CSRF token needed: a key is not a browser's ambient credential.
    let resp = with_key(
        Method::POST,
        &format!("/api/companies/{a}/issues"),
        Some(json!({ "title": "From CI" })),
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), StatusCode::CREATED);
    let resp = with_key(Method::GET, &format!("/api/companies/{b}/issues"), None)
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let me: Value = with_key(Method::GET, "/api/cli-auth/me", None)
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["source"], "board_key");
    assert_eq!(me["keyId"], key["id"]);
    assert_eq!(me["companyIds"], json!([a]));
    // Listing never shows the token; revoking ends it.
    let (_, keys) = call(
        &server,
        Method::GET,
        "/api/board-api-keys",
        Some(&owner),
        None,
    )
    .await;
    assert!(!keys.to_string().contains(&token));
    let (status, _) = call(
        &server,
        Method::DELETE,
        &format!("/api/board-api-keys/{}", key["id"].as_str().unwrap()),
        Some(&owner),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let resp = with_key(Method::GET, &format!("/api/companies/{a}/issues"), None)
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
    // A key for a company the person is not in is refused.
    let stranger = sign_up(&server, "Stra", "stra@example.com").await;
    let (status, _) = call(
        &server,
        Method::POST,
        "/api/board-api-keys",
        Some(&stranger),
        Some(json!({ "requestedCompanyId": a })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Key creation is limited per person (20 an hour): the 21st is refused
    // with the wait, and nothing is stored for it.
    for n in 0..20 {
        let (status, body) = call(
            &server,
            Method::POST,
            "/api/board-api-keys",
            Some(&stranger),
            Some(json!({ "name": format!("k{n}") })),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{n}: {body}");
    }
    let (status, body) = call(
        &server,
        Method::POST,
        "/api/board-api-keys",
        Some(&stranger),
        Some(json!({ "name": "one too many" })),
    )
    .await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert!(
        body["details"]["retryAfterSeconds"].as_u64().unwrap() > 0,
        "{body}"
    );
    let (_, keys) = call(
        &server,
        Method::GET,
        "/api/board-api-keys",
        Some(&stranger),
        None,
    )
    .await;
    assert_eq!(keys.as_array().unwrap().len(), 20);
}

#[tokio::test]
async fn a_password_change_ends_the_other_sessions_and_invite_links_are_rate_limited() {
    let (server, _admin) = instance(&["--disable-sign-up"]).await;
    // Sign-up is closed: accounts come from invites only.
    let (status, body) = call(&server, Method::POST, "/api/auth/sign-up/email", None,
        Some(json!({ "name": "Eve", "email": "eve@example.com", "password": "correct horse battery" }))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    let (_, here, _) = sign_in(&server, "ada@example.com", "correct horse battery").await;
    let (_, there, _) = sign_in(&server, "ada@example.com", "correct horse battery").await;
    let (here, there) = (here.unwrap(), there.unwrap());
    let (status, body) = call(
        &server,
        Method::POST,
        "/api/auth/change-password",
        Some(&here),
        Some(json!({ "currentPassword": "wrong one!", "newPassword": "a new long password" })),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, body) = call(&server, Method::POST, "/api/auth/change-password", Some(&here),
        Some(json!({ "currentPassword": "correct horse battery", "newPassword": "a new long password" }))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = call(
        &server,
        Method::GET,
        "/api/auth/get-session",
        Some(&here),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "the session that changed it stays");
    let (status, _) = call(
        &server,
        Method::GET,
        "/api/auth/get-session",
        Some(&there),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "every other session ends");
    let (status, _, _) = sign_in(&server, "ada@example.com", "correct horse battery").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _, _) = sign_in(&server, "ada@example.com", "a new long password").await;
    assert_eq!(status, StatusCode::OK);

    // Guessing invite tokens is slowed down per address (the bootstrap
    // acceptance above counted as one request from this address).
    let mut statuses = Vec::new();
    for n in 0..25 {
        let (status, _) = call(
            &server,
            Method::GET,
            &format!("/api/invites/pcp_invite_guess{n}"),
            None,
            None,
        )
        .await;
        statuses.push(status);
    }
    let answered = statuses
        .iter()
        .take_while(|s| **s == StatusCode::NOT_FOUND)
        .count();
    assert!((15..=20).contains(&answered), "{statuses:?}");
    assert!(
        statuses[answered..]
            .iter()
            .all(|s| *s == StatusCode::TOO_MANY_REQUESTS),
        "{statuses:?}"
    );
}
