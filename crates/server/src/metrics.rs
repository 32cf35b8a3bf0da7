//! `GET /metrics`: Prometheus text exposition (format 0.0.4).
//!
//! HTTP figures are recorded in process by a layer around every route,
//! labelled by the route's template (axum's `MatchedPath`), never the raw
//! URL, so the number of series stays bounded by the routes this build
//! serves. Everything else is read at scrape time: runs, skipped wakes and
//! spend from the database in a fixed number of grouped queries, the live
//! subscribers from the hub, the pool from sqlx. An in-house registry of a
//! few counters keeps the dependency tree as it was; the format is small.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::AppState;

/// Upper bounds of the latency buckets, in seconds: from a cached read
/// (~1 ms) to a slow write under load.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// The route label of a request no route matched (the JSON 404 fallback).
const UNMATCHED: &str = "unmatched";

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    method: String,
    route: String,
    status: u16,
}

#[derive(Default)]
struct Series {
    /// Per bucket, not cumulative; summed when written.
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// This app's HTTP figures. One per [`crate::app`], so two servers in one
/// process (tests) count apart.
#[derive(Default)]
pub struct Registry {
    series: Mutex<BTreeMap<Key, Series>>,
}

impl Registry {
    fn observe(&self, key: Key, seconds: f64) {
        let mut series = self.series.lock().expect("metrics lock");
        let s = series.entry(key).or_default();
        if let Some(i) = BUCKETS.iter().position(|b| seconds <= *b) {
            s.buckets[i] += 1;
        }
        s.count += 1;
        s.sum += seconds;
    }
}

/// Adds `GET /metrics` and the recording layer around every route added so
/// far (call it once all routes and the fallback are in).
pub trait WithMetrics {
    fn with_metrics(self) -> Self;
}

impl WithMetrics for Router<AppState> {
    fn with_metrics(self) -> Self {
        let registry = Arc::new(Registry::default());
        let scrape_registry = registry.clone();
        self.route(
            "/metrics",
            axum::routing::get(
                move |state: State<AppState>, caller: Result<Caller, ApiError>| {
                    let registry = scrape_registry.clone();
                    async move { metrics(state, caller, registry).await }
                },
            ),
        )
        .layer(axum::middleware::from_fn_with_state(registry, record))
    }
}

async fn record(State(registry): State<Arc<Registry>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, MatchedPath::as_str)
        .to_string();
    let response = next.run(request).await;
    // A stream (SSE, a log follow) is timed to its headers, not its end.
    let key = Key {
        method,
        route,
        status: response.status().as_u16(),
    };
    registry.observe(key, started.elapsed().as_secs_f64());
    response
}

async fn metrics(
    State(app): State<AppState>,
    caller: Result<Caller, ApiError>,
    registry: Arc<Registry>,
) -> Result<Response, ApiError> {
    caller?.require_instance_admin()?;
    let scrape = paperclip_store::views::metrics::scrape(&app.store).await?;
    let mut out = String::with_capacity(4096);
    write_http(&mut out, &registry);
    write_scrape(&mut out, &scrape, app.runtime.hub().subscribers());
    write_fleet(&mut out, &scrape, app.runtime.hub().forward_dropped());
    let mut response = out.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    Ok(response)
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A label value as the text format wants it: `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn write_http(out: &mut String, registry: &Registry) {
    let series = registry.series.lock().expect("metrics lock");
    let labels = |k: &Key| {
        format!(
            "method=\"{}\",route=\"{}\",status=\"{}\"",
            escape(&k.method),
            escape(&k.route),
            k.status
        )
    };
    family(
        out,
        "paperclip_http_requests_total",
        "counter",
        "HTTP requests answered, by method, route template and status.",
    );
    for (k, s) in series.iter() {
        let _ = writeln!(
            out,
            "paperclip_http_requests_total{{{}}} {}",
            labels(k),
            s.count
        );
    }
    let name = "paperclip_http_request_duration_seconds";
    family(
        out,
        name,
        "histogram",
        "Time to answer an HTTP request (to its headers for a stream), by method, route template and status.",
    );
    for (k, s) in series.iter() {
        let l = labels(k);
        let mut cumulative = 0;
        for (bound, n) in BUCKETS.iter().zip(s.buckets) {
            cumulative += n;
            let _ = writeln!(out, "{name}_bucket{{{l},le=\"{bound}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_bucket{{{l},le=\"+Inf\"}} {}", s.count);
        let _ = writeln!(out, "{name}_sum{{{l}}} {}", s.sum);
        let _ = writeln!(out, "{name}_count{{{l}}} {}", s.count);
    }
}

fn write_scrape(out: &mut String, scrape: &paperclip_store::views::metrics::Scrape, live: usize) {
    family(
        out,
        "paperclip_runs",
        "gauge",
        "Heartbeat runs in the database, by status and their agent's adapter type.",
    );
    for r in &scrape.runs {
        let _ = writeln!(
            out,
            "paperclip_runs{{status=\"{}\",adapter_type=\"{}\"}} {}",
            r.status.as_str(),
            escape(&r.adapter_type),
            r.count
        );
    }
    family(
        out,
        "paperclip_runs_queued",
        "gauge",
        "Runs waiting to start (the queue depth).",
    );
    let queued: i64 = scrape
        .runs
        .iter()
        .filter(|r| r.status == paperclip_core::heartbeat::RunStatus::Queued)
        .map(|r| r.count)
        .sum();
    let _ = writeln!(out, "paperclip_runs_queued {queued}");
    family(
        out,
        "paperclip_wakes_skipped",
        "gauge",
        "Wakes recorded as skipped (no run made), by reason.",
    );
    for (reason, n) in &scrape.skipped_wakes {
        let reason = reason.map_or("none", |r| r.as_str());
        let _ = writeln!(out, "paperclip_wakes_skipped{{reason=\"{reason}\"}} {n}");
    }
    family(
        out,
        "paperclip_company_spend_month_cents",
        "gauge",
        "Each company's spend in the current budget month, in cents.",
    );
    for (company, cents) in &scrape.spend_month_cents {
        let _ = writeln!(
            out,
            "paperclip_company_spend_month_cents{{company_id=\"{}\"}} {cents}",
            escape(company)
        );
    }
    family(
        out,
        "paperclip_live_subscribers",
        "gauge",
        "Open live event streams (SSE and WebSocket).",
    );
    let _ = writeln!(out, "paperclip_live_subscribers {live}");
    family(
        out,
        "paperclip_db_pool_connections",
        "gauge",
        "Open connections of the database read pool.",
    );
    let _ = writeln!(out, "paperclip_db_pool_connections {}", scrape.pool.size);
    family(
        out,
        "paperclip_db_pool_idle_connections",
        "gauge",
        "Idle connections of the database read pool.",
    );
    let _ = writeln!(
        out,
        "paperclip_db_pool_idle_connections {}",
        scrape.pool.idle
    );
}

/// Several instances on one database: who holds a lease, and live events
/// other instances missed because the bus was full.
fn write_fleet(out: &mut String, scrape: &paperclip_store::views::metrics::Scrape, dropped: u64) {
    family(
        out,
        "paperclip_instances_live",
        "gauge",
        "Control-plane instances holding a lease on this database.",
    );
    let _ = writeln!(out, "paperclip_instances_live {}", scrape.live_instances);
    family(
        out,
        "paperclip_live_events_bus_dropped_total",
        "counter",
        "Live events made here that other instances missed (the bus queue was full).",
    );
    let _ = writeln!(out, "paperclip_live_events_bus_dropped_total {dropped}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_end_at_the_count() {
        let registry = Registry::default();
        let key = Key {
            method: "GET".into(),
            route: "/api/issues/{id}".into(),
            status: 404,
        };
        for s in [0.0005, 0.003, 0.2, 30.0] {
            registry.observe(key.clone(), s);
        }
        let mut out = String::new();
        write_http(&mut out, &registry);
        let bucket = |le: &str| {
            let prefix = format!(
                "paperclip_http_request_duration_seconds_bucket{{method=\"GET\",route=\"/api/issues/{{id}}\",status=\"404\",le=\"{le}\"}} "
            );
            out.lines()
                .find_map(|l| l.strip_prefix(&prefix))
                .unwrap_or_else(|| panic!("bucket {le} in {out}"))
                .to_string()
        };
        assert_eq!(bucket("0.001"), "1");
        assert_eq!(bucket("0.005"), "2");
        assert_eq!(bucket("0.25"), "3");
        assert_eq!(bucket("10"), "3");
        assert_eq!(bucket("+Inf"), "4");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
