//! Issue 40: upstream's rollups on a task, served from our data: the
//! responsible person, blocker and review attention on a task and in the
//! list, and the list's `lastActivityAt` and `activeRun`, the same on the
//! list's fast path and its typed (search) path.

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

/// The task `id` in the company's list: the default page, and a search
/// (the typed path), which must agree.
async fn listed(s: &TestServer, cid: &str, id: &str, title: &str) -> Value {
    let find = |list: Value| {
        list.as_array()
            .and_then(|l| l.iter().find(|i| i["id"] == id).cloned())
            .unwrap_or_else(|| panic!("{id} not listed: {list}"))
    };
    let page = find(s.ok_get(&format!("/api/companies/{cid}/issues")).await);
    let q = title.replace(' ', "+");
    let searched = find(
        s.ok_get(&format!("/api/companies/{cid}/issues?q={q}"))
            .await,
    );
    assert_eq!(page, searched, "both list paths");
    page
}

#[tokio::test]
async fn attention_responsibility_and_list_rollups_follow_the_tasks() {
    let s = TestServer::start().await;
    let company = s.company("Rollup Co").await;
    let cid = company["id"].as_str().unwrap();

    let blocker = s.issue(cid, json!({ "title": "Pour the footing" })).await;
    let bid = blocker["id"].as_str().unwrap();
    assert_eq!(blocker["responsibleUserId"], blocker["createdByUserId"]);
    assert!(blocker["responsibleUserId"].is_string(), "{blocker}");
    assert_eq!(blocker["blockerAttention"]["state"], "none");
    assert_eq!(blocker["reviewAttention"]["state"], "none");

    let blocked = s
        .issue(
            cid,
            json!({ "title": "Frame the walls", "status": "blocked", "blockedByIssueIds": [bid] }),
        )
        .await;
    let id = blocked["id"].as_str().unwrap();
    // Nobody works on the blocker: the blocked task needs attention, at it.
    let a = s.ok_get(&format!("/api/issues/{id}")).await["blockerAttention"].clone();
    assert_eq!(
        (a["state"].as_str(), a["reason"].as_str()),
        (Some("needs_attention"), Some("attention_required"))
    );
    assert_eq!(a["unresolvedBlockerCount"], 1);
    assert_eq!(a["terminalBlockerIssueId"], bid);
    assert_eq!(a["terminalBlocker"]["identifier"], blocker["identifier"]);
    assert_eq!(
        listed(&s, cid, id, "Frame the walls").await["blockerAttention"],
        a
    );

    // A person takes the blocker: covered.
    s.ok_patch(
        &format!("/api/issues/{bid}"),
        json!({ "assigneeUserId": "local-board" }),
    )
    .await;
    let a = s.ok_get(&format!("/api/issues/{id}")).await["blockerAttention"].clone();
    assert_eq!(
        (a["state"].as_str(), a["reason"].as_str()),
        (Some("covered"), Some("active_dependency"))
    );
    assert_eq!(
        (
            a["coveredBlockerCount"].as_i64(),
            a["blockingTreeLive"].as_bool()
        ),
        (Some(1), Some(true))
    );
    assert_eq!(
        listed(&s, cid, id, "Frame the walls").await["blockerAttention"],
        a
    );

    // In review with no one to act: stalled; with a person reviewing: covered.
    let review = s
        .issue(
            cid,
            json!({ "title": "Inspect the frame", "status": "in_review" }),
        )
        .await;
    let rid = review["id"].as_str().unwrap();
    assert_eq!(review["reviewAttention"]["state"], "stalled", "{review}");
    let r = s
        .ok_patch(
            &format!("/api/issues/{rid}"),
            json!({ "assigneeUserId": "local-board" }),
        )
        .await["reviewAttention"]
        .clone();
    assert_eq!(r["state"], "covered", "{r}");
    assert_eq!(r["paths"][0]["kind"], "human_reviewer");
    assert_eq!(r["paths"][0]["responder"], "local-board");
    let row = listed(&s, cid, rid, "Inspect the frame").await;
    assert_eq!(row["reviewAttention"], r);

    // The list's rollups: no run holds the task; its last activity is its
    // last comment when that is later than its last update.
    assert_eq!(row["activeRun"], Value::Null);
    assert_eq!(row["descriptionTruncated"], false);
    let comment = s
        .ok_post(
            &format!("/api/issues/{rid}/comments"),
            json!({ "body": "Looks square" }),
        )
        .await;
    let row = listed(&s, cid, rid, "Inspect the frame").await;
    let last = row["lastActivityAt"].as_str().unwrap();
    let updated = row["updatedAt"].as_str().unwrap();
    let commented = comment["createdAt"].as_str().unwrap();
    assert_eq!(last, Ord::max(updated, commented), "{row}");
    // A single task's answer carries no list rollups, as upstream's.
    let one = s.ok_get(&format!("/api/issues/{rid}")).await;
    assert!(
        one.get("lastActivityAt").is_none() && one.get("activeRun").is_none(),
        "{one}"
    );
}
