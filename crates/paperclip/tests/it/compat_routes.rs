//! Small upstream routes its CLI and skill call, served with upstream's
//! shapes: child tasks, the company's agent configurations, agent
//! permissions, finer cost views, sidebar badges, the CLI's identity, and
//! document revision restore. Each with the refusals that guard it.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

#[tokio::test]
async fn children_permissions_and_configurations_follow_upstream() {
    let s = TestServer::start().await;
    let cid = s.company("Routes Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let project = s
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Site" }),
        )
        .await;
    // Upstream's list of goals: one is kept, two are refused, never dropped.
    let goal = s
        .ok_post(
            &format!("/api/companies/{cid}/goals"),
            json!({ "title": "Grow" }),
        )
        .await;
    let with_goal = s
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Growth", "goalIds": [goal["id"]] }),
        )
        .await;
    assert_eq!(with_goal["goalId"], goal["id"]);
    let (status, body) = s
        .post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Two", "goalIds": [goal["id"], goal["id"]] }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let parent = s
        .issue(
            &cid,
            json!({ "title": "Parent", "projectId": project["id"], "status": "todo" }),
        )
        .await;
    let ident = parent["identifier"].as_str().unwrap();

    let (status, child) = s
        .post(
            &format!("/api/issues/{ident}/children"),
            json!({ "title": "Step one" }),
        )
        .await;
    assert_eq!(status, 201, "{child}");
    assert_eq!(child["parentId"], parent["id"]);
    assert_eq!(
        child["projectId"], project["id"],
        "the child inherits the project"
    );
    let (status, body) = s
        .post(
            "/api/issues/NOPE-999/children",
            json!({ "title": "Orphan" }),
        )
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = s
        .post(
            &format!("/api/issues/{ident}/children"),
            json!({ "title": 7 }),
        )
        .await;
    assert_eq!(status, 400, "{body}");

    // Permissions: board only, both keys typed, kept with the others.
    let worker = s
        .script_agent(
            &cid,
            "Worker",
            "sleep 30\n",
            json!({ "env": { "MY_API_KEY": "sk-never-shown-1234567890" } }),
        )
        .await;
    let wid = worker["id"].as_str().unwrap().to_string();
    let peer = s.agent(&cid, "Peer", None).await;
    let path = format!("/api/agents/{wid}/permissions");
    // The agent's own read carries its access (upstream's words for the rule
    // enforced below); the company's list does not.
    let read = s.ok_get(&format!("/api/agents/{wid}")).await;
    let access = &read["access"];
    assert_eq!(access["canAssignTasks"], true, "{read}");
    assert_eq!(access["membership"]["principalType"], "agent", "{read}");
    assert_eq!(access["membership"]["principalId"], wid.as_str(), "{read}");
    assert_eq!(access["membership"]["status"], "active", "{read}");
    assert_eq!(
        access["grants"][0]["permissionKey"], "tasks:assign",
        "{read}"
    );
    let listed = s.ok_get(&format!("/api/companies/{cid}/agents")).await;
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a.get("access").is_none()),
        "{listed}"
    );
    let (status, body) = s
        .request(
            "PATCH",
            &path,
            Some(json!({ "canCreateAgents": "yes", "canAssignTasks": true })),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, updated) = s
        .request(
            "PATCH",
            &path,
            Some(json!({ "canCreateAgents": true, "canAssignTasks": false })),
        )
        .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["permissions"]["canAssignTasks"], false);
    assert_eq!(updated["permissions"]["canCreateAgents"], true);
    assert_eq!(updated["access"]["canAssignTasks"], false, "{updated}");
    assert_eq!(updated["access"]["taskAssignSource"], "none", "{updated}");
    assert_eq!(updated["access"]["grants"], json!([]), "{updated}");
    let key = s.key(&wid).await;
    let (status, me) = s.as_agent(&key, None, "GET", "/api/agents/me", None).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(
        me["access"], updated["access"],
        "the agent sees what the board set"
    );
    let (status, body) = s
        .as_agent(
            &key,
            None,
            "PATCH",
            &path,
            Some(json!({ "canCreateAgents": true, "canAssignTasks": true })),
        )
        .await;
    assert_eq!(status, 403, "an agent does not grant itself: {body}");

    // canAssignTasks: false stops the agent handing work to another agent,
    // not taking it itself.
    let (_, run) = s
        .post(&format!("/api/agents/{wid}/wakeup"), json!({}))
        .await;
    let run = run["id"].as_str().unwrap().to_string();
    s.wait_for(&format!("/api/heartbeat-runs/{run}"), 10, |r| {
        r["status"] == "running"
    })
    .await;
    let (status, body) = s
        .as_agent(
            &key,
            Some(&run),
            "POST",
            &format!("/api/companies/{cid}/issues"),
            Some(json!({ "title": "For the peer", "assigneeAgentId": peer["id"] })),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"], "Agent lacks the canAssignTasks permission");
    let (status, body) = s
        .as_agent(
            &key,
            Some(&run),
            "PATCH",
            &format!("/api/issues/{ident}"),
            Some(json!({ "assigneeAgentId": peer["id"] })),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        s.ok_get(&format!("/api/issues/{ident}")).await["assigneeAgentId"],
        Value::Null
    );
    let (status, body) = s
        .as_agent(
            &key,
            Some(&run),
            "POST",
            &format!("/api/companies/{cid}/issues"),
            Some(json!({ "title": "For me", "assigneeAgentId": wid })),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    // Granted again: the read says so and the handing over is allowed.
    let (status, updated) = s
        .request(
            "PATCH",
            &path,
            Some(json!({ "canCreateAgents": true, "canAssignTasks": true })),
        )
        .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(
        updated["access"]["taskAssignSource"], "agent_creator",
        "{updated}"
    );
    let (status, body) = s
        .as_agent(
            &key,
            Some(&run),
            "PATCH",
            &format!("/api/issues/{ident}"),
            Some(json!({ "assigneeAgentId": peer["id"] })),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // The company's configurations: every agent, redacted.
    let configs = s
        .ok_get(&format!("/api/companies/{cid}/agent-configurations"))
        .await;
    let list = configs.as_array().unwrap();
    assert_eq!(list.len(), 2, "{configs}");
    assert!(!configs.to_string().contains("sk-never-shown"), "{configs}");
    let mine = list.iter().find(|c| c["id"] == wid.as_str()).unwrap();
    assert_eq!(mine["adapterConfig"]["env"]["MY_API_KEY"], "[REDACTED]");
    for key in [
        "name",
        "role",
        "status",
        "reportsTo",
        "adapterType",
        "runtimeConfig",
        "permissions",
        "updatedAt",
    ] {
        assert!(mine.get(key).is_some(), "{key} in {mine}");
    }
    let other = s.company("Elsewhere").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, _) = s
        .as_agent(
            &key,
            None,
            "GET",
            &format!("/api/companies/{other}/agent-configurations"),
            None,
        )
        .await;
    assert_eq!(status, 403, "another company's configurations stay closed");
}

#[tokio::test]
async fn cost_views_badges_identity_and_restore() {
    let s = TestServer::start().await;
    let cid = s.company("Views Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = s.agent(&cid, "Spender", None).await;
    let aid = agent["id"].as_str().unwrap();
    let parent = s.issue(&cid, json!({ "title": "Epic" })).await;
    let pid = parent["id"].as_str().unwrap();
    let child = s
        .issue(&cid, json!({ "title": "Part", "parentId": pid }))
        .await;
    let now = chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    for (issue, model, cents) in [
        (pid, "small", 3),
        (child["id"].as_str().unwrap(), "big", 40),
        (pid, "big", 7),
    ] {
        s.ok_post(
            &format!("/api/companies/{cid}/cost-events"),
            json!({ "agentId": aid, "issueId": issue, "provider": "anthropic", "model": model,
                    "inputTokens": 100, "outputTokens": 10, "costCents": cents, "occurredAt": now }),
        )
        .await;
    }
    let rows = s
        .ok_get(&format!("/api/companies/{cid}/costs/by-provider"))
        .await;
    assert_eq!(rows[0]["model"], "big", "{rows}");
    assert_eq!(rows[0]["costCents"], 47);
    assert_eq!(rows[1]["costCents"], 3);
    let rows = s
        .ok_get(&format!("/api/companies/{cid}/costs/by-agent-model"))
        .await;
    assert_eq!(rows.as_array().unwrap().len(), 2, "{rows}");
    assert_eq!(rows[0]["agentName"], "Spender");
    let rows = s
        .ok_get(&format!("/api/companies/{cid}/costs/window-spend"))
        .await;
    let windows: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["window"].as_str().unwrap())
        .collect();
    assert_eq!(windows, ["5h", "24h", "7d"], "{rows}");
    assert!(rows
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["costCents"] == 50));
    let tree = s
        .ok_get(&format!(
            "/api/issues/{}/cost-summary",
            parent["identifier"].as_str().unwrap()
        ))
        .await;
    assert_eq!(tree["costCents"], 50, "{tree}");
    assert_eq!(tree["issueCount"], 2);
    assert_eq!(tree["inputTokens"], 300);
    let below = s
        .ok_get(&format!("/api/issues/{pid}/cost-summary?excludeRoot=true"))
        .await;
    assert_eq!(below["costCents"], 40, "{below}");
    assert_eq!(below["issueCount"], 1);
    let (status, _) = s
        .get(&format!("/api/issues/{pid}/cost-summary?excludeRoot=maybe"))
        .await;
    assert_eq!(status, 400);

    // Badges count what awaits the board, less what it dismissed.
    let approval = s
        .ok_post(
            &format!("/api/companies/{cid}/approvals"),
            json!({ "type": "approve_ceo_strategy", "payload": { "plan": "x" } }),
        )
        .await;
    let badges = s
        .ok_get(&format!("/api/companies/{cid}/sidebar-badges"))
        .await;
    assert_eq!(
        badges,
        json!({ "inbox": 1, "approvals": 1, "failedRuns": 0 })
    );
    s.ok_post(
        &format!("/api/companies/{cid}/inbox-dismissals"),
        json!({ "itemKey": format!("approval:{}", approval["id"].as_str().unwrap()) }),
    )
    .await;
    let badges = s
        .ok_get(&format!("/api/companies/{cid}/sidebar-badges"))
        .await;
    assert_eq!(badges["approvals"], 0, "{badges}");

    // Who the CLI is: the local board; an agent key is not a board login.
    let me = s.ok_get("/api/cli-auth/me").await;
    assert_eq!(me["userId"], "local-board");
    assert_eq!(me["source"], "local_implicit");
    assert!(me["companyIds"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c == cid.as_str()));
    let key = s.key(aid).await;
    let (status, body) = s
        .as_agent(&key, None, "GET", "/api/cli-auth/me", None)
        .await;
    assert_eq!(status, 401, "{body}");

    // Restore: the old body comes back as a new revision; history is kept.
    let doc = format!("/api/issues/{pid}/documents/plan");
    s.put(
        &doc,
        json!({ "title": "Plan", "format": "markdown", "body": "one" }),
    )
    .await;
    s.put(
        &doc,
        json!({ "title": "Plan v2", "format": "markdown", "body": "two" }),
    )
    .await;
    let revisions = s.ok_get(&format!("{doc}/revisions")).await;
    let first = revisions[1]["id"].as_str().unwrap();
    let (status, restored) = s
        .post(&format!("{doc}/revisions/{first}/restore"), json!({}))
        .await;
    assert_eq!(status, 200, "{restored}");
    assert_eq!(restored["body"], "one");
    assert_eq!(restored["title"], "Plan");
    assert_eq!(restored["latestRevisionNumber"], 3);
    let (status, _) = s
        .post(
            &format!("{doc}/revisions/not-a-revision/restore"),
            json!({}),
        )
        .await;
    assert_eq!(status, 404);
    assert!(s
        .actions(&cid)
        .await
        .iter()
        .any(|a| a == "issue.document_updated"));
}

#[tokio::test]
async fn a_locked_document_refuses_every_write_until_unlocked() {
    let s = TestServer::start().await;
    let cid = s.company("Locks Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let issue = s.issue(&cid, json!({ "title": "Signed-off plan" })).await;
    let iid = issue["id"].as_str().unwrap();
    let doc = format!("/api/issues/{iid}/documents/plan");
    s.put(
        &doc,
        json!({ "title": "Plan", "format": "markdown", "body": "v1" }),
    )
    .await;
    let first = s.ok_get(&format!("{doc}/revisions")).await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();

    let (status, locked) = s.post(&format!("{doc}/lock"), json!({})).await;
    assert_eq!(status, 200, "{locked}");
    assert!(locked["lockedAt"].is_string(), "{locked}");
    assert_eq!(locked["lockedByUserId"], "local-board");
    let (_, again) = s.post(&format!("{doc}/lock"), json!({})).await;
    assert_eq!(
        again["lockedAt"], locked["lockedAt"],
        "locking twice changes nothing"
    );

    let (status, body) = s
        .put(
            &doc,
            json!({ "title": "Plan", "format": "markdown", "body": "v2" }),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"], "Document is locked");
    assert_eq!(body["details"]["key"], "plan");
    let (status, _) = s
        .post(&format!("{doc}/revisions/{first}/restore"), json!({}))
        .await;
    assert_eq!(status, 409, "a restore is a write");
    let (status, _) = s.delete(&doc).await;
    assert_eq!(status, 409, "and so is a delete");
    assert_eq!(s.ok_get(&doc).await["body"], "v1", "nothing changed");

    let agent = s.agent(&cid, "Writer", None).await;
    let key = s.key(agent["id"].as_str().unwrap()).await;
    let (status, _) = s
        .as_agent(
            &key,
            None,
            "POST",
            &format!("{doc}/unlock"),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 403, "only the board unlocks");
    let (status, _) = s
        .post(&format!("/api/issues/{iid}/documents/nope/lock"), json!({}))
        .await;
    assert_eq!(status, 404);

    let (status, unlocked) = s.post(&format!("{doc}/unlock"), json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(unlocked["lockedAt"], Value::Null);
    let (status, _) = s
        .put(
            &doc,
            json!({ "title": "Plan", "format": "markdown", "body": "v2" }),
        )
        .await;
    assert_eq!(status, 200, "writable again");
    // The task embeds its plan (with body) and every document (without).
    s.put(
        &format!("/api/issues/{iid}/documents/notes"),
        json!({ "title": "Notes", "format": "markdown", "body": "long notes" }),
    )
    .await;
    let task = s.ok_get(&format!("/api/issues/{iid}")).await;
    assert_eq!(task["planDocument"]["body"], "v2", "{task}");
    let summaries = task["documentSummaries"].as_array().unwrap();
    let keys: Vec<&str> = summaries
        .iter()
        .map(|d| d["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["notes", "plan"]);
    assert!(summaries.iter().all(|d| d.get("body").is_none()), "{task}");
    let bare = s.issue(&cid, json!({ "title": "No documents" })).await;
    let bare = s
        .ok_get(&format!("/api/issues/{}", bare["id"].as_str().unwrap()))
        .await;
    assert_eq!(bare["planDocument"], Value::Null);
    assert_eq!(bare["documentSummaries"], json!([]));

    let actions = s.actions(&cid).await;
    assert_eq!(
        actions
            .iter()
            .filter(|a| *a == "issue.document_locked")
            .count(),
        1
    );
    assert_eq!(
        actions
            .iter()
            .filter(|a| *a == "issue.document_unlocked")
            .count(),
        1
    );
}

/// A task's runs include the ones that acted on it while woken for another
/// task (upstream finds them through the activity log, as we now do).
#[tokio::test]
async fn a_tasks_runs_include_runs_that_acted_on_it_from_elsewhere() {
    let s = TestServer::start().await;
    let cid = s.company("Reach Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let other = s
        .issue(&cid, json!({ "title": "Mentioned elsewhere" }))
        .await;
    let other_id = other["id"].as_str().unwrap();
    let script = format!(
        "curl -sS -f -X POST -H \"Authorization: Bearer $PAPERCLIP_API_KEY\" \
         -H \"X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID\" -H 'content-type: application/json' \
         \"$PAPERCLIP_API_URL/api/issues/{other_id}/comments\" -d '{{\"body\":\"Related: see my task\"}}'\n"
    );
    let agent = s.script_agent(&cid, "Linker", &script, json!({})).await;
    let aid = agent["id"].as_str().unwrap();
    let own = s
        .issue(
            &cid,
            json!({ "title": "My own task", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let runs = s.only_run_succeeded(&cid, aid).await;
    let run_id = runs[0]["id"].as_str().unwrap();
    assert_eq!(runs[0]["issueId"], own["id"], "woken for its own task");
    for task in [own["id"].as_str().unwrap(), other_id] {
        let listed = s.ok_get(&format!("/api/issues/{task}/runs")).await;
        assert!(
            listed
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["runId"] == run_id),
            "{task}: {listed}"
        );
    }
    let untouched = s.issue(&cid, json!({ "title": "Nobody came" })).await;
    let listed = s
        .ok_get(&format!(
            "/api/issues/{}/runs",
            untouched["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(listed, json!([]));
}
