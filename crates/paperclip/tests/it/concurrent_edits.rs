//! Two people (or a person and the runtime) changing different fields of
//! one row at the same moment both keep their change. On Postgres each
//! whole-row update reads the row under its lock; without it the later write
//! puts back the field the earlier one changed.

use futures::future::join_all;
use serde_json::{json, Value};

use crate::common::TestServer;

/// Sends every PATCH of `bodies` to `path` at once and checks each landed.
async fn patch_all(server: &TestServer, path: &str, bodies: Vec<Value>) {
    let sends = bodies.into_iter().map(|body| {
        let req = server.client().patch(server.url(path)).json(&body);
        async move {
            let resp = req.send().await.unwrap();
            let status = resp.status();
            let text = resp.text().await.unwrap();
            assert!(status.is_success(), "PATCH {body} -> {status}: {text}");
        }
    });
    join_all(sends).await;
}

#[tokio::test]
async fn concurrent_edits_of_different_fields_all_land() {
    let server = TestServer::start().await;
    let company = server.company("Race Works").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Site" }),
        )
        .await;
    let goal = server
        .ok_post(
            &format!("/api/companies/{cid}/goals"),
            json!({ "title": "Ship" }),
        )
        .await;
    let agent = server.agent(&cid, "Writer", None).await;

    // Several rounds: a lost update is a matter of timing, and each round
    // gives it another chance to show.
    for round in 0..8 {
        let issue = server
            .issue(
                &cid,
                json!({ "title": format!("Task {round}"), "status": "backlog" }),
            )
            .await;
        let id = issue["id"].as_str().unwrap();
        patch_all(
            &server,
            &format!("/api/issues/{id}"),
            vec![
                json!({ "projectId": project["id"] }),
                json!({ "goalId": goal["id"] }),
                json!({ "priority": "high" }),
                json!({ "description": format!("round {round}") }),
                json!({ "billingCode": format!("B-{round}") }),
            ],
        )
        .await;
        let now = server.ok_get(&format!("/api/issues/{id}")).await;
        assert_eq!(now["projectId"], project["id"], "round {round}: {now}");
        assert_eq!(now["goalId"], goal["id"], "round {round}: {now}");
        assert_eq!(now["priority"], "high", "round {round}: {now}");
        assert_eq!(
            now["description"],
            format!("round {round}"),
            "round {round}: {now}"
        );
        assert_eq!(
            now["billingCode"],
            format!("B-{round}"),
            "round {round}: {now}"
        );

        let aid = agent["id"].as_str().unwrap();
        patch_all(
            &server,
            &format!("/api/agents/{aid}"),
            vec![
                json!({ "title": format!("Title {round}") }),
                json!({ "capabilities": format!("Writes, round {round}") }),
                json!({ "budgetMonthlyCents": 1000 + round }),
            ],
        )
        .await;
        let now = server.ok_get(&format!("/api/agents/{aid}")).await;
        assert_eq!(
            now["title"],
            format!("Title {round}"),
            "round {round}: {now}"
        );
        assert_eq!(
            now["capabilities"],
            format!("Writes, round {round}"),
            "round {round}: {now}"
        );
        assert_eq!(
            now["budgetMonthlyCents"],
            1000 + round,
            "round {round}: {now}"
        );

        patch_all(
            &server,
            &format!("/api/companies/{cid}"),
            vec![
                json!({ "description": format!("Round {round}") }),
                json!({ "budgetMonthlyCents": 5000 + round }),
            ],
        )
        .await;
        let now = server.ok_get(&format!("/api/companies/{cid}")).await;
        assert_eq!(
            now["description"],
            format!("Round {round}"),
            "round {round}: {now}"
        );
        assert_eq!(
            now["budgetMonthlyCents"],
            5000 + round,
            "round {round}: {now}"
        );
    }
}

#[tokio::test]
async fn a_patch_of_a_row_that_is_not_there_is_404_on_every_key_shape() {
    let server = TestServer::start().await;
    for path in [
        "/api/issues/not-a-uuid",
        "/api/issues/ZZZ-999",
        "/api/issues/01a24cee-4b3a-7338-a84d-040f4353ffec",
        "/api/agents/not-a-uuid",
        "/api/companies/not-a-uuid",
    ] {
        let (status, body) = server.patch(path, json!({ "description": "x" })).await;
        assert!(
            status.as_u16() == 404 || status.as_u16() == 400,
            "{path} -> {status}: {body}"
        );
    }
}
