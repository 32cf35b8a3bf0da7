//! Helpers of the teams tests: an authenticated instance, people signing up,
//! in and joining by invite, and requests as them (cookie and CSRF token).

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use super::TestServer;

pub const AUTH: &[&str] = &["--deployment-mode", "authenticated"];

/// A signed-in browser: its session cookie and the CSRF token for writes.
#[derive(Clone)]
pub struct Session {
    pub cookie: String,
    pub csrf: String,
    pub user_id: String,
}

pub async fn call(
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

pub fn session_of(resp_headers: &reqwest::header::HeaderMap, body: &Value) -> Session {
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

pub async fn sign_up(server: &TestServer, name: &str, email: &str) -> Session {
    sign_up_invited(server, name, email, None).await
}

pub async fn sign_up_invited(
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

pub async fn sign_in(
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

pub fn bootstrap_token(server: &TestServer) -> String {
    server
        .startup
        .iter()
        .find_map(|l| l.strip_prefix("Bootstrap invite: "))
        .and_then(|url| url.rsplit('/').next())
        .expect("the bootstrap invite is printed at start")
        .to_string()
}

/// A fresh authenticated instance with its administrator signed in.
pub async fn instance(extra: &[&str]) -> (TestServer, Session) {
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
pub async fn join(
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

pub async fn agent_key_of(server: &TestServer, by: &Session, agent_id: &str) -> String {
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
pub fn cell(method: Method, path: String, body: Option<Value>) -> Cell {
    Cell { method, path, body }
}

pub struct Cell {
    pub method: Method,
    pub path: String,
    pub body: Option<Value>,
}
