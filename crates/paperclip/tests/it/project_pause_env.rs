//! A project's icon, env and pause, as the original has them: the icon is
//! one of its names, the env reaches the runs of the project's tasks over
//! the agent's own (secrets by reference, resolved only in the run), and a
//! project whose budget's hard stop is open is paused: no new run starts for
//! its tasks until the budget is raised.

use crate::common::{self, TestServer};
use serde_json::{json, Value};

#[tokio::test]
async fn a_projects_env_reaches_its_runs_and_its_pause_holds_them() {
    let s = TestServer::start().await;
    let company = s.company("Pause Co").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let secret_value = common::secrets::value("project");
    let secret = s
        .ok_post(
            &format!("/api/companies/{cid}/secrets"),
            json!({ "name": "Deploy Token", "value": secret_value }),
        )
        .await;
    let sid = secret["id"].as_str().unwrap();
    let out = s.data_dir.join("project-env.out");
    let script = format!(
        "printf '%s|%s|%s|%s' \"$PLAIN\" \"$SHARED\" \"$ONLY_AGENT\" \"$TOKEN\" > {}\n",
        out.display()
    );
    let agent = s
        .script_agent(
            &cid,
            "Builder",
            &script,
            json!({ "env": { "SHARED": "agent", "ONLY_AGENT": "a" } }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let projects = format!("/api/companies/{cid}/projects");

    // Bad input names its field.
    let (status, body) = s
        .post(&projects, json!({ "name": "X", "icon": "🚀" }))
        .await;
    assert!(status == 400 || status == 422, "{status} {body}");
    assert!(body.to_string().contains("icon"), "{body}");
    let (status, body) = s
        .post(&projects, json!({ "name": "X", "env": { "1BAD": "x" } }))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("env"), "{body}");

    let project = s
        .ok_post(
            &projects,
            json!({ "name": "App", "icon": "rocket",
                    "env": { "PLAIN": "p", "SHARED": "project",
                             "TOKEN": { "type": "secret_ref", "secretId": sid } } }),
        )
        .await;
    let pid = project["id"].as_str().unwrap().to_string();
    assert_eq!(project["icon"], "rocket");
    for key in ["pausedAt", "pauseReason", "managedByPlugin"] {
        assert_eq!(project[key], Value::Null, "{key}: {project}");
    }
    assert_eq!(project["env"]["TOKEN"]["secretId"], sid);
    let patched = s
        .ok_patch(
            &format!("/api/projects/{pid}"),
            json!({ "icon": "git-branch" }),
        )
        .await;
    assert_eq!(patched["icon"], "git-branch");
    let (status, body) = s
        .patch(
            &format!("/api/projects/{pid}"),
            json!({ "env": { "T": { "type": "secret_ref", "secretId": "nope" } } }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("UUID"), "{body}");

    // The month's spend crosses the project's budget: the project pauses.
    s.ok_patch(
        &format!("/api/projects/{pid}/budgets"),
        json!({ "budgetMonthlyCents": 50 }),
    )
    .await;
    s.ok_post(
        &format!("/api/companies/{cid}/cost-events"),
        json!({ "projectId": pid, "costCents": 60, "model": "earlier-work" }),
    )
    .await;
    let paused = s
        .wait_for(&format!("/api/projects/{pid}"), 10, |p| {
            !p["pausedAt"].is_null()
        })
        .await;
    assert_eq!(paused["pauseReason"], "budget", "{paused}");
    let listed = s.ok_get(&projects).await;
    assert_eq!(listed[0]["pauseReason"], "budget", "{listed}");
    // The project's page says so where the person is, with what to do, and
    // shows the run variables without the secret's value.
    let prefix = company["issuePrefix"].as_str().unwrap();
    let page = s
        .page(&format!(
            "/{prefix}/projects/{}",
            paused["urlKey"].as_str().unwrap()
        ))
        .await;
    assert!(page.contains("data-project-paused"), "{page}");
    assert!(page.contains("Raise its budget"), "{page}");
    assert!(page.contains("git-branch"), "the icon: {page}");
    assert!(
        page.contains("SHARED") && page.contains("a secret"),
        "{page}"
    );
    assert!(!page.contains(&secret_value), "no secret value on the page");

    // Its task is assigned, and asked for: no run starts.
    let issue = s
        .issue(
            &cid,
            json!({ "title": "Ship", "projectId": pid, "assigneeAgentId": aid, "status": "todo" }),
        )
        .await;
    let iid = issue["id"].as_str().unwrap().to_string();
    let (status, body) = s
        .post(
            &format!("/api/agents/{aid}/wakeup"),
            json!({ "issueId": iid }),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    s.quiesce().await;
    assert!(
        s.runs_of(&cid, &aid).await.is_empty(),
        "no run while paused"
    );

    // Raised, the project resumes; the next wake runs with the merged env.
    s.ok_patch(
        &format!("/api/projects/{pid}/budgets"),
        json!({ "budgetMonthlyCents": 10_000 }),
    )
    .await;
    let resumed = s.ok_get(&format!("/api/projects/{pid}")).await;
    assert_eq!(resumed["pausedAt"], Value::Null, "{resumed}");
    assert_eq!(resumed["pauseReason"], Value::Null, "{resumed}");
    s.wake(&aid, json!({ "issueId": iid })).await;
    let runs = s.settled_runs(&cid, &aid, 1, 30).await;
    assert_eq!(runs[0]["status"], "succeeded", "{runs:?}");
    let got = std::fs::read_to_string(&out).unwrap();
    assert_eq!(got, format!("p|project|a|{secret_value}"));

    // The activity names the changed variables, never a value.
    let (_, activity) = s
        .get(&format!(
            "/api/companies/{cid}/activity?entityType=project&entityId={pid}"
        ))
        .await;
    assert!(!activity.to_string().contains(&secret_value), "{activity}");
}

/// The pause also takes back what was already asked for: a run queued for
/// the project's task before its budget stopped is cancelled, not started
/// after the pause (the original cancels them too). The run under way goes
/// on: what stops it is its own budget watch, once it reports a cost.
#[tokio::test]
async fn a_project_pause_cancels_the_runs_queued_for_its_tasks() {
    let s = TestServer::start().await;
    let company = s.company("Queue Co").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let gate = s.data_dir.join("gate");
    // The first run holds the agent's only slot until the gate opens (the
    // script's wait is bounded; the test waits on conditions).
    let script = format!(
        "n=0; while [ ! -e {g} ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n+1)); done\n",
        g = gate.display()
    );
    let agent = s.script_agent(&cid, "Builder", &script, json!({})).await;
    let aid = agent["id"].as_str().unwrap().to_string();
    s.ok_patch(
        &format!("/api/agents/{aid}"),
        json!({ "runtimeConfig": { "heartbeat": { "maxConcurrentRuns": 1 } } }),
    )
    .await;
    let project = s
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App" }),
        )
        .await;
    let pid = project["id"].as_str().unwrap().to_string();
    s.ok_patch(
        &format!("/api/projects/{pid}/budgets"),
        json!({ "budgetMonthlyCents": 50 }),
    )
    .await;
    let task = |title: &str| json!({ "title": title, "projectId": pid, "assigneeAgentId": aid, "status": "todo" });
    let first = s.issue(&cid, task("First")).await;
    let runs_path = format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}");
    s.wait_for(&runs_path, 30, |r| r[0]["status"] == "running")
        .await;
    let second = s.issue(&cid, task("Second")).await;
    let second_id = second["id"].as_str().unwrap().to_string();
    let queued = s
        .wait_for(&runs_path, 30, |r| {
            r.as_array().is_some_and(|r| {
                r.iter()
                    .any(|run| run["issueId"] == second_id.as_str() && run["status"] == "queued")
            })
        })
        .await;
    let queued_id = queued
        .as_array()
        .unwrap()
        .iter()
        .find(|run| run["issueId"] == second_id.as_str())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    s.ok_post(
        &format!("/api/companies/{cid}/cost-events"),
        json!({ "projectId": pid, "costCents": 60, "model": "earlier-work" }),
    )
    .await;
    let cancelled = s
        .wait_for(&format!("/api/heartbeat-runs/{queued_id}"), 10, |r| {
            r["status"] == "cancelled"
        })
        .await;
    assert_eq!(cancelled["errorCode"], "budget_blocked", "{cancelled}");
    assert_eq!(
        cancelled["startedAt"],
        Value::Null,
        "never started: {cancelled}"
    );

    std::fs::write(&gate, "open").unwrap();
    s.quiesce().await;
    let runs = s.runs_of(&cid, &aid).await;
    assert_eq!(runs.len(), 2, "no run started after the pause: {runs:?}");
    let first_run = runs
        .iter()
        .find(|r| r["issueId"] == first["id"])
        .expect("the first task's run");
    assert_eq!(first_run["status"], "succeeded", "{runs:?}");
    let second_after = s.ok_get(&format!("/api/issues/{second_id}")).await;
    assert_eq!(
        second_after["executionRunId"],
        Value::Null,
        "the cancelled run holds no lock: {second_after}"
    );
}
