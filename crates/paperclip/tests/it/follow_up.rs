//! What becomes of a task when its run ends: a restart hands it to a
//! continuation run (bounded), a failure blocks it and Retry starts it again,
//! a stop releases its checkout. No task stays checked out by a dead run.

use crate::common;

use common::task_worker::{self, hanging_run, Setup, CHECKOUT, MARK_DONE, SCRIPT_START};
use common::TestServer;
use serde_json::{json, Value};

/// A script that checks the task out, records the run, and then acts on
/// `$1`-style switches kept in files next to it: `hang` (wait to be killed),
/// `fail` (exit 1) or else marks the task done.
fn worker(dir: &std::path::Path) -> String {
    let log = dir.join("runs.log");
    let mode = dir.join("mode");
    format!(
        r#"{SCRIPT_START}echo "$PAPERCLIP_RUN_ID $PAPERCLIP_WAKE_REASON comments=$PAPERCLIP_WAKE_COMMENT_IDS" >> {log}
{CHECKOUT}
case "$(cat {mode})" in
  hang) echo "$PAPERCLIP_RUN_ID" > {log}.hanging; sleep 60 ;;
  fail) echo "cannot go on" >&2; exit 1 ;;
  *) {MARK_DONE} ;;
esac
"#,
        log = log.display(),
        mode = mode.display()
    )
}

/// A company, a worker agent, and a task assigned to it (which wakes it).
async fn setup(server: &TestServer, mode: &str) -> Setup {
    task_worker::setup(server, "Follow Co", mode, worker).await
}

/// A board page's HTML.
async fn page(server: &TestServer, path: &str) -> String {
    let resp = server.client().get(server.url(path)).send().await.unwrap();
    resp.text().await.unwrap()
}

async fn restart(server: TestServer) -> TestServer {
    common::restart_keeping_data(server).await
}

/// The run an open issue is checked out by must be queued or running. The
/// issue and the run are two reads: a run seen over is checked against the
/// issue read after it (the run's end and its task's change commit together),
/// where a done task keeps the run that finished it.
async fn holder_is_live(server: &TestServer, task: &str) -> Option<Value> {
    let issue = server.ok_get(&format!("/api/issues/{task}")).await;
    let holder = issue["checkoutRunId"].as_str()?;
    let run = server
        .ok_get(&format!("/api/heartbeat-runs/{holder}"))
        .await;
    if !matches!(run["status"].as_str(), Some("queued" | "running")) {
        let now = server.ok_get(&format!("/api/issues/{task}")).await;
        let closed = matches!(now["status"].as_str(), Some("done" | "cancelled"));
        assert!(
            closed || now["checkoutRunId"] != holder,
            "the open task is checked out by a run that is over: {run} {now}"
        );
    }
    Some(run)
}

#[tokio::test]
async fn a_restart_hands_the_task_to_a_continuation_that_finishes_it() {
    let server = TestServer::start().await;
    let s = setup(&server, "hang").await;
    let lost = hanging_run(&server, &s, &[]).await;
    s.mode("done");
    let server = restart(server).await;

    let before = server.ok_get(&format!("/api/heartbeat-runs/{lost}")).await;
    assert_eq!(before["status"], "failed");
    assert_eq!(before["errorCode"], "control_plane_restart");
    // Right after recovery the task is held by the continuation, not the dead run.
    let next = holder_is_live(&server, &s.task)
        .await
        .expect("the continuation holds the checkout");
    assert_eq!(next["retryOfRunId"], lost.as_str());
    assert_eq!(next["continuationAttempt"], 1);
    assert_eq!(next["issueId"], s.task.as_str());

    let issue = server
        .wait_for(&format!("/api/issues/{}", s.task), 20, |i| {
            i["status"] == "done"
        })
        .await;
    assert_eq!(
        issue["checkoutRunId"], next["id"],
        "the continuation finished it: {issue}"
    );
    let log = s.log();
    assert_eq!(log.len(), 2, "one lost run, one continuation: {log:?}");
    assert!(log[1].contains("continue_after_restart"), "{log:?}");
    server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", next["id"].as_str().unwrap()),
            20,
            |r| r["status"] == "succeeded",
        )
        .await;
    let agent = server.ok_get(&format!("/api/agents/{}", s.aid)).await;
    assert_eq!(
        agent["status"], "idle",
        "a restart is not the agent's failure"
    );
    let actions = server.actions(&s.cid).await;
    assert_eq!(
        actions
            .iter()
            .filter(|a| *a == "heartbeat.continued")
            .count(),
        1
    );
}

#[tokio::test]
async fn continuations_stop_at_the_budget_and_the_task_is_blocked_with_the_reason() {
    let mut server = TestServer::start().await;
    let s = setup(&server, "hang").await;
    let mut seen: Vec<String> = Vec::new();
    // The budget is three continuations: the fourth restart in a row blocks.
    for attempt in 0..4 {
        let run = hanging_run(&server, &s, &seen).await;
        seen.push(run.clone());
        server = restart(server).await;
        let lost = server.ok_get(&format!("/api/heartbeat-runs/{run}")).await;
        assert_eq!(lost["errorCode"], "control_plane_restart");
        assert_eq!(lost["continuationAttempt"], attempt);
        if attempt < 3 {
            let next = holder_is_live(&server, &s.task).await.expect("continued");
            assert_eq!(next["continuationAttempt"], attempt + 1);
        }
    }
    let issue = server.ok_get(&format!("/api/issues/{}", s.task)).await;
    assert_eq!(issue["status"], "blocked", "{issue}");
    assert!(issue["checkoutRunId"].is_null() && issue["executionRunId"].is_null());
    let activity = server
        .ok_get(&format!(
            "/api/companies/{}/activity?action=issue.updated",
            s.cid
        ))
        .await;
    let reason = activity
        .as_array()
        .unwrap()
        .iter()
        .find_map(|a| a["details"]["reason"].as_str().map(str::to_string))
        .expect("the block says why");
    assert!(reason.contains("4 control-plane restarts"), "{reason}");
    let runs = server.runs_of(&s.cid, &s.aid).await;
    assert_eq!(runs.len(), 4, "no fifth run after the budget: {runs:?}");
    assert!(runs.iter().all(|r| r["status"] == "failed"));
    // A chain of continuations none of which succeeded recovered nothing.
    assert_eq!(failed_and_recovered(&server, &s.cid).await, (4, 0));
    // The inbox lists the blocked task by its identifier.
    let prefix = server.ok_get(&format!("/api/companies/{}", s.cid)).await["issuePrefix"]
        .as_str()
        .unwrap()
        .to_string();
    let page = page(&server, &format!("/{prefix}/inbox")).await;
    assert!(
        page.contains(&format!("{prefix}-1")),
        "inbox shows the blocked task"
    );
}

#[tokio::test]
async fn a_failed_run_blocks_its_task_and_retry_starts_it_again() {
    let server = TestServer::start().await;
    let s = setup(&server, "fail").await;
    let issue = server
        .wait_for(&format!("/api/issues/{}", s.task), 20, |i| {
            i["status"] == "blocked"
        })
        .await;
    assert!(
        issue["checkoutRunId"].is_null(),
        "the failed run holds nothing: {issue}"
    );
    let failed = server.runs_of(&s.cid, &s.aid).await.pop().unwrap();
    assert_eq!(failed["status"], "failed");
    let failed_id = failed["id"].as_str().unwrap().to_string();

    // Refusals: an unknown run, another agent's run, a run that is not over.
    let (status, _) = server
        .post(
            &format!("/api/agents/{}/wakeup", s.aid),
            json!({ "failedRunId": uuid::Uuid::new_v4().to_string() }),
        )
        .await;
    assert_eq!(status, 400);
    let other = server
        .script_agent(&s.cid, "Other", "exit 0", json!({}))
        .await;
    let (status, body) = server
        .post(
            &format!("/api/agents/{}/wakeup", other["id"].as_str().unwrap()),
            json!({ "failedRunId": failed_id }),
        )
        .await;
    assert_eq!(status, 422, "{body}");

    // The task page says why it is blocked and offers Retry on the run.
    let prefix = &issue["identifier"]
        .as_str()
        .unwrap()
        .split('-')
        .next()
        .unwrap()
        .to_string();
    let page = page(
        &server,
        &format!("/{prefix}/tasks/{}", issue["identifier"].as_str().unwrap()),
    )
    .await;
    assert!(
        page.contains("Blocked: </strong>its last run failed"),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "{{&quot;failedRunId&quot;:&quot;{failed_id}&quot;"
        )),
        "Retry button"
    );

    s.mode("done");
    let (status, retry) = server
        .post(
            &format!("/api/agents/{}/wakeup", s.aid),
            json!({ "failedRunId": failed_id, "reason": "retry_failed_run" }),
        )
        .await;
    assert_eq!(status, 202, "{retry}");
    assert_eq!(retry["retryOfRunId"], failed_id.as_str());
    assert_eq!(retry["issueId"], s.task.as_str());
    let issue = server
        .wait_for(&format!("/api/issues/{}", s.task), 20, |i| {
            i["status"] == "done"
        })
        .await;
    assert_eq!(issue["checkoutRunId"], retry["id"], "the retry finished it");
    let log = s.log();
    assert!(log.last().unwrap().contains("retry_failed_run"), "{log:?}");
    let done = server
        .wait_for(
            &format!("/api/heartbeat-runs/{}", retry["id"].as_str().unwrap()),
            20,
            |r| r["status"] == "succeeded",
        )
        .await;
    let (status, body) = server
        .post(
            &format!("/api/agents/{}/wakeup", s.aid),
            json!({ "failedRunId": done["id"] }),
        )
        .await;
    assert_eq!(status, 409, "a succeeded run is not retried: {body}");
    // The dashboard's run chart counts the failure as recovered by its retry.
    assert_eq!(failed_and_recovered(&server, &s.cid).await, (0, 1));
}

/// Failed and recovered runs of the dashboard's run chart, over its days;
/// no day lists an error code of a recovered failure.
async fn failed_and_recovered(server: &TestServer, cid: &str) -> (i64, i64) {
    let dash = server
        .ok_get(&format!("/api/companies/{cid}/dashboard"))
        .await;
    let days = dash["runActivity"].as_array().expect("a list of days");
    let sum = |key: &str| days.iter().map(|d| d[key].as_i64().unwrap()).sum::<i64>();
    for day in days {
        let by_code: i64 = day["failedByErrorCode"]
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_i64().unwrap())
            .sum();
        assert_eq!(by_code, day["failed"].as_i64().unwrap(), "{day}");
    }
    (sum("failed"), sum("recovered"))
}

#[tokio::test]
async fn a_stopped_run_releases_its_checkout_and_keeps_the_task_in_progress() {
    let server = TestServer::start().await;
    let s = setup(&server, "hang").await;
    let run = hanging_run(&server, &s, &[]).await;
    let (status, _) = server
        .post(&format!("/api/heartbeat-runs/{run}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200);
    let issue = server
        .wait_for(&format!("/api/issues/{}", s.task), 20, |i| {
            i["checkoutRunId"].is_null()
        })
        .await;
    assert_eq!(issue["status"], "in_progress", "a stop is not a failure");
    let stopped = server.ok_get(&format!("/api/heartbeat-runs/{run}")).await;
    assert_eq!(stopped["status"], "cancelled");
}

#[tokio::test]
async fn interrupt_stops_the_turn_and_the_next_run_gets_the_new_comment_at_once() {
    let server = TestServer::start().await;
    let s = setup(&server, "hang").await;
    let first = hanging_run(&server, &s, &[]).await;
    let issue = server.ok_get(&format!("/api/issues/{}", s.task)).await;
    let ident = issue["identifier"].as_str().unwrap().to_string();
    let prefix = ident.split('-').next().unwrap().to_string();
    let page = page(&server, &format!("/{prefix}/tasks/{ident}")).await;
    assert!(
        page.contains(&format!("name=\"interrupt\" value=\"{first}\"")),
        "the composer offers Comment and interrupt while a run works"
    );
    let comment = server
        .ok_post(
            &format!("/api/issues/{}/comments", s.task),
            json!({ "body": "Change of plan: ship it now." }),
        )
        .await;
    let comment = comment["id"].as_str().unwrap().to_string();
    s.mode("done");
    let (status, out) = server
        .post(
            &format!("/api/issues/{}/queued-comments/interrupt", s.task),
            json!({ "targetRunId": first }),
        )
        .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out["interruptedRun"]["id"], first.as_str());
    assert_eq!(out["interruptedRun"]["status"], "cancelled");
    assert!(out["interruptedRun"]["error"]
        .as_str()
        .unwrap()
        .contains("Interrupted"));
    let next = out["nextRun"]["id"]
        .as_str()
        .expect("a next run")
        .to_string();

    assert_eq!(
        out["nextRun"]["contextSnapshot"]["commentIds"],
        json!([comment]),
        "{out}"
    );
    server
        .wait_for(&format!("/api/issues/{}", s.task), 20, |i| {
            i["status"] == "done"
        })
        .await;
    let log = s.log();
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(
        log[1].starts_with(&next) && log[1].ends_with(&format!("comments={comment}")),
        "{log:?}"
    );
    // Only the board interrupts: an agent's key is refused.
    let key = server.key(&s.aid).await;
    let (status, _) = server
        .as_agent(
            &key,
            None,
            "POST",
            &format!("/api/issues/{}/queued-comments/interrupt", s.task),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 403, "an agent cannot interrupt");
    // The person saw an older state: that run is no longer working.
    let (status, _) = server
        .post(
            &format!("/api/issues/{}/queued-comments/interrupt", s.task),
            json!({ "targetRunId": first }),
        )
        .await;
    assert_eq!(status, 409);
}
