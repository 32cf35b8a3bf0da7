//! Writes committed in groups (SQLite) keep every promise one commit per
//! write kept: a create answered 201 survives a crash, a create that fails
//! half way leaves nothing and gives its number back, and neither takes the
//! writes around it down. Sixteen writers at once, so the groups are large.
//! Runs on Postgres too (one commit per write there), as the oracle.

use crate::common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

const WRITERS: usize = 16;

/// Every task of the company, through the cursors: (number, identifier).
async fn all_tasks(server: &TestServer, company: &str) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    let mut cursor = String::new();
    loop {
        let resp = server
            .client()
            .get(server.url(&format!(
                "/api/companies/{company}/issues?limit=500{cursor}"
            )))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let next = resp
            .headers()
            .get("x-next-cursor")
            .map(|v| v.to_str().unwrap().to_string());
        let page: Vec<Value> = resp.json().await.unwrap();
        out.extend(page.iter().map(|i| {
            (
                i["issueNumber"].as_i64().unwrap(),
                i["identifier"].as_str().unwrap().to_string(),
            )
        }));
        match next {
            Some(n) => cursor = format!("&cursor={n}"),
            None => return out,
        }
    }
}

/// Numbers 1..=n, each once: no number lost to a failed or crashed write.
fn assert_contiguous(tasks: &[(i64, String)]) {
    let numbers: BTreeSet<i64> = tasks.iter().map(|t| t.0).collect();
    assert_eq!(numbers.len(), tasks.len(), "a number twice");
    let expected: BTreeSet<i64> = (1..=tasks.len() as i64).collect();
    assert_eq!(numbers, expected, "numbers have gaps");
}

async fn created_entries(server: &TestServer, company: &str) -> usize {
    server
        .ok_get(&format!(
            "/api/companies/{company}/activity?action=issue.created&limit=1000"
        ))
        .await
        .as_array()
        .unwrap()
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_write_in_a_group_takes_only_itself_back() {
    let server = TestServer::start().await;
    let company = server.company("Groups Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let server = Arc::new(server);
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (server, company) = (server.clone(), company.clone());
        writers.push(tokio::spawn(async move {
            let mut kept = Vec::new();
            for n in 0..15 {
                // Every other writer sends a label that does not exist: the
                // store inserts the task, then fails on the label and rolls
                // its part back.
                let failing = w % 2 == 1 && n % 3 == 0;
                let mut body = json!({ "title": format!("w{w} n{n}") });
                if failing {
                    body["labelIds"] = json!(["00000000-0000-4000-8000-000000000000"]);
                }
                let (status, issue) = server
                    .post(&format!("/api/companies/{company}/issues"), body)
                    .await;
                if failing {
                    assert!(status.is_client_error(), "{status} {issue}");
                } else {
                    assert_eq!(status, StatusCode::CREATED, "{issue}");
                    kept.push(issue["identifier"].as_str().unwrap().to_string());
                }
            }
            kept
        }));
    }
    let mut acknowledged = BTreeSet::new();
    for w in writers {
        acknowledged.extend(w.await.unwrap());
    }
    let tasks = all_tasks(&server, &company).await;
    let present: BTreeSet<String> = tasks.iter().map(|t| t.1.clone()).collect();
    assert_eq!(present, acknowledged, "exactly the acknowledged creates");
    assert_contiguous(&tasks);
    assert_eq!(created_entries(&server, &company).await, tasks.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_acknowledged_create_survives_a_kill_under_sixteen_writers() {
    let server = TestServer::start().await;
    let company = server.company("Crash Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let client = server.client().clone();
    let url = server.url(&format!("/api/companies/{company}/issues"));
    let acknowledged = Arc::new(Mutex::new(BTreeSet::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (client, url) = (client.clone(), url.clone());
        let (acknowledged, count, stop) = (acknowledged.clone(), count.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                n += 1;
                let sent = client
                    .post(&url)
                    .json(&json!({ "title": format!("w{w} n{n}") }))
                    .send()
                    .await;
                // Once the server is killed, requests fail: that is the point.
                let Ok(resp) = sent else { break };
                if resp.status() != StatusCode::CREATED {
                    break;
                }
                let Ok(issue) = resp.json::<Value>().await else {
                    break;
                };
                acknowledged
                    .lock()
                    .unwrap()
                    .insert(issue["identifier"].as_str().unwrap().to_string());
                count.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    let mut server = server;
    common::until(60, "300 creates acknowledged", async || {
        (count.load(Ordering::SeqCst) >= 300).then_some(())
    })
    .await;
    // Killed while the writers are still sending: some groups are open.
    server.kill();
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.await.unwrap();
    }
    let server = common::restart_keeping_data(server).await;
    let tasks = all_tasks(&server, &company).await;
    let present: BTreeSet<String> = tasks.iter().map(|t| t.1.clone()).collect();
    let acknowledged = acknowledged.lock().unwrap().clone();
    let lost: Vec<&String> = acknowledged.difference(&present).collect();
    assert!(
        lost.is_empty(),
        "acknowledged creates lost in the crash: {lost:?}"
    );
    assert_contiguous(&tasks);
    assert_eq!(created_entries(&server, &company).await, tasks.len());
    // The restarted server writes on.
    let after = server
        .issue(&company, json!({ "title": "After the crash" }))
        .await;
    assert_eq!(
        after["issueNumber"].as_i64().unwrap(),
        tasks.len() as i64 + 1
    );
}
