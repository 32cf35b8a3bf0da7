//! Conditional GET on the task list: every page carries a weak ETag of its
//! bytes, `If-None-Match` with it answers 304 and no body, and the server's
//! kept copy of a page never outlives a write that changes it: after each
//! kind of write the list answers what a fresh read of the task says, and
//! its tag moved exactly when its bytes did. Another company's writes move
//! nothing. Both engines.

use crate::common;

use common::TestServer;
use reqwest::header::{CACHE_CONTROL, ETAG, IF_NONE_MATCH};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// A list answer: status, ETag, the body as bytes.
struct Answer {
    status: StatusCode,
    etag: String,
    body: Vec<u8>,
}

async fn list(server: &TestServer, path: &str, if_none_match: Option<&str>) -> Answer {
    let mut req = server.client().get(server.url(path));
    if let Some(tag) = if_none_match {
        req = req.header(IF_NONE_MATCH, tag);
    }
    let resp = req.send().await.expect("request failed");
    let status = resp.status();
    let etag = resp
        .headers()
        .get(ETAG)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    if status == StatusCode::OK {
        assert_eq!(
            resp.headers()[CACHE_CONTROL],
            "private, must-revalidate",
            "{path}"
        );
    }
    let body = resp.bytes().await.unwrap().to_vec();
    Answer { status, etag, body }
}

/// What a list of `cid` answers now, checked against its previous answer:
/// a 200 with a weak tag that moved exactly when the bytes did, its old tag
/// now a 304 only if nothing changed, and each task in it as a fresh read
/// of that task says.
async fn after(server: &TestServer, path: &str, before: &Answer, what: &str) -> Answer {
    let now = list(server, path, None).await;
    assert_eq!(now.status, StatusCode::OK, "{what}");
    assert!(
        now.etag.starts_with("W/\""),
        "{what}: a weak tag: {}",
        now.etag
    );
    assert_eq!(
        now.etag != before.etag,
        now.body != before.body,
        "{what}: the tag moves exactly when the bytes do"
    );
    let again = list(server, path, Some(&before.etag)).await;
    if now.body == before.body {
        assert_eq!(again.status, StatusCode::NOT_MODIFIED, "{what}");
    } else {
        assert_eq!(again.status, StatusCode::OK, "{what}: a stale tag");
        assert_eq!(again.body, now.body, "{what}");
    }
    let tasks: Vec<Value> = serde_json::from_slice(&now.body).unwrap();
    for task in &tasks {
        let fresh = server
            .ok_get(&format!("/api/issues/{}", task["id"].as_str().unwrap()))
            .await;
        for field in [
            "title",
            "status",
            "assigneeAgentId",
            "checkoutRunId",
            "executionRunId",
            "labelIds",
            "blockedBy",
            "blocks",
            "updatedAt",
        ] {
            assert_eq!(
                task[field], fresh[field],
                "{what}: {} {field} in the list is the task's",
                task["identifier"]
            );
        }
    }
    now
}

#[tokio::test]
async fn the_task_list_answers_304_until_a_write_of_its_company_changes_it() {
    let server = TestServer::start().await;
    let company = server.company("Tag Co").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let prefix = company["issuePrefix"].as_str().unwrap().to_string();
    let other = server.company("Other Co").await;
    let oid = other["id"].as_str().unwrap().to_string();
    let path = format!("/api/companies/{cid}/issues");

    let first = server.issue(&cid, json!({ "title": "First" })).await;
    let first_id = first["id"].as_str().unwrap().to_string();
    let start = list(&server, &path, None).await;
    assert_eq!(start.status, StatusCode::OK);
    assert!(start.etag.starts_with("W/\""), "{}", start.etag);

    // Revalidation: the same tag, weak or strong, or among others, is a 304
    // with no body; another tag is the page; no header at all is the page.
    let strong = start.etag.trim_start_matches("W/").to_string();
    for tag in [
        start.etag.clone(),
        strong,
        format!("\"other\", {}", start.etag),
    ] {
        let same = list(&server, &path, Some(&tag)).await;
        assert_eq!(same.status, StatusCode::NOT_MODIFIED, "{tag}");
        assert!(same.body.is_empty());
        assert_eq!(same.etag, start.etag);
    }
    let other_tag = list(&server, &path, Some("W/\"0123\"")).await;
    assert_eq!(other_tag.status, StatusCode::OK);
    assert_eq!(other_tag.body, start.body);
    let plain = list(&server, &path, None).await;
    assert_eq!((plain.status, &plain.body), (StatusCode::OK, &start.body));

    // Every kind of write of the company's tasks.
    let second = server.issue(&cid, json!({ "title": "Second" })).await;
    let second_id = second["id"].as_str().unwrap().to_string();
    let mut last = after(&server, &path, &start, "a create").await;
    assert_ne!(last.etag, start.etag);

    server
        .ok_patch(
            &format!("/api/issues/{first_id}"),
            json!({ "title": "First, renamed" }),
        )
        .await;
    last = after(&server, &path, &last, "a title").await;
    let before_status = last.etag.clone();
    server
        .ok_patch(
            &format!("/api/issues/{first_id}"),
            json!({ "status": "todo" }),
        )
        .await;
    last = after(&server, &path, &last, "a status").await;
    assert_ne!(last.etag, before_status);

    let label = server
        .ok_post(
            &format!("/api/companies/{cid}/labels"),
            json!({ "name": "urgent", "color": "#ff0000" }),
        )
        .await;
    last = after(&server, &path, &last, "a label made").await;
    let before_label = last.etag.clone();
    server
        .ok_patch(
            &format!("/api/issues/{second_id}"),
            json!({ "labelIds": [label["id"]] }),
        )
        .await;
    last = after(&server, &path, &last, "a label put on").await;
    assert_ne!(last.etag, before_label);
    let before_blocker = last.etag.clone();
    server
        .ok_patch(
            &format!("/api/issues/{second_id}"),
            json!({ "blockedByIssueIds": [first_id] }),
        )
        .await;
    last = after(&server, &path, &last, "a blocker").await;
    assert_ne!(last.etag, before_blocker);

    server
        .ok_post(
            &format!("/api/issues/{first_id}/comments"),
            json!({ "body": "A comment" }),
        )
        .await;
    last = after(&server, &path, &last, "a comment").await;

    let before_label_gone = last.etag.clone();
    let (status, _) = server
        .delete(&format!("/api/labels/{}", label["id"].as_str().unwrap()))
        .await;
    assert!(status.is_success(), "{status}");
    last = after(&server, &path, &last, "a label deleted").await;
    assert_ne!(last.etag, before_label_gone);

    // Another company's writes leave this list's tag alone.
    let theirs = server.issue(&oid, json!({ "title": "Theirs" })).await;
    server
        .ok_patch(
            &format!("/api/issues/{}", theirs["id"].as_str().unwrap()),
            json!({ "status": "todo" }),
        )
        .await;
    let untouched = list(&server, &path, Some(&last.etag)).await;
    assert_eq!(untouched.status, StatusCode::NOT_MODIFIED);
    assert_eq!(untouched.etag, last.etag);

    // A run: the runtime's writes (the checkout, the run's end) reach the
    // list as they reach the task.
    let worker = server.agent(&cid, "Worker", None).await;
    server
        .ok_patch(
            &format!("/api/issues/{first_id}"),
            json!({ "assigneeAgentId": worker["id"] }),
        )
        .await;
    server.quiesce().await;
    last = after(&server, &path, &last, "a run").await;

    // A filtered page and a short one keep their own tags and cursors.
    let todo_path = format!("{path}?status=todo&limit=1");
    let todo = list(&server, &todo_path, None).await;
    assert_eq!(todo.status, StatusCode::OK);
    assert_ne!(todo.etag, last.etag);
    let revalidated = server
        .client()
        .get(server.url(&todo_path))
        .header(IF_NONE_MATCH, &todo.etag)
        .send()
        .await
        .unwrap();
    assert_eq!(revalidated.status(), StatusCode::NOT_MODIFIED);

    let (status, _) = server.delete(&format!("/api/issues/{second_id}")).await;
    assert!(status.is_success(), "{status}");
    last = after(&server, &path, &last, "a delete").await;
    let tasks: Vec<Value> = serde_json::from_slice(&last.body).unwrap();
    assert_eq!(tasks.len(), 1, "the deleted task is gone");

    // The board's pages still work beside it.
    let page = server.page(&format!("/{prefix}/tasks")).await;
    assert!(page.contains("First, renamed"));
}
