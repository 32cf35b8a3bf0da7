//! `/metrics`: Prometheus text exposition, parsed here line by line, with
//! figures that follow what the test did; readable only by an instance admin
//! on an authenticated instance.

use std::collections::BTreeMap;

use crate::common;

use common::teams::{self, call};
use common::TestServer;
use reqwest::{Method, StatusCode};
use serde_json::json;

/// A series' labels but `le`, in order: buckets of one series share them.
type Labels = Vec<(String, String)>;

/// One sample: `name{labels} value`.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A scrape, parsed and checked against the text format's rules: every line
/// a comment or a sample, every family with HELP and TYPE before its
/// samples, histogram buckets cumulative and ending in `+Inf` = `_count`.
struct Scrape {
    samples: Vec<Sample>,
}

impl Scrape {
    fn parse(text: &str) -> Scrape {
        let mut help = BTreeMap::new();
        let mut kind: BTreeMap<String, String> = BTreeMap::new();
        let mut samples = Vec::new();
        for line in text.lines() {
            if line.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, text) = rest.split_once(' ').expect("HELP name text");
                assert!(!text.is_empty(), "empty HELP: {line}");
                assert!(
                    help.insert(name.to_string(), ()).is_none(),
                    "HELP twice: {name}"
                );
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, k) = rest.split_once(' ').expect("TYPE name kind");
                assert!(
                    ["counter", "gauge", "histogram"].contains(&k),
                    "unknown TYPE: {line}"
                );
                assert!(help.contains_key(name), "TYPE before HELP: {line}");
                assert!(kind.insert(name.to_string(), k.to_string()).is_none());
                continue;
            }
            assert!(!line.starts_with('#'), "unknown comment: {line}");
            let sample = parse_sample(line);
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| {
                    sample
                        .name
                        .strip_suffix(s)
                        .filter(|f| kind.get(*f).is_some_and(|k| k == "histogram"))
                })
                .unwrap_or(&sample.name);
            assert!(kind.contains_key(family), "sample before its TYPE: {line}");
            samples.push(sample);
        }
        let scrape = Scrape { samples };
        for (name, k) in &kind {
            if k == "histogram" {
                scrape.check_histogram(name);
            }
        }
        scrape
    }

    fn check_histogram(&self, name: &str) {
        let bucket = format!("{name}_bucket");
        let mut series: BTreeMap<Labels, Vec<(f64, f64)>> = BTreeMap::new();
        for s in self.samples.iter().filter(|s| s.name == bucket) {
            let mut labels = s.labels.clone();
            let le = labels.remove("le").expect("a bucket has le");
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().unwrap()
            };
            series
                .entry(labels.into_iter().collect())
                .or_default()
                .push((le, s.value));
        }
        for (labels, buckets) in series {
            for pair in buckets.windows(2) {
                assert!(pair[0].0 < pair[1].0, "bounds ascend: {labels:?}");
                assert!(pair[0].1 <= pair[1].1, "buckets are cumulative: {labels:?}");
            }
            let (last_le, last) = *buckets.last().unwrap();
            assert_eq!(last_le, f64::INFINITY, "ends in +Inf: {labels:?}");
            let labels: BTreeMap<_, _> = labels.into_iter().collect();
            let count = self.value(&format!("{name}_count"), &labels);
            assert_eq!(Some(last), count, "+Inf equals _count: {labels:?}");
            assert!(self.value(&format!("{name}_sum"), &labels).is_some());
        }
    }

    fn value(&self, name: &str, labels: &BTreeMap<String, String>) -> Option<f64> {
        self.samples
            .iter()
            .find(|s| s.name == name && &s.labels == labels)
            .map(|s| s.value)
    }

    /// The sum over the samples of `name` whose labels include `with`.
    fn sum(&self, name: &str, with: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| {
                with.iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
            .sum()
    }
}

fn parse_sample(line: &str) -> Sample {
    let (head, value) = line
        .rsplit_once(' ')
        .unwrap_or_else(|| panic!("no value: {line}"));
    let value: f64 = match value {
        "+Inf" => f64::INFINITY,
        v => v.parse().unwrap_or_else(|_| panic!("bad value: {line}")),
    };
    let (name, labels) = match head.split_once('{') {
        None => (head, BTreeMap::new()),
        Some((name, rest)) => {
            let body = rest
                .strip_suffix('}')
                .unwrap_or_else(|| panic!("unclosed labels: {line}"));
            (name, parse_labels(body, line))
        }
    };
    assert!(
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            && !name.starts_with(|c: char| c.is_ascii_digit()),
        "bad metric name: {line}"
    );
    Sample {
        name: name.to_string(),
        labels,
        value,
    }
}

/// `k="v",k2="v2"` with `\\`, `\"` and `\n` escapes in values.
fn parse_labels(body: &str, line: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut chars = body.chars().peekable();
    while chars.peek().is_some() {
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        assert!(
            !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            "bad label name in {line}"
        );
        assert_eq!(chars.next(), Some('"'), "label value quoted: {line}");
        let mut value = String::new();
        loop {
            match chars
                .next()
                .unwrap_or_else(|| panic!("unterminated value: {line}"))
            {
                '"' => break,
                '\\' => match chars.next() {
                    Some('n') => value.push('\n'),
                    Some(c @ ('\\' | '"')) => value.push(c),
                    other => panic!("bad escape {other:?} in {line}"),
                },
                c => value.push(c),
            }
        }
        assert!(labels.insert(key, value).is_none(), "label twice: {line}");
        match chars.next() {
            None => break,
            Some(',') => {}
            Some(c) => panic!("unexpected {c:?} in {line}"),
        }
    }
    labels
}

async fn scrape(server: &TestServer) -> Scrape {
    let resp = server
        .client()
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let ctype = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ctype.starts_with("text/plain; version=0.0.4"), "{ctype}");
    Scrape::parse(&resp.text().await.unwrap())
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_runs_by_adapter() {
    let server = TestServer::start().await;
    let cid = server.company("Metrics Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .script_agent(&cid, "Counter", "echo counted\n", json!({}))
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    server.wake(&aid, json!({ "reason": "count me" })).await;
    server.only_run_succeeded(&cid, &aid).await;
    // A wake of a paused agent is skipped, and says why.
    let idle = server.script_agent(&cid, "Idle", "true\n", json!({})).await;
    let idle_id = idle["id"].as_str().unwrap();
    server.lever(idle_id, "pause").await;
    let (status, body) = server
        .post(
            &format!("/api/agents/{idle_id}/wakeup"),
            json!({ "reason": "paused" }),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["details"]["skipReason"], "agent_paused");
    server
        .ok_post(
            &format!("/api/companies/{cid}/cost-events"),
            json!({ "agentId": aid, "costCents": 123 }),
        )
        .await;
    let (status, _) = server.get(&format!("/api/companies/{cid}")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = server.get("/api/issues/NOPE-999").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = server.get("/api/no/such/route").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // An open live stream is a subscriber.
    let stream = server
        .client()
        .get(server.url(&format!("/api/companies/{cid}/events")))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);

    let m = common::until(10, "a live subscriber counted", async || {
        let m = scrape(&server).await;
        (m.sum("paperclip_live_subscribers", &[]) >= 1.0).then_some(m)
    })
    .await;
    // This instance holds its lease (issue 38's fleet), and the bus of an
    // instance alone has dropped nothing.
    assert_eq!(m.sum("paperclip_instances_live", &[]), 1.0);
    assert_eq!(m.sum("paperclip_live_events_bus_dropped_total", &[]), 0.0);
    let requests = |route: &str, status: &str| {
        m.sum(
            "paperclip_http_requests_total",
            &[("method", "GET"), ("route", route), ("status", status)],
        )
    };
    assert_eq!(requests("/api/issues/{id}", "404"), 1.0);
    assert_eq!(requests("/api/companies/{companyId}", "200"), 1.0);
    assert_eq!(requests("unmatched", "404"), 1.0);
    assert!(
        m.samples.iter().all(|s| !s
            .labels
            .get("route")
            .is_some_and(|r| r.contains("NOPE") || r.contains(&cid))),
        "routes are templates, never raw paths"
    );
    assert_eq!(
        m.sum(
            "paperclip_http_request_duration_seconds_count",
            &[("route", "/api/issues/{id}"), ("status", "404")]
        ),
        1.0
    );
    assert_eq!(
        m.sum(
            "paperclip_runs",
            &[("status", "succeeded"), ("adapter_type", "process")]
        ),
        1.0
    );
    assert_eq!(m.sum("paperclip_runs", &[("status", "running")]), 0.0);
    assert_eq!(m.sum("paperclip_runs_queued", &[]), 0.0);
    assert_eq!(
        m.sum("paperclip_wakes_skipped", &[("reason", "agent_paused")]),
        1.0
    );
    assert_eq!(
        m.sum(
            "paperclip_company_spend_month_cents",
            &[("company_id", &cid)]
        ),
        123.0
    );
    assert!(m.sum("paperclip_db_pool_connections", &[]) >= 1.0);
    assert!(
        m.sum("paperclip_db_pool_idle_connections", &[])
            <= m.sum("paperclip_db_pool_connections", &[])
    );
    // The scrape counts itself from the next one on.
    drop(stream);
    let again = scrape(&server).await;
    assert!(again.sum("paperclip_http_requests_total", &[("route", "/metrics")]) >= 1.0);
}

#[tokio::test]
async fn metrics_need_an_instance_admin_when_authenticated() {
    let (server, admin) = teams::instance(&[]).await;
    let (status, body) = call(&server, Method::GET, "/metrics", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, company) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&admin),
        Some(json!({ "name": "Guarded" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{company}");
    let cid = company["id"].as_str().unwrap();
    let member = teams::join(&server, &admin, cid, "owner", "owner@example.com").await;
    let (status, body) = call(&server, Method::GET, "/metrics", Some(&member), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert!(body.to_string().contains("Instance admin"), "{body}");
    // The admin's board keys: one naming no company reads it, one naming a
    // company acts there only, never on the instance.
    let key = |companies: Option<&str>| {
        let body = match companies {
            Some(c) => json!({ "name": "scrape", "companyIds": [c] }),
            None => json!({ "name": "scrape" }),
        };
        let (server, admin) = (&server, &admin);
        async move {
            let (status, key) = call(
                server,
                Method::POST,
                "/api/board-api-keys",
                Some(admin),
                Some(body),
            )
            .await;
            assert_eq!(status, StatusCode::CREATED, "{key}");
            key["token"].as_str().unwrap().to_string()
        }
    };
    let with_key = async |token: &str| {
        let resp = server
            .client()
            .get(server.url("/metrics"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        (resp.status(), resp.text().await.unwrap())
    };
    let (status, text) = with_key(&key(None).await).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    Scrape::parse(&text);
    let (status, text) = with_key(&key(Some(cid)).await).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    assert!(text.contains("deny_key_scope"), "{text}");
    let (status, body) = call(&server, Method::GET, "/metrics", Some(&admin), None).await;
    assert_eq!(status, StatusCode::OK);
    let m = Scrape::parse(body.as_str().expect("text"));
    assert_eq!(
        m.sum(
            "paperclip_company_spend_month_cents",
            &[("company_id", cid)]
        ),
        0.0
    );
    assert!(m
        .samples
        .iter()
        .any(|s| s.name == "paperclip_company_spend_month_cents"));
}
