//! OpenTelemetry traces over OTLP/HTTP, against a fake collector in the
//! test (`POST /v1/traces`, protobuf decoded with the OTLP types already in
//! the tree): a span per request named by its route template (continuing an
//! incoming `traceparent`), a span per run with its phases, the service
//! name, the last spans flushed at shutdown, no secret anywhere in what was
//! sent; and nothing sent when the SDK is disabled.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use prost::Message;
use serde_json::json;

use crate::common::{self, until, TestServer};

/// OTLP's `SPAN_KIND_SERVER`.
const KIND_SERVER: i32 = 2;

#[derive(Clone, Debug)]
struct Span {
    service: String,
    name: String,
    kind: i32,
    trace_id: String,
    span_id: String,
    parent: String,
    attrs: BTreeMap<String, String>,
}

/// What the collector received: every export request's bytes, and its spans.
#[derive(Clone, Default)]
struct Received {
    bodies: Arc<Mutex<Vec<Vec<u8>>>>,
    spans: Arc<Mutex<Vec<Span>>>,
}

impl Received {
    fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }

    fn requests(&self) -> usize {
        self.bodies.lock().unwrap().len()
    }

    fn find(&self, what: impl Fn(&Span) -> bool) -> Option<Span> {
        self.spans().into_iter().find(|s| what(s))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn text(kv: &KeyValue) -> String {
    match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Any::StringValue(s)) => s.clone(),
        Some(Any::IntValue(i)) => i.to_string(),
        Some(Any::BoolValue(b)) => b.to_string(),
        Some(Any::DoubleValue(d)) => d.to_string(),
        other => format!("{other:?}"),
    }
}

async fn export(State(got): State<Received>, body: Bytes) -> [(&'static str, &'static str); 1] {
    let request = ExportTraceServiceRequest::decode(body.as_ref()).expect("an OTLP protobuf body");
    let mut spans = Vec::new();
    for rs in request.resource_spans {
        let service = rs
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .map(text)
            .unwrap_or_default();
        for s in rs.scope_spans.into_iter().flat_map(|ss| ss.spans) {
            spans.push(Span {
                service: service.clone(),
                name: s.name,
                kind: s.kind,
                trace_id: hex(&s.trace_id),
                span_id: hex(&s.span_id),
                parent: hex(&s.parent_span_id),
                attrs: s
                    .attributes
                    .iter()
                    .map(|kv| (kv.key.clone(), text(kv)))
                    .collect(),
            });
        }
    }
    got.spans.lock().unwrap().extend(spans);
    got.bodies.lock().unwrap().push(body.to_vec());
    // An empty ExportTraceServiceResponse: everything accepted.
    [("content-type", "application/x-protobuf")]
}

/// The fake collector on an ephemeral port: its base URL and what it got.
async fn collector() -> (String, Received) {
    let got = Received::default();
    let app = axum::Router::new()
        .route("/v1/traces", axum::routing::post(export))
        .with_state(got.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), got)
}

/// A company with a task whose description holds `secret`, a list asked
/// for with `secret` in its query, and one run of a process agent with
/// `secret` in its env, to its end: the company's and the run's ids.
async fn work(s: &TestServer, secret: &str) -> (String, String) {
    let company = s.company("Traced").await;
    let cid = company["id"].as_str().unwrap().to_string();
    s.issue(&cid, json!({"title": "Traced task", "description": secret}))
        .await;
    let (status, _) = s
        .get(&format!("/api/companies/{cid}/issues?q={secret}"))
        .await;
    assert!(status.is_success(), "{status}");
    let agent = s
        .script_agent(
            &cid,
            "Tracer",
            "echo \"key $MY_API_KEY\"\n",
            json!({"env": {"MY_API_KEY": secret}}),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    let run = s.wake(aid, json!({})).await;
    let runs = s.only_run_succeeded(&cid, aid).await;
    assert_eq!(runs[0]["id"], run["id"]);
    (cid, run["id"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn spans_of_requests_and_runs_reach_the_collector_and_only_when_configured() {
    let (endpoint, got) = collector().await;
    let service = format!(
        "paperclip-otel-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let secret = common::secrets::value("otel");
    let mut on = TestServer::start_env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_SERVICE_NAME", &service),
        // A batch a second rather than every 5 s, still far longer than
        // the last request takes to reach the exit's flush.
        ("OTEL_BSP_SCHEDULE_DELAY", "1000"),
    ])
    .await;
    let (cid, run_id) = work(&on, &secret).await;
    // A request that continues the caller's trace.
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    let parent_id = &uuid::Uuid::new_v4().simple().to_string()[..16];
    let answer = on
        .client()
        .get(on.url(&format!("/api/companies/{cid}")))
        .header("traceparent", format!("00-{trace_id}-{parent_id}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);

    // Batches leave on the exporter's schedule, not only at exit.
    let run = until(30, "the run's span at the collector", async || {
        got.find(|s| s.name == "run" && s.attrs.get("paperclip.run_id") == Some(&run_id))
    })
    .await;
    assert_eq!(run.service, service);
    assert_eq!(run.attrs["paperclip.run_status"], "succeeded", "{run:?}");
    assert_eq!(run.attrs["paperclip.adapter_type"], "process", "{run:?}");
    assert_eq!(run.attrs["paperclip.company_id"], cid, "{run:?}");
    assert!(
        run.parent.is_empty(),
        "a run is a trace of its own: {run:?}"
    );
    for phase in ["prepare", "invoke", "finish"] {
        let child = until(10, phase, async || {
            got.find(|s| s.name == phase && s.parent == run.span_id)
        })
        .await;
        assert_eq!(child.trace_id, run.trace_id, "{child:?}");
    }
    let route = "/api/companies/{companyId}";
    let continued = until(10, "the traceparent request's span", async || {
        got.find(|s| s.trace_id == trace_id)
    })
    .await;
    assert_eq!(continued.name, format!("GET {route}"), "{continued:?}");
    assert_eq!(continued.parent, parent_id, "{continued:?}");
    assert_eq!(continued.kind, KIND_SERVER);
    assert_eq!(continued.attrs["http.route"], route);
    assert_eq!(continued.attrs["http.request.method"], "GET");
    assert_eq!(continued.attrs["http.response.status_code"], "200");

    // The last request's span leaves with the shutdown's flush.
    let (status, _) = on.get("/api/health/ready").await;
    assert!(status.is_success(), "{status}");
    assert!(on.terminate(20).await, "the server stopped on SIGTERM");
    let spans = got.spans();
    assert!(
        spans
            .iter()
            .any(|s| s.name == "GET /api/health/ready"
                && s.attrs["http.response.status_code"] == "200"),
        "the last request's span was flushed at shutdown: {spans:?}"
    );
    let list = spans
        .iter()
        .find(|s| s.name == "GET /api/companies/{companyId}/issues")
        .expect("the list's span");
    assert_eq!(
        list.attrs["http.route"],
        "/api/companies/{companyId}/issues"
    );
    assert!(spans.iter().all(|s| s.service == service));
    assert!(
        spans.iter().all(|s| !s
            .attrs
            .keys()
            .any(|k| k.contains("url") || k.contains("query"))),
        "no raw URL in any span"
    );
    // Not in an attribute, a name, an event, nor the resource: anywhere.
    let bodies = got.bodies.lock().unwrap().clone();
    for body in &bodies {
        let hit = body.windows(secret.len()).any(|w| w == secret.as_bytes());
        assert!(!hit, "the secret reached the collector");
    }

    // Pointed at the collector but disabled: nothing is sent, not even at
    // the exit's flush.
    let sent = got.requests();
    let mut off = TestServer::start_env(&[
        ("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint),
        ("OTEL_SERVICE_NAME", &service),
        ("OTEL_SDK_DISABLED", "true"),
    ])
    .await;
    work(&off, &secret).await;
    assert!(off.terminate(20).await, "the server stopped on SIGTERM");
    assert_eq!(got.requests(), sent, "a disabled exporter sent nothing");
}
