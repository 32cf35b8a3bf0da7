//! Routines end to end: a cron routine fires on the injected test clock
//! (no waiting for wall-clock minutes), makes a task assigned to its agent
//! and wakes it; concurrency policies while an execution is live; catch-up
//! after a crash; pause and resume; revisions; isolation; two servers on one
//! Postgres database fire a tick once.

use crate::common;

use common::routine_clock::{acme_with, clock_server, routine, runs, schedule, set_clock, START};
use common::{until, TestServer};
use serde_json::json;

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
