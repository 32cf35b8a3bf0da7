//! An authenticated deployment: the first administrator by the bootstrap
//! invite, people joining by invite links with roles, sessions with CSRF
//! tokens and expiry, board API keys, sign-in lockout, and what each kind of
//! caller may do in a company (the isolation matrix), on both engines.

mod common;

use common::{until, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const AUTH: &[&str] = &["--deployment-mode", "authenticated"];

/// A signed-in browser: its session cookie and the CSRF token for writes.
#[derive(Clone)]
struct Session {
    cookie: String,
    csrf: String,
    user_id: String,
}

async fn call(
    server: &TestServer,
    method: Method,
    path: &str,
    who: Option<&Session>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = server.client().request(method.clone(), server.url(path));
    if let Some(s) = who {
        req = req.header("cookie", &s.cookie);
        if method != Method::GET {
            req = req.header("x-paperclip-csrf", &s.csrf);
        }
    }
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

fn session_of(resp_headers: &reqwest::header::HeaderMap, body: &Value) -> Session {
    let set = resp_headers
        .get("set-cookie")
        .expect("a session cookie")
        .to_str()
        .unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Lax"),
        "{set}"
    );
    let pair = set.split(';').next().unwrap().to_string();
    Session {
        cookie: pair,
        csrf: body["csrfToken"].as_str().unwrap().to_string(),
        user_id: body["user"]["id"].as_str().unwrap().to_string(),
    }
}

async fn sign_up(server: &TestServer, name: &str, email: &str) -> Session {
    sign_up_invited(server, name, email, None).await
}

async fn sign_up_invited(
    server: &TestServer,
    name: &str,
    email: &str,
    invite: Option<&str>,
) -> Session {
    let resp = server
        .client()
        .post(server.url("/api/auth/sign-up/email"))
        .json(&json!({ "name": name, "email": email, "password": "correct horse battery", "inviteToken": invite }))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let headers = resp.headers().clone();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["user"]["email"], email.to_lowercase());
    session_of(&headers, &body)
}

async fn sign_in(
    server: &TestServer,
    email: &str,
    password: &str,
) -> (StatusCode, Option<Session>, Value) {
    let resp = server
        .client()
        .post(server.url("/api/auth/sign-in/email"))
        .json(&json!({ "email": email, "password": password }))
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let body: Value = resp.json().await.unwrap();
    let session = (status == StatusCode::OK).then(|| session_of(&headers, &body));
    (status, session, body)
}

fn bootstrap_token(server: &TestServer) -> String {
    server
        .startup
        .iter()
        .find_map(|l| l.strip_prefix("Bootstrap invite: "))
        .and_then(|url| url.rsplit('/').next())
        .expect("the bootstrap invite is printed at start")
        .to_string()
}

/// A fresh authenticated instance with its administrator signed in.
async fn instance(extra: &[&str]) -> (TestServer, Session) {
    let args: Vec<&str> = AUTH.iter().chain(extra).copied().collect();
    let server = TestServer::start_args(&args).await;
    let token = bootstrap_token(&server);
    let admin = sign_up_invited(&server, "Ada Admin", "ada@example.com", Some(&token)).await;
    let (status, body) = call(
        &server,
        Method::POST,
        &format!("/api/invites/{token}/accept"),
        Some(&admin),
        Some(json!({ "requestType": "human" })),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["bootstrapAccepted"], true);
    (server, admin)
}

/// Invites `email` into `company` with `role` and signs them up through it.
async fn join(
    server: &TestServer,
    inviter: &Session,
    company: &str,
    role: &str,
    email: &str,
) -> Session {
    let (status, invite) = call(
        server,
        Method::POST,
        &format!("/api/companies/{company}/invites"),
        Some(inviter),
        Some(json!({ "humanRole": role })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{invite}");
    let token = invite["token"].as_str().unwrap();
    assert!(token.starts_with("pcp_invite_"));
    let person = sign_up(server, role, email).await;
    let (status, body) = call(
        server,
        Method::POST,
        &format!("/api/invites/{token}/accept"),
        Some(&person),
        Some(json!({ "requestType": "human" })),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body["membership"]["membershipRole"], role);
    person
}

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
}

async fn agent_key_of(server: &TestServer, by: &Session, agent_id: &str) -> String {
    let (status, key) = call(
        server,
        Method::POST,
        &format!("/api/agents/{agent_id}/keys"),
        Some(by),
        Some(json!({ "name": "matrix" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{key}");
    key["token"].as_str().unwrap().to_string()
}

/// What one caller tries, and whether it must work.
struct Cell {
    method: Method,
    path: String,
    body: Option<Value>,
}

#[tokio::test]
async fn every_actor_gets_exactly_what_its_role_allows_in_every_route_group() {
    let (server, owner) = instance(&[]).await;
    let (_, home) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Home" })),
    )
    .await;
    let (_, away) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Away" })),
    )
    .await;
    let cid = home["id"].as_str().unwrap().to_string();
    let other = away["id"].as_str().unwrap().to_string();
    let admin = join(&server, &owner, &cid, "admin", "adm@example.com").await;
    let operator = join(&server, &owner, &cid, "operator", "op@example.com").await;
    let viewer = join(&server, &owner, &cid, "viewer", "view@example.com").await;
    let outsider = join(&server, &owner, &other, "owner", "out@example.com").await;
    let (_, agent) = call(&server, Method::POST, &format!("/api/companies/{cid}/agents"), Some(&owner),
        Some(json!({ "name": "Worker", "adapterType": "process", "adapterConfig": { "command": "true" } }))).await;
    let agent_id = agent["id"].as_str().unwrap().to_string();
    let (_, far_agent) = call(&server, Method::POST, &format!("/api/companies/{other}/agents"), Some(&outsider),
        Some(json!({ "name": "Far", "adapterType": "process", "adapterConfig": { "command": "true" } }))).await;
    let agent_key = agent_key_of(&server, &owner, &agent_id).await;
    let far_key = agent_key_of(&server, &outsider, far_agent["id"].as_str().unwrap()).await;
    let (_, issue) = call(
        &server,
        Method::POST,
        &format!("/api/companies/{cid}/issues"),
        Some(&owner),
        Some(json!({ "title": "Matrix" })),
    )
    .await;
    let issue_id = issue["id"].as_str().unwrap().to_string();
    let (status, secret) = call(
        &server,
        Method::POST,
        &format!("/api/companies/{cid}/secrets"),
        Some(&owner),
        Some(json!({ "name": "Deploy token", "value": "s3cr3t-matrix-value" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{secret}");
    let secret_id = secret["id"].as_str().unwrap().to_string();

    let groups: Vec<(&str, Cell)> = vec![
        (
            "read",
            Cell {
                method: Method::GET,
                path: format!("/api/companies/{cid}/issues"),
                body: None,
            },
        ),
        (
            "task",
            Cell {
                method: Method::POST,
                path: format!("/api/issues/{issue_id}/comments"),
                body: Some(json!({ "body": "hi" })),
            },
        ),
        (
            "wake",
            Cell {
                method: Method::POST,
                path: format!("/api/agents/{agent_id}/wakeup"),
                body: Some(json!({ "source": "on_demand" })),
            },
        ),
        (
            "agents",
            Cell {
                method: Method::PATCH,
                path: format!("/api/agents/{agent_id}"),
                body: Some(json!({ "title": "Renamed" })),
            },
        ),
        (
            "company",
            Cell {
                method: Method::PATCH,
                path: format!("/api/companies/{cid}"),
                body: Some(json!({ "description": "x" })),
            },
        ),
        (
            "invite",
            Cell {
                method: Method::GET,
                path: format!("/api/companies/{cid}/invites"),
                body: None,
            },
        ),
        (
            "members",
            Cell {
                method: Method::GET,
                path: format!("/api/companies/{cid}/members"),
                body: None,
            },
        ),
    ];
    // The specification: which actor may use which group.
    let allowed = |actor: &str, group: &str| -> bool {
        match actor {
            "owner" => true,
            "admin" => group != "members",
            "operator" => matches!(group, "read" | "task" | "wake" | "secrets"),
            "viewer" => group == "read",
            "agent" => matches!(group, "read" | "task" | "wake" | "agents" | "company"),
            _ => false,
        }
    };
    let mut refused = 0;
    let mut cells = 0;
    for actor in [
        "anonymous",
        "outsider",
        "far-agent",
        "viewer",
        "operator",
        "admin",
        "agent",
        "owner",
    ] {
        for (group, cell) in &groups {
            let mut req = server
                .client()
                .request(cell.method.clone(), server.url(&cell.path));
            let session = match actor {
                "owner" => Some(&owner),
                "admin" => Some(&admin),
                "operator" => Some(&operator),
                "viewer" => Some(&viewer),
                "outsider" => Some(&outsider),
                _ => None,
            };
            if let Some(s) = session {
                req = req
                    .header("cookie", &s.cookie)
                    .header("x-paperclip-csrf", &s.csrf);
            }
            match actor {
                "agent" => req = req.bearer_auth(&agent_key),
                "far-agent" => req = req.bearer_auth(&far_key),
                _ => {}
            }
            if let Some(b) = &cell.body {
                req = req.json(b);
            }
            let resp = req.send().await.unwrap();
            let status = resp.status();
            let text = resp.text().await.unwrap();
            cells += 1;
            if allowed(actor, group) {
                // Agents writing to issues need their run: 401 names it. Board-only groups say 403.
                let agent_without_run = actor == "agent" && *group == "task";
                assert!(
                    status.is_success()
                        || agent_without_run
                        || (actor == "agent"
                            && status == StatusCode::FORBIDDEN
                            && matches!(*group, "agents" | "company")),
                    "{actor} × {group}: {status} {text}"
                );
            } else {
                assert!(
                    matches!(
                        status,
                        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::NOT_FOUND
                    ),
                    "{actor} × {group} must be refused: {status} {text}"
                );
                refused += 1;
            }
        }
    }
    assert!(
        cells == 56 && refused >= 30,
        "{cells} cells, {refused} refused"
    );
    // Nothing a refused caller sent was written.
    let (_, comments) = call(
        &server,
        Method::GET,
        &format!("/api/issues/{issue_id}/comments"),
        Some(&owner),
        None,
    )
    .await;
    let authors: Vec<&str> = comments
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["authorUserId"].as_str())
        .collect();
    for (who, s) in [("viewer", &viewer), ("outsider", &outsider)] {
        assert!(
            !authors.contains(&s.user_id.as_str()),
            "{who} commented: {comments}"
        );
    }
    // Only the owner may delete the company.
    let (status, _) = call(
        &server,
        Method::DELETE,
        &format!("/api/companies/{cid}"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(
        &server,
        Method::DELETE,
        &format!("/api/companies/{cid}"),
        Some(&owner),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn pages_show_a_person_their_companies_and_role_only() {
    let (server, owner) = instance(&[]).await;
    let (_, home) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Visible" })),
    )
    .await;
    let (_, away) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Hidden" })),
    )
    .await;
    let viewer = join(
        &server,
        &owner,
        home["id"].as_str().unwrap(),
        "viewer",
        "pv@example.com",
    )
    .await;
    let page = |path: String, s: &Session| {
        server
            .client()
            .get(server.url(&path))
            .header("cookie", &s.cookie)
            .send()
    };
    let resp = page(
        format!("/{}/dashboard", home["issuePrefix"].as_str().unwrap()),
        &viewer,
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let html = resp.text().await.unwrap();
    assert!(
        html.contains("You are a viewer in this company"),
        "read-only notice"
    );
    assert!(
        html.contains(&viewer.csrf),
        "the page carries the CSRF token"
    );
    assert!(
        !html.contains("Hidden"),
        "another company is not in the switcher"
    );
    let resp = page(
        format!("/{}/dashboard", away["issuePrefix"].as_str().unwrap()),
        &viewer,
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let resp = page(
        format!("/{}/dashboard", home["issuePrefix"].as_str().unwrap()),
        &owner,
    )
    .await
    .unwrap();
    let html = resp.text().await.unwrap();
    assert!(!html.contains("You are a viewer"));
    assert!(html.contains("Hidden"));
}

#[tokio::test]
async fn only_an_authenticated_instance_listens_beyond_loopback() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_paperclip"))
        .args(["run", "--bind", "0.0.0.0", "--port", "0"])
        .env(
            "PAPERCLIP_DATA_DIR",
            std::env::temp_dir().join(format!("paperclip-bind-{}", uuid::Uuid::new_v4())),
        )
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--deployment-mode authenticated"));
    let server =
        TestServer::start_args(&["--deployment-mode", "authenticated", "--bind", "0.0.0.0"]).await;
    assert!(
        server.base.starts_with("http://0.0.0.0:"),
        "{}",
        server.base
    );
    // Reached through loopback (any interface answers); only names it serves are accepted.
    let url = server.base.replace("0.0.0.0", "127.0.0.1") + "/api/health";
    let health: Value = server
        .client()
        .get(&url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["deploymentMode"], "authenticated");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_people_with_different_roles_see_the_difference_in_the_browser() {
    if !common::browser::ready() {
        return;
    }
    let (server, owner) = instance(&[]).await;
    let (status, _) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Acme" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    common::browser::run("teams", &server.base, std::time::Duration::from_secs(180)).await;
    // What the browser did, read back from the server.
    let (_, list) = call(&server, Method::GET, "/api/companies", Some(&owner), None).await;
    let cid = list[0]["id"].as_str().unwrap();
    let (_, members) = call(
        &server,
        Method::GET,
        &format!("/api/companies/{cid}/members"),
        Some(&owner),
        None,
    )
    .await;
    let vic = members["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["user"]["email"] == "vic@example.com")
        .unwrap();
    assert_eq!(vic["membershipRole"], "viewer");
    let (_, issues) = call(
        &server,
        Method::GET,
        &format!("/api/companies/{cid}/issues"),
        Some(&owner),
        None,
    )
    .await;
    let titles: Vec<&str> = issues
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["title"].as_str())
        .collect();
    assert_eq!(titles, vec!["Owner creates this"]);
}

#[tokio::test]
async fn the_upstream_cli_works_with_a_board_api_key_and_not_without() {
    let Some(path) = common::upstream::upstream_cli() else {
        return;
    };
    let (server, owner) = instance(&[]).await;
    let (_, company) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Keyed Board" })),
    )
    .await;
    let cid = company["id"].as_str().unwrap().to_string();
    let cli = common::upstream::Cli::new(path, &server);

    let refused = cli.run(&["company", "list", "--json"]).await;
    assert!(!refused.ok, "no key, no companies: {}", refused.stdout);
    assert!(!refused.stdout.contains("Keyed Board"));

    let (_, key) = call(
        &server,
        Method::POST,
        "/api/board-api-keys",
        Some(&owner),
        Some(json!({ "name": "cli" })),
    )
    .await;
    let token = key["token"].as_str().unwrap().to_string();
    let listed = cli
        .ok(&["company", "list", "--json", "--api-key", &token])
        .await
        .json();
    assert_eq!(listed[0]["id"], cid.as_str(), "{listed}");
    let issue = cli
        .ok(&[
            "issue",
            "create",
            "-C",
            &cid,
            "--title",
            "Filed with a board key",
            "--json",
            "--api-key",
            &token,
        ])
        .await
        .json();
    let (_, stored) = call(
        &server,
        Method::GET,
        &format!("/api/issues/{}", issue["id"].as_str().unwrap()),
        Some(&owner),
        None,
    )
    .await;
    assert_eq!(stored["title"], "Filed with a board key");
    assert_eq!(
        stored["createdByUserId"],
        owner.user_id.as_str(),
        "the key acts as its person: {stored}"
    );
    let whoami = cli
        .ok(&["auth", "whoami", "--json", "--api-key", &token])
        .await;
    assert!(whoami.stdout.contains(&owner.user_id), "{}", whoami.stdout);
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
