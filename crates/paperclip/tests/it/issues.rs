//! Issues over HTTP: transitions, checkout, identifiers, relations, filters.

mod contents;

use crate::common;

use std::collections::HashSet;

use common::TestServer;
use serde_json::{json, Value};

const STATUSES: [&str; 7] = [
    "backlog",
    "todo",
    "in_progress",
    "in_review",
    "done",
    "blocked",
    "cancelled",
];

const ALLOWED: &[(&str, &str)] = &[
    ("backlog", "todo"),
    ("backlog", "cancelled"),
    ("todo", "in_progress"),
    ("todo", "blocked"),
    ("todo", "cancelled"),
    ("in_progress", "in_review"),
    ("in_progress", "blocked"),
    ("in_progress", "done"),
    ("in_progress", "cancelled"),
    ("in_review", "in_progress"),
    ("in_review", "done"),
    ("in_review", "cancelled"),
    ("blocked", "todo"),
    ("blocked", "in_progress"),
    ("blocked", "cancelled"),
    // Reopening (reopen.rs has the rest).
    ("done", "backlog"),
    ("done", "todo"),
    ("done", "in_progress"),
    ("cancelled", "backlog"),
    ("cancelled", "todo"),
    ("cancelled", "in_progress"),
];

#[tokio::test]
async fn every_status_pair_follows_the_transition_table() {
    let server = TestServer::start().await;
    let company = server.company("Transit Co").await;
    let cid = company["id"].as_str().unwrap();
    for from in STATUSES {
        for to in STATUSES {
            let issue = server
                .issue(cid, json!({ "title": format!("{from} to {to}"), "status": from, "assigneeUserId": "local-board" }))
                .await;
            assert_eq!(issue["status"], from);
            let path = format!("/api/issues/{}", issue["id"].as_str().unwrap());
            let (status, body) = server.patch(&path, json!({ "status": to })).await;
            let allowed = from == to || ALLOWED.contains(&(from, to));
            if allowed {
                assert_eq!(status, 200, "{from} -> {to}: {body}");
                assert_eq!(body["status"], to);
                if from != to {
                    let stamp = match to {
                        "in_progress" => Some("startedAt"),
                        "done" => Some("completedAt"),
                        "cancelled" => Some("cancelledAt"),
                        _ => None,
                    };
                    if let Some(field) = stamp {
                        assert!(
                            body[field].is_string(),
                            "{from} -> {to} sets {field}: {body}"
                        );
                    }
                }
            } else {
                assert_eq!(status, 422, "{from} -> {to}: {body}");
                assert!(
                    body["error"]
                        .as_str()
                        .unwrap()
                        .contains("Cannot transition"),
                    "{body}"
                );
                let unchanged = server.ok_get(&path).await;
                assert_eq!(
                    unchanged["status"], from,
                    "a refused transition changes nothing"
                );
            }
        }
    }
}

#[tokio::test]
async fn an_unknown_status_is_a_400_naming_the_field_and_its_values() {
    let server = TestServer::start().await;
    let cid = server.company("Acme Notes").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let issue = server.issue(&cid, json!({ "title": "x" })).await;
    let (status, body) = server
        .patch(
            &format!("/api/issues/{}", issue["id"].as_str().unwrap()),
            json!({ "status": "not_a_status" }),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "Validation error");
    assert_eq!(body["details"][0]["path"], json!(["status"]));
    assert_eq!(body["details"][0]["code"], "invalid_value");
    let (status, body) = server
        .get(&format!("/api/companies/{cid}/issues?status=todo,nope"))
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["details"][0]["values"].as_array().unwrap().len(), 7);
}

#[tokio::test]
async fn fifty_concurrent_checkouts_have_exactly_one_winner() {
    let server = TestServer::start().await;
    let cid = server.company("Race Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut agents = Vec::new();
    for i in 0..50 {
        agents.push(
            server.agent(&cid, &format!("Agent {i}"), None).await["id"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    let issue = server
        .issue(&cid, json!({ "title": "Contested", "status": "todo" }))
        .await;
    let path = format!("/api/issues/{}/checkout", issue["id"].as_str().unwrap());
    let attempts = agents.iter().enumerate().map(|(i, agent)| {
        let req = server
            .client()
            .post(server.url(&path))
            .header(
                "x-paperclip-run-id",
                format!("0193a6f4-6b2a-7c4e-9d1f-{i:012}"),
            )
            .json(&json!({ "agentId": agent, "expectedStatuses": ["todo"] }));
        async move {
            let resp = req.send().await.unwrap();
            (resp.status().as_u16(), resp.json::<Value>().await.unwrap())
        }
    });
    let results = futures::future::join_all(attempts).await;
    let winners: Vec<&Value> = results
        .iter()
        .filter(|(s, _)| *s == 200)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(winners.len(), 1, "exactly one checkout wins");
    let losers: Vec<&Value> = results
        .iter()
        .filter(|(s, _)| *s == 409)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(losers.len(), 49, "all others conflict: {results:?}");
    let winner = winners[0];
    for loser in losers {
        assert_eq!(loser["error"], "Issue checkout conflict");
        assert_eq!(
            loser["details"]["assigneeAgentId"],
            winner["assigneeAgentId"]
        );
        assert_eq!(loser["details"]["status"], "in_progress");
        assert_eq!(loser["details"]["checkoutRunId"], winner["checkoutRunId"]);
    }
    let row = server
        .ok_get(&format!("/api/issues/{}", issue["id"].as_str().unwrap()))
        .await;
    assert_eq!(row["status"], "in_progress");
    assert_eq!(row["assigneeAgentId"], winner["assigneeAgentId"]);
    assert_eq!(row["checkoutRunId"], winner["checkoutRunId"]);
    assert!(row["startedAt"].is_string());
    let checkouts = server
        .actions(&cid)
        .await
        .into_iter()
        .filter(|a| a == "issue.checked_out")
        .count();
    assert_eq!(checkouts, 1);
}

#[tokio::test]
async fn checking_out_your_own_issue_again_is_a_no_op_and_release_gives_it_back() {
    let server = TestServer::start().await;
    let cid = server.company("Own Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server.agent(&cid, "Worker", None).await;
    let other = server.agent(&cid, "Other", None).await;
    let issue = server
        .issue(&cid, json!({ "title": "Mine", "status": "todo" }))
        .await;
    let id = issue["id"].as_str().unwrap();
    let body = json!({ "agentId": agent["id"], "expectedStatuses": ["todo"] });
    let first = server
        .ok_post(&format!("/api/issues/{id}/checkout"), body.clone())
        .await;
    let again = server
        .ok_post(&format!("/api/issues/{id}/checkout"), body)
        .await;
    assert_eq!(
        first["updatedAt"], again["updatedAt"],
        "second checkout changes nothing"
    );
    let (status, _) = server
        .post(
            &format!("/api/issues/{id}/checkout"),
            json!({ "agentId": other["id"], "expectedStatuses": ["todo", "in_progress"] }),
        )
        .await;
    assert_eq!(status, 409);
    let released = server
        .ok_post(&format!("/api/issues/{id}/release"), json!({}))
        .await;
    assert_eq!(released["status"], "todo");
    assert!(released["assigneeAgentId"].is_null());
    let (status, _) = server
        .post(&format!("/api/issues/{id}/release"), json!({}))
        .await;
    assert_eq!(status, 409, "releasing what is not checked out conflicts");
    let (status, body) = server
        .post(
            &format!("/api/issues/{id}/checkout"),
            json!({ "agentId": other["id"], "expectedStatuses": ["todo"] }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn force_release_clears_the_locks_and_logs_the_previous_runs() {
    let server = TestServer::start().await;
    let cid = server.company("Locks Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server.agent(&cid, "Worker", None).await;
    let issue = server
        .issue(&cid, json!({ "title": "Stuck", "status": "todo" }))
        .await;
    let id = issue["id"].as_str().unwrap();
    // A run id is a UUID: other text names no run and is refused, not kept.
    let refused = server
        .client()
        .post(server.url(&format!("/api/issues/{id}/checkout")))
        .header("x-paperclip-run-id", "run-crashed")
        .json(&json!({ "agentId": agent["id"], "expectedStatuses": ["todo"] }))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["details"][0]["path"][1], "x-paperclip-run-id");
    let untouched = server.ok_get(&format!("/api/issues/{id}")).await;
    assert!(untouched["checkoutRunId"].is_null());
    let crashed = "0193a6f4-6b2a-7c4e-9d1f-2a3b4c5d6e7f";
    let resp = server
        .client()
        .post(server.url(&format!("/api/issues/{id}/checkout")))
        .header("x-paperclip-run-id", crashed)
        .json(&json!({ "agentId": agent["id"], "expectedStatuses": ["todo"] }))
        .send()
        .await
        .unwrap();
    let held: Value = resp.json().await.unwrap();
    assert_eq!(held["checkoutRunId"], crashed);
    let freed = server
        .ok_post(&format!("/api/issues/{id}/admin/force-release"), json!({}))
        .await;
    assert!(freed["checkoutRunId"].is_null() && freed["executionRunId"].is_null());
    assert_eq!(freed["assigneeAgentId"], agent["id"], "the assignee stays");
    let log = server
        .ok_get(&format!(
            "/api/companies/{cid}/activity?action=issue.admin_force_release"
        ))
        .await;
    assert_eq!(log[0]["details"]["previousCheckoutRunId"], crashed);
    assert_eq!(log[0]["details"]["previousExecutionRunId"], crashed);
}

#[tokio::test]
async fn concurrent_creates_number_issues_without_duplicates_or_gaps() {
    let server = TestServer::start().await;
    let company = server.company("Acme Notes").await;
    assert_eq!(company["issuePrefix"], "ACM");
    let cid = company["id"].as_str().unwrap().to_string();
    let label = server
        .ok_post(
            &format!("/api/companies/{cid}/labels"),
            json!({ "name": "bug", "color": "#ff0000" }),
        )
        .await;
    // A bare create is one statement on Postgres; one with a label is a
    // transaction of several. Both take numbers from the same counter.
    let creates = (0..100).map(|i| {
        let body = match i % 2 {
            0 => json!({ "title": format!("Task {i}") }),
            _ => json!({ "title": format!("Task {i}"), "labelIds": [label["id"]] }),
        };
        let req = server
            .client()
            .post(server.url(&format!("/api/companies/{cid}/issues")))
            .json(&body);
        async move { req.send().await.unwrap().json::<Value>().await.unwrap() }
    });
    let created = futures::future::join_all(creates).await;
    // Each task has its one entry, naming its own identifier.
    let entries = server
        .ok_get(&format!(
            "/api/companies/{cid}/activity?action=issue.created&limit=1000"
        ))
        .await;
    let logged: HashSet<(String, String)> = entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let identifier = e["details"]["identifier"].as_str().unwrap().to_string();
            (e["entityId"].as_str().unwrap().to_string(), identifier)
        })
        .collect();
    let expected: HashSet<(String, String)> = created
        .iter()
        .map(|i| {
            let id = i["id"].as_str().unwrap().to_string();
            (id, i["identifier"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(entries.as_array().unwrap().len(), 100);
    assert_eq!(logged, expected);
    assert!(entries
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["details"]["title"].as_str().unwrap().starts_with("Task ")));
    let numbers: HashSet<i64> = created
        .iter()
        .map(|i| i["issueNumber"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, (1..=100).collect::<HashSet<_>>());
    for issue in &created {
        assert_eq!(issue["identifier"], format!("ACM-{}", issue["issueNumber"]));
    }
    let company = server.ok_get(&format!("/api/companies/{cid}")).await;
    assert_eq!(company["issueCounter"], 100);
    let by_identifier = server.ok_get("/api/issues/ACM-42").await;
    assert_eq!(by_identifier["issueNumber"], 42);
    let lower = server.ok_get("/api/issues/acm-42").await;
    assert_eq!(lower["id"], by_identifier["id"]);
}

#[tokio::test]
async fn deleting_an_issue_removes_it_and_logs_it() {
    let server = TestServer::start().await;
    let cid = server.company("Del Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let issue = server.issue(&cid, json!({ "title": "Temporary" })).await;
    server
        .ok_post(
            &format!("/api/issues/{}/comments", issue["id"].as_str().unwrap()),
            json!({ "body": "hi" }),
        )
        .await;
    let (status, _) = server
        .delete(&format!("/api/issues/{}", issue["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 200);
    let (status, body) = server
        .get(&format!("/api/issues/{}", issue["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 404);
    assert_eq!(body["error"], "Issue not found");
    assert_eq!(server.actions(&cid).await.last().unwrap(), "issue.deleted");
}
