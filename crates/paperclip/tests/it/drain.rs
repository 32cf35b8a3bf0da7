//! SIGTERM with `--drain-seconds`, as Kubernetes stops a replica: readiness
//! answers 503 at once while the instance keeps serving, a wake queued
//! during the drain is left for another instance (here: the next start),
//! and the process exits once the drain is over; a second signal cuts the
//! drain short.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::common;
use common::{until, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draining_instance_is_unready_serves_reads_claims_nothing_then_exits() {
    let mut server = TestServer::start_args(&["--drain-seconds", "3"]).await;
    assert_eq!(
        server.get("/api/health/ready").await,
        (StatusCode::OK, json!({"status": "ok"}))
    );
    let cid = server.company("Drain Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let marker = server.data_dir.join("ran");
    let script = format!("touch {}\n", marker.display());
    let aid = server
        .script_agent(&cid, "Worker", &script, json!({}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();

    server.sigterm();
    let signalled = Instant::now();
    until(5, "readiness turns 503 while draining", async || {
        let answer = server.get("/api/health/ready").await;
        (answer
            == (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"status": "draining"}),
            ))
            .then_some(())
    })
    .await;
    // Still serving: liveness, reads and writes.
    let (status, health) = server.get("/api/health").await;
    assert_eq!((status, &health["status"]), (StatusCode::OK, &json!("ok")));
    let run = server.wake(&aid, json!({})).await;
    let run_id = run["id"].as_str().unwrap().to_string();
    assert_eq!(run["status"], "queued", "{run}");
    let (status, agents) = server.get(&format!("/api/companies/{cid}/agents")).await;
    assert_eq!(status, StatusCode::OK, "{agents}");

    // Until the process exits the run stays queued: a claim would take
    // milliseconds after the wake's kick, the drain lasts seconds.
    let mut looks = 0;
    let run_url = server.url(&format!("/api/heartbeat-runs/{run_id}"));
    let client = server.client().clone();
    // Looked at on the shared poll until the process is on its way out: a
    // refused connection means the shutdown after the drain has begun.
    let ended = common::try_until(15, async || {
        if server.exited_within(0).await {
            return Some(());
        }
        let Ok(answer) = client.get(&run_url).send().await else {
            return Some(());
        };
        if answer.status() != StatusCode::OK {
            return Some(());
        }
        let r: serde_json::Value = answer.json().await.unwrap();
        assert_eq!(r["status"], "queued", "claimed while draining: {r}");
        looks += 1;
        None
    })
    .await;
    assert!(ended.is_some(), "still serving 15 s after SIGTERM");
    assert!(
        looks >= 3,
        "the run was looked at while draining ({looks} times)"
    );
    assert!(server.exited_within(15).await, "exits after the drain");
    let took = signalled.elapsed();
    assert!(
        took >= Duration::from_millis(2500),
        "the drain held the shutdown: exited {took:?} after SIGTERM"
    );
    assert!(
        !marker.exists(),
        "the run did not start on the draining instance"
    );

    // The wake was not lost: the next instance claims and runs it. A second
    // signal ends its (long) drain at once.
    let (data_dir, database_url) = server.stop_keeping_data();
    let mut next = TestServer::start_with(data_dir, database_url, &["--drain-seconds", "60"]).await;
    let run = next
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 30, |r| {
            r["status"] == "succeeded"
        })
        .await;
    assert_eq!(run["status"], "succeeded");
    assert!(marker.exists());
    next.sigterm();
    until(5, "the next instance drains", async || {
        (next.get("/api/health/ready").await.0 == StatusCode::SERVICE_UNAVAILABLE).then_some(())
    })
    .await;
    next.sigterm();
    assert!(
        next.exited_within(10).await,
        "a second SIGTERM cuts a 60 s drain short"
    );
}
