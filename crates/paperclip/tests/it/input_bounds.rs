//! Hostile input, sent the way an attacker would: every bound answers with a
//! 400 naming the field before the store is touched, nothing answers 500,
//! and no single request holds up the writes of others.

use crate::common;

use std::time::{Duration, Instant};

use common::TestServer;
use serde_json::{json, Value};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// The first validation issue of a 400.
fn issue_of(status: reqwest::StatusCode, body: &Value) -> &Value {
    assert_eq!(status, 400, "{body}");
    &body["details"][0]
}

/// A direct connection to the server's database, to plant rows that older
/// versions let in.
async fn db(server: &TestServer) -> sqlx::AnyPool {
    let url = common::database_url(&server.data_dir, &server.database_url);
    common::database(&url).await
}

async fn status_of(server: &TestServer, path: &str) -> u16 {
    let resp = server.client().get(server.url(path)).send().await.unwrap();
    resp.status().as_u16()
}

#[tokio::test]
async fn max_int_cost_events_are_refused_and_old_poisoned_rows_do_not_break_any_page() {
    let server = TestServer::start().await;
    let company = server.company("Poison Co").await;
    let cid = id(&company);
    let agent = server.agent(&cid, "Spender", None).await;
    let aid = id(&agent);
    let path = format!("/api/companies/{cid}/cost-events");
    for field in [
        "inputTokens",
        "cachedInputTokens",
        "outputTokens",
        "costCents",
    ] {
        let (status, body) = server
            .post(&path, json!({ "agentId": aid, field: i64::MAX }))
            .await;
        let issue = issue_of(status, &body);
        assert_eq!(issue["path"], json!([field]));
        assert_eq!(issue["code"], "too_big");
    }
    // At the bounds, accepted.
    server
        .ok_post(
            &path,
            json!({ "agentId": aid, "inputTokens": 10_000_000_000u64, "costCents": 10_000_000_000u64 }),
        )
        .await;
    server
        .ok_post(
            &path,
            json!({ "agentId": aid, "inputTokens": 5, "costCents": 1 }),
        )
        .await;
    // Rows written before the bounds existed: both at i64::MAX.
    let pool = db(&server).await;
    let postgres = server
        .database_url
        .as_deref()
        .is_some_and(|u| u.starts_with("postgres"));
    sqlx::query(&common::bound_as_text(
        "UPDATE cost_events SET input_tokens = 9223372036854775807, \
         output_tokens = 9223372036854775807, cached_input_tokens = 9223372036854775807, \
         cost_cents = 9223372036854775807 WHERE company_id = $1",
        postgres,
    ))
    .bind(&cid)
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;

    let prefix = company["issuePrefix"].as_str().unwrap();
    let url_key = agent["urlKey"].as_str().unwrap_or(&aid);
    let pages = [
        format!("/api/companies/{cid}/costs/summary"),
        format!("/api/companies/{cid}/costs/by-agent"),
        format!("/api/companies/{cid}/costs/by-project"),
        format!("/api/companies/{cid}/costs/by-model"),
        format!("/api/companies/{cid}/costs/by-issue"),
        format!("/api/companies/{cid}/cost-events"),
        format!("/api/companies/{cid}/dashboard"),
        format!("/api/companies/{cid}/budget-incidents"),
        format!("/api/companies/{cid}/agents"),
        format!("/api/companies/{cid}"),
        "/api/companies".to_string(),
        format!("/api/agents/{aid}"),
        format!("/api/agents/{aid}/runtime-state"),
        format!("/{prefix}/dashboard"),
        format!("/{prefix}/costs"),
        format!("/{prefix}/agents"),
        format!("/{prefix}/agents/{url_key}"),
    ];
    for page in &pages {
        assert_eq!(status_of(&server, page).await, 200, "GET {page}");
    }
    let state = server
        .ok_get(&format!("/api/agents/{aid}/runtime-state"))
        .await;
    let summary = server
        .ok_get(&format!("/api/companies/{cid}/costs/summary"))
        .await;
    assert_eq!(
        summary["spendCents"], 20_000_000_000i64,
        "each old row counts as the bound: {summary} {state}"
    );
    // The first read kept when the state began (upstream writes its row
    // then); later reads agree.
    let again = server
        .ok_get(&format!("/api/agents/{aid}/runtime-state"))
        .await;
    assert_eq!(again["createdAt"], state["createdAt"]);
    assert!(state["createdAt"].as_str() >= agent["createdAt"].as_str());
    // Recording still works on top of the poisoned rows (budgets sum them).
    server
        .ok_post(&path, json!({ "agentId": aid, "costCents": 1 }))
        .await;
}

#[tokio::test]
async fn huge_arrays_are_refused_before_the_store_and_do_not_delay_other_writes() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Flood Co").await);
    let agent = id(&server.agent(&cid, "Worker", None).await);
    let target = id(&server.issue(&cid, json!({ "title": "Target" })).await);
    let bystander = id(&server.issue(&cid, json!({ "title": "Bystander" })).await);
    let flood: Vec<String> = (0..33_000).map(|i| format!("l{i}")).collect();
    let statuses = vec!["todo"; 33_000];

    let attacks = [
        (
            format!("/api/issues/{target}"),
            "PATCH",
            json!({ "labelIds": flood }),
            "labelIds",
        ),
        (
            format!("/api/issues/{target}"),
            "PATCH",
            json!({ "blockedByIssueIds": flood }),
            "blockedByIssueIds",
        ),
        (
            format!("/api/companies/{cid}/issues"),
            "POST",
            json!({ "title": "t", "labelIds": flood }),
            "labelIds",
        ),
        (
            format!("/api/issues/{target}/checkout"),
            "POST",
            json!({ "agentId": agent, "expectedStatuses": statuses }),
            "expectedStatuses",
        ),
    ];
    for (path, method, body, field) in attacks {
        let big = {
            let (path, body) = (path.clone(), body.clone());
            let client = server.client().clone();
            let url = server.url(&path);
            let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
            tokio::spawn(async move {
                let started = Instant::now();
                let resp = client
                    .request(method, url)
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                let status = resp.status();
                let body: Value = resp.json().await.unwrap();
                (status, body, started.elapsed())
            })
        };
        // A small write while the big one is in flight.
        let started = Instant::now();
        server
            .ok_patch(
                &format!("/api/issues/{bystander}"),
                json!({ "title": format!("Bystander {field}") }),
            )
            .await;
        let small = started.elapsed();
        let (status, body, took) = big.await.unwrap();
        let issue = issue_of(status, &body);
        assert_eq!(issue["path"], json!([field]), "{method} {path}");
        assert!(issue["message"].as_str().unwrap().contains(field), "{body}");
        assert!(took < Duration::from_secs(2), "{field} refused in {took:?}");
        assert!(
            small < Duration::from_secs(1),
            "a small write waited {small:?} behind {field}"
        );
    }
    // Nothing of the refused requests was written.
    let target = server.ok_get(&format!("/api/issues/{target}")).await;
    assert_eq!(target["labelIds"], json!([]));
    assert_eq!(target["status"], "backlog");
    let (status, body) = server
        .post(
            &format!("/api/issues/{}/checkout", target["id"].as_str().unwrap()),
            json!({ "agentId": agent, "expectedStatuses": ["backlog", "backlog", "todo"] }),
        )
        .await;
    assert_eq!(
        status, 200,
        "repeated statuses within the bound are fine: {body}"
    );
}

#[tokio::test]
async fn cycles_are_refused_across_long_chains_quickly_and_pages_stay_small() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Chain Co").await);
    let path = format!("/api/companies/{cid}/issues");
    // 501 issues: each blocked by, and a child of, the one before it.
    let mut chain: Vec<String> = Vec::new();
    for n in 0..501 {
        let body = match chain.last() {
            Some(prev) => {
                json!({ "title": format!("Step {n}"), "blockedByIssueIds": [prev], "parentId": prev })
            }
            None => json!({ "title": "Step 0" }),
        };
        chain.push(id(&server.ok_post(&path, body).await));
    }
    let (first, last) = (&chain[0], &chain[500]);

    let started = Instant::now();
    let (status, body) = server
        .patch(
            &format!("/api/issues/{first}"),
            json!({ "blockedByIssueIds": [last] }),
        )
        .await;
    let took = started.elapsed();
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"], "Blocking relationship would create cycle");
    assert!(took < Duration::from_secs(2), "blocker check took {took:?}");

    let started = Instant::now();
    let (status, body) = server
        .patch(&format!("/api/issues/{first}"), json!({ "parentId": last }))
        .await;
    let took = started.elapsed();
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"], "Issue parent would create cycle");
    assert!(took < Duration::from_secs(2), "parent check took {took:?}");

    // Without a cycle the same long walks succeed.
    let extra = id(&server.issue(&cid, json!({ "title": "Loose" })).await);
    server
        .ok_patch(
            &format!("/api/issues/{extra}"),
            json!({ "blockedByIssueIds": [last, first], "parentId": last }),
        )
        .await;
    let (status, body) = server
        .patch(
            &format!("/api/issues/{first}"),
            json!({ "blockedByIssueIds": [format!("{first}-missing")] }),
        )
        .await;
    assert_eq!(status, 404, "{body}");

    // The default page is 500 issues; the rest is one cursor away.
    let resp = server.client().get(server.url(&path)).send().await.unwrap();
    let next = resp.headers().get("x-next-cursor").cloned();
    let page: Value = resp.json().await.unwrap();
    assert_eq!(page.as_array().unwrap().len(), 500);
    let next = next.expect("a next cursor").to_str().unwrap().to_string();
    let rest = server.ok_get(&format!("{path}?cursor={next}")).await;
    assert_eq!(rest.as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_page_of_huge_descriptions_is_bounded_in_bytes_and_paging_sees_every_issue_once() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Essay Co").await);
    let path = format!("/api/companies/{cid}/issues");
    let essay = "x".repeat(256 * 1024);
    for n in 0..30 {
        server
            .ok_post(
                &path,
                json!({ "title": format!("Essay {n}"), "description": essay }),
            )
            .await;
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let url = match &cursor {
            Some(c) => format!("{path}?limit=5000&cursor={c}"),
            None => format!("{path}?limit=5000"),
        };
        let resp = server.client().get(server.url(&url)).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        let next = resp
            .headers()
            .get("x-next-cursor")
            .map(|v| v.to_str().unwrap().to_string());
        let bytes = resp.bytes().await.unwrap();
        assert!(
            bytes.len() <= 1024 * 1024 + 300 * 1024,
            "a page of {} bytes",
            bytes.len()
        );
        let page: Vec<Value> = serde_json::from_slice(&bytes).unwrap();
        assert!(!page.is_empty());
        seen.extend(page.iter().map(|i| i["issueNumber"].as_i64().unwrap()));
        pages += 1;
        match next {
            Some(n) => cursor = Some(n),
            None => break,
        }
    }
    assert!(
        pages >= 2,
        "7.5 MiB of descriptions need more than one page"
    );
    assert_eq!(seen, (1..=30).rev().collect::<Vec<_>>());
}

#[tokio::test]
async fn over_long_strings_are_400s_naming_the_field_and_the_bound() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Verbose Co").await);
    let issue = id(&server.issue(&cid, json!({ "title": "Short" })).await);
    let agent = id(&server.agent(&cid, "Named", None).await);
    let long = |n: usize| "a".repeat(n);
    let cases = [
        (
            "POST",
            format!("/api/companies/{cid}/agents"),
            json!({ "name": long(60_000) }),
            "name",
            200,
        ),
        (
            "PATCH",
            format!("/api/agents/{agent}"),
            json!({ "name": long(201) }),
            "name",
            200,
        ),
        (
            "POST",
            "/api/companies".to_string(),
            json!({ "name": long(201) }),
            "name",
            200,
        ),
        (
            "POST",
            format!("/api/companies/{cid}/issues"),
            json!({ "title": long(501) }),
            "title",
            500,
        ),
        (
            "PATCH",
            format!("/api/issues/{issue}"),
            json!({ "description": long(262_145) }),
            "description",
            262_144,
        ),
        (
            "PATCH",
            format!("/api/issues/{issue}"),
            json!({ "comment": long(262_145) }),
            "comment",
            262_144,
        ),
        (
            "POST",
            format!("/api/issues/{issue}/comments"),
            json!({ "body": long(262_145) }),
            "body",
            262_144,
        ),
        (
            "PUT",
            format!("/api/issues/{issue}/documents/plan"),
            json!({ "format": "markdown", "body": long(1_000_001) }),
            "body",
            1_000_000,
        ),
        (
            "POST",
            format!("/api/companies/{cid}/labels"),
            json!({ "name": long(201), "color": "#fff" }),
            "name",
            200,
        ),
        (
            "POST",
            format!("/api/companies/{cid}/projects"),
            json!({ "name": long(201) }),
            "name",
            200,
        ),
        (
            "POST",
            format!("/api/companies/{cid}/goals"),
            json!({ "title": long(501) }),
            "title",
            500,
        ),
        (
            "POST",
            format!("/api/companies/{cid}/cost-events"),
            json!({ "model": long(201) }),
            "model",
            200,
        ),
    ];
    for (method, path, body, field, max) in cases {
        let (status, body) = server.request(method, &path, Some(body)).await;
        let issue = issue_of(status, &body);
        assert_eq!(issue["path"], json!([field]), "{method} {path}");
        assert_eq!(issue["maximum"], max, "{method} {path}");
        let message = issue["message"].as_str().unwrap();
        assert!(
            message.contains(field) && message.contains(&max.to_string()),
            "{message}"
        );
    }
    // At the bound, accepted.
    server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": long(200) }),
        )
        .await;
}

#[tokio::test]
async fn cost_events_resolve_identifiers_and_refuse_another_companys_run() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Ledger Co").await);
    let other = id(&server.company("Other Co").await);
    let issue = server.issue(&cid, json!({ "title": "Billed" })).await;
    let path = format!("/api/companies/{cid}/cost-events");
    let event = server
        .ok_post(
            &path,
            json!({ "issueId": issue["identifier"], "costCents": 3 }),
        )
        .await;
    assert_eq!(event["issueId"], issue["id"], "the identifier is resolved");
    let by_issue = server
        .ok_get(&format!("/api/companies/{cid}/costs/by-issue"))
        .await;
    assert_eq!(by_issue[0]["label"], issue["identifier"]);

    // A finished run in each company.
    let mut runs = Vec::new();
    for company in [&cid, &other] {
        let agent = id(&server
            .script_agent(company, "Runner", "true\n", json!({}))
            .await);
        server.wake(&agent, json!({})).await;
        let run = server.only_run_succeeded(company, &agent).await;
        runs.push(id(&run[0]));
    }
    let (status, body) = server
        .post(&path, json!({ "heartbeatRunId": runs[1], "costCents": 1 }))
        .await;
    assert_eq!(status, 404, "{body}");
    let (status, missing) = server
        .post(
            &path,
            json!({ "heartbeatRunId": "no-such-run", "costCents": 1 }),
        )
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        body["error"], missing["error"],
        "foreign reads like missing"
    );
    let own = server
        .ok_post(&path, json!({ "heartbeatRunId": runs[0], "costCents": 1 }))
        .await;
    assert_eq!(own["heartbeatRunId"], runs[0].as_str());

    // A log offset no file can have.
    let (status, body) = server
        .get(&format!(
            "/api/heartbeat-runs/{}/log?offset=9223372036854775808",
            runs[0]
        ))
        .await;
    assert_eq!(issue_of(status, &body)["path"], json!(["offset"]));
    let (status, _) = server
        .get(&format!(
            "/api/heartbeat-runs/{}/log?offset=9223372036854775807",
            runs[0]
        ))
        .await;
    assert_eq!(status, 200, "the largest offset reads nothing");
}

#[tokio::test]
async fn documents_respect_another_runs_checkout_like_issue_patches_do() {
    let server = TestServer::start().await;
    let cid = id(&server.company("Doc Co").await);
    let agent = id(&server
        .script_agent(&cid, "Writer", "sleep 30\n", json!({}))
        .await);
    server
        .ok_patch(
            &format!("/api/agents/{agent}"),
            json!({ "runtimeConfig": { "heartbeat": { "maxConcurrentRuns": 2 } } }),
        )
        .await;
    let token = server.key(&agent).await;
    let mut runs = Vec::new();
    for _ in 0..2 {
        let run = id(&server.wake(&agent, json!({})).await);
        server
            .wait_for(&format!("/api/heartbeat-runs/{run}"), 10, |r| {
                r["status"] == "running"
            })
            .await;
        runs.push(run);
    }
    let issue = id(&server
        .issue(&cid, json!({ "title": "Spec", "status": "todo" }))
        .await);
    let (status, body) = server
        .as_agent(
            &token,
            Some(&runs[0]),
            "POST",
            &format!("/api/issues/{issue}/checkout"),
            Some(json!({ "agentId": agent, "expectedStatuses": ["todo"] })),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let doc = format!("/api/issues/{issue}/documents/plan");
    let write = json!({ "format": "markdown", "body": "# Plan" });
    let (status, body) = server
        .as_agent(&token, Some(&runs[0]), "PUT", &doc, Some(write.clone()))
        .await;
    assert_eq!(status, 201, "the holding run writes: {body}");

    let (status, patch) = server
        .as_agent(
            &token,
            Some(&runs[1]),
            "PATCH",
            &format!("/api/issues/{issue}"),
            Some(json!({ "title": "Mine now" })),
        )
        .await;
    assert_eq!(status, 409, "{patch}");
    for (method, body) in [("PUT", Some(write.clone())), ("DELETE", None)] {
        let (status, refused) = server
            .as_agent(&token, Some(&runs[1]), method, &doc, body)
            .await;
        assert_eq!(status, 409, "{method}: {refused}");
        assert_eq!(refused["error"], patch["error"]);
        assert_eq!(refused["details"]["checkoutRunId"], runs[0].as_str());
    }
    let kept = server.ok_get(&doc).await;
    assert_eq!(kept["latestRevisionNumber"], 1);
    // The board is not a run and is not held back.
    let (status, _) = server.put(&doc, write).await;
    assert_eq!(status, 200);
}
