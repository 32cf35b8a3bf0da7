//! Every mutation writes exactly one activity row, in the same transaction;
//! a refused mutation writes none.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

async fn count(server: &TestServer, company: &str) -> usize {
    server
        .ok_get(&format!("/api/companies/{company}/activity?limit=1000"))
        .await
        .as_array()
        .unwrap()
        .len()
}

async fn newest(server: &TestServer, company: &str) -> Value {
    server
        .ok_get(&format!("/api/companies/{company}/activity?limit=1"))
        .await[0]
        .clone()
}

#[tokio::test]
async fn each_mutation_appends_one_row_naming_actor_entity_and_change() {
    let server = TestServer::start().await;
    let company = server.company("Audit Co").await;
    let c = company["id"].as_str().unwrap().to_string();
    let agent = server.agent(&c, "Worker", None).await;
    let a = agent["id"].as_str().unwrap().to_string();
    let issue = server
        .issue(&c, json!({ "title": "Audited", "status": "todo" }))
        .await;
    let i = issue["id"].as_str().unwrap().to_string();
    let goal = server
        .ok_post(
            &format!("/api/companies/{c}/goals"),
            json!({ "title": "G" }),
        )
        .await;
    let g = goal["id"].as_str().unwrap().to_string();
    let project = server
        .ok_post(
            &format!("/api/companies/{c}/projects"),
            json!({ "name": "P" }),
        )
        .await;
    let p = project["id"].as_str().unwrap().to_string();
    let comment = server
        .ok_post(
            &format!("/api/issues/{i}/comments"),
            json!({ "body": "first" }),
        )
        .await;
    let k = comment["id"].as_str().unwrap().to_string();

    let steps: Vec<(&str, String, Option<Value>, &str, &str)> = vec![
        (
            "PATCH",
            format!("/api/companies/{c}"),
            Some(json!({ "description": "Audit everything" })),
            "company.updated",
            "company",
        ),
        (
            "POST",
            format!("/api/companies/{c}/agents"),
            Some(json!({ "name": "Second" })),
            "agent.created",
            "agent",
        ),
        (
            "PATCH",
            format!("/api/agents/{a}"),
            Some(json!({ "title": "Lead" })),
            "agent.updated",
            "agent",
        ),
        (
            "POST",
            format!("/api/agents/{a}/pause"),
            Some(json!({})),
            "agent.paused",
            "agent",
        ),
        (
            "POST",
            format!("/api/agents/{a}/resume"),
            Some(json!({})),
            "agent.resumed",
            "agent",
        ),
        (
            "PATCH",
            format!("/api/goals/{g}"),
            Some(json!({ "status": "active" })),
            "goal.updated",
            "goal",
        ),
        (
            "PATCH",
            format!("/api/projects/{p}"),
            Some(json!({ "status": "planned" })),
            "project.updated",
            "project",
        ),
        (
            "POST",
            format!("/api/companies/{c}/issues"),
            Some(json!({ "title": "Another" })),
            "issue.created",
            "issue",
        ),
        (
            "PATCH",
            format!("/api/issues/{i}"),
            Some(json!({ "priority": "low" })),
            "issue.updated",
            "issue",
        ),
        (
            "POST",
            format!("/api/issues/{i}/comments"),
            Some(json!({ "body": "second" })),
            "issue.comment_added",
            "issue",
        ),
        (
            "DELETE",
            format!("/api/issues/{i}/comments/{k}"),
            None,
            "issue.comment_deleted",
            "issue",
        ),
        (
            "POST",
            format!("/api/companies/{c}/labels"),
            Some(json!({ "name": "bug", "color": "#ff0000" })),
            "label.created",
            "label",
        ),
        (
            "PUT",
            format!("/api/issues/{i}/documents/plan"),
            Some(json!({ "format": "markdown", "body": "x" })),
            "issue.document_created",
            "issue",
        ),
        (
            "PUT",
            format!("/api/issues/{i}/documents/plan"),
            Some(json!({ "format": "markdown", "body": "y" })),
            "issue.document_updated",
            "issue",
        ),
        (
            "DELETE",
            format!("/api/issues/{i}/documents/plan"),
            None,
            "issue.document_deleted",
            "issue",
        ),
        (
            "POST",
            format!("/api/issues/{i}/checkout"),
            Some(json!({ "agentId": a, "expectedStatuses": ["todo"] })),
            "issue.checked_out",
            "issue",
        ),
        (
            "POST",
            format!("/api/issues/{i}/admin/force-release"),
            Some(json!({})),
            "issue.admin_force_release",
            "issue",
        ),
        (
            "POST",
            format!("/api/issues/{i}/release"),
            Some(json!({})),
            "issue.released",
            "issue",
        ),
        (
            "DELETE",
            format!("/api/goals/{g}"),
            None,
            "goal.deleted",
            "goal",
        ),
        (
            "DELETE",
            format!("/api/projects/{p}"),
            None,
            "project.deleted",
            "project",
        ),
        (
            "DELETE",
            format!("/api/issues/{i}"),
            None,
            "issue.deleted",
            "issue",
        ),
        (
            "POST",
            format!("/api/agents/{a}/terminate"),
            Some(json!({})),
            "agent.terminated",
            "agent",
        ),
        (
            "DELETE",
            format!("/api/agents/{a}"),
            None,
            "agent.deleted",
            "agent",
        ),
    ];
    for (method, path, body, action, entity_type) in steps {
        let before = count(&server, &c).await;
        let (status, resp) = server.request(method, &path, body).await;
        assert!(status.is_success(), "{method} {path} -> {status}: {resp}");
        assert_eq!(
            count(&server, &c).await,
            before + 1,
            "{method} {path} writes one row"
        );
        let row = newest(&server, &c).await;
        assert_eq!(row["action"], action, "{method} {path}");
        assert_eq!(row["entityType"], entity_type);
        assert_eq!(row["actorType"], "user");
        assert_eq!(row["actorId"], "local-board");
        assert_eq!(row["companyId"], c.as_str());
    }
    let update = server
        .ok_get(&format!("/api/companies/{c}/activity?action=issue.updated"))
        .await;
    assert_eq!(
        update[0]["details"]["changes"]["priority"],
        json!({ "from": "medium", "to": "low" })
    );
    // And the original's keys: the new value, the old one, the board's rule.
    let details = &update[0]["details"];
    assert_eq!(details["priority"], "low", "{details}");
    assert_eq!(details["_previous"], json!({ "priority": "medium" }));
    assert_eq!(details["authorizationReason"], "allow_board_actor");
}

#[tokio::test]
async fn refused_mutations_write_nothing_and_run_ids_are_recorded() {
    let server = TestServer::start().await;
    let c = server.company("Quiet Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server.agent(&c, "Worker", None).await;
    let issue = server
        .issue(&c, json!({ "title": "Done already", "status": "done" }))
        .await;
    let i = issue["id"].as_str().unwrap();
    let before = count(&server, &c).await;
    let (status, _) = server
        .patch(
            &format!("/api/issues/{i}"),
            json!({ "status": "in_review", "comment": "review it" }),
        )
        .await;
    assert_eq!(status, 422);
    let (status, _) = server
        .patch(&format!("/api/issues/{i}"), json!({ "title": 7 }))
        .await;
    assert_eq!(status, 400);
    let (status, _) = server
        .post(
            &format!("/api/issues/{i}/checkout"),
            json!({ "agentId": agent["id"], "expectedStatuses": ["todo"] }),
        )
        .await;
    assert_eq!(status, 409);
    assert_eq!(
        count(&server, &c).await,
        before,
        "refused requests leave no trace in the log"
    );

    let open = server
        .issue(&c, json!({ "title": "Open", "status": "todo" }))
        .await;
    const RUN: &str = "0193a6f4-6b2a-7c4e-9d1f-000000000123";
    let resp = server
        .client()
        .post(server.url(&format!(
            "/api/issues/{}/comments",
            open["id"].as_str().unwrap()
        )))
        .header("x-paperclip-run-id", RUN)
        .json(&json!({ "body": "from a run" }))
        .send()
        .await
        .unwrap();
    let comment: Value = resp.json().await.unwrap();
    assert_eq!(comment["createdByRunId"], RUN);
    let row = newest(&server, &c).await;
    assert_eq!(row["runId"], RUN);
    let filtered = server
        .ok_get(&format!("/api/companies/{c}/activity?runId={RUN}"))
        .await;
    assert_eq!(filtered.as_array().unwrap().len(), 1);
    // A run id that is no UUID names no run: the filter matches nothing, on
    // Postgres (ids are uuid) as on SQLite, and is not an error.
    let none = server
        .ok_get(&format!("/api/companies/{c}/activity?runId=run-123"))
        .await;
    assert_eq!(none.as_array().unwrap().len(), 0, "{none}");

    let all = server
        .ok_get(&format!("/api/companies/{c}/activity?limit=1000"))
        .await;
    let first_page = server
        .ok_get(&format!("/api/companies/{c}/activity?limit=2"))
        .await;
    let last_id = first_page[1]["id"].as_str().unwrap();
    let second_page = server
        .ok_get(&format!(
            "/api/companies/{c}/activity?limit=2&before={last_id}"
        ))
        .await;
    assert_eq!(
        second_page[0]["id"], all[2]["id"],
        "pages continue where the last ended"
    );
}
