//! One tracing span per HTTP request, for OpenTelemetry (`--otlp-endpoint`).
//!
//! The span is named and labelled by the route's template (axum's
//! `MatchedPath`), never the raw URL, whose ids and query could name people
//! or carry tokens; headers and bodies are not recorded at all. An incoming
//! W3C `traceparent` continues the caller's trace. With no exporter set up
//! the span is disabled at its callsite (the log filter is `warn`), so a
//! request pays a level check and nothing else.

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use tracing::field::Empty;
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::AppState;

/// The span name and `http.route` of a request no route matched.
const UNMATCHED: &str = "unmatched";

/// Adds the request span around every route added so far (call it once all
/// routes and the fallback are in, like `with_metrics`).
pub trait WithTraces {
    fn with_traces(self) -> Self;
}

impl WithTraces for Router<AppState> {
    fn with_traces(self) -> Self {
        self.layer(axum::middleware::from_fn(trace))
    }
}

async fn trace(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, MatchedPath::as_str);
    let method = request.method().as_str();
    let span = tracing::info_span!(
        "http_request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = method,
        http.route = route,
        http.response.status_code = Empty,
    );
    if span.is_disabled() {
        return next.run(request).await;
    }
    if request.headers().contains_key("traceparent") {
        let parent = opentelemetry::global::get_text_map_propagator(|p| {
            p.extract(&Headers(request.headers()))
        });
        // Only fails when no OpenTelemetry layer is installed: then the
        // span has no trace to continue anyway.
        let _ = span.set_parent(parent);
    }
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    span.record("http.response.status_code", status.as_u16());
    // A 4xx is the client's error, not the server's (OTel's HTTP rules).
    if status.is_server_error() {
        span.record("otel.status_code", "error");
    }
    response
}

/// The request's headers as OpenTelemetry's propagators read them.
struct Headers<'a>(&'a HeaderMap);

impl opentelemetry::propagation::Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}
