//! Routines end to end: a cron routine fires on the injected test clock
//! (no waiting for wall-clock minutes), makes a task assigned to its agent
//! and wakes it; concurrency policies while an execution is live; catch-up
//! after a crash; pause and resume; revisions; isolation; two servers on one
//! Postgres database fire a tick once.

mod common;

use common::{until, TestServer};
use serde_json::{json, Value};

const START: &str = "2026-01-05T09:58:00Z";

async fn clock_server() -> TestServer {
    TestServer::start_args(&["--test-clock", START]).await
}

/// Sets the test clock; the server runs one routine pass at that time and
/// says how many runs it dispatched.
async fn set_clock(server: &TestServer, at: &str) -> u64 {
    let body = server
        .ok_post("/api/instance/test-clock", json!({ "now": at }))
        .await;
    body["dispatched"].as_u64().unwrap()
}

/// Company "Acme" with one agent named `agent`: their ids.
async fn acme_with(server: &TestServer, agent: &str) -> (String, String) {
    let cid = server.company("Acme").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let aid = server.agent(&cid, agent, None).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    (cid, aid)
}

async fn routine(server: &TestServer, cid: &str, body: Value) -> Value {
    let (status, r) = server
        .post(&format!("/api/companies/{cid}/routines"), body)
        .await;
    assert_eq!(status, 201, "{r}");
    r
}

async fn schedule(server: &TestServer, rid: &str, cron: &str) -> Value {
    let (status, t) = server
        .post(
            &format!("/api/routines/{rid}/triggers"),
            json!({ "kind": "schedule", "cronExpression": cron, "timezone": "UTC" }),
        )
        .await;
    assert_eq!(status, 201, "{t}");
    assert!(t["secretMaterial"].is_null());
    t["trigger"].clone()
}

async fn runs(server: &TestServer, rid: &str) -> Vec<Value> {
    server
        .ok_get(&format!("/api/routines/{rid}/runs"))
        .await
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn a_cron_routine_fires_on_the_test_clock_makes_a_task_and_wakes_its_agent() {
    let server = clock_server().await;
    let (cid, aid) = acme_with(&server, "Reporter").await;
    let aid = aid.as_str();
    let r = routine(
        &server,
        &cid,
        json!({ "title": "Daily report {{date}}", "description": "At {{timestamp}}",
            "assigneeAgentId": aid, "priority": "high" }),
    )
    .await;
    let rid = r["id"].as_str().unwrap();
    assert_eq!(r["status"], "active");
    assert_eq!(r["concurrencyPolicy"], "coalesce_if_active");
    assert_eq!(r["catchUpPolicy"], "skip_missed");
    let t = schedule(&server, rid, "0 10 * * *").await;
    assert_eq!(t["nextRunAt"], "2026-01-05T10:00:00.000Z");

    assert_eq!(set_clock(&server, "2026-01-05T09:59:59Z").await, 0);
    assert!(runs(&server, rid).await.is_empty());
    assert_eq!(set_clock(&server, "2026-01-05T10:00:05Z").await, 1);
    // The same tick is never fired twice.
    assert_eq!(set_clock(&server, "2026-01-05T10:00:30Z").await, 0);
    let list = runs(&server, rid).await;
    assert_eq!(list.len(), 1, "{list:?}");
    let run = &list[0];
    assert_eq!(run["source"], "schedule");
    assert_eq!(run["triggeredAt"], "2026-01-05T10:00:00.000Z");
    let identifier = run["linkedIssue"]["identifier"].as_str().unwrap();
    assert!(identifier.starts_with("ACM-"), "{run}");
    let issue = server.ok_get(&format!("/api/issues/{identifier}")).await;
    assert_eq!(issue["title"], "Daily report 2026-01-05");
    assert_eq!(issue["assigneeAgentId"], aid);
    assert_eq!(issue["priority"], "high");
    assert_eq!(issue["originKind"], "routine_execution");
    // The agent is woken for it: a heartbeat run on that task.
    let issue_id = issue["id"].as_str().unwrap().to_string();
    server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            30,
            |runs| {
                runs.as_array()
                    .is_some_and(|r| r.iter().any(|run| run["issueId"] == issue_id.as_str()))
            },
        )
        .await;
    let trigger = &server.ok_get(&format!("/api/routines/{rid}")).await["triggers"][0];
    assert_eq!(trigger["nextRunAt"], "2026-01-06T10:00:00.000Z");
    assert_eq!(trigger["lastResult"], "issue_created");
    // Attributed to the scheduler.
    let activity = server
        .ok_get(&format!("/api/companies/{cid}/activity?limit=200"))
        .await;
    let triggered = activity
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == "routine.run_triggered")
        .expect("routine.run_triggered logged");
    assert_eq!(triggered["actorType"], "system");
    assert_eq!(triggered["actorId"], "routine-scheduler");
    assert_eq!(triggered["entityType"], "routine_run");

    // Paused: the next tick passes without a run. Resumed: it fires again.
    server
        .ok_patch(
            &format!("/api/routines/{rid}"),
            json!({ "status": "paused" }),
        )
        .await;
    assert_eq!(set_clock(&server, "2026-01-06T10:01:00Z").await, 0);
    assert_eq!(runs(&server, rid).await.len(), 1);
    server
        .ok_patch(
            &format!("/api/routines/{rid}"),
            json!({ "status": "active" }),
        )
        .await;
    let detail = server.ok_get(&format!("/api/routines/{rid}")).await;
    assert_eq!(
        detail["triggers"][0]["nextRunAt"],
        "2026-01-07T10:00:00.000Z"
    );
    assert_eq!(set_clock(&server, "2026-01-07T10:00:00Z").await, 1);
    assert_eq!(runs(&server, rid).await.len(), 2);
    // The run follows its task: blocked fails it, reopened it is live again.
    // (The second tick may have coalesced into the same task while the
    // agent was still on it, so the first run is found by its tick.)
    let first_status = async |server: &TestServer| {
        runs(server, rid)
            .await
            .into_iter()
            .find(|r| r["triggeredAt"] == "2026-01-05T10:00:00.000Z")
            .unwrap()["status"]
            .clone()
    };
    server
        .ok_patch(
            &format!("/api/issues/{identifier}"),
            json!({ "status": "blocked" }),
        )
        .await;
    assert_eq!(first_status(&server).await, "failed");
    server
        .ok_patch(
            &format!("/api/issues/{identifier}"),
            json!({ "status": "todo" }),
        )
        .await;
    assert_eq!(first_status(&server).await, "issue_created");
}

#[tokio::test]
async fn bad_schedules_and_bodies_are_refused() {
    let server = clock_server().await;
    let (cid, aid) = acme_with(&server, "A").await;
    let aid = aid.as_str();
    let r = routine(
        &server,
        &cid,
        json!({ "title": "R", "assigneeAgentId": aid }),
    )
    .await;
    let rid = r["id"].as_str().unwrap();
    let path = format!("/api/routines/{rid}/triggers");
    let (status, body) = server
        .post(
            &path,
            json!({ "kind": "schedule", "cronExpression": "61 * * * *" }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, body) = server
        .post(
            &path,
            json!({ "kind": "schedule", "cronExpression": "0 * * * *", "timezone": "Mars/Base" }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body["error"].as_str().unwrap().contains("Invalid timezone"));
    let (status, _) = server.post(&path, json!({ "kind": "cron" })).await;
    assert_eq!(status, 400);
    let (status, _) = server
        .post(
            &format!("/api/companies/{cid}/routines"),
            json!({ "title": "x", "concurrencyPolicy": "parallel" }),
        )
        .await;
    assert_eq!(status, 400);
    let (status, _) = server
        .post(
            &format!("/api/companies/{cid}/routines"),
            json!({ "title": "" }),
        )
        .await;
    assert_eq!(status, 400);
    // A required variable without a default cannot be scheduled.
    let v = routine(
        &server,
        &cid,
        json!({ "title": "About {{topic}}", "assigneeAgentId": aid }),
    )
    .await;
    assert_eq!(v["variables"][0]["name"], "topic");
    let (status, _) = server
        .post(
            &format!("/api/routines/{}/triggers", v["id"].as_str().unwrap()),
            json!({ "kind": "schedule", "cronExpression": "0 * * * *" }),
        )
        .await;
    assert_eq!(status, 422);
    // Nothing was stored by the refusals.
    let detail = server.ok_get(&format!("/api/routines/{rid}")).await;
    assert!(detail["triggers"].as_array().unwrap().is_empty());
    // Unassigned and active: stored paused; enabling it is a 422.
    let u = routine(&server, &cid, json!({ "title": "Nobody's" })).await;
    assert_eq!(u["status"], "paused");
    let (status, body) = server
        .patch(
            &format!("/api/routines/{}", u["id"].as_str().unwrap()),
            json!({ "status": "active" }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"], "Default agent required");
}

/// A `process` agent whose run stays running until `release` exists.
async fn blocked_agent(server: &TestServer, cid: &str, name: &str) -> (String, std::path::PathBuf) {
    let release = server.data_dir.join(format!("release-{name}"));
    let script = format!(
        "while [ ! -f '{}' ]; do sleep 0.1; done\n",
        release.display()
    );
    let agent = server
        .script_agent(cid, name, &script, json!({ "timeoutSec": 120 }))
        .await;
    (agent["id"].as_str().unwrap().to_string(), release)
}

#[tokio::test]
async fn concurrency_policies_while_an_execution_is_live() {
    let server = clock_server().await;
    let cid = server.company("Acme").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut releases = Vec::new();
    for (policy, second) in [
        ("skip_if_active", "skipped"),
        ("coalesce_if_active", "coalesced"),
        ("always_enqueue", "issue_created"),
    ] {
        let (aid, release) = blocked_agent(&server, &cid, policy).await;
        releases.push(release);
        let r = routine(
            &server,
            &cid,
            json!({ "title": format!("Work {policy}"), "assigneeAgentId": aid,
                "concurrencyPolicy": policy }),
        )
        .await;
        let rid = r["id"].as_str().unwrap();
        let (status, first) = server
            .post(&format!("/api/routines/{rid}/run"), json!({}))
            .await;
        assert_eq!(status, 202, "{first}");
        assert_eq!(first["status"], "issue_created");
        assert_eq!(first["source"], "manual");
        server
            .wait_for(
                &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
                30,
                |runs| {
                    runs.as_array()
                        .is_some_and(|r| r.iter().any(|x| x["status"] == "running"))
                },
            )
            .await;
        let (status, run) = server
            .post(
                &format!("/api/routines/{rid}/run"),
                json!({ "source": "api" }),
            )
            .await;
        assert_eq!(status, 202, "{run}");
        assert_eq!(run["status"], second, "{policy}: {run}");
        let issues = server
            .ok_get(&format!(
                "/api/companies/{cid}/issues?assigneeAgentId={aid}"
            ))
            .await;
        let made = issues.as_array().unwrap().len();
        if second == "issue_created" {
            assert_ne!(run["linkedIssueId"], first["linkedIssueId"]);
            assert_eq!(made, 2, "{policy}");
        } else {
            assert_eq!(run["linkedIssueId"], first["linkedIssueId"], "{policy}");
            assert_eq!(run["coalescedIntoRunId"], first["id"], "{policy}");
            assert_eq!(made, 1, "{policy}");
        }
    }
    for release in releases {
        std::fs::write(release, "").unwrap();
    }
}

#[tokio::test]
async fn catch_up_after_a_crash_follows_each_routines_policy() {
    let server = clock_server().await;
    let (cid, aid) = acme_with(&server, "A").await;
    let aid = aid.as_str();
    let mut ids = Vec::new();
    for policy in ["skip_missed", "enqueue_missed_with_cap"] {
        let r = routine(
            &server,
            &cid,
            json!({ "title": format!("Hourly {policy}"), "assigneeAgentId": aid,
                "catchUpPolicy": policy, "concurrencyPolicy": "always_enqueue" }),
        )
        .await;
        let rid = r["id"].as_str().unwrap().to_string();
        schedule(&server, &rid, "0 * * * *").await;
        ids.push(rid);
    }
    // Down from before 10:00 to 13:30: ticks 10, 11, 12 and 13 missed.
    let (data_dir, db) = server.stop_keeping_data();
    let server =
        TestServer::start_with(data_dir, db, &["--test-clock", "2026-01-05T13:30:00Z"]).await;
    let skip = &ids[0];
    let all = &ids[1];
    until(30, "the catch-up at start", async || {
        (runs(&server, skip).await.len() == 1 && runs(&server, all).await.len() == 4).then_some(())
    })
    .await;
    // Nothing more is owed at 13:30, and the next tick is 14:00.
    assert_eq!(set_clock(&server, "2026-01-05T13:30:00Z").await, 0);
    assert_eq!(runs(&server, skip).await.len(), 1);
    let mut ticks: Vec<String> = runs(&server, all)
        .await
        .iter()
        .map(|r| r["triggeredAt"].as_str().unwrap().to_string())
        .collect();
    ticks.sort();
    assert_eq!(
        ticks,
        [
            "2026-01-05T10:00:00.000Z",
            "2026-01-05T11:00:00.000Z",
            "2026-01-05T12:00:00.000Z",
            "2026-01-05T13:00:00.000Z"
        ]
    );
    assert_eq!(
        runs(&server, skip).await[0]["triggeredAt"],
        "2026-01-05T13:00:00.000Z"
    );
    for rid in &ids {
        let detail = server.ok_get(&format!("/api/routines/{rid}")).await;
        assert_eq!(
            detail["triggers"][0]["nextRunAt"],
            "2026-01-05T14:00:00.000Z"
        );
    }
    let issues = server
        .ok_get(&format!(
            "/api/companies/{cid}/issues?assigneeAgentId={aid}"
        ))
        .await;
    assert_eq!(issues.as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn revisions_record_changes_and_restore_one() {
    let server = clock_server().await;
    let (cid, aid) = acme_with(&server, "A").await;
    let aid = aid.as_str();
    let r = routine(
        &server,
        &cid,
        json!({ "title": "First", "assigneeAgentId": aid }),
    )
    .await;
    let rid = r["id"].as_str().unwrap();
    let first_rev = r["latestRevisionId"].as_str().unwrap().to_string();
    let updated = server
        .ok_patch(
            &format!("/api/routines/{rid}"),
            json!({ "title": "Second", "baseRevisionId": first_rev }),
        )
        .await;
    assert_eq!(updated["latestRevisionNumber"], 2);
    // A stale base revision is someone else's newer save.
    let (status, body) = server
        .patch(
            &format!("/api/routines/{rid}"),
            json!({ "title": "Third", "baseRevisionId": first_rev }),
        )
        .await;
    assert_eq!(status, 409);
    assert_eq!(body["error"], "Routine was updated by someone else");
    let revisions = server
        .ok_get(&format!("/api/routines/{rid}/revisions"))
        .await;
    let revisions = revisions.as_array().unwrap();
    assert_eq!(revisions.len(), 2);
    assert_eq!(revisions[0]["revisionNumber"], 2);
    assert_eq!(revisions[1]["snapshot"]["routine"]["title"], "First");
    let restored = server
        .ok_post(
            &format!("/api/routines/{rid}/revisions/{first_rev}/restore"),
            json!({}),
        )
        .await;
    assert_eq!(restored["routine"]["title"], "First");
    assert_eq!(restored["restoredFromRevisionNumber"], 1);
    assert_eq!(restored["revision"]["revisionNumber"], 3);
    assert_eq!(
        restored["revision"]["restoredFromRevisionId"],
        first_rev.as_str()
    );
    let (status, _) = server
        .post(
            &format!(
                "/api/routines/{rid}/revisions/{}/restore",
                uuid::Uuid::new_v4()
            ),
            json!({}),
        )
        .await;
    assert_eq!(status, 404);
    let actions = server.actions(&cid).await;
    for a in [
        "routine.created",
        "routine.updated",
        "routine.revision_restored",
    ] {
        assert!(actions.iter().any(|x| x == a), "{a} in {actions:?}");
    }
}

#[tokio::test]
async fn another_companys_agent_cannot_see_or_change_a_routine() {
    let server = clock_server().await;
    let cid = server.company("Acme").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let other = server.company("Other").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server.agent(&cid, "A", None).await;
    let aid = agent["id"].as_str().unwrap();
    let outsider = server.agent(&other, "Spy", None).await;
    let spy = server.key(outsider["id"].as_str().unwrap()).await;
    let r = routine(
        &server,
        &cid,
        json!({ "title": "Mine", "assigneeAgentId": aid }),
    )
    .await;
    let rid = r["id"].as_str().unwrap();
    let t = schedule(&server, rid, "0 * * * *").await;
    let tid = t["id"].as_str().unwrap();
    for (method, path, body) in [
        ("GET", format!("/api/routines/{rid}"), None),
        ("GET", format!("/api/routines/{rid}/runs"), None),
        ("GET", format!("/api/companies/{cid}/routines"), None),
        (
            "PATCH",
            format!("/api/routines/{rid}"),
            Some(json!({ "title": "Taken" })),
        ),
        ("POST", format!("/api/routines/{rid}/run"), Some(json!({}))),
        (
            "PATCH",
            format!("/api/routine-triggers/{tid}"),
            Some(json!({ "enabled": false })),
        ),
        ("DELETE", format!("/api/routine-triggers/{tid}"), None),
    ] {
        let (status, _) = server.as_agent(&spy, None, method, &path, body).await;
        assert!(status == 403 || status == 404, "{method} {path}: {status}");
    }
    let detail = server.ok_get(&format!("/api/routines/{rid}")).await;
    assert_eq!(detail["title"], "Mine");
    assert_eq!(detail["triggers"][0]["enabled"], true);
    assert!(runs(&server, rid).await.is_empty());
    // An agent creates routines for itself only.
    let own = server.key(aid).await;
    let helper = server.agent(&cid, "Helper", None).await;
    let (status, _) = server
        .as_agent(
            &own,
            None,
            "POST",
            &format!("/api/companies/{cid}/routines"),
            Some(json!({ "title": "For helper", "assigneeAgentId": helper["id"] })),
        )
        .await;
    assert_eq!(status, 403);
    let (status, body) = server
        .as_agent(
            &own,
            None,
            "POST",
            &format!("/api/companies/{cid}/routines"),
            Some(json!({ "title": "For me", "assigneeAgentId": aid })),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["createdByAgentId"], aid);
}

#[tokio::test]
async fn two_servers_on_one_postgres_database_fire_a_tick_once() {
    let Some(_) = std::env::var("PAPERCLIP_TEST_PG_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        eprintln!("Postgres only (PAPERCLIP_TEST_PG_URL unset)");
        return;
    };
    let a = clock_server().await;
    let cid = a.company("Acme").await["id"].as_str().unwrap().to_string();
    let agent = a.agent(&cid, "A", None).await;
    let aid = agent["id"].as_str().unwrap();
    let mut rids = Vec::new();
    for i in 0..5 {
        let r = routine(
            &a,
            &cid,
            json!({ "title": format!("R{i}"), "assigneeAgentId": aid,
                "concurrencyPolicy": "always_enqueue" }),
        )
        .await;
        let rid = r["id"].as_str().unwrap().to_string();
        schedule(&a, &rid, "*/5 * * * *").await;
        rids.push(rid);
    }
    let dir = std::env::temp_dir().join(format!("paperclip-test-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let b = TestServer::start_with(dir, a.database_url.clone(), &["--test-clock", START]).await;
    // Both servers pass over the same due ticks at once, several times.
    let mut total = 0;
    for minute in ["10:00:01", "10:05:01", "10:10:01"] {
        let at = format!("2026-01-05T{minute}Z");
        let (x, y) = tokio::join!(set_clock(&a, &at), set_clock(&b, &at));
        total += x + y;
    }
    assert_eq!(
        total, 15,
        "3 ticks x 5 routines, each dispatched by one server"
    );
    let db = common::database(a.database_url.as_ref().unwrap()).await;
    let (count, distinct): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), COUNT(DISTINCT CAST(routine_id AS TEXT) || CAST(triggered_at AS TEXT)) \
         FROM routine_runs",
    )
    .fetch_one(&db)
    .await
    .unwrap();
    assert_eq!((count, distinct), (15, 15));
    let (issues,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM issues WHERE origin_kind = 'routine_execution'")
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!(issues, 15);
}

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
