//! Exactly-once wakes and messages: a wake for another task is not lost in
//! the queued run of the first, every comment reaches exactly one prompt,
//! concurrent wakes leave one queued run per (agent, task) with every wake
//! request accounted for, and `maxConcurrentRuns` holds.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::{until, TestServer};
use serde_json::{json, Value};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// A script that waits until the test creates `release`, then runs `then`.
fn gated(release: &Path, then: &str) -> String {
    format!(
        "while [ ! -f '{}' ]; do sleep 0.05; done\n{then}\n",
        release.display()
    )
}

async fn wait_running(server: &TestServer, cid: &str, aid: &str, n: usize) {
    let path = format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}&status=running");
    server
        .wait_for(&path, 30, |runs| {
            runs.as_array().is_some_and(|r| r.len() == n)
        })
        .await;
}

async fn wait_all_finished(server: &TestServer, cid: &str, aid: &str, n: usize) -> Vec<Value> {
    let path = format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}");
    server
        .wait_for(&path, 60, |runs| {
            runs.as_array().is_some_and(|r| {
                r.len() == n
                    && r.iter()
                        .all(|x| x["status"] != "queued" && x["status"] != "running")
            })
        })
        .await;
    server.runs_of(cid, aid).await
}

/// A server with an agent kept running (its script waits for `release`),
/// so the wakes a test sends meanwhile queue up behind it.
async fn busy_agent(
    company: &str,
    release: &str,
    name: &str,
) -> (TestServer, String, String, PathBuf) {
    let server = TestServer::start().await;
    let cid = id(&server.company(company).await);
    let release = server.data_dir.join(release);
    let agent = server
        .script_agent(&cid, name, &gated(&release, "echo done"), json!({}))
        .await;
    let aid = id(&agent);
    server.wake(&aid, json!({ "reason": "busy" })).await;
    wait_running(&server, &cid, &aid, 1).await;
    (server, cid, aid, release)
}

#[tokio::test]
async fn two_tasks_assigned_to_a_busy_agent_each_get_their_own_run() {
    let (server, cid, aid, release) = busy_agent("Busy Co", "release-a", "Busy").await;

    let first = id(&server
        .issue(
            &cid,
            json!({ "title": "First", "status": "todo", "assigneeAgentId": aid }),
        )
        .await);
    let second = id(&server
        .issue(
            &cid,
            json!({ "title": "Second", "status": "todo", "assigneeAgentId": aid }),
        )
        .await);
    std::fs::write(&release, "go").unwrap();

    let runs = wait_all_finished(&server, &cid, &aid, 3).await;
    assert!(runs.iter().all(|r| r["status"] == "succeeded"), "{runs:?}");
    let tasks: BTreeSet<String> = runs
        .iter()
        .filter_map(|r| r["issueId"].as_str().map(str::to_string))
        .collect();
    assert_eq!(tasks, BTreeSet::from([first, second]), "{runs:?}");
}

#[tokio::test]
async fn comments_posted_during_a_run_all_reach_the_next_prompt_once() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Chatty Co").await);
    let release = server.data_dir.join("release-b");
    let out = server.data_dir.join("prompts");
    std::fs::create_dir_all(&out).unwrap();
    let dump = format!(
        "cat > '{dir}/'\"$PAPERCLIP_RUN_ID\".prompt\necho \"$PAPERCLIP_WAKE_COMMENT_IDS\" > '{dir}/'\"$PAPERCLIP_RUN_ID\".ids",
        dir = out.display()
    );
    let agent = server
        .script_agent(
            &cid,
            "Reader",
            &gated(&release, &dump),
            json!({ "promptTemplate": "New comments:\n{{wake.comments}}END" }),
        )
        .await;
    let aid = id(&agent);
    let issue = id(&server
        .issue(
            &cid,
            json!({ "title": "Talk", "status": "todo", "assigneeAgentId": aid }),
        )
        .await);
    wait_running(&server, &cid, &aid, 1).await;

    let mut ids = Vec::new();
    for body in ["alpha note", "beta note", "gamma note"] {
        let c = server
            .ok_post(
                &format!("/api/issues/{issue}/comments"),
                json!({ "body": body }),
            )
            .await;
        ids.push(id(&c));
    }
    std::fs::write(&release, "go").unwrap();
    let runs = wait_all_finished(&server, &cid, &aid, 2).await;
    let second = id(&runs[1]);
    let prompt = std::fs::read_to_string(out.join(format!("{second}.prompt"))).unwrap();
    let (a, b, g) = (
        prompt.find("alpha note"),
        prompt.find("beta note"),
        prompt.find("gamma note"),
    );
    assert!(
        a.is_some() && b.is_some() && g.is_some() && a < b && b < g,
        "all three comments, oldest first: {prompt:?}"
    );
    let got_ids = std::fs::read_to_string(out.join(format!("{second}.ids"))).unwrap();
    assert_eq!(got_ids.trim(), ids.join(","));
    assert_eq!(runs[1]["contextSnapshot"]["commentIds"], json!(ids));

    server
        .ok_post(
            &format!("/api/issues/{issue}/comments"),
            json!({ "body": "delta note" }),
        )
        .await;
    let runs = wait_all_finished(&server, &cid, &aid, 3).await;
    let third = id(&runs[2]);
    let prompt = std::fs::read_to_string(out.join(format!("{third}.prompt"))).unwrap();
    assert!(prompt.contains("delta note"), "{prompt:?}");
    for old in ["alpha note", "beta note", "gamma note"] {
        assert!(!prompt.contains(old), "{old} delivered twice: {prompt:?}");
    }
}

#[tokio::test]
async fn concurrent_wakes_leave_one_queued_run_per_agent_and_task() {
    let (server, cid, aid, release) = busy_agent("Crowd Co", "release-c", "Crowded").await;

    let mut tasks = Vec::new();
    for i in 0..6 {
        tasks.push(id(&server
            .issue(
                &cid,
                json!({ "title": format!("Task {i}"), "status": "todo" }),
            )
            .await));
    }
    // 20 wakes for the first task, 4 for each of the 5 others, all at once.
    let mut wanted: Vec<String> = vec![tasks[0].clone(); 20];
    for t in &tasks[1..] {
        wanted.extend(std::iter::repeat_n(t.clone(), 4));
    }
    let wake_path = format!("/api/agents/{aid}/wakeup");
    let calls = wanted
        .iter()
        .map(|t| server.post(&wake_path, json!({ "reason": "crowd", "issueId": t })));
    let answers = futures_all(calls).await;

    let mut run_of_task: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut request_ids = BTreeSet::new();
    for ((status, body), task) in answers.iter().zip(&wanted) {
        assert_eq!(status.as_u16(), 202, "{body}");
        assert_eq!(body["issueId"], json!(task), "{body}");
        let request = &body["wakeupRequest"];
        assert!(
            request["status"] == "queued" || request["status"] == "coalesced",
            "{request}"
        );
        assert_eq!(request["runId"], body["id"], "{request}");
        request_ids.insert(id(request));
        run_of_task
            .entry(task.clone())
            .or_default()
            .insert(id(body));
    }
    assert_eq!(request_ids.len(), wanted.len());
    let queued = server
        .ok_get(&format!(
            "/api/companies/{cid}/heartbeat-runs?agentId={aid}&status=queued"
        ))
        .await;
    let queued = queued.as_array().unwrap();
    assert_eq!(queued.len(), tasks.len(), "{queued:?}");
    for (task, runs) in &run_of_task {
        assert_eq!(runs.len(), 1, "one queued run for {task}: {runs:?}");
        let run = queued.iter().find(|r| r["issueId"] == json!(task)).unwrap();
        let wakes = wanted.iter().filter(|t| *t == task).count() as i64;
        assert_eq!(run["coalescedCount"], json!(wakes - 1), "{run}");
    }

    if let Some(url) = &server.database_url {
        if url.starts_with("postgres") {
            let pool = sqlx::PgPool::connect(url).await.unwrap();
            let rows: Vec<(String, String, Option<String>, Option<String>)> = sqlx::query_as(
                "SELECT w.status, CAST(w.issue_id AS TEXT), CAST(w.run_id AS TEXT), CAST(r.issue_id AS TEXT) \
                 FROM agent_wakeup_requests w LEFT JOIN heartbeat_runs r ON r.id = w.run_id \
                 WHERE w.agent_id = CAST($1 AS UUID) AND w.reason = 'crowd'",
            )
            .bind(&aid)
            .fetch_all(&pool)
            .await
            .unwrap();
            assert_eq!(rows.len(), wanted.len());
            for (status, task, run, run_task) in &rows {
                assert!(status == "queued" || status == "coalesced", "{status}");
                assert!(run.is_some());
                assert_eq!(run_task.as_deref(), Some(task.as_str()));
            }
            let queued_requests = rows.iter().filter(|r| r.0 == "queued").count();
            assert_eq!(queued_requests, tasks.len());
            pool.close().await;
        }
    }
    std::fs::write(&release, "go").unwrap();
    let runs = wait_all_finished(&server, &cid, &aid, 1 + tasks.len()).await;
    assert!(runs.iter().all(|r| r["status"] == "succeeded"), "{runs:?}");
}

#[tokio::test]
async fn max_concurrent_runs_holds_at_every_instant() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Limit Co").await);
    let log = server.data_dir.join("intervals.log");
    let script = format!(
        "echo \"start $(date +%s%N)\" >> '{log}'\nsleep 0.4\necho \"end $(date +%s%N)\" >> '{log}'\n",
        log = log.display()
    );
    let agent = server.script_agent(&cid, "Pair", &script, json!({})).await;
    let aid = id(&agent);
    server
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "runtimeConfig": { "heartbeat": { "maxConcurrentRuns": 2 } } }),
        )
        .await;
    // A second server on the same Postgres database claims from the same
    // queue: only the database can keep the two executors under the limit.
    let _twin = match &server.database_url {
        Some(url) if url.starts_with("postgres") => {
            let dir = std::env::temp_dir().join(format!("paperclip-twin-{}", uuid::Uuid::new_v4()));
            std::fs::create_dir_all(&dir).unwrap();
            Some(TestServer::start_with(dir, Some(url.clone()), &[]).await)
        }
        _ => None,
    };
    let mut peak_seen = 0usize;
    for i in 0..5 {
        server
            .issue(
                &cid,
                json!({ "title": format!("Job {i}"), "status": "todo", "assigneeAgentId": aid }),
            )
            .await;
    }
    let path = format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}");
    until(60, "five finished runs", async || {
        let runs = server.ok_get(&path).await;
        let runs = runs.as_array().unwrap().clone();
        let running = runs.iter().filter(|r| r["status"] == "running").count();
        peak_seen = peak_seen.max(running);
        let done = runs.len() == 5
            && runs
                .iter()
                .all(|r| r["status"] != "queued" && r["status"] != "running");
        done.then_some(())
    })
    .await;
    assert!(peak_seen <= 2, "{peak_seen} running at once");
    let runs = server.runs_of(&cid, &aid).await;
    assert!(runs.iter().all(|r| r["status"] == "succeeded"), "{runs:?}");

    let text = std::fs::read_to_string(&log).unwrap();
    let mut edges: Vec<(u128, i32)> = text
        .lines()
        .map(|l| {
            let (kind, ts) = l.split_once(' ').unwrap();
            (ts.parse().unwrap(), if kind == "start" { 1 } else { -1 })
        })
        .collect();
    // Ends sort before starts at the same instant.
    edges.sort();
    let (mut now, mut peak) = (0, 0);
    for (_, d) in &edges {
        now += d;
        peak = peak.max(now);
    }
    assert_eq!(edges.len(), 10, "{text}");
    assert!(peak <= 2, "{peak} runs at once: {text}");
    assert!(peak_seen >= 1);
}

/// Runs the futures concurrently on this task.
async fn futures_all<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let handles: Vec<_> = futures.map(Box::pin).collect();
    let mut slots: Vec<Option<F::Output>> = handles.iter().map(|_| None).collect();
    let mut handles: Vec<_> = handles.into_iter().map(Some).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, h) in handles.iter_mut().enumerate() {
            if let Some(f) = h {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        slots[i] = Some(v);
                        *h = None;
                    }
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    slots.into_iter().map(Option::unwrap).collect()
}

/// A database from before the one-queued-run rule may hold several queued
/// runs of one agent and task; the upgrade folds them into the oldest and
/// keeps the rest as cancelled runs that say why.
#[tokio::test]
async fn the_upgrade_folds_duplicate_queued_runs_into_the_oldest() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Legacy Co").await);
    let aid = id(&server
        .script_agent(&cid, "Old", "echo ok\n", json!({}))
        .await);
    let task = id(&server
        .issue(&cid, json!({ "title": "Old task", "status": "todo" }))
        .await);
    let (data_dir, database_url) = server.stop_keeping_data();
    let url = common::database_url(&data_dir, &database_url);
    let pool = common::database(&url).await;
    // Back to schema 4 (text ids), then what concurrent wakes on an older
    // build left.
    if url.starts_with("postgres") {
        for sql in common::postgres_ids_back_to_text() {
            sqlx::query(&sql).execute(&pool).await.unwrap();
        }
    }
    sqlx::query("DROP INDEX heartbeat_runs_one_queued")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("DELETE FROM schema_migrations WHERE version = 5")
        .execute(&pool)
        .await
        .unwrap();
    let mut runs = Vec::new();
    for issue in [Some(&task), Some(&task), Some(&task), None, None] {
        let (run, wake) = (
            uuid::Uuid::now_v7().to_string(),
            uuid::Uuid::now_v7().to_string(),
        );
        sqlx::query(
            "INSERT INTO heartbeat_runs (id, company_id, agent_id, invocation_source, status, \
             wakeup_request_id, issue_id, created_at, updated_at) \
             VALUES ($1, $2, $3, 'on_demand', 'queued', $4, $5, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
        )
        .bind(&run)
        .bind(&cid)
        .bind(&aid)
        .bind(&wake)
        .bind(issue.map(String::as_str))
        .execute(&pool)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO agent_wakeup_requests (id, company_id, agent_id, source, status, run_id, \
             created_at, updated_at) VALUES ($1, $2, $3, 'on_demand', 'queued', $4, \
             '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')",
        )
        .bind(&wake)
        .bind(&cid)
        .bind(&aid)
        .bind(&run)
        .execute(&pool)
        .await
        .unwrap();
        runs.push(run);
    }
    pool.close().await;

    let server = TestServer::start_with(data_dir, database_url, &[]).await;
    let all = wait_all_finished(&server, &cid, &aid, 5).await;
    let by_id = |rid: &str| all.iter().find(|r| r["id"] == rid).unwrap().clone();
    let (kept_task, kept_none) = (by_id(&runs[0]), by_id(&runs[3]));
    assert_eq!(kept_task["status"], "succeeded", "{kept_task}");
    assert_eq!(kept_task["coalescedCount"], 2);
    assert_eq!(kept_none["status"], "succeeded", "{kept_none}");
    assert_eq!(kept_none["coalescedCount"], 1);
    for extra in [&runs[1], &runs[2], &runs[4]] {
        let run = by_id(extra);
        assert_eq!(run["status"], "cancelled", "{run}");
        assert_eq!(run["errorCode"], "coalesced", "{run}");
        assert!(run["error"].as_str().unwrap().contains("Folded"), "{run}");
    }

    let url = common::database_url(&server.data_dir, &server.database_url);
    let pool = common::database(&url).await;
    let rows: Vec<(String, String)> = sqlx::query_as(&common::bound_as_text(
        "SELECT CAST(run_id AS TEXT), status FROM agent_wakeup_requests WHERE agent_id = $1 ORDER BY id",
        url.starts_with("postgres"),
    ))
    .bind(&aid)
    .fetch_all(&pool)
    .await
    .unwrap();
    let expected = [&runs[0], &runs[0], &runs[0], &runs[3], &runs[3]];
    assert_eq!(rows.len(), 5, "{rows:?}");
    for ((run, status), want) in rows.iter().zip(expected) {
        assert_eq!(run, want, "{rows:?}");
        assert!(
            ["completed", "coalesced"].contains(&status.as_str()),
            "{rows:?}"
        );
    }
    pool.close().await;
}
