//! What a task holds and how tasks are listed: children, blockers and labels
//! (cycles refused), list filters, search and cursor paging, a change made
//! with its comment, and documents with their revision history.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

#[tokio::test]
async fn children_blockers_and_labels_are_linked_and_cycles_refused() {
    let server = TestServer::start().await;
    let cid = server.company("Graph Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let parent = server.issue(&cid, json!({ "title": "Parent" })).await;
    let child = server
        .issue(&cid, json!({ "title": "Child", "parentId": parent["id"] }))
        .await;
    assert_eq!(child["requestDepth"], 1);
    let grandchild = server
        .issue(
            &cid,
            json!({ "title": "Grandchild", "parentId": child["id"] }),
        )
        .await;
    assert_eq!(grandchild["requestDepth"], 2);
    let (status, body) = server
        .patch(
            &format!("/api/issues/{}", parent["id"].as_str().unwrap()),
            json!({ "parentId": grandchild["id"] }),
        )
        .await;
    assert_eq!(status, 422, "{body}");

    let a = server.issue(&cid, json!({ "title": "A" })).await;
    let b = server
        .issue(
            &cid,
            json!({ "title": "B", "blockedByIssueIds": [a["id"]] }),
        )
        .await;
    assert_eq!(b["blockedBy"][0]["identifier"], a["identifier"]);
    let a_now = server
        .ok_get(&format!("/api/issues/{}", a["id"].as_str().unwrap()))
        .await;
    assert_eq!(a_now["blocks"][0]["id"], b["id"]);
    let c = server
        .issue(
            &cid,
            json!({ "title": "C", "blockedByIssueIds": [b["id"]] }),
        )
        .await;
    let (status, body) = server
        .patch(
            &format!("/api/issues/{}", a["id"].as_str().unwrap()),
            json!({ "blockedByIssueIds": [c["id"]] }),
        )
        .await;
    assert_eq!(status, 422, "A <- B <- C <- A is a cycle: {body}");
    let (status, _) = server
        .patch(
            &format!("/api/issues/{}", a["id"].as_str().unwrap()),
            json!({ "blockedByIssueIds": [a["id"]] }),
        )
        .await;
    assert_eq!(status, 422, "self-blocking");

    let label = server
        .ok_post(
            &format!("/api/companies/{cid}/labels"),
            json!({ "name": "design", "color": "#8b5cf6" }),
        )
        .await;
    let (status, _) = server
        .post(
            &format!("/api/companies/{cid}/labels"),
            json!({ "name": "design", "color": "#000000" }),
        )
        .await;
    assert_eq!(status, 409);
    let (status, body) = server
        .post(
            &format!("/api/companies/{cid}/labels"),
            json!({ "name": "x", "color": "red" }),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["details"][0]["path"], json!(["color"]));
    let labelled = server
        .ok_patch(
            &format!("/api/issues/{}", c["id"].as_str().unwrap()),
            json!({ "labelIds": [label["id"]] }),
        )
        .await;
    assert_eq!(labelled["labelIds"], json!([label["id"]]));
    assert_eq!(labelled["labels"][0]["name"], "design");
    let filtered = server
        .ok_get(&format!(
            "/api/companies/{cid}/issues?labelId={}",
            label["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(filtered.as_array().unwrap().len(), 1);
    // A plain list carries each task's relations exactly as the task's own
    // route does, for tasks with them and without, on a page and past it.
    for (path, first) in [
        (format!("/api/companies/{cid}/issues"), "C"),
        (format!("/api/companies/{cid}/issues?limit=2"), "C"),
    ] {
        let list = server.ok_get(&path).await;
        let list = list.as_array().unwrap();
        assert_eq!(list[0]["title"], first, "{path}");
        for listed in list {
            let own = server
                .ok_get(&format!("/api/issues/{}", listed["id"].as_str().unwrap()))
                .await;
            for key in ["labels", "labelIds", "blockedBy", "blocks"] {
                assert_eq!(listed[key], own[key], "{key} of {}", own["identifier"]);
            }
        }
    }
    let all = server
        .ok_get(&format!("/api/companies/{cid}/issues?limit=1000"))
        .await;
    let titles: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        ["C", "B", "A", "Grandchild", "Child", "Parent"],
        "newest first"
    );
    assert_eq!(all[2]["blocks"][0]["id"], b["id"]);
    assert_eq!(all[0]["labels"][0]["name"], "design");
    let (status, _) = server
        .delete(&format!("/api/labels/{}", label["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 200);
    let detached = server
        .ok_get(&format!("/api/issues/{}", c["id"].as_str().unwrap()))
        .await;
    assert_eq!(detached["labelIds"], json!([]));
}

#[tokio::test]
async fn list_filters_search_and_pages_with_a_cursor() {
    let server = TestServer::start().await;
    let cid = server.company("Filter Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server.agent(&cid, "Worker", None).await;
    let goal = server
        .ok_post(
            &format!("/api/companies/{cid}/goals"),
            json!({ "title": "Grow", "level": "company" }),
        )
        .await;
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App", "goalId": goal["id"] }),
        )
        .await;
    for i in 0..25 {
        let mut body = json!({ "title": format!("Task {i}"), "status": if i % 2 == 0 { "todo" } else { "backlog" } });
        if i % 5 == 0 {
            body["assigneeAgentId"] = agent["id"].clone();
            body["projectId"] = project["id"].clone();
        }
        server.issue(&cid, body).await;
    }
    server
        .issue(
            &cid,
            json!({ "title": "Fix the Login bug", "description": "users cannot sign in" }),
        )
        .await;
    let count = |v: &Value| v.as_array().unwrap().len();
    let all = server.ok_get(&format!("/api/companies/{cid}/issues")).await;
    assert_eq!(count(&all), 26);
    let todo = server
        .ok_get(&format!("/api/companies/{cid}/issues?status=todo"))
        .await;
    assert_eq!(count(&todo), 13);
    let both = server
        .ok_get(&format!("/api/companies/{cid}/issues?status=todo,backlog"))
        .await;
    assert_eq!(count(&both), 26);
    let mine = server
        .ok_get(&format!(
            "/api/companies/{cid}/issues?assigneeAgentId={}",
            agent["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(count(&mine), 5);
    let in_project = server
        .ok_get(&format!(
            "/api/companies/{cid}/issues?projectId={}",
            project["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(count(&in_project), 5);
    assert_eq!(
        in_project[0]["goalId"], goal["id"],
        "an issue in a project inherits its goal"
    );
    let in_goal = server
        .ok_get(&format!(
            "/api/companies/{cid}/issues?goalId={}",
            goal["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(count(&in_goal), 5);
    let found = server
        .ok_get(&format!("/api/companies/{cid}/issues?q=login"))
        .await;
    assert_eq!(count(&found), 1);
    let found = server
        .ok_get(&format!("/api/companies/{cid}/issues?q=SIGN%20IN"))
        .await;
    assert_eq!(
        count(&found),
        1,
        "search covers descriptions, case-insensitively"
    );

    let seen: Vec<i64> = server
        .pages(&format!("/api/companies/{cid}/issues?limit=10"))
        .await
        .into_iter()
        .flat_map(|(page, _)| page)
        .map(|i| i["issueNumber"].as_i64().unwrap())
        .collect();
    assert_eq!(
        seen,
        (1..=26).rev().collect::<Vec<_>>(),
        "pages cover every issue once, newest first"
    );
    let (status, _) = server
        .get(&format!("/api/companies/{cid}/issues?limit=0"))
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn patch_with_a_comment_is_one_change_and_comments_page_after_a_cursor() {
    let server = TestServer::start().await;
    let cid = server.company("Talk Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let issue = server
        .issue(&cid, json!({ "title": "Discuss", "priority": "high" }))
        .await;
    let id = issue["id"].as_str().unwrap();
    let updated = server
        .ok_patch(
            &format!("/api/issues/{id}"),
            json!({ "priority": "critical", "comment": "Raising priority" }),
        )
        .await;
    assert_eq!(updated["priority"], "critical");
    assert_eq!(updated["comment"]["body"], "Raising priority");
    assert_eq!(updated["comment"]["authorUserId"], "local-board");
    assert_eq!(updated["comment"]["authorType"], "user");
    assert_eq!(
        updated["changes"]["priority"],
        json!({ "from": "high", "to": "critical" })
    );

    let (status, body) = server
        .patch(
            &format!("/api/issues/{id}"),
            json!({ "status": "done", "comment": "closing" }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let comments = server.ok_get(&format!("/api/issues/{id}/comments")).await;
    assert_eq!(
        comments.as_array().unwrap().len(),
        1,
        "a refused PATCH adds no comment"
    );

    let mut ids = vec![updated["comment"]["id"].as_str().unwrap().to_string()];
    for i in 0..3 {
        let c = server
            .ok_post(
                &format!("/api/issues/{id}/comments"),
                json!({ "body": format!("note {i}") }),
            )
            .await;
        ids.push(c["id"].as_str().unwrap().to_string());
    }
    let after = server
        .ok_get(&format!("/api/issues/{id}/comments?after={}", ids[1]))
        .await;
    let bodies: Vec<&str> = after
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["body"].as_str().unwrap())
        .collect();
    assert_eq!(bodies, ["note 1", "note 2"]);
    let desc = server
        .ok_get(&format!("/api/issues/{id}/comments?order=desc"))
        .await;
    assert_eq!(desc[0]["body"], "note 2");
    let one = server
        .ok_get(&format!("/api/issues/{id}/comments/{}", ids[2]))
        .await;
    assert_eq!(one["body"], "note 1");
    let (status, _) = server
        .delete(&format!("/api/issues/{id}/comments/{}", ids[2]))
        .await;
    assert_eq!(status, 200);
    let (status, _) = server
        .get(&format!("/api/issues/{id}/comments/{}", ids[2]))
        .await;
    assert_eq!(status, 404);
    let (status, _) = server
        .post(
            &format!("/api/issues/{id}/comments"),
            json!({ "body": "  " }),
        )
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn documents_keep_an_append_only_revision_history() {
    let server = TestServer::start().await;
    let cid = server.company("Docs Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let issue = server.issue(&cid, json!({ "title": "Plan it" })).await;
    let path = format!(
        "/api/issues/{}/documents/plan",
        issue["identifier"].as_str().unwrap()
    );
    let (status, v1) = server
        .put(
            &path,
            json!({ "title": "Plan", "format": "markdown", "body": "# Plan\n1. Wireframes" }),
        )
        .await;
    assert_eq!(status, 201);
    assert_eq!(v1["latestRevisionNumber"], 1);
    let (status, v2) = server
        .put(&path, json!({ "format": "markdown", "body": "# Plan\n1. Wireframes\n2. Review", "baseRevisionId": v1["latestRevisionId"] }))
        .await;
    assert_eq!(status, 200);
    assert_eq!(v2["latestRevisionNumber"], 2);
    let (status, stale) =
        server.put(&path, json!({ "format": "markdown", "body": "lost update", "baseRevisionId": v1["latestRevisionId"] })).await;
    assert_eq!(status, 409, "{stale}");
    let revisions = server.ok_get(&format!("{path}/revisions")).await;
    let numbers: Vec<i64> = revisions
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["revisionNumber"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, [2, 1]);
    assert_eq!(
        revisions[1]["body"], "# Plan\n1. Wireframes",
        "old revisions are never rewritten"
    );
    let list = server
        .ok_get(&format!(
            "/api/issues/{}/documents",
            issue["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(list[0]["key"], "plan");
    let (status, _) = server
        .put(
            &format!(
                "/api/issues/{}/documents/Bad%20Key",
                issue["id"].as_str().unwrap()
            ),
            json!({ "format": "markdown", "body": "x" }),
        )
        .await;
    assert_eq!(status, 400);
    let (status, _) = server
        .put(&path, json!({ "format": "html", "body": "x" }))
        .await;
    assert_eq!(status, 400);
    let (status, _) = server.delete(&path).await;
    assert_eq!(status, 200);
    let (status, _) = server.get(&path).await;
    assert_eq!(status, 404);
}
