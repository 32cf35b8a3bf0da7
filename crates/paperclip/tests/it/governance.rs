//! Approvals, hiring, the CEO strategy gate and config revisions, over HTTP.

mod auth_boundaries;

use crate::common;

use common::TestServer;
use serde_json::json;

const ECHO_ENV: &str =
    "env | grep '^PAPERCLIP_APPROVAL\\|^PAPERCLIP_LINKED\\|^PAPERCLIP_WAKE_REASON' | sort\n";

#[tokio::test]
async fn a_hire_request_becomes_an_agent_only_when_the_board_approves() {
    let server = TestServer::start().await;
    let cid = server.company("Hire Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ceo = server.script_agent(&cid, "CEO", ECHO_ENV, json!({})).await;
    let ceo_id = ceo["id"].as_str().unwrap();
    let token = server.key(ceo_id).await;
    let issue = server
        .issue(&cid, json!({ "title": "Staff the design team" }))
        .await;
    let iid = issue["id"].as_str().unwrap();

    // An agent asks for a hire (the upstream shape: the payload describes the agent).
    let (status, approval) = server
        .as_agent(&token, None, "POST", &format!("/api/companies/{cid}/approvals"), Some(json!({
            "type": "hire_agent", "issueIds": [iid],
            "payload": { "name": "Designer", "role": "designer", "adapterType": "process", "adapterConfig": { "command": "true" } }
        })))
        .await;
    assert_eq!(status, 201, "{approval}");
    assert_eq!(approval["status"], "pending");
    assert_eq!(approval["requestedByAgentId"], ceo_id);
    let aid = approval["id"].as_str().unwrap();
    let (status, body) = server
        .as_agent(
            &token,
            None,
            "POST",
            &format!("/api/approvals/{aid}/approve"),
            Some(json!({ "decisionNote": "self" })),
        )
        .await;
    assert_eq!(status, 403);
    assert_eq!(body["error"], "Board access required");
    let pending = server
        .ok_get(&format!("/api/companies/{cid}/approvals?status=pending"))
        .await;
    assert_eq!(pending.as_array().unwrap().len(), 1);
    let linked = server.ok_get(&format!("/api/approvals/{aid}/issues")).await;
    assert_eq!(linked[0]["id"], iid);
    let of_issue = server.ok_get(&format!("/api/issues/{iid}/approvals")).await;
    assert_eq!(of_issue[0]["id"], aid);
    server
        .ok_post(
            &format!("/api/approvals/{aid}/comments"),
            json!({ "body": "Which tools will they need?" }),
        )
        .await;
    assert_eq!(
        server
            .ok_get(&format!("/api/approvals/{aid}/comments"))
            .await
            .as_array()
            .unwrap()
            .len(),
        1
    );

    let approved = server
        .ok_post(
            &format!("/api/approvals/{aid}/approve"),
            json!({ "decisionNote": "Welcome aboard" }),
        )
        .await;
    assert_eq!(approved["status"], "approved");
    assert_eq!(approved["decidedByUserId"], "local-board");
    assert!(approved["decidedAt"].is_string());
    let new_agent = approved["payload"]["agentId"].as_str().unwrap();
    let agent = server.ok_get(&format!("/api/agents/{new_agent}")).await;
    assert_eq!(
        (agent["name"].as_str(), agent["status"].as_str()),
        (Some("Designer"), Some("idle"))
    );
    let (status, _) = server
        .post(&format!("/api/approvals/{aid}/reject"), json!({}))
        .await;
    assert_eq!(status, 409, "a decision is final");
    let log = server
        .ok_get(&format!(
            "/api/companies/{cid}/activity?action=approval.approved"
        ))
        .await;
    assert_eq!(log.as_array().unwrap().len(), 1);

    // The requester is woken with the outcome.
    let runs = server.only_run_succeeded(&cid, ceo_id).await;
    let out = runs[0]["stdoutExcerpt"].as_str().unwrap();
    assert!(
        out.contains(&format!("PAPERCLIP_APPROVAL_ID={aid}")),
        "{out}"
    );
    assert!(out.contains("PAPERCLIP_APPROVAL_STATUS=approved"));
    assert!(out.contains(&format!("PAPERCLIP_LINKED_ISSUE_IDS={iid}")));
}

#[tokio::test]
async fn revision_requests_resubmits_rejections_and_cancels_follow_the_state_machine() {
    let server = TestServer::start().await;
    let cid = server.company("Review Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let a = server
        .ok_post(
            &format!("/api/companies/{cid}/approvals"),
            json!({ "type": "request_board_approval", "payload": { "ask": "ship v1" } }),
        )
        .await;
    let id = a["id"].as_str().unwrap();
    let revised = server
        .ok_post(
            &format!("/api/approvals/{id}/request-revision"),
            json!({ "decisionNote": "add a rollback plan" }),
        )
        .await;
    assert_eq!(revised["status"], "revision_requested");
    let (status, _) = server
        .post(&format!("/api/approvals/{id}/approve"), json!({}))
        .await;
    assert_eq!(status, 409, "it must be resubmitted first");
    let again = server
        .ok_post(
            &format!("/api/approvals/{id}/resubmit"),
            json!({ "payload": { "rollback": "flag off" } }),
        )
        .await;
    assert_eq!(again["status"], "pending");
    assert_eq!(
        again["payload"],
        json!({ "ask": "ship v1", "rollback": "flag off" })
    );
    let rejected = server
        .ok_post(
            &format!("/api/approvals/{id}/reject"),
            json!({ "decisionNote": "not now" }),
        )
        .await;
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["decisionNote"], "not now");
    let b = server
        .ok_post(
            &format!("/api/companies/{cid}/approvals"),
            json!({ "type": "budget_override_required" }),
        )
        .await;
    let cancelled = server
        .ok_post(
            &format!("/api/approvals/{}/cancel", b["id"].as_str().unwrap()),
            json!({}),
        )
        .await;
    assert_eq!(cancelled["status"], "cancelled");
    let (status, body) = server
        .post(
            &format!("/api/companies/{cid}/approvals"),
            json!({ "type": "make_me_king" }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let actions = server.actions(&cid).await;
    for expected in [
        "approval.revision_requested",
        "approval.resubmitted",
        "approval.rejected",
        "approval.cancelled",
    ] {
        assert!(actions.iter().any(|a| a == expected), "{expected}");
    }
}

#[tokio::test]
async fn hires_go_through_approval_when_required_or_asked_by_an_agent() {
    let server = TestServer::start().await;
    let cid = server.company("Gate Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let direct = server
        .ok_post(
            &format!("/api/companies/{cid}/agent-hires"),
            json!({ "name": "Direct" }),
        )
        .await;
    assert!(
        direct["approval"].is_null(),
        "without the requirement the board hires directly"
    );
    assert_eq!(direct["agent"]["status"], "idle");

    server
        .ok_patch(
            &format!("/api/companies/{cid}"),
            json!({ "requireBoardApprovalForNewAgents": true }),
        )
        .await;
    let hire = server
        .ok_post(&format!("/api/companies/{cid}/agent-hires"), json!({ "name": "Analyst", "adapterType": "process", "adapterConfig": { "command": "true" } }))
        .await;
    let agent_id = hire["agent"]["id"].as_str().unwrap();
    assert_eq!(hire["agent"]["status"], "pending_approval");
    assert_eq!(hire["approval"]["type"], "hire_agent");
    assert_eq!(hire["approval"]["payload"]["agentId"], agent_id);
    let (status, body) = server
        .post(&format!("/api/agents/{agent_id}/wakeup"), json!({}))
        .await;
    assert_eq!(status, 409, "a pending hire cannot run: {body}");
    let issue = server
        .issue(&cid, json!({ "title": "x", "status": "todo" }))
        .await;
    let (status, _) = server
        .post(
            &format!("/api/issues/{}/checkout", issue["id"].as_str().unwrap()),
            json!({ "agentId": agent_id, "expectedStatuses": ["todo"] }),
        )
        .await;
    assert_eq!(status, 422, "nor check out work");
    server
        .ok_post(
            &format!(
                "/api/approvals/{}/approve",
                hire["approval"]["id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await;
    assert_eq!(
        server.ok_get(&format!("/api/agents/{agent_id}")).await["status"],
        "idle"
    );

    let rejected = server
        .ok_post(
            &format!("/api/companies/{cid}/agent-hires"),
            json!({ "name": "Intern" }),
        )
        .await;
    server
        .ok_post(
            &format!(
                "/api/approvals/{}/reject",
                rejected["approval"]["id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await;
    let intern = server
        .ok_get(&format!(
            "/api/agents/{}",
            rejected["agent"]["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        intern["status"], "terminated",
        "a rejected hire leaves nothing runnable"
    );

    // Agents need canCreateAgents, and their hires always wait for the board.
    let plain = server.agent(&cid, "Plain", None).await;
    let token = server.key(plain["id"].as_str().unwrap()).await;
    let (status, body) = server
        .as_agent(
            &token,
            None,
            "POST",
            &format!("/api/companies/{cid}/agent-hires"),
            Some(json!({ "name": "Sneaky" })),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    server
        .ok_patch(
            &format!("/api/companies/{cid}"),
            json!({ "requireBoardApprovalForNewAgents": false }),
        )
        .await;
    let manager = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Manager", "permissions": { "canCreateAgents": true } }),
        )
        .await;
    let token = server.key(manager["id"].as_str().unwrap()).await;
    let (status, hire) = server
        .as_agent(
            &token,
            None,
            "POST",
            &format!("/api/companies/{cid}/agent-hires"),
            Some(json!({ "name": "Report" })),
        )
        .await;
    assert_eq!(status, 201, "{hire}");
    assert_eq!(hire["agent"]["status"], "pending_approval");
    assert_eq!(hire["approval"]["requestedByAgentId"], manager["id"]);
}

#[tokio::test]
async fn the_ceos_tasks_stay_drafts_until_its_strategy_is_approved() {
    let server = TestServer::start().await;
    let cid = server.company("Strategy Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ceo = server
        .script_agent(&cid, "CEO", "sleep 20\n", json!({}))
        .await;
    server
        .ok_patch(
            &format!("/api/agents/{}", ceo["id"].as_str().unwrap()),
            json!({ "role": "ceo" }),
        )
        .await;
    let cto = server
        .script_agent(&cid, "CTO", "sleep 20\n", json!({}))
        .await;
    let (ceo_id, cto_id) = (ceo["id"].as_str().unwrap(), cto["id"].as_str().unwrap());
    let (ceo_token, cto_token) = (server.key(ceo_id).await, server.key(cto_id).await);

    let (status, draft) = server
        .as_agent(
            &ceo_token,
            None,
            "POST",
            &format!("/api/companies/{cid}/issues"),
            Some(json!({ "title": "Hire a CMO", "status": "todo" })),
        )
        .await;
    assert_eq!(status, 201);
    assert_eq!(
        draft["status"], "backlog",
        "the CEO's task is kept as a draft"
    );
    let did = draft["id"].as_str().unwrap();
    let (status, body) = server
        .patch(&format!("/api/issues/{did}"), json!({ "status": "todo" }))
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body["error"].as_str().unwrap().contains("strategy"));
    let (_, run) = server
        .post(&format!("/api/agents/{cto_id}/wakeup"), json!({}))
        .await;
    let run_id = run["id"].as_str().unwrap().to_string();
    server
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 10, |r| {
            r["status"] == "running"
        })
        .await;
    let (status, _) = server
        .as_agent(
            &cto_token,
            Some(&run_id),
            "POST",
            &format!("/api/issues/{did}/checkout"),
            Some(json!({ "agentId": cto_id, "expectedStatuses": ["backlog"] })),
        )
        .await;
    assert_eq!(status, 422, "nobody can start a draft");
    let (_, other) = server
        .as_agent(
            &cto_token,
            None,
            "POST",
            &format!("/api/companies/{cid}/issues"),
            Some(json!({ "title": "Fix CI", "status": "todo" })),
        )
        .await;
    assert_eq!(other["status"], "todo", "the gate is the CEO's alone");

    let (_, strategy) = server
        .as_agent(
            &ceo_token,
            None,
            "POST",
            &format!("/api/companies/{cid}/approvals"),
            Some(json!({ "type": "approve_ceo_strategy", "payload": { "plan": "B2B first" } })),
        )
        .await;
    server
        .ok_post(
            &format!(
                "/api/approvals/{}/approve",
                strategy["id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await;
    let open = server
        .ok_patch(&format!("/api/issues/{did}"), json!({ "status": "todo" }))
        .await;
    assert_eq!(open["status"], "todo", "approval unlocks the drafts");
    let (_, later) = server
        .as_agent(
            &ceo_token,
            None,
            "POST",
            &format!("/api/companies/{cid}/issues"),
            Some(json!({ "title": "Plan Q2", "status": "todo" })),
        )
        .await;
    assert_eq!(later["status"], "todo");
}

#[tokio::test]
async fn config_changes_are_revisions_with_secrets_redacted_and_can_be_rolled_back() {
    let server = TestServer::start().await;
    let cid = server.company("Config Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .ok_post(&format!("/api/companies/{cid}/agents"), json!({ "name": "Coder", "adapterType": "process",
            "adapterConfig": { "command": "run-v1", "env": { "OPENAI_API_KEY": "sk-original-123456" } } }))
        .await;
    let aid = agent["id"].as_str().unwrap();
    server
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "adapterConfig": { "command": "run-v2" } }),
        )
        .await;
    server
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "runtimeConfig": { "heartbeat": { "enabled": true, "intervalSec": 600 } } }),
        )
        .await;
    server
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "title": "a revision too, as upstream keeps" }),
        )
        .await;
    let revisions = server
        .ok_get(&format!("/api/agents/{aid}/config-revisions"))
        .await;
    let numbers: Vec<i64> = revisions
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["revisionNumber"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, [4, 3, 2, 1]);
    assert!(
        !revisions.to_string().contains("sk-original"),
        "revisions never hold secrets"
    );
    assert_eq!(
        revisions[3]["adapterConfig"]["env"]["OPENAI_API_KEY"],
        "[REDACTED]"
    );
    assert_eq!(revisions[0]["changedKeys"], json!(["title"]));
    assert_eq!(revisions[0]["beforeConfig"]["name"], "Coder");
    assert_eq!(
        revisions[0]["afterConfig"]["title"],
        "a revision too, as upstream keeps"
    );
    let first = revisions[3]["id"].as_str().unwrap();
    let one = server
        .ok_get(&format!("/api/agents/{aid}/config-revisions/{first}"))
        .await;
    assert_eq!(one["adapterConfig"]["command"], "run-v1");
    let config = server
        .ok_get(&format!("/api/agents/{aid}/configuration"))
        .await;
    assert_eq!(config["heartbeat"]["intervalSec"], 600);
    assert_eq!(
        config["adapterConfig"]["env"]["OPENAI_API_KEY"],
        "[REDACTED]"
    );

    let restored = server
        .ok_post(
            &format!("/api/agents/{aid}/config-revisions/{first}/rollback"),
            json!({}),
        )
        .await;
    assert_eq!(restored["adapterConfig"]["command"], "run-v1");
    // The secret keeps its current value (write-only: `tests/secrets.rs`
    // proves it through a run), and the response shows the placeholder.
    assert_eq!(
        restored["adapterConfig"]["env"]["OPENAI_API_KEY"], "[REDACTED]",
        "{restored}"
    );
    // Nothing stored: only the run limit in force, written out as upstream does.
    assert_eq!(
        restored["runtimeConfig"],
        json!({ "heartbeat": { "maxConcurrentRuns": 1 } })
    );
    assert_eq!(
        server
            .ok_get(&format!("/api/agents/{aid}/config-revisions"))
            .await
            .as_array()
            .unwrap()
            .len(),
        5
    );

    // Once the secret is gone, a revision that only has its placeholder cannot bring it back.
    server
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "adapterConfig": { "command": "run-v3" }, "replaceAdapterConfig": true }),
        )
        .await;
    let (status, body) = server
        .post(
            &format!("/api/agents/{aid}/config-revisions/{first}/rollback"),
            json!({}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let now = server.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(
        now["adapterConfig"],
        json!({ "command": "run-v3" }),
        "a refused rollback changes nothing"
    );
    let token = server.key(aid).await;
    let (status, _) = server
        .as_agent(
            &token,
            None,
            "POST",
            &format!("/api/agents/{aid}/config-revisions/{first}/rollback"),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 403);
}
