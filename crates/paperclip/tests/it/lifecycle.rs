//! A graceful shutdown (SIGTERM) with a run in flight and a board tab open:
//! the stream ends, the run's processes are killed, the process exits
//! promptly, and the next start settles the interrupted run exactly as after
//! a crash (failed, `control_plane_restart`, its task continued once).

use crate::common;

use common::streams::{event_stream, terminate_ending_stream};
use common::task_worker::{self, hanging_run, CHECKOUT, MARK_DONE, SCRIPT_START};
use common::{until, TestServer};

/// Records each run, checks the task out, then hangs (a `sleep` whose pid it
/// writes down) while `mode` says `hang`, else marks the task done.
fn worker(dir: &std::path::Path) -> String {
    format!(
        r#"{SCRIPT_START}echo "$PAPERCLIP_RUN_ID $PAPERCLIP_WAKE_REASON" >> {d}/runs.log
{CHECKOUT}
if [ "$(cat {d}/mode)" = hang ]; then
  sleep 60 &
  echo $! > {d}/sleep.pid
  echo "$PAPERCLIP_RUN_ID" > {d}/runs.log.hanging
  wait
fi
{MARK_DONE}
"#,
        d = dir.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_mid_run_ends_streams_kills_the_run_and_the_restart_continues_it_once() {
    let mut server = TestServer::start().await;
    let s = task_worker::setup(&server, "Lifecycle Co", "hang", worker).await;
    let (cid, aid, task) = (&s.cid, &s.aid, &s.task);
    let lost = hanging_run(&server, &s, &[]).await;
    let sleeper: i32 = until(5, "the run's process id", async || {
        std::fs::read_to_string(s.dir.join("sleep.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    })
    .await;
    let sse = event_stream(&server, cid).await;
    assert_eq!(sse.status(), 200);
    // The continuation finishes the task.
    s.mode("done");

    terminate_ending_stream(&mut server, sse).await;
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
    let log = s.log();
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
