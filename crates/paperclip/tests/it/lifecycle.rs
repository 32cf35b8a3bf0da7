//! A graceful shutdown (SIGTERM) with a run in flight and a board tab open:
//! the stream ends, the run's processes are killed, the process exits
//! promptly, and the next start settles the interrupted run exactly as after
//! a crash (failed, `control_plane_restart`, its task continued once).

use crate::common;

use std::time::Duration;

use common::{until, TestServer};
use serde_json::json;

/// Records each run, checks the task out, then hangs (a `sleep` whose pid it
/// writes down) while `mode` says `hang`, else marks the task done.
fn worker(dir: &std::path::Path) -> String {
    format!(
        r#"set -e
H="Authorization: Bearer $PAPERCLIP_API_KEY"
R="X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID"
J="Content-Type: application/json"
T="$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID"
echo "$PAPERCLIP_RUN_ID $PAPERCLIP_WAKE_REASON" >> {d}/runs.log
curl -sSf -X POST "$T/checkout" -H "$H" -H "$R" -H "$J" -d "{{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\",\"in_progress\"]}}" > /dev/null
if [ "$(cat {d}/mode)" = hang ]; then
  sleep 60 &
  echo $! > {d}/sleep.pid
  echo "$PAPERCLIP_RUN_ID" > {d}/hanging
  wait
fi
curl -sSf -X PATCH "$T" -H "$H" -H "$R" -H "$J" -d '{{"status":"done"}}' > /dev/null
"#,
        d = dir.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_run_ends_streams_kills_the_run_and_the_restart_continues_it_once() {
    let mut server = TestServer::start().await;
    let dir = server
        .data_dir
        .join(format!("w-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mode"), "hang").unwrap();
    let cid = server.company("Lifecycle Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let aid = server
        .script_agent(&cid, "Worker", &worker(&dir), json!({}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let task = server
        .issue(
            &cid,
            json!({ "title": "Ship it", "status": "todo", "assigneeAgentId": aid }),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let lost = until(20, "the run hanging on the task", async || {
        let id = std::fs::read_to_string(dir.join("hanging")).ok()?;
        let id = id.trim().to_string();
        let issue = server.ok_get(&format!("/api/issues/{task}")).await;
        (issue["checkoutRunId"] == id.as_str()).then_some(id)
    })
    .await;
    let sleeper: i32 = until(5, "the run's process id", async || {
        std::fs::read_to_string(dir.join("sleep.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    })
    .await;
    let mut sse = server
        .client()
        .get(server.url(&format!("/api/companies/{cid}/events")))
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status(), 200);
    // The continuation finishes the task.
    std::fs::write(dir.join("mode"), "done").unwrap();

    let exited = server.terminate(5).await;
    assert!(exited, "the server was still running 5 s after SIGTERM");
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match sse.chunk().await {
                Ok(Some(_)) => continue,
                other => return other.map_err(|e| e.to_string()),
            }
        }
    })
    .await
    .expect("the SSE stream stayed open after exit");
    assert_eq!(end, Ok(None), "the SSE stream was cut, not ended");
    // The shutdown killed the run's processes; it did not leave them to
    // the next start.
    until(5, "the run's process killed by the shutdown", async || {
        gone_or_zombie(sleeper).then_some(())
    })
    .await;

    let server = common::restart_keeping_data(server).await;
    let settled = server.ok_get(&format!("/api/heartbeat-runs/{lost}")).await;
    assert_eq!(settled["status"], "failed", "{settled}");
    assert_eq!(settled["errorCode"], "control_plane_restart", "{settled}");
    let issue = server
        .wait_for(&format!("/api/issues/{task}"), 20, |i| {
            i["status"] == "done"
        })
        .await;
    let next = issue["checkoutRunId"].as_str().unwrap().to_string();
    assert_ne!(next, lost);
    let next = server
        .wait_for(&format!("/api/heartbeat-runs/{next}"), 20, |r| {
            r["status"] == "succeeded"
        })
        .await;
    assert_eq!(next["retryOfRunId"], lost.as_str());
    server.quiesce().await;
    let log: Vec<String> = std::fs::read_to_string(dir.join("runs.log"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(
        log.len(),
        2,
        "one interrupted run, one continuation: {log:?}"
    );
    assert!(log[1].contains("continue_after_restart"), "{log:?}");
    let runs = server.runs_of(&cid, &aid).await;
    assert_eq!(runs.len(), 2, "no run was started twice: {runs:?}");
    let recovered = server
        .ok_get(&format!(
            "/api/companies/{cid}/activity?action=heartbeat.recovered"
        ))
        .await;
    assert_eq!(recovered.as_array().unwrap().len(), 1, "{recovered}");
    assert_eq!(recovered[0]["entityId"], lost.as_str());
}

/// Whether `pid` has exited (gone, or a zombie not yet reaped).
fn gone_or_zombie(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(") ").next().is_some_and(|s| s.starts_with('Z')),
    }
}
