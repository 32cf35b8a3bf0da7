//! The board's Routines pages, black-box: the empty state, the list (its
//! assignee, schedule in words with cron and zone, next run), the detail
//! page (a Run now's run with its task by identifier, revisions, triggers,
//! the write buttons) and a viewer who sees no write buttons. And a person
//! making, running, pausing and resuming a routine in Chromium.

use crate::common;

use std::time::Duration;

use common::teams::{call, instance, join};
use common::TestServer;
use reqwest::Method;
use serde_json::{json, Value};

async fn setup(server: &TestServer) -> (String, String, Value) {
    let company = server.company("Routine Works").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let prefix = company["issuePrefix"].as_str().unwrap().to_string();
    let agent = server.agent(&cid, "Reporter", None).await;
    (cid, prefix, agent)
}

#[tokio::test]
async fn the_routine_pages_show_schedule_runs_by_task_identifier_and_revisions() {
    let server = TestServer::start().await;
    let (cid, p, agent) = setup(&server).await;

    let empty = server.page(&format!("/{p}/routines")).await;
    assert!(empty.contains("id=\"routines-empty\""), "{empty}");
    assert!(empty.contains("A routine is work that comes back"));
    assert!(empty.contains("data-api-form=\"new-routine\""));
    assert!(empty.contains("Fold into the running one"));
    assert!(empty.contains("Run each missed time, up to 25"));
    assert!(
        empty.contains(&format!("href=\"/{p}/routines\"")),
        "the nav names the page"
    );

    let (status, routine) = server
        .post(
            &format!("/api/companies/{cid}/routines"),
            json!({ "title": "Weekday standup notes", "description": "Summarise **yesterday**.",
                "assigneeAgentId": agent["id"], "concurrencyPolicy": "always_enqueue" }),
        )
        .await;
    assert_eq!(status, 201, "{routine}");
    let rid = routine["id"].as_str().unwrap();
    let (status, made) = server
        .post(
            &format!("/api/routines/{rid}/triggers"),
            json!({ "kind": "schedule", "cronExpression": "0 9 * * 1-5", "timezone": "Europe/Berlin" }),
        )
        .await;
    assert_eq!(status, 201, "{made}");
    let next = made["trigger"]["nextRunAt"].as_str().unwrap().to_string();

    let list = server.page(&format!("/{p}/routines")).await;
    assert!(!list.contains("routines-empty"));
    assert!(list.contains(&format!("href=\"/{p}/routines/{rid}\"")));
    assert!(list.contains("Weekday standup notes"));
    assert!(list.contains("for Reporter"), "the assignee by name");
    assert!(list.contains("Every weekday 09:00"));
    assert!(list.contains("<code>0 9 * * 1-5</code>"));
    assert!(list.contains("Europe/Berlin"));
    assert!(
        list.contains(&format!("datetime=\"{next}\"")),
        "the next run: {list}"
    );
    assert!(list.contains("never run"));

    let (status, run) = server
        .post(&format!("/api/routines/{rid}/run"), json!({}))
        .await;
    assert_eq!(status, 202, "{run}");
    let issue_id = run["linkedIssueId"].as_str().unwrap();
    let issue = server.ok_get(&format!("/api/issues/{issue_id}")).await;
    let ident = issue["identifier"].as_str().unwrap();

    let detail = server.page(&format!("/{p}/routines/{rid}")).await;
    assert!(detail.contains("Weekday standup notes"));
    assert!(
        detail.contains("<strong>yesterday</strong>"),
        "instructions rendered"
    );
    assert!(detail.contains("always starts a new one"));
    let run_row = detail
        .split(&format!(
            "data-routine-run=\"{}\"",
            run["id"].as_str().unwrap()
        ))
        .nth(1)
        .expect("the run is listed");
    let run_row = run_row.split("</tr>").next().unwrap();
    assert!(
        run_row.contains(&format!("href=\"/{p}/tasks/{ident}\"")),
        "{run_row}"
    );
    assert!(run_row.contains("manual"));
    assert!(
        !run_row.contains(issue_id),
        "a task is named by identifier, never its id"
    );
    assert!(detail.contains(&format!("data-url=\"/api/routines/{rid}/run\"")));
    assert!(detail.contains(">Pause<"));
    assert!(detail.contains(">Archive<"));
    assert!(detail.contains("Every weekday 09:00"));
    assert!(detail.contains("data-api-form=\"new-trigger\""));
    // Revisions: created, then the trigger added.
    let revisions = server
        .ok_get(&format!("/api/routines/{rid}/revisions"))
        .await;
    let revisions = revisions.as_array().unwrap();
    assert!(revisions.len() >= 2, "{revisions:?}");
    for r in revisions {
        assert!(detail.contains(&format!("data-revision=\"{}\"", r["revisionNumber"])));
    }
    let oldest = revisions.last().unwrap();
    assert!(detail.contains(&format!(
        "/api/routines/{rid}/revisions/{}/restore",
        oldest["id"].as_str().unwrap()
    )));

    // The list now leads with the last run's outcome and its task.
    let list = server.page(&format!("/{p}/routines")).await;
    assert!(
        list.contains(&format!("href=\"/{p}/tasks/{ident}\"")),
        "{list}"
    );

    // Paused: the list says so instead of a next run; the page offers Resume.
    server
        .ok_patch(
            &format!("/api/routines/{rid}"),
            json!({ "status": "paused" }),
        )
        .await;
    let list = server.page(&format!("/{p}/routines")).await;
    assert!(list.contains("— (paused)"));
    let detail = server.page(&format!("/{p}/routines/{rid}")).await;
    assert!(detail.contains(">Resume<") && !detail.contains(">Pause<"));

    // A webhook trigger's secret is never on the page.
    let (status, hook) = server
        .post(
            &format!("/api/routines/{rid}/triggers"),
            json!({ "kind": "webhook" }),
        )
        .await;
    assert_eq!(status, 201, "{hook}");
    let secret = hook["secretMaterial"]["webhookSecret"].as_str().unwrap();
    let detail = server.page(&format!("/{p}/routines/{rid}")).await;
    assert!(detail.contains("Rotate secret"));
    assert!(detail.contains(hook["trigger"]["publicId"].as_str().unwrap()));
    assert!(!detail.contains(secret));

    // Another company's routine is not found under this prefix.
    let other = server.company("Elsewhere").await;
    let op = other["issuePrefix"].as_str().unwrap();
    let res = server
        .client()
        .get(server.url(&format!("/{op}/routines/{rid}")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let res = server
        .client()
        .get(server.url(&format!("/{p}/routines/nope")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
}

#[tokio::test]
async fn a_viewer_sees_routines_without_write_buttons() {
    let (server, owner) = instance(&[]).await;
    let (_, company) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Viewed" })),
    )
    .await;
    let cid = company["id"].as_str().unwrap();
    let p = company["issuePrefix"].as_str().unwrap();
    let viewer = join(&server, &owner, cid, "viewer", "view@example.com").await;
    let (_, agent) = call(&server, Method::POST, &format!("/api/companies/{cid}/agents"), Some(&owner),
        Some(json!({ "name": "Worker", "adapterType": "process", "adapterConfig": { "command": "true" } }))).await;
    let (status, routine) = call(
        &server,
        Method::POST,
        &format!("/api/companies/{cid}/routines"),
        Some(&owner),
        Some(json!({ "title": "Nightly audit", "assigneeAgentId": agent["id"] })),
    )
    .await;
    assert_eq!(status, 201, "{routine}");
    let rid = routine["id"].as_str().unwrap();

    for (who, can) in [(&owner, true), (&viewer, false)] {
        let (status, list) = call(
            &server,
            Method::GET,
            &format!("/{p}/routines"),
            Some(who),
            None,
        )
        .await;
        assert_eq!(status, 200);
        let list = list.as_str().unwrap();
        assert!(list.contains("Nightly audit"));
        assert_eq!(list.contains("data-api-form=\"new-routine\""), can);
        let (status, detail) = call(
            &server,
            Method::GET,
            &format!("/{p}/routines/{rid}"),
            Some(who),
            None,
        )
        .await;
        assert_eq!(status, 200);
        let detail = detail.as_str().unwrap();
        assert!(detail.contains("Nightly audit"));
        assert_eq!(detail.contains(">Run now<"), can, "{detail}");
        assert_eq!(detail.contains(">Pause<"), can);
        assert_eq!(detail.contains("data-api-form=\"new-trigger\""), can);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_makes_runs_pauses_and_resumes_a_routine_in_the_browser() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    common::browser::run("routines", &server.base, Duration::from_secs(150)).await;
    // What the browser did is in the database: one routine, a schedule in
    // the browser's zone, a manual run with its task, and it ends active.
    let companies = server.ok_get("/api/companies").await;
    let cid = companies[0]["id"].as_str().unwrap();
    let routines = server
        .ok_get(&format!("/api/companies/{cid}/routines"))
        .await;
    let routines = routines.as_array().unwrap();
    assert_eq!(routines.len(), 1, "{routines:?}");
    let r = &routines[0];
    assert_eq!(r["status"], "active");
    assert_eq!(r["concurrencyPolicy"], "skip_if_active");
    assert_eq!(r["activityGatePolicy"], "require_external_activity");
    assert_eq!(r["triggers"][0]["cronExpression"], "30 8 * * 1-5");
    assert_eq!(r["triggers"][0]["timezone"], "Europe/Berlin");
    let rid = r["id"].as_str().unwrap();
    // Run now dispatches before it answers, so the run is there already.
    let runs = server.ok_get(&format!("/api/routines/{rid}/runs")).await;
    assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
    assert_eq!(runs[0]["source"], "manual");
    assert!(runs[0]["linkedIssue"]["identifier"].is_string());
}
