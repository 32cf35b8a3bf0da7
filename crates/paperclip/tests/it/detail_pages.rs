//! Detail pages (a run, an agent's runs, an approval, a project, a goal)
//! and the original Paperclip's board links (`/ACM/issues/ACM-1`, ...) that
//! its agents write into comments, over plain HTTP. (In a browser:
//! `detail_pages_browser` below.)

use crate::common;

use common::visible_text;

use std::time::Duration;

use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// Status, final path (after redirects) and body of a page.
async fn open(server: &TestServer, path: &str) -> (StatusCode, String, String) {
    let resp = server.client().get(server.url(path)).send().await.unwrap();
    let status = resp.status();
    let landed = resp.url().path().to_string();
    (status, landed, resp.text().await.unwrap())
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap()
}

#[tokio::test]
async fn the_originals_links_resolve_and_each_detail_page_reads_in_words() {
    let server = TestServer::start().await;
    let company = server.company("Acme").await;
    let cid = s(&company["id"]);
    let p = s(&company["issuePrefix"]);
    let lead = server.agent(cid, "Lead", None).await;
    let lead_key = s(&lead["urlKey"]);
    let top = server
        .ok_post(
            &format!("/api/companies/{cid}/goals"),
            json!({ "title": "Win the market", "description": "Be **first**" }),
        )
        .await;
    let sub = server
        .ok_post(
            &format!("/api/companies/{cid}/goals"),
            json!({ "title": "Ship the website", "parentId": top["id"] }),
        )
        .await;
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Website Relaunch", "description": "A faster site", "goalId": sub["id"] }),
        )
        .await;
    let task = server
        .issue(
            cid,
            json!({ "title": "Draft the homepage", "projectId": project["id"],
                "goalId": sub["id"], "status": "backlog" }),
        )
        .await;
    let ident = s(&task["identifier"]);

    // The original's task links: any case, by id, and the list.
    for link in [
        format!("/{p}/issues/{ident}"),
        format!("/{p}/issues/{}", ident.to_lowercase()),
        format!("/{}/issues/{ident}", p.to_lowercase()),
        format!("/{p}/issues/{}", s(&task["id"])),
    ] {
        let (status, landed, body) = open(&server, &link).await;
        assert_eq!(status, 200, "{link}: {body}");
        assert_eq!(landed, format!("/{p}/tasks/{ident}"), "{link}");
        assert!(body.contains("Draft the homepage"), "{link}");
    }
    // A comment link of the original: `#comment-<id>` is an anchor on the page.
    let comment = server
        .ok_post(
            &format!("/api/issues/{}/comments", s(&task["id"])),
            json!({ "body": "See the draft" }),
        )
        .await;
    let task_page = server.page(&format!("/{p}/tasks/{ident}")).await;
    assert!(task_page.contains(&format!("id=\"comment-{}\"", s(&comment["id"]))));
    let (status, landed, _) = open(&server, &format!("/{p}/issues?q=homepage")).await;
    assert_eq!(
        (status.as_u16(), landed.as_str()),
        (200, &*format!("/{p}/tasks"))
    );
    let (status, _, body) = open(&server, &format!("/{p}/issues/{p}-999")).await;
    assert_eq!(status, 404);
    assert!(body.contains("No such task"), "{body}");

    // Agent tabs of the original land on the agent's page.
    let (status, landed, _) = open(&server, &format!("/{p}/agents/{lead_key}/dashboard")).await;
    assert_eq!(status, 200);
    assert_eq!(landed, format!("/{p}/agents/{lead_key}"));

    // Project: by url key or id; its `issues` tab is its task list.
    let key = s(&project["urlKey"]);
    for link in [
        format!("/{p}/projects/{key}"),
        format!("/{p}/projects/{}", s(&project["id"])),
    ] {
        let (status, _, body) = open(&server, &link).await;
        assert_eq!(status, 200, "{link}: {body}");
        let text = visible_text(&body);
        for words in [
            "Website Relaunch",
            "A faster site",
            ident,
            "Draft the homepage",
            "Ship the website",
            "backlog",
        ] {
            assert!(text.contains(words), "{link} lacks {words:?}");
        }
        assert!(
            !text.contains(s(&task["id"])),
            "tasks are named by identifier"
        );
    }
    let (status, landed, _) = open(&server, &format!("/{p}/projects/{key}/issues")).await;
    assert_eq!(status, 200);
    assert_eq!(landed, format!("/{p}/tasks"));
    let projects = server.page(&format!("/{p}/projects")).await;
    assert!(projects.contains(&format!("href=\"/{p}/projects/{key}\"")));

    // Goal: description, the goal above and below, its tasks.
    let top_page = visible_text(&server.page(&format!("/{p}/goals/{}", s(&top["id"]))).await);
    assert!(top_page.contains("Win the market") && top_page.contains("Ship the website"));
    assert!(top_page.contains("A top-level goal"));
    let sub_html = server.page(&format!("/{p}/goals/{}", s(&sub["id"]))).await;
    let sub_page = visible_text(&sub_html);
    for words in [
        "Ship the website",
        "Win the market",
        ident,
        "Website Relaunch",
    ] {
        assert!(sub_page.contains(words), "goal page lacks {words:?}");
    }
    assert!(sub_html.contains("data-parent-goal"));
    let goals = server.page(&format!("/{p}/goals")).await;
    assert!(goals.contains(&format!("href=\"/{p}/goals/{}\"", s(&sub["id"]))));

    // Approval: a hire in words, its decision buttons, comments and tasks.
    server
        .ok_patch(
            &format!("/api/companies/{cid}"),
            json!({ "requireBoardApprovalForNewAgents": true }),
        )
        .await;
    let hire = server
        .ok_post(
            &format!("/api/companies/{cid}/agent-hires"),
            json!({ "name": "Analyst", "role": "researcher", "reportsTo": lead["id"], "budgetMonthlyCents": 5000,
                "adapterType": "process", "adapterConfig": { "command": "true" } }),
        )
        .await;
    let approval_id = s(&hire["approval"]["id"]);
    server
        .ok_post(
            &format!("/api/issues/{}/approvals", s(&task["id"])),
            json!({ "approvalId": approval_id }),
        )
        .await;
    server
        .ok_post(
            &format!("/api/approvals/{approval_id}/comments"),
            json!({ "body": "Is the budget enough?" }),
        )
        .await;
    let html = server.page(&format!("/{p}/approvals/{approval_id}")).await;
    let text = visible_text(&html);
    for words in [
        "Hire Analyst",
        "Reports to",
        "Lead",
        "Monthly budget",
        "$50.00",
        "Adapter",
        "process",
        "researcher",
        "Is the budget enough?",
        ident,
        "Approve",
        "Request revision",
        "Reject",
    ] {
        assert!(
            text.contains(words),
            "approval page lacks {words:?}: {text}"
        );
    }
    for raw in [
        "reportsTo",
        "budgetMonthlyCents",
        "null",
        s(&lead["id"]),
        s(&task["id"]),
    ] {
        assert!(!text.contains(raw), "approval page shows {raw:?}");
    }
    assert!(html.contains(&format!("data-approval=\"{approval_id}\"")));
    let list = server.page(&format!("/{p}/approvals")).await;
    assert!(list.contains(&format!("href=\"/{p}/approvals/{approval_id}\"")));
    // The list reads the pending request in words too.
    let list_text = visible_text(&list);
    for words in ["Hire Analyst", "Reports to", "$50.00"] {
        assert!(list_text.contains(words), "approvals list lacks {words:?}");
    }
    for raw in ["reportsTo", "budgetMonthlyCents", s(&lead["id"])] {
        assert!(!list_text.contains(raw), "approvals list shows {raw:?}");
    }
    server
        .ok_post(
            &format!("/api/approvals/{approval_id}/approve"),
            json!({ "decisionNote": "Welcome aboard" }),
        )
        .await;
    let decided = visible_text(&server.page(&format!("/{p}/approvals/{approval_id}")).await);
    assert!(decided.contains("Welcome aboard") && decided.contains("by the board"));
    assert!(
        !decided.contains("Request revision"),
        "a decided approval has no buttons"
    );

    // Missing things are 404 pages that say what is missing.
    for (link, words) in [
        (
            format!("/{p}/approvals/no-such-approval"),
            "No such approval",
        ),
        (format!("/{p}/goals/no-such-goal"), "No such goal"),
        (format!("/{p}/projects/no-such-project"), "No such project"),
        (format!("/{p}/agents/nobody/runs"), "No such agent"),
        (format!("/{p}/agents/nobody/runs/x"), "No such agent"),
        (
            format!("/{p}/agents/{lead_key}/runs/no-such-run"),
            "No such run",
        ),
        (format!("/{p}/agents/nobody/configuration"), "No such agent"),
    ] {
        let (status, _, body) = open(&server, &link).await;
        assert_eq!(status, 404, "{link}: {body}");
        assert!(body.contains(words), "{link}: {body}");
    }
}

#[tokio::test]
async fn a_failed_run_has_its_own_page_and_retry_queues_a_new_run() {
    let server = TestServer::start().await;
    let company = server.company("Acme").await;
    let cid = s(&company["id"]);
    let p = s(&company["issuePrefix"]);
    let agent = server
        .script_agent(
            cid,
            "Builder",
            "echo working on it\necho the build broke >&2\nexit 3\n",
            json!({}),
        )
        .await;
    let aid = s(&agent["id"]);
    let key = s(&agent["urlKey"]);
    let task = server
        .issue(
            cid,
            json!({ "title": "Build it", "assigneeAgentId": aid, "status": "todo" }),
        )
        .await;
    let ident = s(&task["identifier"]);
    let runs_path = format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}");
    let runs = server
        .wait_for(&runs_path, 60, |r| r[0]["status"] == "failed")
        .await;
    let failed = runs[0].clone();
    let run_id = s(&failed["id"]);

    let html = server
        .page(&format!("/{p}/agents/{key}/runs/{run_id}"))
        .await;
    let text = visible_text(&html);
    for words in [
        "Failed.",
        "nonzero_exit",
        "What to do",
        ident,
        "Build it",
        "Started",
        "Finished",
        "Duration",
        "exited with code 3",
        "working on it",
        "the build broke",
        "Retry",
    ] {
        assert!(text.contains(words), "run page lacks {words:?}: {text}");
    }
    assert!(
        !text.contains(s(&task["id"])),
        "the task is named by identifier"
    );
    assert!(html.contains(&format!("data-retry-run=\"{run_id}\"")));
    // By the agent's id too, and its whole log as text.
    let (status, _, _) = open(&server, &format!("/{p}/agents/{aid}/runs/{run_id}")).await;
    assert_eq!(status, 200);
    let log = server
        .page(&format!("/{p}/agents/{key}/runs/{run_id}/log"))
        .await;
    assert!(
        log.contains("working on it") && log.contains("the build broke"),
        "{log}"
    );
    // A run of another agent is not this agent's.
    let other = server.agent(cid, "Other", None).await;
    let (status, _, _) = open(
        &server,
        &format!("/{p}/agents/{}/runs/{run_id}", s(&other["urlKey"])),
    )
    .await;
    assert_eq!(status, 404);

    // The agent page opens the run page, with when and how long.
    let agent_page = server.page(&format!("/{p}/agents/{key}")).await;
    assert!(agent_page.contains(&format!("href=\"/{p}/agents/{key}/runs/{run_id}\"")));
    assert!(!agent_page.contains(&format!("/api/heartbeat-runs/{run_id}/log\"")));
    assert!(agent_page.contains("data-duration"));

    // Retry: the route the page's button calls queues a new run of the task.
    let retry = server
        .wake(
            &aid,
            json!({ "failedRunId": run_id, "reason": "retry_failed_run" }),
        )
        .await;
    let retry_id = s(&retry["id"]).to_string();
    assert_ne!(retry_id, run_id);
    assert_eq!(retry["retryOfRunId"], run_id);
    let runs = server
        .wait_for(&runs_path, 60, |r| {
            r.as_array().unwrap().len() == 2
                && r[0]["id"] == retry_id.as_str()
                && r[0]["status"] != "queued"
        })
        .await;
    assert_eq!(runs[0]["issueId"], task["id"]);
    let old = server
        .page(&format!("/{p}/agents/{key}/runs/{run_id}"))
        .await;
    assert!(
        old.contains(&format!("href=\"/{p}/agents/{key}/runs/{retry_id}\"")),
        "the failed run links its retry"
    );
    let new = visible_text(
        &server
            .page(&format!("/{p}/agents/{key}/runs/{retry_id}"))
            .await,
    );
    assert!(new.contains("Retry of") && new.contains(ident), "{new}");

    // The task page's run opens the run page (relative to `/{p}/tasks/`).
    let task_page = server.page(&format!("/{p}/tasks/{ident}")).await;
    assert!(task_page.contains(&format!("href=\"../agents/{key}/runs/{run_id}\"")));

    // The runs list: newest first, each row opens its run; `before` pages.
    let list = server.page(&format!("/{p}/agents/{key}/runs")).await;
    let (at_new, at_old) = (
        list.find(&format!("/runs/{retry_id}\""))
            .expect("retry listed"),
        list.find(&format!("/runs/{run_id}\""))
            .expect("failed run listed"),
    );
    assert!(at_new < at_old, "newest first");
    assert!(visible_text(&list).contains(ident));
    let older = server
        .page(&format!("/{p}/agents/{key}/runs?before={retry_id}"))
        .await;
    assert!(
        older.contains(&format!("/runs/{run_id}\""))
            && !older.contains(&format!("/runs/{retry_id}\""))
    );
}

#[tokio::test]
async fn detail_pages_browser() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    common::browser::run("detail_pages", &server.base, Duration::from_secs(180)).await;
}

#[tokio::test]
async fn a_huge_log_shows_its_end_and_links_the_rest() {
    let server = TestServer::start().await;
    let company = server.company("Acme").await;
    let cid = s(&company["id"]);
    let p = s(&company["issuePrefix"]);
    // About 500 KB of output, then the line that says what went wrong.
    let agent = server
        .script_agent(
            cid,
            "Chatty",
            "seq 1 9000 | sed 's/$/ of a long log, padded to be long enough to add up/'\necho LAST WORDS >&2\nexit 1\n",
            json!({}),
        )
        .await;
    let aid = s(&agent["id"]);
    server.wake(&aid, json!({ "reason": "manual" })).await;
    let runs = server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            60,
            |r| r[0]["status"] == "failed",
        )
        .await;
    let run_id = s(&runs[0]["id"]);
    assert!(
        runs[0]["logBytes"].as_i64().unwrap() > 400_000,
        "{}",
        runs[0]
    );
    let path = format!("/{p}/agents/{}/runs/{run_id}", s(&agent["urlKey"]));
    let html = server.page(&path).await;
    assert!(
        html.len() < 200_000,
        "the page stays small: {} bytes",
        html.len()
    );
    let text = visible_text(&html);
    assert!(
        text.contains("LAST WORDS") && text.contains("Showing the last"),
        "{text}"
    );
    assert!(!text.contains("\n1 of a long log"), "the start is left out");
    assert!(text.contains("No task"), "a run without a task says so");
    let full = server.page(&format!("{path}/log")).await;
    assert!(full.starts_with("1 of a long log") || full.contains("\n1 of a long log"));
    assert!(full.contains("9000 of a long log") && full.contains("LAST WORDS"));
}

#[tokio::test]
async fn an_agents_runs_are_listed_fifty_a_page() {
    let server = TestServer::start().await;
    let company = server.company("Acme").await;
    let cid = s(&company["id"]);
    let p = s(&company["issuePrefix"]);
    let agent = server.agent(cid, "Worker", None).await;
    let aid = s(&agent["id"]);
    let runs_path = format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}&limit=100");
    // One at a time: a wake while a run waits folds into it.
    for n in 1..=51 {
        server.wake(&aid, json!({ "reason": "manual" })).await;
        server
            .wait_for(&runs_path, 30, |r| {
                r.as_array().unwrap().len() == n && r[0]["status"] == "succeeded"
            })
            .await;
    }
    let all = server.ok_get(&runs_path).await;
    let ids: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|r| s(&r["id"]))
        .collect();
    let base = format!("/{p}/agents/{}/runs", s(&agent["urlKey"]));
    let first = server.page(&base).await;
    let rows = |html: &str| {
        ids.iter()
            .filter(|id| html.contains(&format!("/runs/{id}\"")))
            .count()
    };
    assert_eq!(rows(&first), 50);
    assert!(
        !first.contains(&format!("/runs/{}\"", ids[50])),
        "the oldest is on the next page"
    );
    let next = format!("{base}?before={}", ids[49]);
    assert!(
        first.contains(&format!("href=\"{next}\"")),
        "a link to the next page"
    );
    let second = server.page(&next).await;
    assert_eq!(rows(&second), 1);
    assert!(second.contains(&format!("/runs/{}\"", ids[50])));
    assert!(!second.contains("Older runs"), "the last page has no next");
}

#[tokio::test]
async fn a_live_run_with_a_long_log_stays_a_small_page_with_stop_not_retry() {
    let server = TestServer::start().await;
    let company = server.company("Acme").await;
    let cid = s(&company["id"]);
    let p = s(&company["issuePrefix"]);
    let gate = std::env::temp_dir().join(format!("gate-{}", uuid::Uuid::new_v4().simple()));
    let script = format!(
        "seq 1 9000 | sed 's/$/ of a long log, padded to be long enough to add up/'\n\
         i=0; while [ ! -e {gate} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\nexit 0\n",
        gate = gate.display()
    );
    let agent = server.script_agent(cid, "Talker", &script, json!({})).await;
    let aid = s(&agent["id"]);
    server.wake(&aid, json!({ "reason": "manual" })).await;
    let runs_path = format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}");
    let runs = server
        .wait_for(&runs_path, 30, |r| r[0]["status"] == "running")
        .await;
    let path = format!(
        "/{p}/agents/{}/runs/{}",
        s(&agent["urlKey"]),
        s(&runs[0]["id"])
    );
    // Once the output is written, the page shows part of it and says so.
    let html = common::until(30, "the log to show", async || {
        let html = server.page(&path).await;
        let shown = html.contains("9000 of a long log") || html.contains("Showing the first");
        shown.then_some(html)
    })
    .await;
    assert!(
        html.len() < 200_000,
        "the page stays small: {} bytes",
        html.len()
    );
    let text = visible_text(&html);
    assert!(text.contains("Working.") && text.contains("Stop"), "{text}");
    assert!(!html.contains("data-retry-run"), "a live run has no Retry");
    assert!(
        text.contains("Showing the first") || text.contains("Showing the last"),
        "the page says the log is cut: {text}"
    );
    std::fs::write(&gate, "").unwrap();
    server
        .wait_for(&runs_path, 60, |r| r[0]["status"] == "succeeded")
        .await;
    let _ = std::fs::remove_file(&gate);
}
