//! The HTTP adapter against a real loopback server.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, Method, StatusCode};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use common::{invocation, RecordingSink};
use paperclip_adapters::http::HttpAdapter;
use paperclip_adapters::{Adapter, ErrorCode, Invocation, Outcome, OutcomeStatus, Stream};
use serde_json::{json, Value};

/// Echoes what arrived so tests can check body and headers.
async fn echo(method: Method, headers: HeaderMap, body: String) -> Json<Value> {
    let header = |name: &str| headers.get(name).map(|v| v.to_str().unwrap().to_string());
    Json(json!({
        "method": method.as_str(),
        "body": serde_json::from_str::<Value>(&body).unwrap_or(Value::String(body)),
        "runIdHeader": header("x-paperclip-run-id"),
        "authorization": header("authorization"),
        "contentType": header("content-type"),
        "custom": header("x-custom"),
    }))
}

async fn server() -> String {
    let app = Router::new()
        .route("/echo", any(echo))
        .route("/text", post(|| async { "plain words" }))
        .route(
            "/fail",
            post(|| async {
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("database exploded {}", "x".repeat(500)),
                )
            }),
        )
        .route(
            "/accepted",
            post(|| async { (StatusCode::ACCEPTED, Json(json!({"jobId": "j1"}))) }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

async fn run(inv: Invocation) -> (Outcome, Arc<RecordingSink>) {
    let sink = RecordingSink::new();
    let outcome = HttpAdapter::default().invoke(inv, sink.clone()).await;
    (outcome, sink)
}

#[tokio::test]
async fn ok_response_succeeds_with_json_result_and_default_body() {
    let base = server().await;
    let (out, sink) = run(invocation(json!({"url": format!("{base}/echo?token=abc")}))).await;
    assert_eq!(out.status, OutcomeStatus::Succeeded, "{out:?}");
    let result = out.result.unwrap();
    assert_eq!(result["method"], "POST");
    assert_eq!(
        result["body"],
        json!({"runId": "run-1", "agentId": "agent-1", "companyId": "company-1",
               "context": {"issueId": "ISS-7", "count": 4, "nested": {"a": 1}}})
    );
    assert_eq!(result["runIdHeader"], "run-1");
    assert_eq!(
        result["authorization"],
        Value::Null,
        "auth is only forwarded when asked"
    );
    assert_eq!(result["contentType"], "application/json");

    let system = sink.text(Stream::System);
    assert!(system.contains(&format!("POST {base}/echo\n")), "{system}");
    assert!(system.contains("HTTP 200 OK"), "{system}");
    assert!(!system.contains("token=abc"));
    assert_eq!(sink.events_of("adapter.invoke").len(), 1);
}

#[tokio::test]
async fn forward_auth_and_configured_headers_are_sent_but_never_logged() {
    let base = server().await;
    let config = json!({"url": format!("{base}/echo"), "forwardAuth": true, "headers": {"X-Custom": "hdr-secret"}});
    let (out, sink) = run(invocation(config)).await;
    let result = out.result.unwrap();
    assert_eq!(result["authorization"], "Bearer secret-key");
    assert_eq!(result["custom"], "hdr-secret");
    let recorded = format!(
        "{:?}{:?}",
        sink.logs.lock().unwrap(),
        sink.events.lock().unwrap()
    );
    assert!(!recorded.contains("secret-key") && !recorded.contains("hdr-secret"));
}

#[tokio::test]
async fn get_sends_no_body() {
    let base = server().await;
    let (out, _) = run(invocation(
        json!({"url": format!("{base}/echo"), "method": "get"}),
    ))
    .await;
    let result = out.result.unwrap();
    assert_eq!(result["method"], "GET");
    assert_eq!(result["body"], "");
}

#[tokio::test]
async fn non_json_response_becomes_body_text() {
    let base = server().await;
    let (out, _) = run(invocation(json!({"url": format!("{base}/text")}))).await;
    assert_eq!(out.status, OutcomeStatus::Succeeded);
    assert_eq!(out.result, Some(json!({"body": "plain words"})));
}

#[tokio::test]
async fn server_error_fails_with_status_and_body_excerpt() {
    let base = server().await;
    let (out, sink) = run(invocation(json!({"url": format!("{base}/fail")}))).await;
    assert_eq!(out.status, OutcomeStatus::Failed);
    assert_eq!(out.error_code, Some(ErrorCode::HttpError));
    let error = out.error.unwrap();
    assert!(
        error.starts_with("HTTP 500: database exploded x"),
        "{error}"
    );
    assert_eq!(error.len(), "HTTP 500: ".len() + 200);
    assert!(sink.text(Stream::System).contains("HTTP 500"));
}

#[tokio::test]
async fn accepted_with_async_is_pending_otherwise_succeeded() {
    let base = server().await;
    let (out, _) = run(invocation(
        json!({"url": format!("{base}/accepted"), "async": true}),
    ))
    .await;
    assert_eq!(out.status, OutcomeStatus::Pending);
    assert_eq!(out.error_code, None);
    assert_eq!(out.result, Some(json!({"jobId": "j1"})));

    let (out, _) = run(invocation(json!({"url": format!("{base}/accepted")}))).await;
    assert_eq!(out.status, OutcomeStatus::Succeeded);
}

#[tokio::test]
async fn payload_template_is_substituted() {
    let base = server().await;
    let template = json!({
        "run": "{{run.id}}",
        "count": "{{context.count}}",
        "text": "issue {{context.issueId}} for {{ agent.id }}",
        "list": ["{{company.id}}", 7, null],
        "unknown": "{{context.nested}}",
        "ctx": "{{context}}",
    });
    let (out, _) = run(invocation(
        json!({"url": format!("{base}/echo"), "payloadTemplate": template}),
    ))
    .await;
    assert_eq!(
        out.result.unwrap()["body"],
        json!({
            "run": "run-1",
            "count": 4,
            "text": "issue ISS-7 for agent-1",
            "list": ["company-1", 7, null],
            "unknown": "{{context.nested}}",
            "ctx": {"issueId": "ISS-7", "count": 4, "nested": {"a": 1}},
        })
    );
}

#[tokio::test]
async fn slow_endpoint_times_out() {
    let base = server().await;
    let begin = Instant::now();
    let (out, _) = run(invocation(
        json!({"url": format!("{base}/slow"), "method": "GET", "timeoutMs": 300}),
    ))
    .await;
    assert!(begin.elapsed() < Duration::from_secs(5));
    assert_eq!(out.status, OutcomeStatus::TimedOut);
    assert_eq!(out.error_code, Some(ErrorCode::Timeout));
}

#[tokio::test]
async fn cancel_stops_the_request() {
    let base = server().await;
    let inv = invocation(json!({"url": format!("{base}/slow"), "method": "GET"}));
    let cancel = inv.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let begin = Instant::now();
    let (out, _) = run(inv).await;
    assert!(begin.elapsed() < Duration::from_secs(5));
    assert_eq!(out.status, OutcomeStatus::Cancelled);
    assert_eq!(out.error_code, Some(ErrorCode::Cancelled));
}

#[tokio::test]
async fn connection_refused_is_an_http_error_with_reason() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let (out, _) = run(invocation(json!({"url": format!("http://{addr}/")}))).await;
    assert_eq!(out.status, OutcomeStatus::Failed);
    assert_eq!(out.error_code, Some(ErrorCode::HttpError));
    let error = out.error.unwrap();
    assert!(error.to_lowercase().contains("refused"), "{error}");
}

#[test]
fn config_errors_carry_json_paths() {
    let adapter = HttpAdapter::default();
    let paths = |config: Value| -> Vec<String> {
        adapter
            .validate_config(&config)
            .unwrap_err()
            .into_iter()
            .map(|e| e.path.join("."))
            .collect()
    };
    assert_eq!(paths(json!({})), ["url"]);
    assert_eq!(paths(json!({"url": "not a url"})), ["url"]);
    assert_eq!(
        paths(
            json!({"url": "http://x", "method": "NO PE", "headers": {"Bad Name": "v"}, "timeoutMs": -5, "forwardAuth": 1})
        ),
        ["method", "headers.Bad Name", "timeoutMs", "forwardAuth"]
    );
    assert!(adapter
        .validate_config(&json!({"url": "https://agent.example/wake", "method": "PUT", "headers": {"X-A": "b"},
                                 "timeoutMs": 1000, "payloadTemplate": {"a": "{{run.id}}"}, "async": true}))
        .is_ok());
}
