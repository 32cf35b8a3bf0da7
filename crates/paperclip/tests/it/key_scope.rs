//! A board API key never makes or does more than it may itself: a key made
//! with a key stays within its parent's companies and expiry and ends with
//! it; a key naming companies takes no instance-level action; and who may
//! read and change the member list. On both engines.

use crate::common;

use common::teams::*;
use common::TestServer;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

/// A request with `Authorization: Bearer <token>` (no cookie, no CSRF token).
async fn with_key(
    server: &TestServer,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = server
        .client()
        .request(method, server.url(path))
        .bearer_auth(token);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn at(text: &Value) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::parse_from_rfc3339(text.as_str().expect("a time"))
        .expect("an RFC 3339 time")
        .to_utc()
}

fn in_secs(secs: i64) -> String {
    (chrono::Utc::now() + chrono::Duration::seconds(secs))
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

async fn found(server: &TestServer, admin: &Session, name: &str) -> String {
    let (status, company) = call(
        server,
        Method::POST,
        "/api/companies",
        Some(admin),
        Some(json!({ "name": name })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{company}");
    company["id"].as_str().unwrap().to_string()
}

/// A key made by a signed-in session.
async fn session_key(server: &TestServer, who: &Session, body: Value) -> Value {
    let (status, key) = call(
        server,
        Method::POST,
        "/api/board-api-keys",
        Some(who),
        Some(body),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{key}");
    key
}

fn token(key: &Value) -> String {
    key["token"].as_str().unwrap().to_string()
}

/// `who` makes a key named `key` that names no company, and founds
/// `company` with it: the key's token, and the answer.
async fn found_with_open_key(
    server: &TestServer,
    who: &Session,
    key: &str,
    company: &str,
) -> (String, StatusCode, Value) {
    let open = token(&session_key(server, who, json!({ "name": key })).await);
    let (status, body) = with_key(
        server,
        &open,
        Method::POST,
        "/api/companies",
        Some(json!({ "name": company })),
    )
    .await;
    (open, status, body)
}

#[tokio::test]
async fn a_key_made_with_a_key_stays_within_its_parent_and_ends_with_it() {
    let (server, owner) = instance(&[]).await;
    let a = found(&server, &owner, "Alpha").await;
    let b = found(&server, &owner, "Beta").await;
    // The leaked CI key: company A only, one minute.
    let parent = session_key(
        &server,
        &owner,
        json!({ "name": "ci", "companyIds": [a], "expiresAt": in_secs(60) }),
    )
    .await;
    let parent_token = token(&parent);
    let parent_expiry = at(&parent["expiresAt"]);
    let (status, body) = with_key(
        &server,
        &parent_token,
        Method::GET,
        &format!("/api/companies/{b}/issues"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["details"]["reason"], "deny_key_scope", "{body}");

    // The attack: no company named, never expiring. Clamped to the parent.
    let (status, child) = with_key(
        &server,
        &parent_token,
        Method::POST,
        "/api/board-api-keys",
        Some(json!({ "name": "escape", "expiresAt": null })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{child}");
    assert_eq!(child["companyIds"], json!([a]), "{child}");
    assert!(at(&child["expiresAt"]) <= parent_expiry, "{child}");
    assert_eq!(child["parentKeyId"], parent["id"], "{child}");
    let child_token = token(&child);
    let (status, body) = with_key(
        &server,
        &child_token,
        Method::GET,
        &format!("/api/companies/{b}/issues"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["details"]["reason"], "deny_key_scope", "{body}");
    let (status, body) = with_key(
        &server,
        &child_token,
        Method::GET,
        &format!("/api/companies/{a}/issues"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Naming a company beyond the parent is refused, alone or with its own.
    for companies in [json!([b]), json!([a, b])] {
        let (status, body) = with_key(
            &server,
            &parent_token,
            Method::POST,
            "/api/board-api-keys",
            Some(json!({ "name": "wider", "companyIds": companies })),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(body["details"]["reason"], "deny_key_scope", "{body}");
        assert_eq!(body["details"]["companyId"], b.as_str(), "{body}");
    }
    let (status, body) = with_key(
        &server,
        &parent_token,
        Method::POST,
        "/api/board-api-keys",
        Some(json!({ "name": "wider", "requestedCompanyId": b })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // A later expiry, or the default 30 days, is the parent's at most.
    for body in [
        json!({ "name": "later", "expiresAt": in_secs(86_400) }),
        json!({ "name": "default" }),
    ] {
        let (status, key) = with_key(
            &server,
            &parent_token,
            Method::POST,
            "/api/board-api-keys",
            Some(body),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{key}");
        assert!(at(&key["expiresAt"]) <= parent_expiry, "{key}");
    }
    // Bad input is a 400 naming the field, not a 500.
    let (status, body) = with_key(
        &server,
        &parent_token,
        Method::POST,
        "/api/board-api-keys",
        Some(json!({ "name": "bad", "expiresAt": "tomorrow" })),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["details"][0]["path"], json!(["expiresAt"]), "{body}");
    // A grandchild, made by the child, is held the same way.
    let (status, grandchild) = with_key(
        &server,
        &child_token,
        Method::POST,
        "/api/board-api-keys",
        Some(json!({ "name": "grandchild", "expiresAt": null })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{grandchild}");
    assert_eq!(grandchild["companyIds"], json!([a]));
    assert!(at(&grandchild["expiresAt"]) <= parent_expiry);
    let grandchild_token = token(&grandchild);

    // A key sees and revokes itself and what it made, not the person's others.
    let other = session_key(&server, &owner, json!({ "name": "laptop" })).await;
    let (status, seen) = with_key(
        &server,
        &child_token,
        Method::GET,
        "/api/board-api-keys",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{seen}");
    let ids: Vec<&str> = seen
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{seen}");
    assert!(ids.contains(&child["id"].as_str().unwrap()));
    assert!(ids.contains(&grandchild["id"].as_str().unwrap()));
    for target in [&parent["id"], &other["id"]] {
        let (status, body) = with_key(
            &server,
            &child_token,
            Method::DELETE,
            &format!("/api/board-api-keys/{}", target.as_str().unwrap()),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    }

    // Revoking the parent ends its children and theirs, and says so.
    let (status, body) = call(
        &server,
        Method::DELETE,
        &format!("/api/board-api-keys/{}", parent["id"].as_str().unwrap()),
        Some(&owner),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for t in [&parent_token, &child_token, &grandchild_token] {
        let (status, body) = with_key(
            &server,
            t,
            Method::GET,
            &format!("/api/companies/{a}/issues"),
            None,
        )
        .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    }
    let (_, keys) = call(
        &server,
        Method::GET,
        "/api/board-api-keys",
        Some(&owner),
        None,
    )
    .await;
    for k in keys.as_array().unwrap() {
        let revoked = !k["revokedAt"].is_null();
        assert_eq!(revoked, k["id"] != other["id"], "{k}");
    }
    let (_, activity) = call(
        &server,
        Method::GET,
        &format!("/api/companies/{a}/activity"),
        Some(&owner),
        None,
    )
    .await;
    let revoked = activity
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "board_api_key.revoked")
        .count();
    assert_eq!(
        revoked, 5,
        "parent, its 3 children, the grandchild: {activity}"
    );

    // The chain is checked as a key is used, not only marked at revocation:
    // a child whose mark is lost still ends with its parent.
    let url = common::database_url(&server.data_dir, &server.database_url);
    let db = common::database(&url).await;
    sqlx::query(&format!(
        "UPDATE board_api_keys SET revoked_at = NULL WHERE CAST(id AS TEXT) = '{}'",
        child["id"].as_str().unwrap()
    ))
    .execute(&db)
    .await
    .unwrap();
    let (status, body) = with_key(
        &server,
        &child_token,
        Method::GET,
        &format!("/api/companies/{a}/issues"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");

    // A key naming no company and never expiring makes the same: it is the
    // person's whole reach already.
    let open = session_key(
        &server,
        &owner,
        json!({ "name": "open", "expiresAt": null }),
    )
    .await;
    let (status, kid) = with_key(
        &server,
        &token(&open),
        Method::POST,
        "/api/board-api-keys",
        Some(json!({ "name": "kid", "expiresAt": null })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{kid}");
    assert_eq!(kid["companyIds"], json!([]));
    assert!(kid["expiresAt"].is_null(), "{kid}");
    let (status, _) = with_key(
        &server,
        &token(&kid),
        Method::GET,
        &format!("/api/companies/{b}/issues"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn a_company_scoped_key_takes_no_instance_level_action() {
    let (server, owner) = instance(&[]).await;
    let a = found(&server, &owner, "Alpha").await;
    let b = found(&server, &owner, "Beta").await;
    let scoped = token(
        &session_key(
            &server,
            &owner,
            json!({ "name": "ci", "companyIds": [a], "expiresAt": in_secs(60) }),
        )
        .await,
    );
    // The owner is an instance administrator, but not through this key.
    for (path, body) in [
        ("/api/companies", json!({ "name": "Gamma" })),
        ("/api/sample-company", json!({})),
    ] {
        let (status, body) = with_key(&server, &scoped, Method::POST, path, Some(body)).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
        assert_eq!(body["details"]["reason"], "deny_key_scope", "{body}");
    }
    let (status, body) = with_key(
        &server,
        &scoped,
        Method::PATCH,
        "/api/auth/profile",
        Some(json!({ "name": "Mallory" })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (_, companies) = with_key(&server, &scoped, Method::GET, "/api/companies", None).await;
    let ids: Vec<&str> = companies
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![a.as_str()]);
    let (_, me) = with_key(&server, &scoped, Method::GET, "/api/cli-auth/me", None).await;
    assert_eq!(me["isInstanceAdmin"], false, "{me}");
    assert_eq!(me["memberships"].as_array().unwrap().len(), 1, "{me}");
    assert_eq!(me["memberships"][0]["companyId"], a.as_str(), "{me}");
    // An invite it makes is for its companies and lives no longer than it.
    let (status, body) = with_key(
        &server,
        &scoped,
        Method::POST,
        &format!("/api/companies/{b}/invites"),
        Some(json!({ "humanRole": "viewer" })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["details"]["reason"], "deny_key_scope", "{body}");
    let (_, me_key) = with_key(&server, &scoped, Method::GET, "/api/board-api-keys", None).await;
    let key_expiry = at(&me_key[0]["expiresAt"]);
    let (status, invite) = with_key(
        &server,
        &scoped,
        Method::POST,
        &format!("/api/companies/{a}/invites"),
        Some(json!({ "humanRole": "viewer" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{invite}");
    assert!(at(&invite["expiresAt"]) <= key_expiry, "{invite}");

    // A person's key scoped to A cannot take them into another company.
    let pat = join(&server, &owner, &a, "admin", "pat@example.com").await;
    let pat_scoped = token(&session_key(&server, &pat, json!({ "companyIds": [a] })).await);
    // Their role bounds what they hand out, key or not.
    let (status, body) = with_key(
        &server,
        &pat_scoped,
        Method::POST,
        &format!("/api/companies/{a}/invites"),
        Some(json!({ "humanRole": "owner" })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, invite_b) = call(
        &server,
        Method::POST,
        &format!("/api/companies/{b}/invites"),
        Some(&owner),
        Some(json!({ "humanRole": "operator" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{invite_b}");
    let accept = format!(
        "/api/invites/{}/accept",
        invite_b["token"].as_str().unwrap()
    );
    let (status, body) = with_key(
        &server,
        &pat_scoped,
        Method::POST,
        &accept,
        Some(json!({ "requestType": "human" })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["details"]["reason"], "deny_key_scope", "{body}");
    let (status, body) = call(
        &server,
        Method::POST,
        &accept,
        Some(&pat),
        Some(json!({ "requestType": "human" })),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    // A key naming no company is not instance administration either, unless
    // its person is an administrator.
    let (_, status, body) = found_with_open_key(&server, &pat, "open", "Pat Co").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // The administrator's key naming no company keeps founding companies.
    let (open, status, company) = found_with_open_key(&server, &owner, "admin cli", "Gamma").await;
    assert_eq!(status, StatusCode::CREATED, "{company}");
    let (_, me) = with_key(&server, &open, Method::GET, "/api/cli-auth/me", None).await;
    assert_eq!(me["isInstanceAdmin"], true, "{me}");
}

#[tokio::test]
async fn every_member_reads_the_member_list_and_only_owners_change_it() {
    let (server, owner) = instance(&[]).await;
    let a = found(&server, &owner, "Alpha").await;
    let b = found(&server, &owner, "Beta").await;
    let admin = join(&server, &owner, &a, "admin", "adm@example.com").await;
    let operator = join(&server, &owner, &a, "operator", "op@example.com").await;
    let viewer = join(&server, &owner, &a, "viewer", "view@example.com").await;
    let outsider = join(&server, &owner, &b, "owner", "out@example.com").await;
    let members = format!("/api/companies/{a}/members");
    for (who, manage) in [
        (&owner, true),
        (&admin, false),
        (&operator, false),
        (&viewer, false),
    ] {
        let (status, body) = call(&server, Method::GET, &members, Some(who), None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["members"].as_array().unwrap().len(), 4, "{body}");
        assert_eq!(body["access"]["canManageMembers"], manage, "{body}");
    }
    let (status, body) = call(&server, Method::GET, &members, Some(&outsider), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // Invite links stay with those who may invite.
    let (status, body) = call(
        &server,
        Method::GET,
        &format!("/api/companies/{a}/invites"),
        Some(&viewer),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    // Changing a member is the owner's.
    let (_, list) = call(&server, Method::GET, &members, Some(&owner), None).await;
    let viewer_member = list["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["principalId"] == viewer.user_id.as_str())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let member = format!("{members}/{viewer_member}");
    for (who, reason) in [(&viewer, "deny_viewer"), (&admin, "deny_missing_grant")] {
        let (status, body) = call(
            &server,
            Method::PATCH,
            &member,
            Some(who),
            Some(json!({ "membershipRole": "operator" })),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(body["details"]["reason"], reason, "{body}");
        assert_eq!(
            body["details"]["permission"], "users:manage_permissions",
            "{body}"
        );
    }
    let (status, body) = call(
        &server,
        Method::PATCH,
        &member,
        Some(&owner),
        Some(json!({ "membershipRole": "operator" })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A key reads members only where it is scoped.
    let key_b = token(&session_key(&server, &owner, json!({ "companyIds": [b] })).await);
    let (status, body) = with_key(&server, &key_b, Method::GET, &members, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["details"]["reason"], "deny_key_scope", "{body}");
}
