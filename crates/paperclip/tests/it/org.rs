//! Agents and the org chart over HTTP.

use crate::common;

use common::TestServer;
use serde_json::json;

#[tokio::test]
async fn reporting_lines_refuse_cycles_and_build_the_tree() {
    let server = TestServer::start().await;
    let cid = server.company("Org Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ceo = server.agent(&cid, "CEO", None).await;
    let cto = server.agent(&cid, "CTO", ceo["id"].as_str()).await;
    let eng = server.agent(&cid, "Engineer", cto["id"].as_str()).await;
    assert_eq!(ceo["urlKey"], "ceo");
    assert_eq!(ceo["status"], "idle");

    let (status, body) = server
        .patch(
            &format!("/api/agents/{}", ceo["id"].as_str().unwrap()),
            json!({ "reportsTo": eng["id"] }),
        )
        .await;
    assert_eq!(status, 422);
    assert_eq!(body["error"], "Reporting relationship would create cycle");
    let (status, _) = server
        .patch(
            &format!("/api/agents/{}", ceo["id"].as_str().unwrap()),
            json!({ "reportsTo": ceo["id"] }),
        )
        .await;
    assert_eq!(status, 422, "reporting to yourself is a cycle");

    let tree = server.ok_get(&format!("/api/companies/{cid}/org")).await;
    assert_eq!(tree.as_array().unwrap().len(), 1);
    assert_eq!(tree[0]["name"], "CEO");
    assert_eq!(tree[0]["reports"][0]["name"], "CTO");
    assert_eq!(tree[0]["reports"][0]["reports"][0]["name"], "Engineer");
    assert_eq!(tree[0]["reports"][0]["reports"][0]["reports"], json!([]));
    // An agent's page names its manager with a link, found by url key or id.
    let company = server.ok_get(&format!("/api/companies/{cid}")).await;
    let prefix = company["issuePrefix"].as_str().unwrap();
    for key in ["engineer", eng["id"].as_str().unwrap()] {
        let page = server.page(&format!("/{prefix}/agents/{key}")).await;
        assert!(
            page.contains(&format!(
                "reports to <a href=\"/{prefix}/agents/cto\">CTO</a>"
            )),
            "{key}: {page}"
        );
    }
    let page = server.page(&format!("/{prefix}/agents/ceo")).await;
    assert!(!page.contains("reports to"), "the CEO reports to nobody");

    let moved = server
        .ok_patch(
            &format!("/api/agents/{}", eng["id"].as_str().unwrap()),
            json!({ "reportsTo": null }),
        )
        .await;
    assert!(moved["reportsTo"].is_null());
    let tree = server.ok_get(&format!("/api/companies/{cid}/org")).await;
    assert_eq!(
        tree.as_array().unwrap().len(),
        2,
        "a cleared manager makes a second root"
    );
}

#[tokio::test]
async fn url_keys_are_unique_within_a_company() {
    let server = TestServer::start().await;
    let a = server.company("Keys A").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let b = server.company("Keys B").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let first = server.agent(&a, "Chief of Staff", None).await;
    let second = server.agent(&a, "Chief of Staff", None).await;
    let elsewhere = server.agent(&b, "Chief of Staff", None).await;
    assert_eq!(first["urlKey"], "chief-of-staff");
    assert_eq!(second["urlKey"], "chief-of-staff-2");
    assert_eq!(elsewhere["urlKey"], "chief-of-staff");
    let renamed = server
        .ok_patch(
            &format!("/api/agents/{}", second["id"].as_str().unwrap()),
            json!({ "name": "Builder" }),
        )
        .await;
    assert_eq!(renamed["urlKey"], "builder");
}

#[tokio::test]
async fn pause_resume_and_terminate_follow_the_state_machine() {
    let server = TestServer::start().await;
    let cid = server.company("Lever Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server.agent(&cid, "Worker", None).await;
    let path = format!("/api/agents/{}", agent["id"].as_str().unwrap());
    let paused = server.ok_post(&format!("{path}/pause"), json!({})).await;
    assert_eq!(paused["status"], "paused");
    assert_eq!(paused["pauseReason"], "manual");
    assert!(paused["pausedAt"].is_string());
    let resumed = server.ok_post(&format!("{path}/resume"), json!({})).await;
    assert_eq!(resumed["status"], "idle");
    assert!(resumed["pauseReason"].is_null());
    let (status, _) = server.post(&format!("{path}/resume"), json!({})).await;
    assert_eq!(status, 409, "resuming an agent that is not paused");
    let (status, body) = server.patch(&path, json!({ "status": "error" })).await;
    assert_eq!(status, 422, "idle -> error is not a transition: {body}");
    let terminated = server
        .ok_post(&format!("{path}/terminate"), json!({}))
        .await;
    assert_eq!(terminated["status"], "terminated");
    let (status, body) = server.post(&format!("{path}/resume"), json!({})).await;
    assert_eq!(status, 409);
    assert_eq!(body["error"], "Cannot resume terminated agent");
    let (status, _) = server.post(&format!("{path}/pause"), json!({})).await;
    assert_eq!(status, 409);
    let (status, _) = server.patch(&path, json!({ "status": "idle" })).await;
    assert_eq!(status, 422, "terminate is irreversible through PATCH too");
    let issue = server.issue(&cid, json!({ "title": "x" })).await;
    let (status, _) = server
        .patch(
            &format!("/api/issues/{}", issue["id"].as_str().unwrap()),
            json!({ "assigneeAgentId": agent["id"] }),
        )
        .await;
    assert_eq!(status, 422, "no new work for a terminated agent");
    let actions = server.actions(&cid).await;
    for expected in ["agent.paused", "agent.resumed", "agent.terminated"] {
        assert!(
            actions.iter().any(|a| a == expected),
            "{expected} in {actions:?}"
        );
    }
}

#[tokio::test]
async fn agent_updates_merge_config_and_deletes_detach_reports() {
    let server = TestServer::start().await;
    let cid = server.company("Config Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let boss = server.agent(&cid, "Boss", None).await;
    let worker = server.agent(&cid, "Worker", boss["id"].as_str()).await;
    let path = format!("/api/agents/{}", worker["id"].as_str().unwrap());
    let updated = server
        .ok_patch(&path, json!({ "title": "Staff engineer", "adapterConfig": { "args": ["-v"] }, "runtimeConfig": { "heartbeat": { "enabled": false } } }))
        .await;
    assert_eq!(updated["title"], "Staff engineer");
    assert_eq!(
        updated["adapterConfig"],
        json!({ "command": "true", "args": ["-v"] })
    );
    assert_eq!(updated["runtimeConfig"]["heartbeat"]["enabled"], false);
    let replaced = server
        .ok_patch(
            &path,
            json!({ "adapterConfig": { "command": "echo" }, "replaceAdapterConfig": true }),
        )
        .await;
    assert_eq!(replaced["adapterConfig"], json!({ "command": "echo" }));
    let (status, body) = server.patch(&path, json!({ "role": "wizard" })).await;
    assert_eq!(status, 400);
    assert_eq!(body["details"][0]["path"], json!(["role"]));
    let (status, _) = server
        .delete(&format!("/api/agents/{}", boss["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 200);
    let orphan = server.ok_get(&path).await;
    assert!(orphan["reportsTo"].is_null());
    let (status, _) = server
        .get(&format!("/api/agents/{}", boss["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn goals_and_projects_link_within_the_company() {
    let server = TestServer::start().await;
    let cid = server.company("Goal Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let lead = server.agent(&cid, "Lead", None).await;
    let top = server
        .ok_post(
            &format!("/api/companies/{cid}/goals"),
            json!({ "title": "Reach 10k users", "level": "company" }),
        )
        .await;
    assert_eq!(top["status"], "planned");
    let team = server
        .ok_post(&format!("/api/companies/{cid}/goals"), json!({ "title": "Launch iOS", "level": "team", "parentId": top["id"], "ownerAgentId": lead["id"] }))
        .await;
    assert_eq!(team["parentId"], top["id"]);
    let (status, _) = server
        .patch(
            &format!("/api/goals/{}", top["id"].as_str().unwrap()),
            json!({ "parentId": team["id"] }),
        )
        .await;
    assert_eq!(status, 422, "goal cycles are refused");
    let active = server
        .ok_patch(
            &format!("/api/goals/{}", top["id"].as_str().unwrap()),
            json!({ "status": "active" }),
        )
        .await;
    assert_eq!(active["status"], "active");
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Mobile app", "goalId": team["id"], "leadAgentId": lead["id"], "targetDate": "2027-03-01" }),
        )
        .await;
    assert_eq!(project["goalIds"], json!([team["id"]]));
    assert_eq!(project["urlKey"], "mobile-app");
    let (status, body) = server
        .patch(
            &format!("/api/projects/{}", project["id"].as_str().unwrap()),
            json!({ "targetDate": "soon" }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let done = server
        .ok_patch(
            &format!("/api/projects/{}", project["id"].as_str().unwrap()),
            json!({ "status": "completed" }),
        )
        .await;
    assert_eq!(done["status"], "completed");
    let goals = server.ok_get(&format!("/api/companies/{cid}/goals")).await;
    assert_eq!(goals.as_array().unwrap().len(), 2);
    let projects = server
        .ok_get(&format!("/api/companies/{cid}/projects"))
        .await;
    assert_eq!(projects.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn companies_get_unique_prefixes_and_can_be_archived() {
    let server = TestServer::start().await;
    let first = server.company("Scenario Labs").await;
    let second = server.company("Scenario Labs").await;
    assert_eq!(first["issuePrefix"], "SCE");
    assert_eq!(second["issuePrefix"], "SCEA");
    let issue = server
        .issue(second["id"].as_str().unwrap(), json!({ "title": "t" }))
        .await;
    assert_eq!(issue["identifier"], "SCEA-1");
    let (status, body) = server.post("/api/companies", json!({ "name": "" })).await;
    assert_eq!(status, 400, "{body}");
    let updated = server
        .ok_patch(
            &format!("/api/companies/{}", first["id"].as_str().unwrap()),
            json!({ "requireBoardApprovalForNewAgents": true, "budgetMonthlyCents": 50000 }),
        )
        .await;
    assert_eq!(updated["requireBoardApprovalForNewAgents"], true);
    assert_eq!(updated["budgetMonthlyCents"], 50000);
    let (status, body) = server
        .patch(
            &format!("/api/companies/{}", first["id"].as_str().unwrap()),
            json!({ "budgetMonthlyCents": -5 }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let archived = server
        .ok_post(
            &format!("/api/companies/{}/archive", first["id"].as_str().unwrap()),
            json!({}),
        )
        .await;
    assert_eq!(archived["status"], "archived");
    let list = server.ok_get("/api/companies").await;
    assert_eq!(list.as_array().unwrap().len(), 2);
    let actions = server.actions(first["id"].as_str().unwrap()).await;
    assert_eq!(
        actions,
        ["company.created", "company.updated", "company.archived"]
    );
}

/// Every agent answer carries its reporting chain's health (upstream's
/// `orgChainHealth`); the agent's own read adds its chain of command.
#[tokio::test]
async fn agents_carry_their_chain_health_and_chain_of_command() {
    let s = TestServer::start().await;
    let cid = s.company("Chain Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ceo = s.agent(&cid, "Boss", None).await;
    let ceo_id = ceo["id"].as_str().unwrap().to_string();
    let cto = s.agent(&cid, "Lead", Some(&ceo_id)).await;
    let cto_id = cto["id"].as_str().unwrap().to_string();
    let eng = s.agent(&cid, "Dev", Some(&cto_id)).await;
    let eng_id = eng["id"].as_str().unwrap().to_string();
    assert_eq!(eng["orgChainHealth"]["status"], "healthy", "{eng}");

    let got = s.ok_get(&format!("/api/agents/{eng_id}")).await;
    let chain: Vec<(&str, &str, i64)> = got["orgChainHealth"]["fullChain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap(),
                e["relation"].as_str().unwrap(),
                e["depth"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        chain,
        [
            ("Dev", "self", 0),
            ("Lead", "ancestor", 1),
            ("Boss", "ancestor", 2)
        ]
    );
    let superiors: Vec<&str> = got["chainOfCommand"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(superiors, ["Lead", "Boss"]);

    // A paused manager: escalations would go nowhere, and the answer says so.
    let paused = s.lever(&cto_id, "pause").await;
    assert!(
        paused["orgChainHealth"]["escalationWarning"].is_null(),
        "a paused agent is not warned: {paused}"
    );
    let got = s.ok_get(&format!("/api/agents/{eng_id}")).await;
    assert_eq!(got["orgChainHealth"]["status"], "healthy");
    assert_eq!(got["orgChainHealth"]["pausedAncestors"][0]["name"], "Lead");
    assert!(got["orgChainHealth"]["escalationWarning"]
        .as_str()
        .unwrap()
        .contains("Lead"));
    s.lever(&cto_id, "resume").await;

    // A terminated manager breaks the chain below it, in the list as well.
    s.lever(&ceo_id, "terminate").await;
    let list = s.ok_get(&format!("/api/companies/{cid}/agents")).await;
    let dev = list
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == eng_id.as_str())
        .unwrap();
    let health = &dev["orgChainHealth"];
    assert_eq!(health["status"], "invalid_org_chain", "{health}");
    assert_eq!(health["reason"], "terminated_ancestor");
    assert_eq!(health["firstInvalidAncestor"]["name"], "Boss");
    assert!(health["repairGuidance"].as_str().unwrap().contains("Boss"));
    let me = s.ok_get(&format!("/api/agents/{ceo_id}")).await;
    assert_eq!(
        me["orgChainHealth"]["status"], "healthy",
        "the top of the chain has no manager to lose"
    );
    assert_eq!(me["chainOfCommand"], json!([]));
}
