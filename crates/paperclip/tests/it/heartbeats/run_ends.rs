//! How a run ends other than by its own success: a cancel or a pause stops
//! its whole process group within the grace, a run past its timeout is timed
//! out, and a start that fails says why.

use crate::common;

use std::time::Duration;

use common::TestServer;
use serde_json::json;

fn alive(pid: i64) -> bool {
    // A zombie is dead for our purposes: it runs nothing and holds nothing.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(") ")
            .next()
            .is_some_and(|rest| rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// Starts a run whose script leaves a grandchild `sleep`; returns (run id, grandchild pid).
async fn long_run(server: &TestServer, cid: &str, name: &str) -> (String, String, i64) {
    let pidfile = server.data_dir.join(format!("{name}.pid"));
    let script = format!("sleep 60 &\necho $! > {}\nsleep 60\n", pidfile.display());
    let agent = server
        .script_agent(cid, name, &script, json!({ "graceSec": 2 }))
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let (_, run) = server
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    let run_id = run["id"].as_str().unwrap().to_string();
    server
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 10, |r| {
            r["processGroupId"].is_i64()
        })
        .await;
    let pid = common::until(10, "the script to write its grandchild's pid", async || {
        std::fs::read_to_string(&pidfile)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
    })
    .await;
    assert!(alive(pid));
    (aid, run_id, pid)
}

#[tokio::test]
async fn cancel_and_pause_stop_the_whole_process_group_within_the_grace() {
    let server = TestServer::start().await;
    let cid = server.company("Stop Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();

    let (_, run_id, grandchild) = long_run(&server, &cid, "cancelme").await;
    let started = std::time::Instant::now();
    let run = server
        .ok_post(&format!("/api/heartbeat-runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(run["status"], "cancelled");
    assert_eq!(run["errorCode"], "cancelled");
    assert!(
        started.elapsed() < Duration::from_secs(2 + 3),
        "stopped within the grace"
    );
    assert!(!alive(grandchild), "the grandchild died with its group");
    let (status, _) = server
        .post(&format!("/api/heartbeat-runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 409, "a finished run cannot be cancelled again");

    let (aid, run_id, grandchild) = long_run(&server, &cid, "pauseme").await;
    let queued = server.wake(&aid, json!({})).await;
    let paused = server.lever(&aid, "pause").await;
    assert_eq!(paused["status"], "paused");
    let run = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}"))
        .await;
    assert_eq!(run["status"], "cancelled");
    assert_eq!(run["error"], "agent paused");
    assert!(!alive(grandchild));
    let queued = server
        .ok_get(&format!(
            "/api/heartbeat-runs/{}",
            queued["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        queued["status"], "cancelled",
        "the paused agent's queued wake is cancelled"
    );
    assert!(queued["startedAt"].is_null(), "and never started");
    let (status, body) = server
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    assert_eq!(status, 409, "a paused agent gets no new runs: {body}");
    assert_eq!(body["details"]["skipReason"], "agent_paused");
}

#[tokio::test]
async fn a_run_past_its_timeout_is_timed_out() {
    let server = TestServer::start().await;
    let cid = server.company("Slow Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .script_agent(
            &cid,
            "Slow",
            "echo starting\nsleep 30\n",
            json!({ "timeoutSec": 1, "graceSec": 1 }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    let (_, run) = server
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    let run = server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", run["id"].as_str().unwrap()),
            15,
            |r| r["status"] == "timed_out",
        )
        .await;
    assert_eq!(run["errorCode"], "timeout");
    assert_eq!(run["signal"], "SIGTERM");
    assert!(run["stdoutExcerpt"].as_str().unwrap().contains("starting"));
    let agent = server.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(
        agent["status"], "error",
        "a timed-out run leaves its agent in error"
    );
    assert!(agent["errorReason"].is_string());
}

#[tokio::test]
async fn failed_starts_say_why() {
    let server = TestServer::start().await;
    let cid = server.company("Broken Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let missing = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Ghost", "adapterType": "process", "adapterConfig": { "command": "no-such-binary-xyz" } }),
        )
        .await;
    let (_, run) = server
        .post(
            &format!("/api/agents/{}/wakeup", missing["id"].as_str().unwrap()),
            json!({}),
        )
        .await;
    let run = server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", run["id"].as_str().unwrap()),
            10,
            |r| r["status"] == "failed",
        )
        .await;
    assert_eq!(run["errorCode"], "adapter_not_installed");
    assert!(run["error"]
        .as_str()
        .unwrap()
        .contains("no-such-binary-xyz"));

    let exits = server
        .script_agent(
            &cid,
            "Quitter",
            "echo 'fatal: repository not found' >&2\nexit 3\n",
            json!({}),
        )
        .await;
    let (_, run) = server
        .post(
            &format!("/api/agents/{}/wakeup", exits["id"].as_str().unwrap()),
            json!({}),
        )
        .await;
    let run = server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", run["id"].as_str().unwrap()),
            10,
            |r| r["status"] == "failed",
        )
        .await;
    assert_eq!(run["errorCode"], "nonzero_exit");
    assert_eq!(run["exitCode"], 3);
    assert!(
        run["error"]
            .as_str()
            .unwrap()
            .contains("repository not found"),
        "{run}"
    );
    assert!(run["stderrExcerpt"]
        .as_str()
        .unwrap()
        .contains("repository not found"));

    let (status, body) = server
        .post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Bad", "adapterType": "process", "adapterConfig": { "command": "x", "args": [1] } }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["details"][0]["path"],
        json!(["adapterConfig", "args", "0"])
    );
}
