//! Restart recovery: kill -9 the server mid-run, start it again.

use crate::common;

use std::time::Duration;

use common::TestServer;
use serde_json::json;

#[tokio::test]
async fn a_crash_mid_run_fails_that_run_and_the_queued_wake_still_runs_once() {
    let mut server = TestServer::start().await;
    let cid = server.company("Crash Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let marker = server.data_dir.join("first-run-started");
    let pidfile = server.data_dir.join("first-run.pid");
    // The first run waits (and is orphaned by the crash); the next one finishes at once.
    let script = format!(
        "if [ -e {m} ]; then echo second run; exit 0; fi\ntouch {m}\nsleep 60 &\necho $! > {p}\nwait\n",
        m = marker.display(),
        p = pidfile.display()
    );
    let agent = server
        .script_agent(&cid, "Survivor", &script, json!({}))
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let (_, first) = server
        .post(
            &format!("/api/agents/{aid}/wakeup"),
            json!({ "reason": "first" }),
        )
        .await;
    let first = first["id"].as_str().unwrap().to_string();
    server
        .wait_for(&format!("/api/heartbeat-runs/{first}"), 10, |r| {
            r["processGroupId"].is_i64()
        })
        .await;
    let (_, queued) = server
        .post(
            &format!("/api/agents/{aid}/wakeup"),
            json!({ "reason": "second" }),
        )
        .await;
    let queued = queued["id"].as_str().unwrap().to_string();
    assert_eq!(queued_status(&server, &queued).await, "queued");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let orphan: i64 = loop {
        if let Some(pid) = std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            break pid;
        }
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    };

    server.kill();
    assert!(
        std::path::Path::new(&format!("/proc/{orphan}")).exists(),
        "the crash orphaned the agent's process"
    );
    let (data_dir, database_url) = server.stop_keeping_data();
    let server = TestServer::start_with(data_dir, database_url, &[]).await;

    let crashed = server.ok_get(&format!("/api/heartbeat-runs/{first}")).await;
    assert_eq!(crashed["status"], "failed");
    assert_eq!(crashed["errorCode"], "control_plane_restart");
    assert!(crashed["finishedAt"].is_string());
    let done = server
        .wait_for(&format!("/api/heartbeat-runs/{queued}"), 20, |r| {
            r["status"] == "succeeded"
        })
        .await;
    assert!(done["stdoutExcerpt"]
        .as_str()
        .unwrap()
        .contains("second run"));
    server.quiesce().await;
    let runs = server.runs_of(&cid, &aid).await;
    assert_eq!(
        runs.len(),
        2,
        "no run was started twice or invented: {runs:?}"
    );
    let recovered = server
        .ok_get(&format!(
            "/api/companies/{cid}/activity?action=heartbeat.recovered"
        ))
        .await;
    assert_eq!(recovered.as_array().unwrap().len(), 1);
    assert_eq!(recovered[0]["entityId"], first.as_str());
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while zombie_or_gone(orphan) == Some(false) {
        assert!(
            std::time::Instant::now() < deadline,
            "recovery killed the orphaned process group"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let agent = server.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(agent["status"], "idle");
}

async fn queued_status(server: &TestServer, run: &str) -> String {
    server.ok_get(&format!("/api/heartbeat-runs/{run}")).await["status"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `Some(false)` while the process runs; `None`/`Some(true)` once it is gone or a zombie.
fn zombie_or_gone(pid: i64) -> Option<bool> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    Some(
        stat.rsplit(") ")
            .next()
            .is_some_and(|rest| rest.starts_with('Z')),
    )
}
