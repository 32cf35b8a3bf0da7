//! Routine rules beyond firing: the company's list gives each routine its
//! own triggers, last run and live task; typed variables are checked before
//! a task is made; the activity gate skips quiet ticks (company and project
//! scope).

use crate::common;

use common::routine_clock::{acme_with, clock_server, routine, runs, schedule, set_clock};
use serde_json::{json, Value};

/// The company's list reads every routine's triggers, last run and live task
/// in one query each; each routine must still get its own, not a neighbour's.
#[tokio::test]
async fn the_list_gives_each_routine_its_own_triggers_last_run_and_live_task() {
    let server = clock_server().await;
    let (cid, aid) = acme_with(&server, "Reporter").await;
    let aid = aid.as_str();
    let mut ids = Vec::new();
    for (title, cron) in [
        ("Open", "0 9 * * *"),
        ("Closed", "0 17 * * 5"),
        ("Idle", ""),
    ] {
        let r = routine(
            &server,
            &cid,
            json!({ "title": title, "assigneeAgentId": aid }),
        )
        .await;
        let rid = r["id"].as_str().unwrap().to_string();
        if !cron.is_empty() {
            schedule(&server, &rid, cron).await;
        }
        ids.push(rid);
    }
    let mut tasks = Vec::new();
    for rid in &ids[..2] {
        // Two runs of the first two: the list shows the newer one.
        for _ in 0..2 {
            let (status, run) = server
                .post(&format!("/api/routines/{rid}/run"), json!({}))
                .await;
            assert_eq!(status, 202, "{run}");
        }
        let newest = runs(&server, rid).await[0].clone();
        tasks.push(newest);
    }
    // Close every task of "Closed": it has a last run but no live task.
    for run in runs(&server, &ids[1]).await {
        let identifier = run["linkedIssue"]["identifier"].as_str().unwrap();
        server
            .ok_patch(
                &format!("/api/issues/{identifier}"),
                json!({ "status": "cancelled" }),
            )
            .await;
    }
    let list = server
        .ok_get(&format!("/api/companies/{cid}/routines"))
        .await;
    let item = |rid: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == rid)
            .unwrap()
            .clone()
    };
    let open = item(&ids[0]);
    assert_eq!(open["triggers"].as_array().unwrap().len(), 1, "{open}");
    assert_eq!(open["triggers"][0]["cronExpression"], "0 9 * * *");
    assert_eq!(open["lastRun"]["id"], tasks[0]["id"], "{open}");
    assert_eq!(
        open["activeIssue"]["identifier"],
        tasks[0]["linkedIssue"]["identifier"]
    );
    let closed = item(&ids[1]);
    assert_eq!(closed["triggers"][0]["cronExpression"], "0 17 * * 5");
    assert_eq!(closed["lastRun"]["id"], tasks[1]["id"], "{closed}");
    assert!(closed["activeIssue"].is_null(), "{closed}");
    let idle = item(&ids[2]);
    assert!(idle["triggers"].as_array().unwrap().is_empty(), "{idle}");
    assert!(idle["lastRun"].is_null());
    assert!(idle["activeIssue"].is_null());
}

/// Typed variables: a definition that cannot work is refused; a value that
/// does not read as its type is 422 and makes nothing; one that does is
/// written into the task as its type reads it.
#[tokio::test]
async fn typed_variables_are_checked_before_a_task_is_made() {
    let server = clock_server().await;
    let (cid, aid) = acme_with(&server, "A").await;
    let aid = aid.as_str();
    let path = format!("/api/companies/{cid}/routines");
    for (bad, why) in [
        (
            json!({ "name": "region", "type": "select", "options": [] }),
            "at least one option",
        ),
        (
            json!({ "name": "count", "type": "number", "defaultValue": "ten" }),
            "must be a number",
        ),
    ] {
        let (status, body) = server
            .post(
                &path,
                json!({ "title": "R", "assigneeAgentId": aid, "variables": [bad] }),
            )
            .await;
        assert_eq!(status, 422, "{body}");
        assert!(body["error"].as_str().unwrap().contains(why), "{body}");
    }
    let r = routine(
        &server,
        &cid,
        json!({ "title": "Report {{count}} for {{region}}", "assigneeAgentId": aid,
            "description": "Urgent: {{urgent}}, due {{due}}",
            "concurrencyPolicy": "always_enqueue",
            "variables": [
                { "name": "count", "type": "number" },
                { "name": "region", "type": "select", "options": ["eu", "us"], "defaultValue": "eu" },
                { "name": "urgent", "type": "boolean", "required": false },
                { "name": "due", "type": "date", "required": false },
            ] }),
    )
    .await;
    let rid = r["id"].as_str().unwrap();
    let run_path = format!("/api/routines/{rid}/run");
    for (vars, why) in [
        (json!({ "count": "abc" }), "must be a number"),
        (
            json!({ "count": 3, "region": "asia" }),
            "must match one of: eu, us",
        ),
        (
            json!({ "count": 3, "urgent": "perhaps" }),
            "must be a boolean",
        ),
        (json!({ "count": 3, "due": "2026-02-30" }), "YYYY-MM-DD"),
        (json!({}), "Missing required variable 'count'"),
    ] {
        let (status, body) = server.post(&run_path, json!({ "variables": vars })).await;
        assert_eq!(status, 422, "{vars}: {body}");
        assert!(body["error"].as_str().unwrap().contains(why), "{body}");
    }
    assert!(
        runs(&server, rid).await.is_empty(),
        "a refused run made nothing"
    );
    let (status, run) = server
        .post(
            &run_path,
            json!({ "variables": { "count": " 4 ", "urgent": "yes", "due": "2026-12-24" } }),
        )
        .await;
    assert_eq!(status, 202, "{run}");
    let issue = server
        .ok_get(&format!(
            "/api/issues/{}",
            run["linkedIssueId"].as_str().unwrap()
        ))
        .await;
    assert_eq!(issue["title"], "Report 4 for eu");
    assert_eq!(issue["description"], "Urgent: true, due 2026-12-24");
}

/// `activityGatePolicy: require_external_activity`: a tick with nothing new
/// in the company since the routine last ran is skipped (a run that says
/// why, no task, no wake, no tokens); the routine's own task and its agent's
/// run do not count, a person's change does. The first tick always fires.
#[tokio::test]
async fn a_gated_routine_skips_quiet_ticks_and_fires_after_activity() {
    let server = clock_server().await;
    let (cid, aid) = acme_with(&server, "Triager").await;
    let aid = aid.as_str();
    let (status, body) = server
        .post(
            &format!("/api/companies/{cid}/routines"),
            json!({ "title": "Triage", "assigneeAgentId": aid,
                "activityGatePolicy": "require_external_activity", "activityGateScope": "project" }),
        )
        .await;
    assert_eq!(status, 422, "a project scope needs a project: {body}");
    let r = routine(
        &server,
        &cid,
        json!({ "title": "Triage {{date}}", "assigneeAgentId": aid,
            "concurrencyPolicy": "always_enqueue",
            "activityGatePolicy": "require_external_activity" }),
    )
    .await;
    assert_eq!(r["activityGatePolicy"], "require_external_activity");
    assert_eq!(r["activityGateScope"], "company");
    let rid = r["id"].as_str().unwrap();
    schedule(&server, rid, "0 10 * * *").await;
    let heartbeats = format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}");
    let settled = |n: usize| {
        move |runs: &Value| {
            let runs = runs.as_array().unwrap();
            runs.len() == n
                && runs
                    .iter()
                    .all(|r| !matches!(r["status"].as_str(), Some("queued" | "running")))
        }
    };

    // Never ran: the first tick fires, and its agent's run ends.
    assert_eq!(set_clock(&server, "2026-01-05T10:00:05Z").await, 1);
    server.wait_for(&heartbeats, 30, settled(1)).await;
    // Nothing happened since but its own task and run: skipped.
    assert_eq!(set_clock(&server, "2026-01-06T10:00:05Z").await, 0);
    let list = runs(&server, rid).await;
    assert_eq!(list.len(), 2, "{list:?}");
    assert_eq!(list[0]["status"], "skipped");
    assert_eq!(list[0]["failureReason"], "no_external_activity");
    assert!(list[0]["linkedIssue"].is_null(), "{}", list[0]);
    let issues = server.ok_get(&format!("/api/companies/{cid}/issues")).await;
    assert_eq!(
        issues.as_array().unwrap().len(),
        1,
        "no task for a quiet tick"
    );
    assert_eq!(
        server.ok_get(&heartbeats).await.as_array().unwrap().len(),
        1
    );
    let trigger = &server.ok_get(&format!("/api/routines/{rid}")).await["triggers"][0];
    assert_eq!(trigger["lastResult"], "skipped");
    assert_eq!(trigger["nextRunAt"], "2026-01-07T10:00:00.000Z");
    // The routine's page says what the gate does and why the run made nothing.
    let page = server.page(&format!("/ACM/routines/{rid}")).await;
    assert!(page.contains("skips a scheduled run when nothing has happened since its last one"));
    assert!(page.contains("Nothing had happened since the last run: no task, no agent woken"));
    // Skipping is not activity either: the next quiet day skips again.
    assert_eq!(set_clock(&server, "2026-01-07T10:00:05Z").await, 0);

    // A person files a task: the next tick fires.
    server
        .issue(&cid, json!({ "title": "Customer reports a bug" }))
        .await;
    assert_eq!(set_clock(&server, "2026-01-08T10:00:05Z").await, 1);
    let list = runs(&server, rid).await;
    assert_eq!(list[0]["status"], "issue_created", "{list:?}");
    server.wait_for(&heartbeats, 30, settled(2)).await;
    let skipped = server
        .ok_get(&format!("/api/companies/{cid}/activity?limit=200"))
        .await
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["action"] == "routine.run_skipped")
        .count();
    assert_eq!(skipped, 2);

    // Back to always: a quiet day fires.
    server
        .ok_patch(
            &format!("/api/routines/{rid}"),
            json!({ "activityGatePolicy": "always" }),
        )
        .await;
    assert_eq!(set_clock(&server, "2026-01-09T10:00:05Z").await, 1);
}

/// A gate scoped to the routine's project counts only that project's
/// activity: a task filed in another project leaves the tick quiet.
#[tokio::test]
async fn a_project_gate_counts_only_its_projects_activity() {
    let server = clock_server().await;
    let (cid, aid) = acme_with(&server, "Triager").await;
    let mut projects = Vec::new();
    for name in ["Mobile", "Web"] {
        let p = server
            .ok_post(
                &format!("/api/companies/{cid}/projects"),
                json!({ "name": name }),
            )
            .await;
        projects.push(p["id"].as_str().unwrap().to_string());
    }
    let r = routine(
        &server,
        &cid,
        json!({ "title": "Mobile triage", "assigneeAgentId": aid, "projectId": projects[0],
            "concurrencyPolicy": "always_enqueue",
            "activityGatePolicy": "require_external_activity", "activityGateScope": "project" }),
    )
    .await;
    let rid = r["id"].as_str().unwrap();
    schedule(&server, rid, "0 10 * * *").await;
    assert_eq!(set_clock(&server, "2026-01-05T10:00:05Z").await, 1);
    server
        .issue(
            &cid,
            json!({ "title": "Web bug", "projectId": projects[1] }),
        )
        .await;
    assert_eq!(set_clock(&server, "2026-01-06T10:00:05Z").await, 0);
    server
        .issue(
            &cid,
            json!({ "title": "Mobile bug", "projectId": projects[0] }),
        )
        .await;
    assert_eq!(set_clock(&server, "2026-01-07T10:00:05Z").await, 1);
    let statuses: Vec<Value> = runs(&server, rid)
        .await
        .iter()
        .map(|r| r["status"].clone())
        .collect();
    assert_eq!(statuses, ["issue_created", "skipped", "issue_created"]);
}
