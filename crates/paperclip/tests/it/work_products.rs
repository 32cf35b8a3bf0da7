//! Work products, black-box: the record and its rules (closed types and
//! states, a paperclip artifact needs its attachment, one primary per type),
//! its activity, the live event that makes a card appear, the task and
//! Artifacts pages, and upstream's CLI commands for files and products.

use crate::common;

use std::time::Duration;

use common::upstream::{upstream_cli, Cli};
use common::TestServer;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

fn prefix(ident: &str) -> &str {
    ident.split('-').next().unwrap()
}

async fn setup(s: &TestServer) -> (String, String, String) {
    let cid = id(&s.company("Products Co").await);
    let issue = s.issue(&cid, json!({ "title": "Ship it" })).await;
    (
        cid,
        id(&issue),
        issue["identifier"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn work_products_are_typed_validated_logged_and_deleted() {
    let s = TestServer::start().await;
    let (cid, iid, _) = setup(&s).await;
    let path = format!("/api/issues/{iid}/work-products");
    let pr = json!({
        "type": "pull_request", "provider": "github", "title": "Add the parser",
        "url": "https://github.com/acme/app/pull/12", "status": "ready_for_review",
        "isPrimary": true,
        "metadata": { "repo": "acme/app", "number": 12, "headRef": "feat/parser", "baseRef": "main", "state": "open" },
    });
    let (status, first) = s.post(&path, pr.clone()).await;
    assert_eq!(status, 201, "{first}");
    for (k, v) in [
        ("companyId", json!(cid)),
        ("issueId", json!(iid)),
        ("type", json!("pull_request")),
        ("reviewState", json!("none")),
        ("healthStatus", json!("unknown")),
        ("isPrimary", json!(true)),
        ("createdByRunId", Value::Null),
    ] {
        assert_eq!(first[k], v, "{k}: {first}");
    }
    assert_eq!(first["metadata"]["headRef"], "feat/parser");

    // Closed vocabularies and required fields are 400s naming the field.
    for (bad, field) in [
        (
            json!({ "type": "file", "provider": "x", "title": "t" }),
            "type",
        ),
        (
            json!({ "type": "branch", "provider": "x", "title": "t", "status": "someday" }),
            "status",
        ),
        (
            json!({ "type": "branch", "provider": "x", "title": "t", "reviewState": "maybe" }),
            "reviewState",
        ),
        (
            json!({ "type": "branch", "provider": "x", "title": "t", "healthStatus": "ok" }),
            "healthStatus",
        ),
        (json!({ "type": "branch", "provider": "x" }), "title"),
        (
            json!({ "type": "branch", "provider": "", "title": "t" }),
            "provider",
        ),
        (
            json!({ "type": "branch", "provider": "x", "title": "t", "url": "javascript:alert(1)" }),
            "url",
        ),
        (
            json!({ "type": "branch", "provider": "x", "title": "t", "metadata": [1] }),
            "metadata",
        ),
    ] {
        let (status, err) = s.post(&path, bad.clone()).await;
        assert_eq!(status, 400, "{bad}: {err}");
        assert!(err.to_string().contains(field), "{field}: {err}");
    }
    // A paperclip artifact needs an attachment of this very issue.
    let (status, err) = s
        .post(
            &path,
            json!({ "type": "artifact", "provider": "paperclip", "title": "f" }),
        )
        .await;
    assert_eq!(status, 422, "{err}");
    let (status, err) = s
        .post(
            &path,
            json!({ "type": "artifact", "provider": "paperclip", "title": "f",
            "metadata": { "attachmentId": "00000000-0000-7000-8000-000000000000" } }),
        )
        .await;
    assert_eq!(status, 422, "{err}");
    let (status, err) = s
        .post(
            &path,
            json!({ "type": "branch", "provider": "git", "title": "b",
            "createdByRunId": "00000000-0000-7000-8000-000000000000" }),
        )
        .await;
    assert_eq!(status, 422, "{err}");

    // One primary per type: a new primary PR takes the flag; a commit keeps its own.
    let commit = s
        .ok_post(
            &path,
            json!({ "type": "commit", "provider": "git", "title": "abc", "isPrimary": true,
            "metadata": { "sha": "0123456789abcdef", "branch": "feat/parser" } }),
        )
        .await;
    let second = s
        .ok_post(&path, json!({ "type": "pull_request", "provider": "github", "title": "Follow-up", "isPrimary": true }))
        .await;
    let list = s.ok_get(&path).await;
    let flag = |wid: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == wid)
            .unwrap()["isPrimary"]
            .clone()
    };
    assert_eq!(flag(&id(&first)), false);
    assert_eq!(flag(&id(&second)), true);
    assert_eq!(flag(&id(&commit)), true);
    assert_eq!(list[0]["isPrimary"], true, "primary first: {list}");

    // PATCH: every field optional, null clears, the result is the record.
    let patched = s
        .ok_patch(
            &format!("/api/work-products/{}", id(&first)),
            json!({ "status": "merged", "summary": null, "healthStatus": "healthy" }),
        )
        .await;
    assert_eq!(patched["status"], "merged");
    assert_eq!(patched["healthStatus"], "healthy");
    assert_eq!(patched["title"], "Add the parser");
    let (status, _) = s
        .patch(
            &format!("/api/work-products/{}", id(&first)),
            json!({ "status": "nope" }),
        )
        .await;
    assert_eq!(status, 400);

    let (status, removed) = s
        .delete(&format!("/api/work-products/{}", id(&commit)))
        .await;
    assert_eq!(status, 200, "{removed}");
    assert_eq!(removed["id"], commit["id"]);
    assert_eq!(
        s.delete(&format!("/api/work-products/{}", id(&commit)))
            .await
            .0,
        404
    );
    assert_eq!(
        s.patch(&format!("/api/work-products/{}", id(&commit)), json!({}))
            .await
            .0,
        404
    );
    assert_eq!(s.ok_get(&path).await.as_array().unwrap().len(), 2);

    let log = s
        .ok_get(&format!("/api/companies/{cid}/activity?limit=100"))
        .await;
    let entry = |action: &str| {
        log.as_array()
            .unwrap()
            .iter()
            .find(|e| e["action"] == action)
            .cloned()
            .unwrap_or_else(|| panic!("{action} logged: {log}"))
    };
    assert_eq!(
        entry("issue.work_product_created")["details"]["provider"],
        "github"
    );
    let updated = entry("issue.work_product_updated");
    assert_eq!(
        updated["details"]["changedKeys"],
        json!(["summary", "status", "healthStatus"])
    );
    assert_eq!(
        entry("issue.work_product_deleted")["details"]["type"],
        "commit"
    );
}

#[tokio::test]
async fn a_card_appears_live_and_on_the_pages() {
    let s = TestServer::start().await;
    let (cid, iid, ident) = setup(&s).await;
    let ws_url = format!(
        "{}/api/companies/{cid}/events/ws",
        s.base.replace("http://", "ws://")
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(&ws_url).await.unwrap();
    let product = s
        .ok_post(&format!("/api/issues/{iid}/work-products"), json!({
            "type": "pull_request", "provider": "github", "title": "Live PR",
            "url": "https://github.com/acme/app/pull/7", "status": "ready_for_review",
            "metadata": { "headRef": "feat/live", "state": "open", "repo": "acme/app", "number": 7 } }))
        .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut kinds = Vec::new();
    loop {
        let next = tokio::time::timeout_at(deadline, ws.next())
            .await
            .expect("the live event");
        if let Some(Ok(Message::Text(text))) = next {
            let e: Value = serde_json::from_str(&text).unwrap();
            kinds.push(e["type"].as_str().unwrap_or("").to_string());
            if e["type"] == "issue.updated" && e["entityId"] == iid.as_str() {
                assert_eq!(e["payload"]["workProductId"], product["id"], "{e}");
                break;
            }
        }
    }
    // The page the event re-renders shows the card.
    let page = s.page(&format!("/{}/tasks/{ident}", prefix(&ident))).await;
    assert!(
        page.contains(&format!("data-work-product-id=\"{}\"", id(&product))),
        "card on the task page"
    );
    let text = common::visible_text(&page);
    for expected in [
        "Live PR",
        "PR open",
        "feat/live",
        "acme/app#7",
        "ready for review",
    ] {
        assert!(text.contains(expected), "{expected} in {text}");
    }
    assert!(page.contains("data-upload-issue"), "the upload form");
    let artifacts = s.page(&format!("/{}/artifacts", prefix(&ident))).await;
    let text = common::visible_text(&artifacts);
    assert!(
        text.contains("Recorded outside a run") && text.contains(&ident),
        "{text}"
    );
    assert!(
        artifacts.contains(&format!("href=\"/{}/artifacts\"", prefix(&ident))),
        "linked from the nav"
    );
}

#[tokio::test]
async fn the_artifacts_page_groups_by_run_with_agent_and_task() {
    let s = TestServer::start().await;
    let (cid, iid, ident) = setup(&s).await;
    let agent = s.script_agent(&cid, "Builder", "true\n", json!({})).await;
    let aid = id(&agent);
    s.wake(&aid, json!({})).await;
    let run = s.only_run_succeeded(&cid, &aid).await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let key = s.key(&aid).await;
    let (status, made) = s
        .as_agent(
            &key,
            Some(&run),
            "POST",
            &format!("/api/issues/{iid}/work-products"),
            Some(json!({ "type": "branch", "provider": "git", "title": "feat/x" })),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    assert_eq!(
        made["createdByRunId"],
        run.as_str(),
        "an agent's product is its run's"
    );
    let (status, _) = s
        .as_agent(
            &key,
            None,
            "POST",
            &format!("/api/issues/{iid}/work-products"),
            Some(json!({ "type": "branch", "provider": "git", "title": "no run" })),
        )
        .await;
    assert_eq!(status, 401, "an agent writes within a run");
    let page = s.page(&format!("/{}/artifacts", prefix(&ident))).await;
    assert!(page.contains(&format!("data-run-id=\"{run}\"")));
    let text = common::visible_text(&page);
    assert!(text.contains(&format!("Run {}", &run[..8])), "{text}");
    assert!(text.contains("Builder") && text.contains(&ident), "{text}");
    assert!(
        !text.contains(&iid),
        "tasks are named by identifier, never by id: {text}"
    );
}

#[tokio::test]
async fn the_upstream_cli_manages_attachments_and_work_products() {
    let Some(path) = upstream_cli() else { return };
    let s = TestServer::start().await;
    let cli = Cli::new(path, &s);
    let (cid, iid, _) = setup(&s).await;
    let file = s.data_dir.join("notes.txt");
    std::fs::write(&file, "cli bytes\n").unwrap();
    let uploaded = cli
        .ok(&[
            "issue",
            "attachment:upload",
            &iid,
            "--file",
            file.to_str().unwrap(),
            "-C",
            &cid,
            "--json",
        ])
        .await
        .json();
    assert_eq!(uploaded["contentType"], "text/plain", "{uploaded}");
    assert_eq!(uploaded["originalFilename"], "notes.txt");
    let aid = id(&uploaded);
    let listed = cli
        .ok(&["issue", "attachments", &iid, "--json"])
        .await
        .json();
    assert_eq!(listed[0]["id"], aid.as_str());
    let out = s.data_dir.join("back.txt");
    cli.ok(&[
        "issue",
        "attachment:download",
        &aid,
        "--out",
        out.to_str().unwrap(),
    ])
    .await;
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "cli bytes\n");
    let printed = cli.ok(&["issue", "attachment:download", &aid]).await;
    assert_eq!(printed.stdout, "cli bytes\n");

    let payload = json!({ "type": "artifact", "provider": "paperclip", "title": "Notes",
        "metadata": { "attachmentId": aid } })
    .to_string();
    let created = cli
        .ok(&[
            "issue",
            "work-product:create",
            &iid,
            "--payload-json",
            &payload,
            "--json",
        ])
        .await
        .json();
    assert_eq!(
        created["metadata"]["originalFilename"], "notes.txt",
        "{created}"
    );
    let wid = id(&created);
    let updated = cli
        .ok(&[
            "issue",
            "work-product:update",
            &wid,
            "--payload-json",
            r#"{"status":"approved"}"#,
            "--json",
        ])
        .await
        .json();
    assert_eq!(updated["status"], "approved");
    let products = cli
        .ok(&["issue", "work-products", &iid, "--json"])
        .await
        .json();
    assert_eq!(products.as_array().unwrap().len(), 1);
    cli.ok(&["issue", "work-product:delete", &wid, "--json"])
        .await;
    cli.ok(&["issue", "attachment:delete", &aid, "--json"])
        .await;
    assert_eq!(
        s.ok_get(&format!("/api/issues/{iid}/work-products")).await,
        json!([])
    );
    assert_eq!(
        s.ok_get(&format!("/api/issues/{iid}/attachments")).await,
        json!([])
    );
}

#[tokio::test]
async fn a_runs_result_registers_its_work_products_with_its_end() {
    use axum::routing::post;
    // An http agent whose answer (the run's result) lists what it produced:
    // one good product, one with a type that does not exist.
    let app = axum::Router::new().route(
        "/run",
        post(|| async {
            axum::Json(json!({ "ok": true, "workProducts": [
                { "type": "pull_request", "provider": "github", "title": "From the result",
                  "url": "https://github.com/acme/app/pull/3", "status": "ready_for_review",
                  "createdByRunId": "00000000-0000-7000-8000-000000000000",
                  "metadata": { "state": "open", "headRef": "feat/result" } },
                { "type": "file", "provider": "x", "title": "not a type" },
            ] }))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hook = format!("http://{}/run", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let s = TestServer::start().await;
    let (cid, iid, _) = setup(&s).await;
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Hooked", "adapterType": "http", "adapterConfig": { "url": hook } }),
        )
        .await;
    let aid = id(&agent);
    s.ok_patch(
        &format!("/api/issues/{iid}"),
        json!({ "assigneeAgentId": aid, "status": "todo" }),
    )
    .await;
    let runs = s.only_run_succeeded(&cid, &aid).await;
    let run = runs[0]["id"].as_str().unwrap().to_string();
    // Read once the run is seen finished: written with its end, not after.
    let products = s.ok_get(&format!("/api/issues/{iid}/work-products")).await;
    let products = products.as_array().unwrap();
    assert_eq!(products.len(), 1, "{products:?}");
    assert_eq!(products[0]["title"], "From the result");
    assert_eq!(
        products[0]["createdByRunId"],
        run.as_str(),
        "the run's own, whatever it said"
    );
    assert_eq!(
        runs[0]["resultJson"]["workProducts"][0]["title"],
        "From the result"
    );
    let events = s.ok_get(&format!("/api/heartbeat-runs/{run}/events")).await;
    let skipped: Vec<&Value> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["eventType"] == "work_product.skipped")
        .collect();
    assert_eq!(skipped.len(), 1, "{events}");
    assert!(
        skipped[0]["message"]
            .as_str()
            .unwrap()
            .contains("workProducts[1]"),
        "{events}"
    );
    let log = s
        .ok_get(&format!("/api/companies/{cid}/activity?limit=100"))
        .await;
    let created = log
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "issue.work_product_created")
        .unwrap();
    assert_eq!(created["details"]["source"], "run_result");
    assert_eq!(created["runId"], run.as_str());
}
