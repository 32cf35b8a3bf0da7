//! The onboarding chief through the API (issue 41): on a company that asks
//! the board to approve new agents, the bundled example chief (no model)
//! asks for the goal, writes a plan and its approval card, and once the plan
//! is approved creates the goal and a project, asks to hire two agents
//! (held for approval) and suggests the first tasks, which the person's
//! acceptance creates; it names them by identifier. And the agent task-tree
//! depth rule: an agent's child of a grandchild is placed beside it with
//! `parentAdjusted`, while the board is never limited.

use crate::common;

use common::repos::str_of as s;
use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

async fn comments(server: &TestServer, chat: &str) -> Vec<Value> {
    let list = server
        .ok_get(&format!("/api/issues/{chat}/comments?order=asc"))
        .await;
    list.as_array().unwrap().clone()
}

/// Waits for the chief's `n`th answer in the chat and returns its body.
async fn answer(server: &TestServer, chat: &str, chief: &str, n: usize) -> String {
    common::until(30, "the chief's answer", async || {
        let mine: Vec<String> = comments(server, chat)
            .await
            .into_iter()
            .filter(|c| c["authorAgentId"] == chief)
            .map(|c| s(&c["body"]).to_string())
            .collect();
        mine.get(n - 1).cloned()
    })
    .await
}

async fn pending_card(server: &TestServer, chat: &str, kind: &str) -> Value {
    common::until(30, kind, async || {
        let cards = server
            .ok_get(&format!("/api/issues/{chat}/interactions"))
            .await;
        cards
            .as_array()?
            .iter()
            .find(|c| c["kind"] == kind && c["status"] == "pending")
            .cloned()
    })
    .await
}

/// An agent whose run (on the grandchild) asks for a child of it and for a
/// child of the child, writing both answers where the test reads them.
fn depth_script(out: &std::path::Path, child: &str) -> String {
    let out = out.display();
    format!(
        r#"set -e
H="Authorization: Bearer $PAPERCLIP_API_KEY"
R="X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID"
J="Content-Type: application/json"
curl -sS -X POST "$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID/children" -H "$H" -H "$R" -H "$J" -d '{{"title":"Too deep"}}' > "{out}/deep.json"
curl -sS -X POST "$PAPERCLIP_API_URL/api/companies/$PAPERCLIP_COMPANY_ID/issues" -H "$H" -H "$R" -H "$J" -d '{{"title":"Deep enough","parentId":"{child}"}}' > "{out}/fine.json"
curl -sS -X POST "$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID/interactions" -H "$H" -H "$R" -H "$J" -d '{{"kind":"suggest_tasks","continuationPolicy":"none","payload":{{"version":1,"tasks":[{{"clientKey":"a","title":"Suggested deep"}}]}}}}' > "{out}/card.json"
"#
    )
}

#[tokio::test]
async fn the_example_chief_turns_a_goal_into_a_plan_hires_and_tasks() {
    let server = TestServer::start().await;
    let company = server
        .ok_post(
            "/api/companies",
            json!({ "name": "Bakery", "requireBoardApprovalForNewAgents": true }),
        )
        .await;
    let cid = s(&company["id"]).to_string();

    // The depth rule. The board nests as deep as it likes.
    let root = server.issue(&cid, json!({ "title": "Root" })).await;
    let child = server
        .issue(&cid, json!({ "title": "Child", "parentId": root["id"] }))
        .await;
    let out = server.data_dir.join("depth");
    std::fs::create_dir_all(&out).unwrap();
    let worker = server
        .script_agent(
            &cid,
            "Planner",
            &depth_script(&out, s(&child["id"])),
            json!({}),
        )
        .await;
    let grand = server
        .issue(
            &cid,
            json!({ "title": "Grandchild", "parentId": child["id"],
                "assigneeAgentId": worker["id"], "status": "todo" }),
        )
        .await;
    let (status, by_board) = server
        .post(
            &format!("/api/issues/{}/children", s(&grand["id"])),
            json!({ "title": "Board goes deeper" }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{by_board}");
    assert_eq!(by_board["parentId"], grand["id"]);
    assert!(by_board.get("parentAdjusted").is_none(), "{by_board}");
    // The agent's child of the grandchild goes beside it, and says so.
    let read = |name: &str| -> Option<Value> {
        serde_json::from_str(&std::fs::read_to_string(out.join(name)).ok()?).ok()
    };
    let (deep, fine, card) = common::until(30, "the agent's creates", async || {
        Some((read("deep.json")?, read("fine.json")?, read("card.json")?))
    })
    .await;
    assert_eq!(deep["title"], "Too deep", "{deep}");
    assert_eq!(deep["parentId"], child["id"], "{deep}");
    assert_eq!(deep["parentAdjusted"], true, "{deep}");
    let adjustment = &deep["parentAdjustment"];
    assert_eq!(adjustment["requestedParentId"], grand["id"]);
    assert_eq!(adjustment["requestedParentIdentifier"], grand["identifier"]);
    assert_eq!(adjustment["parentIdentifier"], child["identifier"]);
    let notice = s(&adjustment["message"]);
    assert!(
        notice.contains(s(&grand["identifier"])) && !notice.contains(s(&grand["id"])),
        "{notice}"
    );
    // A grandchild an agent asks for directly is within the limit.
    assert_eq!(fine["parentId"], child["id"], "{fine}");
    assert!(fine.get("parentAdjusted").is_none(), "{fine}");
    // The agent's suggested child of the grandchild, accepted by the board,
    // goes beside it too.
    let suggested = server
        .ok_post(
            &format!(
                "/api/issues/{}/interactions/{}/accept",
                s(&grand["id"]),
                s(&card["id"])
            ),
            json!({}),
        )
        .await;
    let made = &suggested["result"]["createdTasks"][0];
    assert_eq!(made["parentIssueId"], child["id"], "{suggested}");
    assert_eq!(made["parentIdentifier"], child["identifier"], "{suggested}");
    assert_eq!(made["parentAdjusted"], true, "{suggested}");
    let log = server
        .ok_get(&format!("/api/companies/{cid}/activity?limit=1000"))
        .await;
    let moved: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["action"] == "issue.created" && a["details"]["parentAdjusted"] == true)
        .collect();
    assert_eq!(moved.len(), 2, "{log}");
    assert!(moved.iter().any(|a| a["entityId"] == deep["id"]), "{log}");
    assert!(
        moved
            .iter()
            .all(|a| a["details"]["requestedParentId"] == grand["id"]),
        "{log}"
    );

    // The chief: hired with its chat open; asking again finds both.
    let (status, started) = server
        .post(&format!("/api/companies/{cid}/chief"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{started}");
    let chief = s(&started["agent"]["id"]).to_string();
    let chat = s(&started["chat"]["id"]).to_string();
    assert_eq!(started["agent"]["title"], "Chief of Staff");
    assert_eq!(started["agent"]["role"], "general");
    assert_eq!(started["agent"]["status"], "idle", "{started}");
    assert_eq!(started["chat"]["conversationAgentId"], chief.as_str());
    let (status, again) = server
        .post(&format!("/api/companies/{cid}/chief"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(
        (&again["agent"]["id"], &again["chat"]["id"]),
        (&started["agent"]["id"], &started["chat"]["id"])
    );
    let (status, bad) = server
        .post(
            &format!("/api/companies/{cid}/chief"),
            json!({ "adapter": "x" }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");

    // A model chief: the adapter the person picked, told what to do.
    let other = server.company("Elsewhere").await;
    let (status, model) = server
        .post(
            &format!("/api/companies/{}/chief", s(&other["id"])),
            json!({ "adapterType": "claude_local", "adapterConfig": {} }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{model}");
    assert_eq!(model["agent"]["adapterType"], "claude_local");
    let told = s(&model["agent"]["adapterConfig"]["instructionsFilePath"]);
    let text = std::fs::read_to_string(told).unwrap();
    assert!(
        text.contains("suggest_tasks") && text.contains("agent-hires"),
        "{text}"
    );

    // No goal yet: it asks for one.
    let say = |body: &str, id: &str| json!({ "body": body, "clientRequestId": id });
    server
        .ok_post(
            &format!("/api/issues/{chat}/comments"),
            say("Hi there", "m1"),
        )
        .await;
    let asked = answer(&server, &chat, &chief, 1).await;
    assert!(asked.contains("What is the goal"), "{asked}");

    // The goal: a plan document and its approval card.
    let goal = r#"Open a bakery, with "fresh" bread, by spring"#;
    server
        .ok_post(&format!("/api/issues/{chat}/comments"), say(goal, "m2"))
        .await;
    let plan_card = pending_card(&server, &chat, "request_confirmation").await;
    let proposed = answer(&server, &chat, &chief, 2).await;
    assert!(proposed.contains(goal), "{proposed}");
    let plan = server
        .ok_get(&format!("/api/issues/{chat}/documents/plan"))
        .await;
    assert_eq!(plan["title"], format!("Plan: {goal}"));
    for part in [
        "**Goal:** ",
        "Kickoff",
        "Researcher",
        "Builder",
        "First tasks",
    ] {
        assert!(s(&plan["body"]).contains(part), "{part}: {plan}");
    }
    assert_eq!(plan_card["payload"]["target"]["key"], "plan");
    assert_eq!(
        plan_card["payload"]["target"]["revisionId"],
        plan["latestRevisionId"]
    );

    // Approved: goal, project, two hires held for approval, a task card.
    server
        .ok_post(
            &format!(
                "/api/issues/{chat}/interactions/{}/accept",
                s(&plan_card["id"])
            ),
            json!({}),
        )
        .await;
    let tasks_card = pending_card(&server, &chat, "suggest_tasks").await;
    let approved = answer(&server, &chat, &chief, 3).await;
    assert!(approved.contains("plan is approved"), "{approved}");
    let goals = server.ok_get(&format!("/api/companies/{cid}/goals")).await;
    let made_goal = goals
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["title"] == goal)
        .unwrap_or_else(|| panic!("{goals}"))
        .clone();
    let projects = server
        .ok_get(&format!("/api/companies/{cid}/projects"))
        .await;
    let project = projects
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Kickoff")
        .unwrap_or_else(|| panic!("{projects}"))
        .clone();
    let agents = server.ok_get(&format!("/api/companies/{cid}/agents")).await;
    for name in ["Researcher", "Builder"] {
        let hired = agents
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {agents}"));
        assert_eq!(hired["status"], "pending_approval", "{hired}");
        assert_eq!(hired["reportsTo"], chief.as_str(), "{hired}");
    }
    let approvals = server
        .ok_get(&format!("/api/companies/{cid}/approvals?status=pending"))
        .await;
    let hires = approvals
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["type"] == "hire_agent")
        .count();
    assert_eq!(hires, 2, "{approvals}");

    // Accepted: the tasks exist, top-level (a chat is never a parent), in
    // the goal and project, and the chief names them by identifier.
    let accepted = server
        .ok_post(
            &format!(
                "/api/issues/{chat}/interactions/{}/accept",
                s(&tasks_card["id"])
            ),
            json!({}),
        )
        .await;
    let created = accepted["result"]["createdTasks"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(created.len(), 3, "{accepted}");
    let named = answer(&server, &chat, &chief, 4).await;
    for task in &created {
        let issue = server
            .ok_get(&format!("/api/issues/{}", s(&task["identifier"])))
            .await;
        assert!(issue["parentId"].is_null(), "{issue}");
        assert_eq!(issue["goalId"], made_goal["id"]);
        assert_eq!(issue["projectId"], project["id"]);
        assert!(named.contains(s(&task["identifier"])), "{named}");
        assert!(!named.contains(s(&task["issueId"])), "{named}");
    }

    // A second goal: a new plan, and the agents already asked for are not
    // hired twice.
    server
        .ok_post(
            &format!("/api/issues/{chat}/comments"),
            say("Also sell cakes at the weekend market", "m3"),
        )
        .await;
    let second = pending_card(&server, &chat, "request_confirmation").await;
    server
        .ok_post(
            &format!(
                "/api/issues/{chat}/interactions/{}/accept",
                s(&second["id"])
            ),
            json!({}),
        )
        .await;
    pending_card(&server, &chat, "suggest_tasks").await;
    let agents = server.ok_get(&format!("/api/companies/{cid}/agents")).await;
    let researchers = agents
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| s(&a["name"]).starts_with("Researcher"))
        .count();
    assert_eq!(researchers, 1, "{agents}");

    let actions = server.actions(&cid).await;
    for action in [
        "issue.document_created",
        "issue.thread_interaction_accepted",
        "goal.created",
        "project.created",
        "approval.created",
    ] {
        assert!(actions.iter().any(|a| a == action), "{action}: {actions:?}");
    }
}
