//! Company isolation: ids of one company used through another company's
//! routes are refused (404) or match nothing, and never return the other's data.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

struct World {
    company: String,
    agent: String,
    goal: String,
    project: String,
    issue: String,
    label: String,
}

async fn world(server: &TestServer, name: &str) -> World {
    let company = server.company(name).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server.agent(&company, &format!("{name} agent"), None).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let goal = server
        .ok_post(
            &format!("/api/companies/{company}/goals"),
            json!({ "title": format!("{name} secret goal") }),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let project = server
        .ok_post(
            &format!("/api/companies/{company}/projects"),
            json!({ "name": format!("{name} secret project") }),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let issue = server
        .issue(&company, json!({ "title": format!("{name} secret issue"), "assigneeAgentId": agent, "projectId": project }))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let label = server
        .ok_post(
            &format!("/api/companies/{company}/labels"),
            json!({ "name": "secret", "color": "#123456" }),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    World {
        company,
        agent,
        goal,
        project,
        issue,
        label,
    }
}

fn assert_refused(status: reqwest::StatusCode, body: &Value, other: &World, what: &str) {
    assert!(
        status == 404 || status == 403,
        "{what}: expected 404/403, got {status}: {body}"
    );
    let text = body.to_string();
    for id in [
        &other.agent,
        &other.goal,
        &other.project,
        &other.issue,
        &other.label,
    ] {
        assert!(
            !text.contains(id.as_str()),
            "{what} leaked an id of the other company: {text}"
        );
    }
    assert!(
        !text.contains("secret"),
        "{what} leaked data of the other company: {text}"
    );
}

#[tokio::test]
async fn references_across_companies_are_refused_in_both_directions() {
    let server = TestServer::start().await;
    let a = world(&server, "Alpha").await;
    let b = world(&server, "Bravo").await;
    for (mine, other) in [(&a, &b), (&b, &a)] {
        let c = &mine.company;
        let issue_refs = [
            ("projectId", json!(other.project)),
            ("goalId", json!(other.goal)),
            ("assigneeAgentId", json!(other.agent)),
            ("parentId", json!(other.issue)),
            ("labelIds", json!([other.label])),
            ("blockedByIssueIds", json!([other.issue])),
        ];
        for (field, value) in &issue_refs {
            let mut body = json!({ "title": "cross" });
            body[*field] = value.clone();
            let (status, resp) = server
                .post(&format!("/api/companies/{c}/issues"), body)
                .await;
            assert_refused(
                status,
                &resp,
                other,
                &format!("create issue with foreign {field}"),
            );
            let before = server.ok_get(&format!("/api/issues/{}", mine.issue)).await;
            let (status, resp) = server
                .patch(
                    &format!("/api/issues/{}", mine.issue),
                    json!({ *field: value }),
                )
                .await;
            assert_refused(
                status,
                &resp,
                other,
                &format!("patch issue with foreign {field}"),
            );
            let after = server.ok_get(&format!("/api/issues/{}", mine.issue)).await;
            assert_eq!(before, after, "a refused patch changes nothing");
        }
        let (status, resp) = server
            .post(
                &format!("/api/companies/{c}/agents"),
                json!({ "name": "x", "reportsTo": other.agent }),
            )
            .await;
        assert_refused(status, &resp, other, "agent reporting to a foreign manager");
        let (status, resp) = server
            .patch(
                &format!("/api/agents/{}", mine.agent),
                json!({ "reportsTo": other.agent }),
            )
            .await;
        assert_refused(status, &resp, other, "agent moved under a foreign manager");
        let (status, resp) = server
            .post(
                &format!("/api/companies/{c}/goals"),
                json!({ "title": "x", "parentId": other.goal }),
            )
            .await;
        assert_refused(status, &resp, other, "goal under a foreign goal");
        let (status, resp) = server
            .patch(
                &format!("/api/goals/{}", mine.goal),
                json!({ "ownerAgentId": other.agent }),
            )
            .await;
        assert_refused(status, &resp, other, "goal owned by a foreign agent");
        let (status, resp) = server
            .post(
                &format!("/api/companies/{c}/projects"),
                json!({ "name": "x", "goalId": other.goal }),
            )
            .await;
        assert_refused(status, &resp, other, "project under a foreign goal");
        let (status, resp) = server
            .patch(
                &format!("/api/projects/{}", mine.project),
                json!({ "leadAgentId": other.agent }),
            )
            .await;
        assert_refused(status, &resp, other, "project led by a foreign agent");
        let (status, resp) = server
            .post(
                &format!("/api/issues/{}/checkout", mine.issue),
                json!({ "agentId": other.agent, "expectedStatuses": ["backlog"] }),
            )
            .await;
        assert_refused(status, &resp, other, "checkout by a foreign agent");

        for query in [
            format!("projectId={}", other.project),
            format!("assigneeAgentId={}", other.agent),
            format!("goalId={}", other.goal),
            format!("parentId={}", other.issue),
            format!("labelId={}", other.label),
        ] {
            let list = server
                .ok_get(&format!("/api/companies/{c}/issues?{query}"))
                .await;
            assert_eq!(
                list,
                json!([]),
                "filtering by a foreign id ({query}) matches nothing"
            );
        }
        let activity = server
            .ok_get(&format!(
                "/api/companies/{c}/activity?entityId={}",
                other.issue
            ))
            .await;
        assert_eq!(activity, json!([]));
        let everything = [
            server.ok_get(&format!("/api/companies/{c}/issues")).await,
            server.ok_get(&format!("/api/companies/{c}/agents")).await,
            server.ok_get(&format!("/api/companies/{c}/goals")).await,
            server.ok_get(&format!("/api/companies/{c}/projects")).await,
            server.ok_get(&format!("/api/companies/{c}/labels")).await,
            server.ok_get(&format!("/api/companies/{c}/org")).await,
            server
                .ok_get(&format!("/api/companies/{c}/activity?limit=1000"))
                .await,
        ];
        for listing in everything {
            let text = listing.to_string();
            assert!(
                !text.contains(&other.company),
                "a listing of one company mentions the other: {text}"
            );
        }
    }
}

#[tokio::test]
async fn unknown_companies_are_404_not_empty() {
    let server = TestServer::start().await;
    let missing = "00000000-0000-4000-8000-000000000000";
    for path in [
        "issues", "agents", "goals", "projects", "labels", "org", "activity",
    ] {
        let (status, body) = server
            .get(&format!("/api/companies/{missing}/{path}"))
            .await;
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(body["error"], "Company not found");
    }
    let (status, body) = server.get(&format!("/api/issues/{missing}")).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"], "Issue not found");
    // Text that is no id at all (ids are uuid on Postgres) is as missing.
    for path in [
        "/api/companies/not-an-id/issues",
        "/api/companies/not-an-id/agents",
        "/api/issues/not-an-id",
        "/api/issues/not-an-id/comments",
        "/api/agents/not-an-id",
        "/api/heartbeat-runs/not-an-id",
        "/api/goals/not-an-id",
        "/api/projects/not-an-id",
        "/api/approvals/not-an-id",
    ] {
        let (status, body) = server.get(path).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
}
