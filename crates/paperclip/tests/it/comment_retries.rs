//! A comment sent again with the same `clientRequestId` (a client retrying
//! after a lost answer) is made once, logged once and wakes once, even when
//! the retries race; the id is not a way to reach another author's comment.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

#[tokio::test]
async fn a_retried_comment_is_made_once_and_wakes_once() {
    let s = TestServer::start().await;
    let cid = s.company("Retry Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = s.script_agent(&cid, "Listener", "true\n", json!({})).await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let issue = s
        .issue(
            &cid,
            json!({ "title": "Answer me", "status": "backlog", "assigneeAgentId": aid }),
        )
        .await;
    let iid = issue["id"].as_str().unwrap().to_string();
    let path = format!("/api/issues/{iid}/comments");
    let body = json!({ "body": "Please look at the logs", "clientRequestId": "req-7f3a" });

    // Five retries at once.
    let sends = (0..5).map(|_| s.post(&path, body.clone()));
    let answers = futures::future::join_all(sends).await;
    let ids: Vec<Value> = answers
        .iter()
        .map(|(status, c)| {
            assert_eq!(*status, 201, "{c}");
            c["id"].clone()
        })
        .collect();
    assert!(
        ids.iter().all(|i| *i == ids[0]),
        "one comment for every retry: {ids:?}"
    );
    assert_eq!(answers[0].1["clientRequestId"], "req-7f3a");
    let comments = s.ok_get(&path).await;
    assert_eq!(comments.as_array().unwrap().len(), 1, "{comments}");
    let logged = s
        .actions(&cid)
        .await
        .into_iter()
        .filter(|a| a == "issue.comment_added")
        .count();
    assert_eq!(logged, 1, "logged once");
    // The assignee is woken by the board's comment, once.
    let runs = s
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            20,
            |r| {
                r.as_array().is_some_and(|r| {
                    r.iter().any(|r| r["wakeReason"] == "issue_commented")
                        && r.iter()
                            .all(|r| !matches!(r["status"].as_str(), Some("queued" | "running")))
                })
            },
        )
        .await;
    let for_comment: Vec<&Value> = runs
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["wakeReason"] == "issue_commented")
        .collect();
    assert_eq!(for_comment.len(), 1, "woken once by the comment: {runs}");

    // Another author cannot reuse the id, on this task.
    let key = s.key(&aid).await;
    let run = for_comment[0]["id"].as_str().unwrap();
    let (status, refused) = s
        .as_agent(&key, Some(run), "POST", &path, Some(body.clone()))
        .await;
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused.to_string().find("Please look").is_none(),
        "nothing of the comment leaks"
    );

    // Without an id every post is a comment; an absurd id is refused.
    for _ in 0..2 {
        s.ok_post(&path, json!({ "body": "No id" })).await;
    }
    assert_eq!(s.ok_get(&path).await.as_array().unwrap().len(), 3);
    let (status, _) = s
        .post(
            &path,
            json!({ "body": "x", "clientRequestId": "r".repeat(201) }),
        )
        .await;
    assert_eq!(status, 400);
    // The same id on another task is another comment.
    let other = s.issue(&cid, json!({ "title": "Elsewhere" })).await;
    let (status, c) = s
        .post(
            &format!("/api/issues/{}/comments", other["id"].as_str().unwrap()),
            body,
        )
        .await;
    assert_eq!(status, 201);
    assert_ne!(c["id"], ids[0]);
}
