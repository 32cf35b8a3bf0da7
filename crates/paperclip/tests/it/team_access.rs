//! What each kind of caller may do in a company of an authenticated
//! instance: the isolation matrix of actors and route groups, the pages a
//! person sees, two people in two browsers, and the upstream CLI with a board
//! API key, on both engines.

mod pages;

use crate::common;

use common::teams::*;
use common::TestServer;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

#[tokio::test]
async fn every_actor_gets_exactly_what_its_role_allows_in_every_route_group() {
    let (server, owner) = instance(&[]).await;
    let (_, home) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Home" })),
    )
    .await;
    let (_, away) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Away" })),
    )
    .await;
    let cid = home["id"].as_str().unwrap().to_string();
    let other = away["id"].as_str().unwrap().to_string();
    let admin = join(&server, &owner, &cid, "admin", "adm@example.com").await;
    let operator = join(&server, &owner, &cid, "operator", "op@example.com").await;
    let viewer = join(&server, &owner, &cid, "viewer", "view@example.com").await;
    let outsider = join(&server, &owner, &other, "owner", "out@example.com").await;
    let (_, agent) = call(&server, Method::POST, &format!("/api/companies/{cid}/agents"), Some(&owner),
        Some(json!({ "name": "Worker", "adapterType": "process", "adapterConfig": { "command": "true" } }))).await;
    let agent_id = agent["id"].as_str().unwrap().to_string();
    let (_, far_agent) = call(&server, Method::POST, &format!("/api/companies/{other}/agents"), Some(&outsider),
        Some(json!({ "name": "Far", "adapterType": "process", "adapterConfig": { "command": "true" } }))).await;
    let agent_key = agent_key_of(&server, &owner, &agent_id).await;
    let far_key = agent_key_of(&server, &outsider, far_agent["id"].as_str().unwrap()).await;
    let (_, issue) = call(
        &server,
        Method::POST,
        &format!("/api/companies/{cid}/issues"),
        Some(&owner),
        Some(json!({ "title": "Matrix" })),
    )
    .await;
    let issue_id = issue["id"].as_str().unwrap().to_string();
    let (status, secret) = call(
        &server,
        Method::POST,
        &format!("/api/companies/{cid}/secrets"),
        Some(&owner),
        Some(json!({ "name": "Deploy token", "value": "s3cr3t-matrix-value" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{secret}");
    let secret_id = secret["id"].as_str().unwrap().to_string();

    #[rustfmt::skip]
    let groups: Vec<(&str, Cell)> = vec![
        ("read", cell(Method::GET, format!("/api/companies/{cid}/issues"), None)),
        ("task", cell(Method::POST, format!("/api/issues/{issue_id}/comments"), Some(json!({ "body": "hi" })))),
        ("wake", cell(Method::POST, format!("/api/agents/{agent_id}/wakeup"), Some(json!({ "source": "on_demand" })))),
        ("agents", cell(Method::PATCH, format!("/api/agents/{agent_id}"), Some(json!({ "title": "Renamed" })))),
        ("company", cell(Method::PATCH, format!("/api/companies/{cid}"), Some(json!({ "description": "x" })))),
        ("invite", cell(Method::GET, format!("/api/companies/{cid}/invites"), None)),
        ("members", cell(Method::GET, format!("/api/companies/{cid}/members"), None)),
        ("secrets", cell(Method::PATCH, format!("/api/secrets/{secret_id}"), Some(json!({ "description": "rotated weekly" })))),
        ("goals", cell(Method::POST, format!("/api/companies/{cid}/goals"), Some(json!({ "title": "Grow" })))),
        ("activity", cell(Method::GET, format!("/api/companies/{cid}/activity"), None)),
        ("runs", cell(Method::GET, format!("/api/companies/{cid}/heartbeat-runs"), None)),
        ("approvals", cell(Method::GET, format!("/api/companies/{cid}/approvals"), None)),
        ("budget", cell(Method::PATCH, format!("/api/companies/{cid}/budgets"), Some(json!({ "budgetMonthlyCents": 5000 })))),
        ("agent-keys", cell(Method::GET, format!("/api/agents/{agent_id}/keys"), None)),
        ("secret-list", cell(Method::GET, format!("/api/companies/{cid}/secrets"), None)),
        ("cards", cell(Method::POST, format!("/api/issues/{issue_id}/interactions"), Some(json!({ "kind": "request_confirmation", "payload": { "prompt": "Go?" } })))),
        ("card-list", cell(Method::GET, format!("/api/issues/{issue_id}/interactions"), None)),
    ];
    // The specification: which actor may use which group.
    let allowed = |actor: &str, group: &str| -> bool {
        match actor {
            // Every member reads who the members are (see key_scope.rs).
            "owner" | "admin" => true,
            "operator" => matches!(
                group,
                "read"
                    | "members"
                    | "task"
                    | "wake"
                    | "secrets"
                    | "goals"
                    | "activity"
                    | "runs"
                    | "approvals"
                    | "secret-list"
                    | "cards"
                    | "card-list"
            ),
            "viewer" => matches!(
                group,
                "read"
                    | "members"
                    | "activity"
                    | "runs"
                    | "approvals"
                    | "secret-list"
                    | "card-list"
            ),
            // Agents work in their own company; the board's routes are not theirs.
            "agent" => matches!(
                group,
                "read"
                    | "task"
                    | "wake"
                    | "goals"
                    | "activity"
                    | "runs"
                    | "approvals"
                    | "cards"
                    | "card-list"
            ),
            _ => false,
        }
    };
    let mut refused = 0;
    let mut cells = 0;
    for actor in [
        "anonymous",
        "outsider",
        "far-agent",
        "viewer",
        "operator",
        "admin",
        "agent",
        "owner",
    ] {
        for (group, cell) in &groups {
            let mut req = server
                .client()
                .request(cell.method.clone(), server.url(&cell.path));
            let session = match actor {
                "owner" => Some(&owner),
                "admin" => Some(&admin),
                "operator" => Some(&operator),
                "viewer" => Some(&viewer),
                "outsider" => Some(&outsider),
                _ => None,
            };
            if let Some(s) = session {
                req = req
                    .header("cookie", &s.cookie)
                    .header("x-paperclip-csrf", &s.csrf);
            }
            match actor {
                "agent" => req = req.bearer_auth(&agent_key),
                "far-agent" => req = req.bearer_auth(&far_key),
                _ => {}
            }
            if let Some(b) = &cell.body {
                req = req.json(b);
            }
            let resp = req.send().await.unwrap();
            let status = resp.status();
            let text = resp.text().await.unwrap();
            cells += 1;
            if allowed(actor, group) {
                // Agents writing to issues need their run: 401 names it. Board-only groups say 403.
                let agent_without_run = actor == "agent" && matches!(*group, "task" | "cards");
                assert!(
                    status.is_success() || agent_without_run,
                    "{actor} × {group}: {status} {text}"
                );
            } else {
                assert!(
                    matches!(
                        status,
                        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::NOT_FOUND
                    ),
                    "{actor} × {group} must be refused: {status} {text}"
                );
                refused += 1;
            }
        }
    }
    assert!(
        cells == 8 * groups.len() && refused >= 60,
        "{cells} cells, {refused} refused"
    );
    // Nothing a refused caller sent was written.
    let (_, comments) = call(
        &server,
        Method::GET,
        &format!("/api/issues/{issue_id}/comments"),
        Some(&owner),
        None,
    )
    .await;
    let authors: Vec<&str> = comments
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["authorUserId"].as_str())
        .collect();
    for (who, s) in [("viewer", &viewer), ("outsider", &outsider)] {
        assert!(
            !authors.contains(&s.user_id.as_str()),
            "{who} commented: {comments}"
        );
    }
    // A task named by its identifier is checked for its company the same way.
    let ident = issue["identifier"].as_str().unwrap();
    let (status, _) = call(
        &server,
        Method::GET,
        &format!("/api/issues/{ident}"),
        Some(&outsider),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(
        &server,
        Method::PATCH,
        &format!("/api/issues/{ident}"),
        Some(&viewer),
        Some(json!({ "title": "Renamed by a viewer" })),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = call(
        &server,
        Method::PATCH,
        &format!("/api/issues/{}", ident.to_lowercase()),
        Some(&operator),
        Some(json!({ "title": "Renamed by an operator" })),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The cards the matrix made: a viewer reads them without the forms to
    // answer; an operator gets the forms.
    let prefix = home["issuePrefix"].as_str().unwrap();
    for (who, s, forms) in [("viewer", &viewer, false), ("operator", &operator, true)] {
        let page = server
            .client()
            .get(server.url(&format!("/{prefix}/tasks/{ident}")))
            .header("cookie", &s.cookie)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            page.contains("data-interaction-status=\"pending\""),
            "{who}: {page}"
        );
        assert_eq!(
            page.contains("data-interaction-form") || page.contains("/accept\""),
            forms,
            "{who}"
        );
    }
    // Only the owner may delete the company.
    let (status, _) = call(
        &server,
        Method::DELETE,
        &format!("/api/companies/{cid}"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(
        &server,
        Method::DELETE,
        &format!("/api/companies/{cid}"),
        Some(&owner),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn only_an_authenticated_instance_listens_beyond_loopback() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_paperclip"))
        .args(["run", "--bind", "0.0.0.0", "--port", "0"])
        .env(
            "PAPERCLIP_DATA_DIR",
            std::env::temp_dir().join(format!("paperclip-bind-{}", uuid::Uuid::new_v4())),
        )
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--deployment-mode authenticated"));
    let server =
        TestServer::start_args(&["--deployment-mode", "authenticated", "--bind", "0.0.0.0"]).await;
    assert!(
        server.base.starts_with("http://0.0.0.0:"),
        "{}",
        server.base
    );
    // Reached through loopback (any interface answers); only names it serves are accepted.
    let url = server.base.replace("0.0.0.0", "127.0.0.1") + "/api/health";
    let health: Value = server
        .client()
        .get(&url)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["deploymentMode"], "authenticated");
}

#[tokio::test]
async fn the_upstream_cli_works_with_a_board_api_key_and_not_without() {
    let Some(path) = common::upstream::upstream_cli() else {
        return;
    };
    let (server, owner) = instance(&[]).await;
    let (_, company) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&owner),
        Some(json!({ "name": "Keyed Board" })),
    )
    .await;
    let cid = company["id"].as_str().unwrap().to_string();
    let cli = common::upstream::Cli::new(path, &server);

    let refused = cli.run(&["company", "list", "--json"]).await;
    assert!(!refused.ok, "no key, no companies: {}", refused.stdout);
    assert!(!refused.stdout.contains("Keyed Board"));

    let (_, key) = call(
        &server,
        Method::POST,
        "/api/board-api-keys",
        Some(&owner),
        Some(json!({ "name": "cli" })),
    )
    .await;
    let token = key["token"].as_str().unwrap().to_string();
    let listed = cli
        .ok(&["company", "list", "--json", "--api-key", &token])
        .await
        .json();
    assert_eq!(listed[0]["id"], cid.as_str(), "{listed}");
    let issue = cli
        .ok(&[
            "issue",
            "create",
            "-C",
            &cid,
            "--title",
            "Filed with a board key",
            "--json",
            "--api-key",
            &token,
        ])
        .await
        .json();
    let (_, stored) = call(
        &server,
        Method::GET,
        &format!("/api/issues/{}", issue["id"].as_str().unwrap()),
        Some(&owner),
        None,
    )
    .await;
    assert_eq!(stored["title"], "Filed with a board key");
    assert_eq!(
        stored["createdByUserId"],
        owner.user_id.as_str(),
        "the key acts as its person: {stored}"
    );
    let whoami = cli
        .ok(&["auth", "whoami", "--json", "--api-key", &token])
        .await;
    assert!(whoami.stdout.contains(&owner.user_id), "{}", whoami.stdout);
}
