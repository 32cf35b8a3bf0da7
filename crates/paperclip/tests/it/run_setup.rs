//! A run the server cannot set up: its log storage fails before the agent's
//! process starts. The run ends `failed` with `run_setup_failed` (the
//! server's fault, not the agent's) and a readable error, the agent is not
//! left `running`, and once the storage is fixed the next run goes through.

use crate::common;

use common::TestServer;
use serde_json::json;

#[tokio::test]
async fn a_run_whose_log_cannot_be_opened_fails_as_setup_and_the_next_one_runs() {
    // On Postgres run logs go to the database (any instance reads them): no
    // file in the way fails them, so the failure is made on SQLite only.
    if std::env::var("PAPERCLIP_TEST_PG_URL").is_ok_and(|u| !u.is_empty()) {
        eprintln!("run logs are in the database on Postgres: a log file cannot be blocked");
        return;
    }
    let server = TestServer::start().await;
    let cid = server.company("Setup Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ran = server.data_dir.join("agent-ran");
    let script = format!("touch {}\necho working\n", ran.display());
    let agent = server.script_agent(&cid, "Setup", &script, json!({})).await;
    let aid = agent["id"].as_str().unwrap().to_string();

    // Run logs live in `<data dir>/run-logs/<company>/<run>.ndjson`. A
    // regular file where the company's log directory belongs makes opening
    // any of its run logs fail, root or not (permissions would not stop root).
    let logs = server.data_dir.join("run-logs");
    std::fs::create_dir_all(&logs).unwrap();
    let blocker = logs.join(&cid);
    assert!(!blocker.exists(), "no run of this company logged yet");
    std::fs::write(&blocker, "not a directory").unwrap();

    let (status, run) = server
        .post(
            &format!("/api/agents/{aid}/wakeup"),
            json!({ "reason": "setup" }),
        )
        .await;
    assert!(status.is_success(), "{status} {run}");
    let run_id = run["id"].as_str().unwrap().to_string();
    let failed = server
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 30, |r| {
            r["status"] != "queued" && r["status"] != "running"
        })
        .await;
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["errorCode"], "run_setup_failed", "{failed}");
    let error = failed["error"].as_str().unwrap_or_default();
    assert!(
        !error.trim().is_empty() && !error.contains('\n') && !error.contains("Os {"),
        "a readable error, one line of text: {failed}"
    );
    // It says what could not be done, not only the system's words.
    assert!(
        error.starts_with("Could not open the run's log"),
        "{failed}"
    );
    assert!(failed["finishedAt"].is_string(), "{failed}");
    assert!(!ran.exists(), "the agent's process never started");

    // The agent is let go (error, with the reason), not held `running`.
    let agent = server
        .wait_for(&format!("/api/agents/{aid}"), 10, |a| {
            a["status"] != "running"
        })
        .await;
    assert_eq!(agent["status"], "error", "{agent}");
    assert!(agent["errorReason"].is_string(), "{agent}");

    // The cause fixed, the next wake runs the agent.
    std::fs::remove_file(&blocker).unwrap();
    let (status, next) = server
        .post(
            &format!("/api/agents/{aid}/wakeup"),
            json!({ "reason": "retry" }),
        )
        .await;
    assert!(status.is_success(), "{status} {next}");
    let next_id = next["id"].as_str().unwrap().to_string();
    assert_ne!(next_id, run_id);
    let done = server
        .wait_for(&format!("/api/heartbeat-runs/{next_id}"), 30, |r| {
            r["status"] != "queued" && r["status"] != "running"
        })
        .await;
    assert_eq!(done["status"], "succeeded", "{done}");
    assert!(ran.exists(), "the agent ran this time");
    common::until(10, "the agent to be idle after its run", async || {
        let (_, agent) = server.get(&format!("/api/agents/{aid}")).await;
        (agent["status"] == "idle").then_some(())
    })
    .await;
}
