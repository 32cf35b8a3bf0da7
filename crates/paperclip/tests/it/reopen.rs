//! Finished work can be iterated on: a done or cancelled task is reopened
//! (a PATCH of its status, `reopen: true`, or a person's comment on work an
//! agent owns), its agent is woken once and continues in the task's own
//! worktree and CLI session; a comment that leaves a task closed wakes
//! nobody and says why, instead of a run that "succeeds" doing nothing.

mod clients;

use crate::common;

use std::path::Path;

use common::repos::str_of as s;
use common::task_worker::{CHECKOUT, MARK_DONE, SCRIPT_START};
use common::TestServer;
use serde_json::{json, Value};

/// A project "App" of company `cid` on a fresh repository: the project's id.
async fn project_on_repository(server: &TestServer, cid: &str) -> String {
    common::repos::project_on_repository(server, cid).await.1
}

/// An agent's run: it takes its task, adds a line to `notes.txt` where it
/// works, says where that is and how many lines the file has, and finishes
/// the task.
fn worker_script() -> String {
    format!(
        "{SCRIPT_START}{CHECKOUT}\npwd\necho \"run $PAPERCLIP_RUN_ID\" >> notes.txt\n\
         echo \"lines=$(wc -l < notes.txt | tr -d ' ')\"\n{MARK_DONE}\n"
    )
}

/// Waits until the agent has `n` runs, all ended; returns them oldest first.
async fn ended_runs(server: &TestServer, cid: &str, aid: &str, n: usize) -> Vec<Value> {
    server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            60,
            |runs| {
                runs.as_array().is_some_and(|r| {
                    r.len() == n
                        && r.iter()
                            .all(|x| x["status"] != "queued" && x["status"] != "running")
                })
            },
        )
        .await;
    server.runs_of(cid, aid).await
}

async fn wakes_of(server: &TestServer, aid: &str) -> Vec<Value> {
    let list = server
        .ok_get(&format!("/api/agents/{aid}/wakeup-requests"))
        .await;
    list.as_array().unwrap().clone()
}

/// `issue.updated` rows of a task that say it was reopened.
async fn reopen_rows(server: &TestServer, cid: &str, tid: &str) -> Vec<Value> {
    let list = server
        .ok_get(&format!("/api/companies/{cid}/activity?limit=1000"))
        .await;
    list.as_array()
        .unwrap()
        .iter()
        .filter(|a| a["action"] == "issue.updated" && a["entityId"] == tid)
        .filter(|a| a["details"]["reopened"] == true)
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_done_task_reopened_by_patch_wakes_its_agent_once_in_the_same_worktree() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Reopen").await["id"]).to_string();
    let pid = project_on_repository(&server, &cid).await;
    let agent = server
        .script_agent(&cid, "Builder", &worker_script(), json!({}))
        .await;
    let aid = s(&agent["id"]).to_string();
    let task = server
        .issue(
            &cid,
            json!({ "title": "Add the pricing page", "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
        )
        .await;
    let tid = s(&task["id"]).to_string();
    let first = ended_runs(&server, &cid, &aid, 1).await;
    assert_eq!(first[0]["status"], "succeeded", "{}", first[0]);
    let done = server.ok_get(&format!("/api/issues/{tid}")).await;
    assert_eq!(done["status"], "done");
    assert!(done["completedAt"].is_string(), "{done}");
    let workspaces = server
        .ok_get(&format!(
            "/api/companies/{cid}/execution-workspaces?issueId={tid}"
        ))
        .await;
    let dir = s(&workspaces[0]["cwd"]).to_string();
    let out = s(&first[0]["stdoutExcerpt"]);
    assert!(out.starts_with(&format!("{dir}\nlines=1")), "{out}");

    // Back to todo: the agent is woken once and works where it left off.
    let reopened = server
        .ok_patch(&format!("/api/issues/{tid}"), json!({ "status": "todo" }))
        .await;
    assert_eq!(reopened["status"], "todo");
    assert_eq!(
        reopened["changes"]["status"],
        json!({ "from": "done", "to": "todo" })
    );
    assert!(reopened["completedAt"].is_null(), "{reopened}");
    // Without the checkout the finished run left on it.
    assert!(done["checkoutRunId"].is_string(), "{done}");
    assert!(reopened["checkoutRunId"].is_null(), "{reopened}");
    assert!(reopened["executionRunId"].is_null(), "{reopened}");
    let runs = ended_runs(&server, &cid, &aid, 2).await;
    let second = &runs[1];
    assert_eq!(second["status"], "succeeded", "{second}");
    assert_eq!(second["wakeReason"], "issue_status_changed");
    let out = s(&second["stdoutExcerpt"]);
    assert!(
        out.starts_with(&format!("{dir}\nlines=2")),
        "the second run works the first one's worktree: {out}"
    );
    assert!(Path::new(&dir).join("notes.txt").is_file());
    let after = server
        .ok_get(&format!(
            "/api/companies/{cid}/execution-workspaces?issueId={tid}"
        ))
        .await;
    assert_eq!(after.as_array().unwrap().len(), 1, "{after}");
    assert_eq!(after[0]["cwd"], dir.as_str());
    assert_eq!(
        server.ok_get(&format!("/api/issues/{tid}")).await["status"],
        "done"
    );

    // Woken once: one wake for the reopen, with its exactly-once key.
    server.quiesce().await;
    assert_eq!(server.runs_of(&cid, &aid).await.len(), 2);
    let wakes = wakes_of(&server, &aid).await;
    let reopen_wakes: Vec<&Value> = wakes
        .iter()
        .filter(|w| w["reason"] == "issue_status_changed")
        .collect();
    assert_eq!(reopen_wakes.len(), 1, "{wakes:?}");
    assert!(
        s(&reopen_wakes[0]["idempotencyKey"]).starts_with(&format!("issue_reopened:{tid}:")),
        "{:?}",
        reopen_wakes[0]
    );
    assert_eq!(reopen_wakes[0]["payload"]["reopenedFrom"], "done");
    let rows = reopen_rows(&server, &cid, &tid).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["details"]["reopenedFrom"], "done");
    assert_eq!(rows[0]["details"]["source"], "update");
    assert_eq!(rows[0]["details"]["changes"]["status"]["to"], "todo");
}

#[tokio::test]
async fn a_persons_comment_reopens_closed_work_and_wakes_its_agent_once() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Follow up").await["id"]).to_string();
    let agent = server
        .script_agent(&cid, "Builder", &worker_script(), json!({}))
        .await;
    let aid = s(&agent["id"]).to_string();
    let task = server
        .issue(
            &cid,
            json!({ "title": "Landing page", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let tid = s(&task["id"]).to_string();
    ended_runs(&server, &cid, &aid, 1).await;
    assert_eq!(
        server.ok_get(&format!("/api/issues/{tid}")).await["status"],
        "done"
    );

    // The review's follow-up: an @mention of the agent on its done task.
    let posted = server
        .ok_post(
            &format!("/api/issues/{tid}/comments"),
            json!({ "body": "@Builder please also add a pricing table" }),
        )
        .await;
    assert_eq!(posted["reopened"], true, "{posted}");
    assert_eq!(posted["reopenedFrom"], "done");
    assert!(posted.get("notWoken").is_none(), "{posted}");
    let runs = ended_runs(&server, &cid, &aid, 2).await;
    assert_eq!(runs[1]["status"], "succeeded", "{}", runs[1]);
    assert_eq!(runs[1]["wakeReason"], "issue_reopened_via_comment");
    // The mention and the comment are one wake, not two.
    server.quiesce().await;
    let wakes = wakes_of(&server, &aid).await;
    let on_comment: Vec<&Value> = wakes
        .iter()
        .filter(|w| w["payload"]["commentId"] == posted["id"])
        .collect();
    assert_eq!(on_comment.len(), 1, "{wakes:?}");
    assert_eq!(on_comment[0]["reason"], "issue_reopened_via_comment");
    let rows = reopen_rows(&server, &cid, &tid).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["details"]["source"], "comment");

    // A cancelled task comes back with an explicit reopen (upstream's flag).
    let cancelled = server
        .issue(
            &cid,
            json!({ "title": "Old idea", "status": "cancelled", "assigneeAgentId": aid }),
        )
        .await;
    let cancelled_id = s(&cancelled["id"]).to_string();
    let posted = server
        .ok_post(
            &format!("/api/issues/{cancelled_id}/comments"),
            json!({ "body": "We want it after all", "reopen": true }),
        )
        .await;
    assert_eq!(posted["reopenedFrom"], "cancelled", "{posted}");
    let runs = ended_runs(&server, &cid, &aid, 3).await;
    assert_eq!(runs[2]["issueId"], cancelled_id.as_str());
    assert_eq!(runs[2]["status"], "succeeded", "{}", runs[2]);
    let again = server.ok_get(&format!("/api/issues/{cancelled_id}")).await;
    assert_eq!(again["status"], "done");
    assert!(again["cancelledAt"].is_null(), "{again}");

    // A comment and a status in one PATCH: still one wake.
    let patched = server
        .ok_patch(
            &format!("/api/issues/{tid}"),
            json!({ "comment": "One more: a FAQ", "reopen": true }),
        )
        .await;
    assert_eq!(patched["status"], "todo", "{patched}");
    let runs = ended_runs(&server, &cid, &aid, 4).await;
    assert_eq!(runs[3]["wakeReason"], "issue_reopened_via_comment");
    server.quiesce().await;
    let wakes = wakes_of(&server, &aid).await;
    let on_patch = wakes
        .iter()
        .filter(|w| w["payload"]["commentId"] == patched["comment"]["id"])
        .count();
    assert_eq!(on_patch, 1, "{wakes:?}");
}

#[tokio::test]
async fn a_comment_that_leaves_a_task_closed_wakes_nobody_and_says_why() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Closed").await["id"]).to_string();
    let builder = server.agent(&cid, "Builder", None).await;
    let bid = s(&builder["id"]).to_string();
    let reviewer = server.agent(&cid, "Reviewer", None).await;
    let rid = s(&reviewer["id"]).to_string();
    // Each agent's own run (an agent writes under one), on no task.
    let mut run_of = std::collections::HashMap::new();
    for agent in [&bid, &rid] {
        let run = server.wake(agent, json!({ "reason": "warm_up" })).await;
        run_of.insert(agent.clone(), s(&run["id"]).to_string());
    }
    let task = server
        .issue(
            &cid,
            json!({ "title": "Shipped", "status": "done", "assigneeAgentId": bid }),
        )
        .await;
    let tid = s(&task["id"]).to_string();
    let ident = s(&task["identifier"]).to_string();
    let comments = format!("/api/issues/{tid}/comments");

    // A person's note that keeps it closed, mentioning another agent.
    let posted = server
        .ok_post(
            &comments,
            json!({ "body": "FYI @Reviewer, nothing to do", "reopen": false }),
        )
        .await;
    assert_eq!(posted["reopened"], false, "{posted}");
    let not_woken = posted["notWoken"].as_array().expect("notWoken").clone();
    let mut named: Vec<&str> = not_woken.iter().map(|n| s(&n["agentName"])).collect();
    named.sort();
    assert_eq!(named, ["Builder", "Reviewer"], "{posted}");
    for n in &not_woken {
        assert_eq!(n["reason"], "issue_closed");
        let message = s(&n["message"]);
        assert!(
            message.starts_with(&format!("{ident} is done, so ")),
            "{message}"
        );
        assert!(message.contains("Reopen the task"), "{message}");
    }

    // Another agent's comment is talk: the task stays closed, nobody runs.
    let token = server.key(&rid).await;
    let run = run_of[&rid].clone();
    let (status, posted) = server
        .as_agent(
            &token,
            Some(&run),
            "POST",
            &comments,
            Some(json!({ "body": "@Builder looks good" })),
        )
        .await;
    assert_eq!(status, 201, "{posted}");
    assert_eq!(posted["reopened"], false);
    assert_eq!(posted["notWoken"][0]["agentId"], bid.as_str(), "{posted}");
    // ... and it may not reopen the assignee's work (upstream's 403).
    let (status, refused) = server
        .as_agent(
            &token,
            Some(&run),
            "POST",
            &comments,
            Some(json!({ "body": "Reopening", "reopen": true })),
        )
        .await;
    assert_eq!(status, 403, "{refused}");
    assert!(
        s(&refused["error"]).contains("assignee or the board"),
        "{refused}"
    );
    let (status, refused) = server
        .as_agent(
            &token,
            Some(&run),
            "PATCH",
            &format!("/api/issues/{tid}"),
            Some(json!({ "status": "todo" })),
        )
        .await;
    assert_eq!(status, 403, "{refused}");

    // The assignee may reopen its done work, not its cancelled work.
    let cancelled = server
        .issue(
            &cid,
            json!({ "title": "Dropped", "status": "cancelled", "assigneeAgentId": bid }),
        )
        .await;
    let builder_token = server.key(&bid).await;
    let builder_run = run_of[&bid].clone();
    let own = server
        .issue(
            &cid,
            json!({ "title": "Own", "status": "done", "assigneeAgentId": bid }),
        )
        .await;
    let (status, reopened) = server
        .as_agent(
            &builder_token,
            Some(&builder_run),
            "PATCH",
            &format!("/api/issues/{}", s(&own["id"])),
            Some(json!({ "status": "todo" })),
        )
        .await;
    assert_eq!(status, 200, "{reopened}");
    assert_eq!(reopened["status"], "todo");
    let (status, refused) = server
        .as_agent(
            &builder_token,
            Some(&builder_run),
            "PATCH",
            &format!("/api/issues/{}", s(&cancelled["id"])),
            Some(json!({ "status": "todo" })),
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        s(&refused["error"]).contains("restored by the board"),
        "{refused}"
    );

    // Closed work without an agent: a mention alone reopens nothing.
    let mine = server
        .issue(
            &cid,
            json!({ "title": "Mine", "status": "done", "assigneeUserId": "local-board" }),
        )
        .await;
    let posted = server
        .ok_post(
            &format!("/api/issues/{}/comments", s(&mine["id"])),
            json!({ "body": "@Reviewer can you take a look?" }),
        )
        .await;
    assert_eq!(posted["reopened"], false);
    assert_eq!(posted["notWoken"][0]["agentName"], "Reviewer", "{posted}");
    // A PATCH's comment says the same.
    let patched = server
        .ok_patch(
            &format!("/api/issues/{tid}"),
            json!({ "comment": "Noted @Reviewer", "reopen": false }),
        )
        .await;
    assert_eq!(patched["status"], "done");
    assert_eq!(
        patched["notWoken"].as_array().map(Vec::len),
        Some(2),
        "{patched}"
    );

    for id in [
        &tid,
        &s(&cancelled["id"]).to_string(),
        &s(&mine["id"]).to_string(),
    ] {
        let issue = server.ok_get(&format!("/api/issues/{id}")).await;
        assert!(
            issue["status"] == "done" || issue["status"] == "cancelled",
            "{issue}"
        );
    }
    server.quiesce().await;
    for agent in [&bid, &rid] {
        let on_tasks = server
            .runs_of(&cid, agent)
            .await
            .into_iter()
            .filter(|r| !r["issueId"].is_null())
            .count();
        assert_eq!(on_tasks, 0, "no run on a task for {agent}");
        // An agent that reopens its own task is not woken for it.
        let woken: Vec<Value> = wakes_of(&server, agent)
            .await
            .into_iter()
            .filter(|w| !w["issueId"].is_null() && w["status"] != "skipped")
            .collect();
        assert!(woken.is_empty(), "no wake on a task for {agent}: {woken:?}");
    }
    // The feed keeps why: each comment row names whom it did not wake.
    let list = server
        .ok_get(&format!("/api/companies/{cid}/activity?limit=1000"))
        .await;
    let noted = list
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["action"] == "issue.comment_added" && a["details"]["notWoken"].is_array())
        .count();
    assert_eq!(noted, 4, "{list}");
}

#[tokio::test]
async fn closed_tasks_move_only_back_to_work() {
    let server = TestServer::start().await;
    let cid = s(&server.company("Moves").await["id"]).to_string();
    for (from, to, allowed) in [
        ("done", "in_review", false),
        ("done", "blocked", false),
        ("done", "cancelled", false),
        ("cancelled", "done", false),
        ("cancelled", "in_review", false),
        ("done", "backlog", true),
        ("done", "in_progress", true),
        ("cancelled", "todo", true),
    ] {
        let issue = server
            .issue(&cid, json!({ "title": format!("{from} to {to}"), "status": from, "assigneeUserId": "local-board" }))
            .await;
        let path = format!("/api/issues/{}", s(&issue["id"]));
        let (status, body) = server.patch(&path, json!({ "status": to })).await;
        if allowed {
            assert_eq!(status, 200, "{from} -> {to}: {body}");
            assert_eq!(body["status"], to);
            assert!(
                body["completedAt"].is_null() && body["cancelledAt"].is_null(),
                "{body}"
            );
        } else {
            assert_eq!(status, 422, "{from} -> {to}: {body}");
            let error = s(&body["error"]);
            assert!(
                error.starts_with(&format!("Cannot transition issue from {from} to {to}")),
                "{error}"
            );
            assert!(
                error.contains("reopened first (to backlog, todo, in_progress)"),
                "{error}"
            );
            assert_eq!(server.ok_get(&path).await["status"], from);
        }
    }
    // Back in the backlog, an agent's task waits: nobody is woken.
    let agent = server.agent(&cid, "Builder", None).await;
    let aid = s(&agent["id"]).to_string();
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Later", "status": "done", "assigneeAgentId": aid }),
        )
        .await;
    let moved = server
        .ok_patch(
            &format!("/api/issues/{}", s(&issue["id"])),
            json!({ "status": "backlog" }),
        )
        .await;
    assert_eq!(moved["status"], "backlog");
    server.quiesce().await;
    assert_eq!(wakes_of(&server, &aid).await.len(), 0);
}
