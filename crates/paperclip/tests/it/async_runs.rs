//! Asynchronous HTTP runs (a remote worker answers 202 and calls back later):
//! they wait for the callback across a restart, and a callback that never
//! comes times the run out instead of holding the agent forever.

use crate::common;

use common::{until, TestServer};
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// A remote worker that accepts every run (202) and hands over the bearer
/// token it was given, for the test to call back with.
async fn worker() -> (String, mpsc::UnboundedReceiver<String>) {
    use axum::routing::post;
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let app = axum::Router::new().route(
        "/accept",
        post(move |headers: axum::http::HeaderMap| {
            let tx = tx.clone();
            async move {
                let auth = headers.get("authorization").unwrap().to_str().unwrap();
                tx.send(auth.trim_start_matches("Bearer ").to_string())
                    .unwrap();
                axum::http::StatusCode::ACCEPTED
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/accept", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, rx)
}

async fn async_agent(server: &TestServer, cid: &str, config: Value) -> String {
    let agent = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Remote", "adapterType": "http", "adapterConfig": config }),
        )
        .await;
    agent["id"].as_str().unwrap().to_string()
}

async fn awaiting_callback(server: &TestServer, run: &str) {
    until(10, "the run to wait for its callback", async || {
        let events = server
            .ok_get(&format!("/api/heartbeat-runs/{run}/events?limit=100"))
            .await;
        events
            .as_array()?
            .iter()
            .any(|e| e["eventType"] == "adapter.awaiting_callback")
            .then_some(())
    })
    .await;
}

#[tokio::test]
async fn an_async_run_keeps_waiting_across_a_restart_and_its_callback_completes_it() {
    let (url, mut tokens) = worker().await;
    let server = TestServer::start().await;
    let cid = server.company("Remote Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let aid = async_agent(
        &server,
        &cid,
        json!({ "url": url, "async": true, "forwardAuth": true, "callbackTimeoutSec": 600 }),
    )
    .await;
    let run = server.wake(&aid, json!({})).await;
    let run = run["id"].as_str().unwrap().to_string();
    let token = tokens.recv().await.unwrap();
    awaiting_callback(&server, &run).await;

    let server = common::restart_keeping_data(server).await;
    let waiting = server.ok_get(&format!("/api/heartbeat-runs/{run}")).await;
    assert_eq!(
        waiting["status"], "running",
        "no local process was lost: {waiting}"
    );
    let (status, done) = server
        .as_agent(
            &token,
            None,
            "POST",
            &format!("/api/heartbeat-runs/{run}/callback"),
            Some(json!({ "status": "succeeded", "result": { "summary": "done remotely" } })),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "succeeded");
}

#[tokio::test]
async fn a_callback_that_never_comes_times_the_run_out_and_frees_the_agent() {
    let (url, mut tokens) = worker().await;
    let server = TestServer::start().await;
    let cid = server.company("Silent Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, body) = server
        .post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Never", "adapterType": "http",
                    "adapterConfig": { "url": url, "async": true, "callbackTimeoutSec": 0 } }),
        )
        .await;
    assert!(
        status == 400 || status == 422,
        "an unbounded wait is refused: {status} {body}"
    );
    assert!(body.to_string().contains("callbackTimeoutSec"), "{body}");

    let aid = async_agent(
        &server,
        &cid,
        json!({ "url": url, "async": true, "forwardAuth": true, "callbackTimeoutSec": 1 }),
    )
    .await;
    let first = server.wake(&aid, json!({})).await;
    let first = first["id"].as_str().unwrap().to_string();
    let token = tokens.recv().await.unwrap();
    let run = server
        .wait_for(&format!("/api/heartbeat-runs/{first}"), 15, |r| {
            r["status"] == "timed_out"
        })
        .await;
    assert_eq!(run["errorCode"], "callback_timeout");
    assert!(run["error"]
        .as_str()
        .unwrap()
        .contains("callbackTimeoutSec"));
    // The slot is free: the next wake runs.
    let second = server.wake(&aid, json!({})).await;
    tokens.recv().await.unwrap();
    assert_ne!(second["id"], first.as_str());
    // The late callback of the timed-out run changes nothing.
    let (status, _) = server
        .as_agent(
            &token,
            None,
            "POST",
            &format!("/api/heartbeat-runs/{first}/callback"),
            Some(json!({ "status": "succeeded" })),
        )
        .await;
    assert!(status.is_client_error(), "{status}");
    let after = server.ok_get(&format!("/api/heartbeat-runs/{first}")).await;
    assert_eq!(after["status"], "timed_out");
}
