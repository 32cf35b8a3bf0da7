//! Several instances on one Postgres database (issue 38): a restart of one
//! leaves the other's runs alone, live events cross instances, a dead
//! instance's runs are taken over by the survivor, and rolling restarts
//! under a stream of wakes lose and repeat nothing. Invariants are read
//! from the database.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{self, fleet, TestServer};

/// The instance id an instance keeps in its data dir.
fn instance_id(server: &TestServer) -> String {
    std::fs::read_to_string(server.data_dir.join("instance-id"))
        .expect("the instance id file")
        .trim()
        .to_string()
}

async fn db(url: &str) -> sqlx::PgPool {
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect(url)
        .await
        .expect("connect to the shared database")
}

async fn owner_of(pool: &sqlx::PgPool, run_id: &str) -> Option<String> {
    sqlx::query_scalar("SELECT owner_instance_id FROM heartbeat_runs WHERE id::text = $1")
        .bind(run_id)
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A company with one process agent running `script` and a task assigned
/// to it: its first run. Returns (company, agent, task, run).
async fn assigned_run(server: &TestServer, script: &str) -> (String, String, String, String) {
    let cid = server.company("Fleet Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server.script_agent(&cid, "Worker", script, json!({})).await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let task = server
        .issue(
            &cid,
            json!({ "title": "Keep working", "assigneeAgentId": aid, "status": "todo" }),
        )
        .await;
    let tid = task["id"].as_str().unwrap().to_string();
    let run = common::until(20, "the task's run to start", async || {
        let runs = server.runs_of(&cid, &aid).await;
        runs.into_iter()
            .find(|r| r["status"] == "running" && r["processGroupId"].is_i64())
    })
    .await;
    (cid, aid, tid, run["id"].as_str().unwrap().to_string())
}

fn wait_script(dir: &Path) -> String {
    format!(
        "touch {started}\nwhile [ ! -e {release} ]; do sleep 0.1; done\n\
         printf '%03999d\\n' 0 | tr 0 '\"'\necho released\n",
        started = dir.join("started").display(),
        release = dir.join("release").display()
    )
}

/// Reads `sse` until an event of `kind` containing `text` arrives.
async fn sse_sees(sse: &mut reqwest::Response, kind: &str, text: &str) {
    let mut seen = String::new();
    let found = tokio::time::timeout(Duration::from_secs(20), async {
        while let Ok(Some(chunk)) = sse.chunk().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen
                .split("\n\n")
                .any(|e| e.contains(&format!("\"type\":\"{kind}\"")) && e.contains(text))
            {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(
        found,
        Ok(true),
        "no {kind} with {} on this instance's stream:\n{}",
        &text[..text.len().min(80)],
        &seen[seen.len().saturating_sub(2000)..]
    );
}

#[tokio::test]
async fn a_restart_of_one_instance_leaves_the_others_run_and_its_events_reach_every_instance() {
    if !fleet::on_postgres("fleet restart") {
        return;
    }
    let a = TestServer::start().await;
    let b = fleet::second_instance(&a).await;
    let url = a.database_url.clone().unwrap();
    let pool = db(&url).await;
    let dir = fleet::fresh_dir();
    let (cid, aid, _tid, run) = assigned_run(&a, &wait_script(&dir)).await;
    let owner = owner_of(&pool, &run)
        .await
        .expect("a claimed run names its instance");
    let (a_id, b_id) = (instance_id(&a), instance_id(&b));
    assert!(
        owner == a_id || owner == b_id,
        "owner {owner} is neither instance"
    );
    let metrics = a.client().get(a.url("/metrics")).send().await.unwrap();
    let metrics = metrics.text().await.unwrap();
    assert!(
        metrics.contains("\npaperclip_instances_live 2\n"),
        "{metrics}"
    );

    // Restart the instance that does not drive the run (kill -9, as a
    // crash): its recovery must leave the other's run running.
    let (driver, other) = if owner == a_id { (a, b) } else { (b, a) };
    let restarted = fleet::restart(other, &url, &[]).await;
    let after = restarted
        .ok_get(&format!("/api/heartbeat-runs/{run}"))
        .await;
    assert_eq!(
        after["status"], "running",
        "the restart settled a live instance's run: {after}"
    );
    assert_eq!(owner_of(&pool, &run).await.as_deref(), Some(owner.as_str()));

    // A board tab on the restarted instance sees the run, executing on the
    // other, finish.
    let mut sse = common::streams::event_stream(&restarted, &cid).await;
    std::fs::write(dir.join("release"), "").unwrap();
    // Its output crosses too, a line whose event is larger than a
    // notification carries (3,999 quotes, escaped) by reference.
    let quotes = "\\\"".repeat(3999);
    sse_sees(&mut sse, "heartbeat.run.log", &quotes).await;
    let spilled: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM live_event_spill")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(spilled >= 1, "the large event was not sent by reference");
    sse_sees(&mut sse, "heartbeat.run.finished", &run).await;
    let done = restarted
        .ok_get(&format!("/api/heartbeat-runs/{run}"))
        .await;
    assert_eq!(done["status"], "succeeded", "{done}");
    let recovered = driver
        .ok_get(&format!(
            "/api/companies/{cid}/activity?action=heartbeat.recovered"
        ))
        .await;
    assert_eq!(recovered.as_array().unwrap().len(), 0, "{recovered}");
    assert_eq!(driver.runs_of(&cid, &aid).await.len(), 1);
}

#[tokio::test]
async fn a_killed_instances_run_is_taken_over_by_the_survivor_and_the_agent_works_again() {
    if !fleet::on_postgres("fleet takeover") {
        return;
    }
    let lease = ["--instance-lease-secs", "3"];
    let a = TestServer::start_args(&lease).await;
    let b = fleet::second_instance_args(&a, &lease, &[]).await;
    let pool = db(a.database_url.as_deref().unwrap()).await;
    let dir = fleet::fresh_dir();
    let (cid, aid, tid, run) = assigned_run(&a, &wait_script(&dir)).await;
    let owner = owner_of(&pool, &run).await.unwrap();
    let (mut dead, survivor) = if owner == instance_id(&a) {
        (a, b)
    } else {
        (b, a)
    };
    let pgid = dead.ok_get(&format!("/api/heartbeat-runs/{run}")).await["processGroupId"]
        .as_i64()
        .unwrap();
    // The host dies: the instance and the agent's processes with it.
    dead.kill();
    unsafe {
        libc::kill(-(pgid as i32), libc::SIGKILL);
    }
    let settled = survivor
        .wait_for(&format!("/api/heartbeat-runs/{run}"), 20, |r| {
            r["status"] != "running"
        })
        .await;
    assert_eq!(settled["status"], "failed", "{settled}");
    assert_eq!(settled["errorCode"], "control_plane_restart");
    assert!(
        settled["error"].as_str().unwrap().contains(&owner),
        "the error names the lost instance: {settled}"
    );
    // The continuation runs on the survivor and finishes the work.
    std::fs::write(dir.join("release"), "").unwrap();
    let runs = common::until(20, "the continuation to succeed", async || {
        let runs = survivor.runs_of(&cid, &aid).await;
        runs.iter()
            .any(|r| r["status"] == "succeeded")
            .then_some(runs)
    })
    .await;
    assert_eq!(
        runs.len(),
        2,
        "one failed run and one continuation: {runs:?}"
    );
    let survivor_id = instance_id(&survivor);
    let next = runs.iter().find(|r| r["status"] == "succeeded").unwrap();
    let next_id = next["id"].as_str().unwrap();
    assert_eq!(
        owner_of(&pool, next_id).await.as_deref(),
        Some(survivor_id.as_str())
    );
    assert_eq!(next["issueId"], tid.as_str());
    let left: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM heartbeat_runs WHERE status = 'running' AND owner_instance_id = $1",
    )
    .bind(&owner)
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(left, 0, "the dead instance still owns running runs");
    let recovered = survivor
        .ok_get(&format!(
            "/api/companies/{cid}/activity?action=heartbeat.recovered"
        ))
        .await;
    assert_eq!(
        recovered.as_array().unwrap().len(),
        1,
        "settled once: {recovered}"
    );
    let agent = survivor.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(agent["status"], "idle", "{agent}");
    drop(dead);
}

#[tokio::test]
async fn rolling_restarts_under_a_stream_of_wakes_lose_and_repeat_nothing() {
    if !fleet::on_postgres("fleet rolling restart") {
        return;
    }
    let lease = ["--instance-lease-secs", "3"];
    let a = TestServer::start_args(&lease).await;
    let b = fleet::second_instance_args(&a, &lease, &[]).await;
    let url = a.database_url.clone().unwrap();
    let pool = db(&url).await;
    let cid = a.company("Rolling Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ledger = fleet::fresh_dir().join("ledger");
    let script = format!(
        "echo \"$PAPERCLIP_TASK_ID $PAPERCLIP_RUN_ID\" >> {}\nsleep 0.4\n",
        ledger.display()
    );
    let mut agents = Vec::new();
    for i in 0..4 {
        let agent = a
            .script_agent(&cid, &format!("Roller {i}"), &script, json!({}))
            .await;
        agents.push(agent["id"].as_str().unwrap().to_string());
    }
    let mut tasks = Vec::new();
    let mut servers = [Some(a), Some(b)];
    // Each instance in turn is stopped (SIGTERM, as a rolling update does)
    // and started again while tasks keep being assigned through the other.
    for round in 0..4 {
        let down = round % 2;
        let up = 1 - down;
        let mut stopping = servers[down].take().unwrap();
        let live = servers[up].as_ref().unwrap();
        for n in 0..5 {
            let aid = &agents[(round * 5 + n) % agents.len()];
            let task = live
                .issue(&cid, json!({ "title": format!("Wave {round}.{n}"), "assigneeAgentId": aid, "status": "todo" }))
                .await;
            tasks.push(task["id"].as_str().unwrap().to_string());
        }
        assert!(
            stopping.terminate(10).await,
            "the instance did not stop on SIGTERM"
        );
        servers[down] = Some(fleet::restart(stopping, &url, &lease).await);
    }
    let any = servers[0].as_ref().unwrap();
    // Every task ends with exactly one run that succeeded, and nothing is
    // left queued or running.
    let counts = common::until(60, "every task's work to be done", async || {
        let rows: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT issue_id::text, status, COUNT(*) FROM heartbeat_runs \
             WHERE company_id::text = $1 GROUP BY issue_id, status",
        )
        .bind(&cid)
        .fetch_all(&pool)
        .await
        .unwrap();
        let busy = rows.iter().any(|(_, s, _)| s == "queued" || s == "running");
        let done = tasks
            .iter()
            .all(|t| rows.iter().any(|(i, s, _)| i == t && s == "succeeded"));
        (done && !busy).then_some(rows)
    })
    .await;
    for task in &tasks {
        let succeeded: i64 = counts
            .iter()
            .filter(|(i, s, _)| i == task && s == "succeeded")
            .map(|(_, _, n)| *n)
            .sum();
        assert_eq!(
            succeeded, 1,
            "task {task} ran to success {succeeded} times: {counts:?}"
        );
    }
    let ledger = std::fs::read_to_string(&ledger).unwrap();
    let mut run_ids: Vec<&str> = ledger.lines().filter_map(|l| l.split(' ').nth(1)).collect();
    let total = run_ids.len();
    run_ids.sort();
    run_ids.dedup();
    assert_eq!(run_ids.len(), total, "a run executed twice:\n{ledger}");
    for task in &tasks {
        assert!(
            ledger.contains(task.as_str()),
            "task {task} never reached its agent"
        );
    }
    let page: Value = any.ok_get(&format!("/api/companies/{cid}/issues")).await;
    assert_eq!(page.as_array().map(Vec::len), Some(tasks.len()));
}
