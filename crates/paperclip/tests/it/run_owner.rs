//! One owner of live runs: a stop cannot miss a run that is starting, stops
//! of many runs happen at once, and a stopped run reads as stopped, not as a
//! failure.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::TestServer;
use serde_json::{json, Value};

/// Records its pid (the process started) and, only if it lives 10 s, that it
/// ran to the end unsupervised.
const MARKING: &str = r#"
echo $$ > "$MARKS/$PAPERCLIP_RUN_ID.pid"
sleep 10
touch "$MARKS/$PAPERCLIP_RUN_ID.done"
"#;

/// Ignores TERM, so each stop has to wait out the grace before KILL.
const STUBBORN: &str = r#"
trap '' TERM
echo $$ > "$MARKS/$PAPERCLIP_RUN_ID.pid"
while :; do sleep 1; done
"#;

fn marks_dir(server: &TestServer) -> PathBuf {
    let dir = server.data_dir.join("marks");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn pid_of(marks: &Path, run_id: &str) -> Option<i32> {
    std::fs::read_to_string(marks.join(format!("{run_id}.pid")))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Alive and not a zombie (a reaped-late child still shows in /proc).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

async fn poll<T>(secs: u64, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    common::until(secs, what, async || check()).await
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// Wakes 50 agents and cancels each run right away, all at once, so cancels
/// land before the claim, during the prepare phase and after the spawn. A run
/// recorded `cancelled` must have no process left: either it never started
/// or it was stopped before the record was written.
#[tokio::test]
async fn a_cancel_never_misses_a_starting_run() {
    let server = TestServer::start().await;
    let marks = marks_dir(&server);
    let cid = id(&server.company("Race Co").await);
    let env = json!({ "env": { "MARKS": marks.to_str().unwrap() } });
    let mut agents = Vec::new();
    for i in 0..50 {
        agents.push(id(&server
            .script_agent(&cid, &format!("Racer {i}"), MARKING, env.clone())
            .await));
    }
    let wake_and_cancel = agents.iter().enumerate().map(|(i, aid)| {
        let server = &server;
        async move {
            let (status, run) = server
                .post(
                    &format!("/api/agents/{aid}/wakeup"),
                    json!({ "reason": "race" }),
                )
                .await;
            assert_eq!(status, 202, "{run}");
            let run_id = id(&run);
            // Half cancel at once (mostly still queued); half the moment the
            // run is seen claimed, which is when it is being prepared.
            if i % 2 == 1 {
                let deadline = Instant::now() + Duration::from_secs(30);
                // No pause between looks: the prepare window is milliseconds.
                while server.get(&format!("/api/heartbeat-runs/{run_id}")).await.1["status"]
                    == "queued"
                {
                    assert!(Instant::now() < deadline, "run {run_id} never started");
                }
            }
            let (status, body) = server
                .post(&format!("/api/heartbeat-runs/{run_id}/cancel"), json!({}))
                .await;
            // 409 only if the run already ended, which it cannot have here.
            assert_eq!(status, 200, "{body}");
            (run_id, body["status"].as_str().unwrap().to_string())
        }
    });
    let answers = futures::future::join_all(wake_and_cancel).await;

    let mut settled_at_answer = 0;
    for (run_id, status) in &answers {
        if status == "cancelled" {
            settled_at_answer += 1;
            // The answer came after the run settled: its process is gone.
            if let Some(pid) = pid_of(&marks, run_id) {
                assert!(
                    !alive(pid),
                    "run {run_id} answered cancelled while its process {pid} runs"
                );
            }
        }
    }
    let runs = server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?limit=200"),
            60,
            |runs| {
                runs.as_array().is_some_and(|r| {
                    r.len() == 50
                        && r.iter()
                            .all(|r| r["status"] != "running" && r["status"] != "queued")
                })
            },
        )
        .await;
    let mut started = 0;
    let mut claimed = 0;
    for run in runs.as_array().unwrap() {
        let run_id = run["id"].as_str().unwrap();
        claimed += usize::from(!run["startedAt"].is_null());
        assert_eq!(run["status"], "cancelled", "{run}");
        assert_eq!(run["errorCode"], "cancelled", "{run}");
        if let Some(pid) = pid_of(&marks, run_id) {
            started += 1;
            assert!(!alive(pid), "cancelled run {run_id} left process {pid}");
        }
        assert!(
            !marks.join(format!("{run_id}.done")).exists(),
            "cancelled run {run_id} ran to its end"
        );
    }
    eprintln!(
        "50 runs: {settled_at_answer} settled when the cancel answered, {claimed} were claimed, {started} had started a process"
    );
    assert_eq!(settled_at_answer, 50);
    // Every process that ever started is gone, and none started after its
    // run was recorded (it would still be sleeping now).
    let ids: Vec<String> = answers.iter().map(|(r, _)| r.clone()).collect();
    for run_id in &ids {
        if let Some(pid) = pid_of(&marks, run_id) {
            assert!(
                !alive(pid),
                "run {run_id}: process {pid} outlived its cancel"
            );
        }
    }
    let agents_now = server.ok_get(&format!("/api/companies/{cid}/agents")).await;
    assert!(agents_now
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["status"] != "running"));
}

/// Pausing an agent with three running runs stops them at once: the request
/// returns after about one grace period (not three), and every process is gone.
#[tokio::test]
async fn pausing_an_agent_stops_all_its_runs_at_once() {
    let server = TestServer::start().await;
    let marks = marks_dir(&server);
    let cid = id(&server.company("Pause Co").await);
    let agent = server
        .script_agent(
            &cid,
            "Stubborn",
            STUBBORN,
            json!({ "env": { "MARKS": marks.to_str().unwrap() }, "graceSec": 3 }),
        )
        .await;
    let aid = id(&agent);
    server
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "runtimeConfig": { "heartbeat": { "maxConcurrentRuns": 3 } } }),
        )
        .await;
    let mut run_ids = Vec::new();
    for _ in 0..3 {
        let (status, run) = server
            .post(
                &format!("/api/agents/{aid}/wakeup"),
                json!({ "reason": "work" }),
            )
            .await;
        assert_eq!(status, 202, "{run}");
        let run_id = id(&run);
        // The next wake must not fold into this one: wait until it runs.
        poll(30, "the run's process", || pid_of(&marks, &run_id)).await;
        run_ids.push(run_id);
    }
    let pids: Vec<i32> = run_ids.iter().map(|r| pid_of(&marks, r).unwrap()).collect();
    assert!(pids.iter().all(|p| alive(*p)));

    let asked = Instant::now();
    let paused = server.lever(&aid, "pause").await;
    let took = asked.elapsed();
    assert_eq!(paused["status"], "paused");
    // One grace (3 s) plus slack; one after another would take 9 s or more.
    assert!(took < Duration::from_secs(7), "pause took {took:?}");
    poll(10, "the processes to be gone", || {
        pids.iter().all(|p| !alive(*p)).then_some(())
    })
    .await;
    for run_id in &run_ids {
        let run = server
            .ok_get(&format!("/api/heartbeat-runs/{run_id}"))
            .await;
        assert_eq!(run["status"], "cancelled", "{run}");
        assert_eq!(run["error"], "agent paused", "{run}");
    }
}

/// A company's budget hard stop stops the runs of all its agents at once:
/// every process is gone within about one grace period, and every run is
/// recorded as stopped by the budget.
#[tokio::test]
async fn a_budget_hard_stop_stops_every_agents_runs_at_once() {
    let server = TestServer::start().await;
    let marks = marks_dir(&server);
    let cid = id(&server.company("Capped Co").await);
    let config = json!({ "env": { "MARKS": marks.to_str().unwrap() }, "graceSec": 3 });
    let mut run_ids = Vec::new();
    let mut first_agent = None;
    for name in ["A", "B", "C"] {
        let aid = id(&server
            .script_agent(&cid, name, STUBBORN, config.clone())
            .await);
        let (status, run) = server
            .post(
                &format!("/api/agents/{aid}/wakeup"),
                json!({ "reason": "work" }),
            )
            .await;
        assert_eq!(status, 202, "{run}");
        run_ids.push(id(&run));
        first_agent.get_or_insert(aid);
    }
    let pids: Vec<i32> = {
        let mut pids = Vec::new();
        for run_id in &run_ids {
            pids.push(poll(30, "the run's process", || pid_of(&marks, run_id)).await);
        }
        pids
    };
    server
        .ok_patch(
            &format!("/api/companies/{cid}/budgets"),
            json!({ "budgetMonthlyCents": 50 }),
        )
        .await;
    let asked = Instant::now();
    server
        .ok_post(
            &format!("/api/companies/{cid}/cost-events"),
            json!({ "agentId": first_agent.unwrap(), "costCents": 60 }),
        )
        .await;
    poll(20, "the processes to be gone", || {
        pids.iter().all(|p| !alive(*p)).then_some(())
    })
    .await;
    let took = asked.elapsed();
    // One grace (3 s) plus slack; one after another would take 9 s or more.
    assert!(took < Duration::from_secs(7), "the stop took {took:?}");
    for run_id in &run_ids {
        let run = server
            .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 10, |r| {
                r["status"] != "running"
            })
            .await;
        assert_eq!(run["status"], "cancelled", "{run}");
    }
}

/// A run stopped from the task page reads as stopped: no error styling on
/// the task page, and the dashboard's success rate does not count it.
#[tokio::test]
async fn a_stopped_run_is_shown_neutral_and_is_not_a_failure() {
    let server = TestServer::start().await;
    let marks = marks_dir(&server);
    let company = server.company("Neutral Co").await;
    let cid = id(&company);
    let prefix = company["issuePrefix"].as_str().unwrap().to_string();
    let quick = server
        .script_agent(&cid, "Quick", "echo done\n", json!({}))
        .await;
    let qid = id(&quick);
    server.wake(&qid, json!({})).await;
    server.only_run_succeeded(&cid, &qid).await;

    let agent = server
        .script_agent(
            &cid,
            "Worker",
            MARKING,
            json!({ "env": { "MARKS": marks.to_str().unwrap() } }),
        )
        .await;
    let aid = id(&agent);
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Long job", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let ident = issue["identifier"].as_str().unwrap().to_string();
    let run = server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            30,
            |runs| {
                runs.as_array()
                    .is_some_and(|r| r.len() == 1 && r[0]["status"] == "running")
            },
        )
        .await;
    let run_id = run[0]["id"].as_str().unwrap().to_string();

    let task = page(&server, &format!("/{prefix}/tasks/{ident}")).await;
    let cancel_url = format!("/api/heartbeat-runs/{run_id}/cancel");
    let stop = task
        .find(&format!("data-url=\"{cancel_url}\""))
        .expect("the task page offers Stop for its running run");
    let button = &task[task[..stop].rfind("<button").unwrap()..];
    let button = &button[..button.find("</button>").unwrap()];
    assert!(button.contains("data-action=\"POST\""), "{button}");
    assert!(button.contains(">Stop"), "{button}");

    let stopped = server.ok_post(&cancel_url, json!({})).await;
    assert_eq!(stopped["status"], "cancelled");
    // Nor is it an error in the run's own timeline.
    let events = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/events"))
        .await;
    let errors: Vec<&Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["level"] == "error")
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    let task = page(&server, &format!("/{prefix}/tasks/{ident}")).await;
    let start = task
        .find(&format!("data-run-id=\"{run_id}\""))
        .expect("the run is on the task page");
    let block = &task[start..];
    let block = &block[..block.find("</details></details>").unwrap_or(block.len())];
    assert!(block.contains("data-run-status=\"cancelled\""), "{block}");
    assert!(block.contains("s-cancelled"), "{block}");
    for error_class in ["run-error", "lvl-error", "s-failed"] {
        assert!(!block.contains(error_class), "{error_class} in {block}");
    }
    assert!(!task.contains(&format!("data-url=\"{cancel_url}\"")));

    let dashboard = page(&server, &format!("/{prefix}/dashboard")).await;
    assert!(
        dashboard.contains("1 of 1 finished runs succeeded"),
        "a stop counted as a failure"
    );
    let inbox = page(&server, &format!("/{prefix}/inbox")).await;
    assert!(
        inbox.contains("No failures waiting for you."),
        "the inbox lists the stop as a failure"
    );
}

async fn page(server: &TestServer, path: &str) -> String {
    let resp = server.client().get(server.url(path)).send().await.unwrap();
    assert!(resp.status().is_success(), "{path}: {}", resp.status());
    resp.text().await.unwrap()
}
