//! A Kubernetes Job outlives the instance that started it (issue 38): when
//! that instance stops during a rolling update, a survivor on the same
//! Postgres database takes the run over and its continuation reattaches to
//! the Job; the Job is never started twice.

use crate::common::{self, fleet, until, TestServer};
use crate::fake::Script;
use crate::k8s_jobs::claude_lines;
use crate::setup::{pairs, setup, Setup};
use serde_json::json;

#[tokio::test]
async fn a_survivor_reattaches_to_the_job_of_an_instance_that_stopped() {
    if !fleet::on_postgres("k8s fleet") {
        return;
    }
    let lines = claude_lines();
    let t = setup(
        Script {
            lines: lines[..2].to_vec(),
            exit_code: 0,
            hold: true,
            after_release: lines[2..].to_vec(),
        },
        json!({}),
    )
    .await;
    let mut env = pairs(&t.env);
    env.push(("PAPERCLIP_INSTANCE_LEASE_SECS", "3"));
    let survivor = fleet::second_instance_args(&t.s, &[], &env).await;
    t.assign("Survive a rolling update").await;
    until(30, "the Job's pod to run", async || {
        (t.k8s.running_pods() == 1).then_some(())
    })
    .await;
    let followed = t.calls("GET", "/log").len();
    let Setup {
        mut s,
        env: _,
        k8s,
        cid,
        aid,
    } = t;
    let first = s
        .ok_get(&format!(
            "/api/companies/{cid}/heartbeat-runs?agentId={aid}"
        ))
        .await;
    let first_id = first[0]["id"].as_str().unwrap().to_string();
    // The instance that started the Job stops, as a rolling update stops a
    // pod: it gives its lease up on the way out.
    assert!(
        s.terminate(10).await,
        "the instance did not stop on SIGTERM"
    );
    let settled = survivor
        .wait_for(&format!("/api/heartbeat-runs/{first_id}"), 20, |r| {
            r["status"] != "running"
        })
        .await;
    assert_eq!(settled["errorCode"], "control_plane_restart", "{settled}");
    until(
        30,
        "the survivor's continuation to follow the Job",
        async || {
            let follows = k8s
                .requests()
                .into_iter()
                .filter(|r| r.method == "GET" && r.path.contains("/log"));
            (follows.count() > followed).then_some(())
        },
    )
    .await;
    k8s.release();
    let runs = common::until(30, "the continuation to succeed", async || {
        let runs = survivor.runs_of(&cid, &aid).await;
        runs.iter()
            .any(|r| r["status"] == "succeeded")
            .then_some(runs)
    })
    .await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    let creates = k8s
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.path.ends_with("/jobs"))
        .count();
    assert_eq!(creates, 1, "a second Job was created");
    let next = runs.iter().find(|r| r["status"] == "succeeded").unwrap();
    let log = survivor
        .ok_get(&format!(
            "/api/heartbeat-runs/{}/log?limitBytes=4194304",
            next["id"].as_str().unwrap()
        ))
        .await;
    assert!(
        log["content"]
            .as_str()
            .unwrap()
            .contains("Reattaching to orphaned Job"),
        "{log}"
    );
    drop::<TestServer>(s);
}
