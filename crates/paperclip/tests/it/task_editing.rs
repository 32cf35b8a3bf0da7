//! Editing a task from its page: the page carries a control for every field,
//! the API takes what they send (a human assignee included), the Markdown
//! preview renders as the page will and refuses hostile or oversized input,
//! and in a real browser a person edits every field (tests/browser/task_edit.mjs).

use crate::common;

use std::time::Duration;

use common::TestServer;
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test]
async fn the_task_page_edits_every_field() {
    let server = TestServer::start().await;
    let company = server
        .ok_post("/api/companies", json!({ "name": "Fields" }))
        .await;
    let cid = company["id"].as_str().unwrap();
    let prefix = company["issuePrefix"].as_str().unwrap();
    let task = server
        .ok_post(
            &format!("/api/companies/{cid}/issues"),
            json!({ "title": "Edit me" }),
        )
        .await;
    let page = server
        .page(&format!(
            "/{prefix}/tasks/{}",
            task["identifier"].as_str().unwrap()
        ))
        .await;
    for control in [
        "data-edit-task",
        "id=\"prop-priority\"",
        "id=\"prop-assignee\"",
        "id=\"prop-project\"",
        "id=\"prop-goal\"",
        "data-pick-task=\"parent\"",
        "data-pick-task=\"blocker\"",
        "data-api-form=\"new-label\"",
        "id=\"edit-task\"",
        "/ui/task-edit.js",
    ] {
        assert!(page.contains(control), "the task page lacks {control}");
    }

    // The board as assignee, as the page's "Me (board)" sends it.
    let id = task["id"].as_str().unwrap();
    let updated = server
        .ok_patch(
            &format!("/api/issues/{id}"),
            json!({ "assigneeAgentId": null, "assigneeUserId": "local-board" }),
        )
        .await;
    assert_eq!(updated["assigneeUserId"], "local-board");
    let page = server
        .page(&format!(
            "/{prefix}/tasks/{}",
            task["identifier"].as_str().unwrap()
        ))
        .await;
    assert!(
        page.contains(r#"<option value="user:local-board" selected>"#),
        "the board is not shown as the assignee"
    );
}

#[tokio::test]
async fn the_preview_renders_markdown_and_refuses_abuse() {
    let server = TestServer::start().await;
    let client = reqwest::Client::new();
    let res = client
        .post(server.url("/ui/preview"))
        .json(&json!({ "markdown": "We ship **Tuesday** <script>alert(1)</script>" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let html = res.text().await.unwrap();
    assert!(html.contains("<strong>Tuesday</strong>"), "{html}");
    assert!(
        !html.contains("<script>"),
        "the preview let markup through: {html}"
    );

    let res = client
        .post(server.url("/ui/preview"))
        .json(&json!({ "markdown": "x".repeat(300 * 1024) }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);

    // A page elsewhere cannot use the board's session to reach it.
    let res = client
        .post(server.url("/ui/preview"))
        .header("origin", "https://evil.example")
        .json(&json!({ "markdown": "hello" }))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_edits_every_field_in_the_browser() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    common::browser::run("task_edit", &server.base, Duration::from_secs(150)).await;
}
