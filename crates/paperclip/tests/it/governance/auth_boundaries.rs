//! The governance routes (approvals, budgets, cost reports, dashboards) hold
//! their auth boundaries: agents are refused what the matrix says they may
//! not do, in their own company and in another.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

/// Every governance route refuses what the matrix says agents may not do.
#[tokio::test]
async fn governance_routes_hold_their_auth_boundaries() {
    let server = TestServer::start().await;
    let cid = server.company("Boundary Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let other = server.company("Other Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let boss = server.agent(&cid, "Boss", None).await;
    let report = server.agent(&cid, "Report", boss["id"].as_str()).await;
    let peer = server.agent(&cid, "Peer", None).await;
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "P" }),
        )
        .await;
    let approval = server
        .ok_post(
            &format!("/api/companies/{cid}/approvals"),
            json!({ "type": "request_board_approval" }),
        )
        .await;
    let token = server.key(boss["id"].as_str().unwrap()).await;
    let ap = approval["id"].as_str().unwrap();
    let cases: Vec<(&str, String, Value, u16)> = vec![
        (
            "POST",
            format!("/api/approvals/{ap}/approve"),
            json!({}),
            403,
        ),
        (
            "POST",
            format!("/api/approvals/{ap}/reject"),
            json!({}),
            403,
        ),
        (
            "POST",
            format!("/api/approvals/{ap}/request-revision"),
            json!({}),
            403,
        ),
        (
            "POST",
            format!("/api/approvals/{ap}/cancel"),
            json!({}),
            403,
        ),
        (
            "PATCH",
            format!("/api/companies/{cid}/budgets"),
            json!({ "budgetMonthlyCents": 1 }),
            403,
        ),
        (
            "PATCH",
            format!("/api/projects/{}/budgets", project["id"].as_str().unwrap()),
            json!({ "budgetMonthlyCents": 1 }),
            403,
        ),
        (
            "PATCH",
            format!("/api/agents/{}/budgets", peer["id"].as_str().unwrap()),
            json!({ "budgetMonthlyCents": 1 }),
            403,
        ),
        (
            "PATCH",
            format!("/api/agents/{}/budgets", boss["id"].as_str().unwrap()),
            json!({ "budgetMonthlyCents": 1 }),
            403,
        ),
        (
            "POST",
            format!("/api/companies/{cid}/cost-events"),
            json!({ "agentId": peer["id"], "costCents": 1 }),
            403,
        ),
        (
            "GET",
            format!("/api/companies/{other}/dashboard"),
            Value::Null,
            403,
        ),
        (
            "GET",
            format!("/api/companies/{other}/costs/summary"),
            Value::Null,
            403,
        ),
        (
            "GET",
            format!("/api/companies/{other}/approvals"),
            Value::Null,
            403,
        ),
        (
            "POST",
            format!("/api/companies/{other}/cost-events"),
            json!({ "costCents": 1 }),
            403,
        ),
        (
            "POST",
            format!("/api/companies/{other}/approvals"),
            json!({ "type": "hire_agent" }),
            403,
        ),
        (
            "PATCH",
            format!("/api/agents/{}/budgets", report["id"].as_str().unwrap()),
            json!({ "budgetMonthlyCents": 500 }),
            200,
        ),
        (
            "POST",
            format!("/api/companies/{cid}/cost-events"),
            json!({ "costCents": 3, "model": "m" }),
            201,
        ),
        (
            "GET",
            format!("/api/companies/{cid}/dashboard"),
            Value::Null,
            200,
        ),
        (
            "GET",
            format!("/api/companies/{cid}/costs/by-agent"),
            Value::Null,
            200,
        ),
    ];
    for (method, path, body, expected) in cases {
        let body = (!body.is_null()).then_some(body);
        let (status, resp) = server.as_agent(&token, None, method, &path, body).await;
        assert_eq!(status.as_u16(), expected, "{method} {path}: {resp}");
    }
    let report_now = server
        .ok_get(&format!("/api/agents/{}", report["id"].as_str().unwrap()))
        .await;
    assert_eq!(
        report_now["budgetMonthlyCents"], 500,
        "a manager sets its report's budget"
    );
    let boss_now = server
        .ok_get(&format!("/api/agents/{}", boss["id"].as_str().unwrap()))
        .await;
    assert_eq!(
        boss_now["spentMonthlyCents"], 3,
        "the agent's own report counts as its spend"
    );
    let approval_now = server.ok_get(&format!("/api/approvals/{ap}")).await;
    assert_eq!(approval_now["status"], "pending", "nothing was decided");
}
