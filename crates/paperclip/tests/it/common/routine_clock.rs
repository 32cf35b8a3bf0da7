//! Routine tests' shared setup: a server on the injected routine clock
//! (no waiting for wall-clock minutes), moving it, and making routines,
//! schedules and their runs.

use serde_json::{json, Value};

use super::TestServer;

pub const START: &str = "2026-01-05T09:58:00Z";

pub async fn clock_server() -> TestServer {
    TestServer::start_args(&["--test-clock", START]).await
}

/// Sets the test clock; the server runs one routine pass at that time and
/// says how many runs it dispatched.
pub async fn set_clock(server: &TestServer, at: &str) -> u64 {
    let body = server
        .ok_post("/api/instance/test-clock", json!({ "now": at }))
        .await;
    body["dispatched"].as_u64().unwrap()
}

/// Company "Acme" with one agent named `agent`: their ids.
pub async fn acme_with(server: &TestServer, agent: &str) -> (String, String) {
    let cid = server.company("Acme").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let aid = server.agent(&cid, agent, None).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    (cid, aid)
}

pub async fn routine(server: &TestServer, cid: &str, body: Value) -> Value {
    let (status, r) = server
        .post(&format!("/api/companies/{cid}/routines"), body)
        .await;
    assert_eq!(status, 201, "{r}");
    r
}

pub async fn schedule(server: &TestServer, rid: &str, cron: &str) -> Value {
    let (status, t) = server
        .post(
            &format!("/api/routines/{rid}/triggers"),
            json!({ "kind": "schedule", "cronExpression": cron, "timezone": "UTC" }),
        )
        .await;
    assert_eq!(status, 201, "{t}");
    assert!(t["secretMaterial"].is_null());
    t["trigger"].clone()
}

pub async fn runs(server: &TestServer, rid: &str) -> Vec<Value> {
    server
        .ok_get(&format!("/api/routines/{rid}/runs"))
        .await
        .as_array()
        .unwrap()
        .clone()
}
