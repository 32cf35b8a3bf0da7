//! The board's inbox of failures: a failed run shows once per agent and task
//! with its cause, time and links, repeats fold into it, Dismiss puts it away
//! (and it can be restored), a later success clears it, and the Inbox badge
//! follows. Upstream's inbox-dismissals API refuses bad input field by field.
//! In a browser, a failure is noticed from another page.

use crate::common;

use std::time::Duration;

use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// An agent whose every run fails with a clear error.
async fn failing_agent(server: &TestServer, cid: &str) -> Value {
    server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Flaky", "adapterType": "process",
                "adapterConfig": { "command": "sh", "args": ["-c", "echo 'disk full' >&2; exit 3"] } }),
        )
        .await
}

async fn runs_of(server: &TestServer, cid: &str, agent: &str, n: usize, status: &str) -> Value {
    server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={agent}"),
            60,
            |runs| {
                let runs = runs.as_array().unwrap();
                runs.len() >= n
                    && runs
                        .iter()
                        .all(|r| r["status"] != "queued" && r["status"] != "running")
                    && runs[0]["status"] == status
            },
        )
        .await
}

fn badge(page: &str) -> Option<String> {
    let at = page.find("id=\"open-failures\"")?;
    let rest = &page[at..];
    let start = rest.find('>')? + 1;
    let end = rest.find('<')?;
    Some(rest[start..end].to_string())
}

#[tokio::test]
async fn failures_fold_dismiss_restore_and_clear_on_success() {
    let server = TestServer::start().await;
    let company = server.company("Inbox Co").await;
    let cid = company["id"].as_str().unwrap();
    let p = company["issuePrefix"].as_str().unwrap();
    let agent = failing_agent(&server, cid).await;
    let aid = agent["id"].as_str().unwrap();
    let task = server
        .issue(
            cid,
            json!({ "title": "Fill the disk", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let ident = task["identifier"].as_str().unwrap();
    let runs = runs_of(&server, cid, aid, 1, "failed").await;
    let first = runs[0]["id"].as_str().unwrap().to_string();

    // A retry fails again: one item, the earlier failure folded in.
    server
        .wake(
            &aid,
            json!({ "failedRunId": first, "reason": "retry_failed_run" }),
        )
        .await;
    let runs = runs_of(&server, cid, aid, 2, "failed").await;
    let newest = runs[0]["id"].as_str().unwrap().to_string();
    assert_ne!(newest, first);
    let inbox = server.page(&format!("/{p}/inbox")).await;
    assert_eq!(inbox.matches("data-failed-run=").count(), 1, "{inbox}");
    assert!(inbox.contains(&format!("data-failed-run=\"{newest}\"")));
    assert!(inbox.contains(ident), "the item does not name the task");
    assert!(
        inbox.contains("disk full") || inbox.contains("exit"),
        "no cause shown"
    );
    assert!(
        inbox.contains("(+1 earlier)"),
        "repeats are not folded: {inbox}"
    );
    assert!(inbox.contains(&format!(
        "/{p}/agents/{}/runs/{newest}",
        agent["urlKey"].as_str().unwrap()
    )));
    assert_eq!(badge(&inbox).as_deref(), Some("1"));

    // Dismissed: gone from the inbox and the badge, listed under Dismissed.
    let made = server
        .ok_post(
            &format!("/api/companies/{cid}/inbox-dismissals"),
            json!({ "itemKey": format!("run:{newest}") }),
        )
        .await;
    assert_eq!(made["kind"], "dismiss");
    let inbox = server.page(&format!("/{p}/inbox")).await;
    assert_eq!(inbox.matches("data-failed-run=").count(), 0, "{inbox}");
    assert_eq!(badge(&inbox), None);
    let dismissed = server.page(&format!("/{p}/inbox?tab=dismissed")).await;
    assert!(dismissed.contains(&format!("data-failed-run=\"{newest}\"")));
    let (_, listed) = server
        .get(&format!("/api/companies/{cid}/inbox-dismissals"))
        .await;
    assert_eq!(listed[0]["itemKey"], format!("run:{newest}"));
    let (status, _) = server
        .delete(&format!(
            "/api/companies/{cid}/inbox-dismissals/run:{newest}"
        ))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = server
        .delete(&format!(
            "/api/companies/{cid}/inbox-dismissals/run:{newest}"
        ))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        badge(&server.page(&format!("/{p}/inbox")).await).as_deref(),
        Some("1")
    );

    // Fixed: the next run on the task succeeds, and the failure leaves.
    server
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "adapterConfig": { "command": "true" } }),
        )
        .await;
    server
        .wake(
            &aid,
            json!({ "failedRunId": newest, "reason": "retry_failed_run" }),
        )
        .await;
    runs_of(&server, cid, aid, 3, "succeeded").await;
    let inbox = server.page(&format!("/{p}/inbox")).await;
    assert_eq!(inbox.matches("data-failed-run=").count(), 0, "{inbox}");
    assert_eq!(badge(&inbox), None);
}

#[tokio::test]
async fn dismissals_refuse_bad_input_field_by_field() {
    let server = TestServer::start().await;
    let company = server.company("Strict").await;
    let cid = company["id"].as_str().unwrap();
    let url = format!("/api/companies/{cid}/inbox-dismissals");
    for (body, field) in [
        (json!({ "itemKey": "task:1" }), "itemKey"),
        (json!({ "itemKey": "run:\u{0}x" }), "NUL"),
        (
            json!({ "itemKey": format!("run:{}", "x".repeat(5000)) }),
            "itemKey",
        ),
        (json!({ "itemKey": "run:1", "kind": "forget" }), "kind"),
        (
            json!({ "itemKey": "run:1", "kind": "snooze" }),
            "snoozedUntil",
        ),
        (
            json!({ "itemKey": "run:1", "kind": "snooze", "snoozedUntil": "tomorrow" }),
            "snoozedUntil",
        ),
    ] {
        let (status, err) = server.post(&url, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body} -> {err}");
        assert!(
            err.to_string().contains(field),
            "{body}: {err} does not name {field}"
        );
    }
    let (status, _) = server.post(&url, json!({ "itemKey": 12 })).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = server
        .post(
            "/api/companies/nope/inbox-dismissals",
            json!({ "itemKey": "run:1" }),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A snooze is kept with its time; dismissing again replaces it.
    let snoozed = server
        .ok_post(
            &url,
            json!({ "itemKey": "approval:1", "kind": "snooze", "snoozedUntil": "2030-01-01T09:00:00+02:00" }),
        )
        .await;
    assert_eq!(snoozed["snoozedUntil"], "2030-01-01T07:00:00.000Z");
    let again = server
        .ok_post(&url, json!({ "itemKey": "approval:1" }))
        .await;
    let (_, listed) = server.get(&url).await;
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["kind"], "dismiss");
    // The same item's dismissal keeps its id and when it was first made,
    // as upstream's does; updatedAt and dismissedAt say when it was last set.
    assert_eq!(snoozed["id"].as_str().unwrap().len(), 36, "{snoozed}");
    assert_eq!(again["id"], snoozed["id"]);
    assert_eq!(listed[0]["id"], snoozed["id"]);
    assert_eq!(listed[0]["createdAt"], snoozed["createdAt"]);
    assert_eq!(listed[0]["updatedAt"], again["updatedAt"]);
    assert_eq!(listed[0]["dismissedAt"], again["updatedAt"]);
    assert!(listed[0]["updatedAt"].as_str() >= snoozed["updatedAt"].as_str());
    let other = server.ok_post(&url, json!({ "itemKey": "run:1" })).await;
    assert_ne!(other["id"], snoozed["id"], "an id per item");

    // Another company's agent cannot see or write this company's inbox.
    let other = server.company("Other").await;
    let stranger = server
        .agent(other["id"].as_str().unwrap(), "Stranger", None)
        .await;
    let token = server.key(stranger["id"].as_str().unwrap()).await;
    let (status, _) = server.as_agent(&token, None, "GET", &url, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failure_is_noticed_from_another_page() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    common::browser::run("notices", &server.base, Duration::from_secs(120)).await;
}
