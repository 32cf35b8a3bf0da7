//! A newcomer's first five minutes, with no model key: the sample company
//! (from the API, the UI and `run --sample`) gets work done by the bundled
//! example agent; the README's script agent works as printed; a process agent
//! without a template reads the default prompt on stdin.

use crate::common;

use std::time::Duration;

use common::{until, TestServer};
use reqwest::StatusCode;
use serde_json::{json, Value};

const SAMPLE_NAME: &str = "Sample Lemonade Stand";

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

fn samples(list: &Value) -> Vec<Value> {
    list.as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == SAMPLE_NAME)
        .cloned()
        .collect()
}

/// Waits until some task of the company is done with a comment written by
/// its own assignee in a run; returns (task, comment).
async fn a_task_done_by_its_agent(server: &TestServer, cid: &str) -> (Value, Value) {
    until(
        60,
        "a sample task done with its agent's comment",
        async || {
            let tasks = server
                .ok_get(&format!("/api/companies/{cid}/issues?status=done"))
                .await;
            for task in tasks.as_array()? {
                let comments = server
                    .ok_get(&format!("/api/issues/{}/comments", s(&task["id"])))
                    .await;
                let by_agent = comments.as_array()?.iter().find(|c| {
                    c["authorAgentId"] == task["assigneeAgentId"] && !c["createdByRunId"].is_null()
                });
                if let Some(c) = by_agent {
                    return Some((task.clone(), c.clone()));
                }
            }
            None
        },
    )
    .await
}

#[tokio::test]
async fn the_sample_company_gets_work_done_without_a_key() {
    let server = TestServer::start().await;
    let (status, company) = server.post("/api/sample-company", json!({})).await;
    assert_eq!(status, StatusCode::CREATED, "{company}");
    assert_eq!(company["name"], SAMPLE_NAME);
    assert!(company["description"]
        .as_str()
        .is_some_and(|d| !d.is_empty()));
    let cid = s(&company["id"]).to_string();

    let agents = server.ok_get(&format!("/api/companies/{cid}/agents")).await;
    let agents = agents.as_array().unwrap();
    assert_eq!(agents.len(), 2, "{agents:?}");
    let ceo = agents.iter().find(|a| a["role"] == "ceo").expect("a CEO");
    let engineer = agents
        .iter()
        .find(|a| a["role"] == "engineer")
        .expect("an engineer");
    assert_eq!(engineer["reportsTo"], ceo["id"]);
    for a in agents {
        assert_eq!(a["adapterType"], "process");
        assert!(a["adapterConfig"].get("promptTemplate").is_none());
    }
    let goals = server.ok_get(&format!("/api/companies/{cid}/goals")).await;
    assert_eq!(goals.as_array().unwrap().len(), 1, "{goals}");
    let tasks = server.ok_get(&format!("/api/companies/{cid}/issues")).await;
    let tasks = tasks.as_array().unwrap();
    assert_eq!(tasks.len(), 3);
    assert!(tasks
        .iter()
        .all(|t| !t["assigneeAgentId"].is_null() && t["goalId"] == goals[0]["id"]));
    assert!(tasks.iter().any(|t| t["assigneeAgentId"] == ceo["id"]));

    let (task, comment) = a_task_done_by_its_agent(&server, &cid).await;
    assert!(
        s(&comment["body"]).contains(s(&task["identifier"])),
        "the comment names the task: {comment}"
    );
    // Every task gets there: both agents work.
    server
        .wait_for(&format!("/api/companies/{cid}/issues"), 60, |list| {
            list.as_array()
                .is_some_and(|l| l.len() == 3 && l.iter().all(|t| t["status"] == "done"))
        })
        .await;

    // Made like anything else: each creation is in the activity log.
    let actions = server.actions(&cid).await;
    for action in [
        "company.created",
        "goal.created",
        "agent.created",
        "issue.created",
    ] {
        assert!(
            actions.iter().any(|a| a == action),
            "{action} in {actions:?}"
        );
    }
    assert_eq!(actions.iter().filter(|a| *a == "agent.created").count(), 2);

    // Asking again answers the same company.
    let (status, again) = server.post("/api/sample-company", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["id"], company["id"]);
    assert_eq!(
        samples(&server.ok_get("/api/companies").await).len(),
        1,
        "one sample company"
    );
}

#[tokio::test]
async fn an_agent_key_cannot_make_the_sample_company() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Keyed").await["id"]).to_string();
    let agent = server.agent(&cid, "A", None).await;
    let key = server.key(s(&agent["id"])).await;
    let resp = server
        .client()
        .post(server.url("/api/sample-company"))
        .bearer_auth(key)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert!(samples(&server.ok_get("/api/companies").await).is_empty());
}

#[tokio::test]
async fn run_sample_creates_it_once() {
    let server = TestServer::start_args(&["--sample"]).await;
    let list = server.ok_get("/api/companies").await;
    let found = samples(&list);
    assert_eq!(found.len(), 1, "{list}");
    let cid = s(&found[0]["id"]).to_string();
    a_task_done_by_its_agent(&server, &cid).await;

    let (data_dir, database_url) = server.stop_keeping_data();
    let server = TestServer::start_with(data_dir, database_url, &["--sample"]).await;
    let found = samples(&server.ok_get("/api/companies").await);
    assert_eq!(found.len(), 1, "still one sample company after a restart");
    assert_eq!(found[0]["id"], cid);
}

/// The script between the README's `example-agent` markers, without its fence.
fn readme_script() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let begin = readme
        .find("<!-- example-agent:begin -->")
        .expect("README marks the script's start");
    let end = readme
        .find("<!-- example-agent:end -->")
        .expect("README marks the script's end");
    let block = &readme[begin..end];
    let start = block.find("```sh\n").expect("an sh fence") + "```sh\n".len();
    let stop = block.rfind("```").expect("the fence closes");
    block[start..stop].to_string()
}

#[tokio::test]
async fn the_readme_script_agent_finishes_its_task() {
    let script = readme_script();
    assert!(script.contains("expectedStatuses") && script.contains("agentId"));
    // The README shows the very agent the binary ships.
    let shipped = std::process::Command::new(env!("CARGO_BIN_EXE_paperclip"))
        .arg("example-agent")
        .output()
        .unwrap();
    assert!(shipped.status.success());
    assert_eq!(String::from_utf8(shipped.stdout).unwrap(), script);

    let server = TestServer::start().await;
    let cid = s(&server.company("Readme Co").await["id"]).to_string();
    let agent = server
        .script_agent(&cid, "Builder", &script, json!({}))
        .await;
    let aid = s(&agent["id"]).to_string();
    let task = server
        .issue(
            &cid,
            json!({ "title": "Try it", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let tid = s(&task["id"]).to_string();
    server
        .wait_for(&format!("/api/issues/{tid}"), 60, |t| t["status"] == "done")
        .await;
    let comments = server.ok_get(&format!("/api/issues/{tid}/comments")).await;
    let comment = comments
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["authorAgentId"] == aid.as_str())
        .unwrap_or_else(|| panic!("a comment by the agent: {comments}"));
    let body = s(&comment["body"]);
    assert!(
        body.contains("Example agent") && body.contains(s(&task["identifier"])),
        "{body}"
    );
    let runs = server.only_run_succeeded(&cid, &aid).await;
    assert!(
        s(&runs[0]["stdoutExcerpt"]).contains("is done."),
        "{}",
        runs[0]
    );

    // A wake with nothing to do ends well and says so.
    server.wake(&aid, json!({})).await;
    let runs = server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            30,
            |r| {
                r.as_array()
                    .is_some_and(|r| r.len() == 2 && r.iter().all(|r| r["status"] == "succeeded"))
            },
        )
        .await;
    let idle = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["issueId"].is_null())
        .expect("the wake without a task");
    assert!(
        s(&idle["stdoutExcerpt"]).contains("Nothing to do"),
        "{idle}"
    );
}

#[tokio::test]
async fn a_process_agent_without_a_template_reads_the_default_prompt() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Prompt Co").await["id"]).to_string();
    let agent = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Reader", "title": "Scribe", "adapterType": "process",
                "adapterConfig": { "command": "cat" } }),
        )
        .await;
    let aid = s(&agent["id"]).to_string();
    let task = server
        .issue(
            &cid,
            json!({ "title": "Write the spec", "description": "Two pages at most.",
                "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let runs = server.only_run_succeeded(&cid, &aid).await;
    let stdout = s(&runs[0]["stdoutExcerpt"]);
    let ident = s(&task["identifier"]);
    for expected in [
        "You are Reader, Scribe at Prompt Co",
        "issue_assigned",
        &format!("Your task: {ident} \"Write the spec\""),
        "Two pages at most.",
    ] {
        assert!(stdout.contains(expected), "{expected:?} in {stdout:?}");
    }
}

#[tokio::test]
async fn the_first_pages_lead_to_the_sample_and_show_the_company_id() {
    let server = TestServer::start().await;
    let welcome = server.page("/").await;
    assert!(welcome.contains("data-sample-company"), "{welcome}");
    let company = server.ok_post("/api/sample-company", json!({})).await;
    let dashboard = server
        .page(&format!("/{}/dashboard", s(&company["issuePrefix"])))
        .await;
    assert!(dashboard.contains(&format!(
        "<code id=\"company-id\">{}</code>",
        s(&company["id"])
    )));
    // The New company dialog (under the company switcher) has the button too.
    assert!(dashboard.contains("data-sample-company"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_newcomer_tries_the_sample_company_in_a_browser() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    common::browser::run("first_run", &server.base, Duration::from_secs(120)).await;
    // What the person saw happened: one sample company with finished work.
    let found = samples(&server.ok_get("/api/companies").await);
    assert_eq!(found.len(), 1);
    a_task_done_by_its_agent(&server, s(&found[0]["id"])).await;
}
