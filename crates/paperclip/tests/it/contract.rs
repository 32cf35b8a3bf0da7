//! The API contract: the OpenAPI document covers every route, errors have
//! upstream's shape, and the binary refuses unsafe configuration.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::TestServer;
use serde_json::{json, Value};

/// Every route this build serves. A route added without an entry here, or an
/// entry whose route is missing from the OpenAPI document, fails the test.
const ROUTES: &[(&str, &str)] = &[
    ("get", "/api/health"),
    ("get", "/api/health/ready"),
    ("get", "/api/agents/{id}/task-sessions"),
    ("get", "/api/agents/{id}/runtime-state"),
    ("get", "/api/agents/{id}/wakeup-requests"),
    ("get", "/api/issues/{id}/diagnostics/wakes"),
    ("post", "/api/issues/{id}/wake-loop/release"),
    ("get", "/api/companies/{companyId}/inbox-dismissals"),
    ("post", "/api/companies/{companyId}/inbox-dismissals"),
    (
        "delete",
        "/api/companies/{companyId}/inbox-dismissals/{itemKey}",
    ),
    ("post", "/api/agents/{id}/runtime-state/reset-session"),
    // Ours: the prompt template's preview (seed 004's pills).
    ("post", "/api/agents/{id}/prompt-preview"),
    (
        "post",
        "/api/companies/{companyId}/adapters/{type}/test-environment",
    ),
    ("get", "/api/companies/{companyId}/adapters/detect"),
    ("get", "/api/companies/{companyId}/model-servers"),
    ("post", "/api/companies/{companyId}/model-servers"),
    (
        "patch",
        "/api/companies/{companyId}/model-servers/{serverId}",
    ),
    (
        "delete",
        "/api/companies/{companyId}/model-servers/{serverId}",
    ),
    (
        "get",
        "/api/companies/{companyId}/model-servers/{serverId}/agent-config",
    ),
    ("get", "/api/companies/{companyId}/costs/local-models"),
    // Upstream's adapter registry and per-company adapter routes.
    ("get", "/api/adapters"),
    ("get", "/api/adapters/{type}"),
    ("delete", "/api/adapters/{type}"),
    ("get", "/api/adapters/{type}/config-schema"),
    ("patch", "/api/adapters/{type}/override"),
    ("post", "/api/adapters/{type}/reload"),
    ("post", "/api/adapters/{type}/reinstall"),
    ("get", "/api/companies/{companyId}/adapters/{type}/models"),
    (
        "get",
        "/api/companies/{companyId}/adapters/{type}/detect-model",
    ),
    ("get", "/api/llms/agent-configuration.txt"),
    ("get", "/api/llms/agent-configuration/{file}"),
    ("get", "/api/skills/paperclip"),
    ("get", "/api/companies"),
    ("post", "/api/companies"),
    ("get", "/api/companies/stats"),
    ("get", "/api/companies/{companyId}"),
    ("patch", "/api/companies/{companyId}"),
    ("delete", "/api/companies/{companyId}"),
    ("post", "/api/companies/{companyId}/archive"),
    ("get", "/api/companies/{companyId}/agents"),
    ("post", "/api/companies/{companyId}/agents"),
    ("get", "/api/companies/{companyId}/org"),
    ("get", "/api/agents/{id}"),
    ("patch", "/api/agents/{id}"),
    ("delete", "/api/agents/{id}"),
    ("post", "/api/agents/{id}/pause"),
    ("post", "/api/agents/{id}/resume"),
    ("post", "/api/agents/{id}/terminate"),
    ("get", "/api/companies/{companyId}/goals"),
    ("post", "/api/companies/{companyId}/goals"),
    ("get", "/api/goals/{id}"),
    ("patch", "/api/goals/{id}"),
    ("delete", "/api/goals/{id}"),
    ("get", "/api/companies/{companyId}/projects"),
    ("post", "/api/companies/{companyId}/projects"),
    ("get", "/api/projects/{id}"),
    ("patch", "/api/projects/{id}"),
    ("delete", "/api/projects/{id}"),
    ("get", "/api/projects/{id}/workspaces"),
    ("post", "/api/projects/{id}/workspaces"),
    ("patch", "/api/projects/{id}/workspaces/{workspaceId}"),
    ("delete", "/api/projects/{id}/workspaces/{workspaceId}"),
    ("get", "/api/companies/{companyId}/execution-workspaces"),
    ("get", "/api/execution-workspaces/{id}"),
    ("get", "/api/execution-workspaces/{id}/changes"),
    ("get", "/api/heartbeat-runs/{runId}/workspace-changes"),
    ("patch", "/api/execution-workspaces/{id}"),
    ("get", "/api/execution-workspaces/{id}/workspace-operations"),
    ("get", "/api/execution-workspaces/{id}/close-readiness"),
    ("get", "/api/execution-workspaces/{id}/task-changes"),
    ("get", "/api/heartbeat-runs/{runId}/workspace-operations"),
    ("get", "/api/workspace-operations/{operationId}/log"),
    ("get", "/api/companies/{companyId}/workspace-overview"),
    ("get", "/api/companies/{companyId}/issues"),
    ("post", "/api/companies/{companyId}/issues"),
    ("get", "/api/issues/{id}"),
    ("patch", "/api/issues/{id}"),
    ("delete", "/api/issues/{id}"),
    ("post", "/api/issues/{id}/checkout"),
    ("post", "/api/issues/{id}/release"),
    ("post", "/api/issues/{id}/admin/force-release"),
    ("get", "/api/issues/{id}/comments"),
    ("post", "/api/issues/{id}/comments"),
    ("get", "/api/issues/{id}/interactions"),
    ("post", "/api/issues/{id}/interactions"),
    (
        "post",
        "/api/issues/{id}/interactions/{interactionId}/accept",
    ),
    (
        "post",
        "/api/issues/{id}/interactions/{interactionId}/reject",
    ),
    (
        "post",
        "/api/issues/{id}/interactions/{interactionId}/respond",
    ),
    (
        "post",
        "/api/issues/{id}/interactions/{interactionId}/verdicts",
    ),
    (
        "post",
        "/api/issues/{id}/interactions/{interactionId}/withdraw",
    ),
    ("post", "/api/issues/{id}/interactions/{interactionId}/skip"),
    (
        "post",
        "/api/issues/{id}/interactions/{interactionId}/cancel",
    ),
    ("get", "/api/issues/{id}/comments/{commentId}"),
    ("delete", "/api/issues/{id}/comments/{commentId}"),
    ("get", "/api/companies/{companyId}/labels"),
    ("post", "/api/companies/{companyId}/labels"),
    ("delete", "/api/labels/{labelId}"),
    ("get", "/api/issues/{id}/documents"),
    ("get", "/api/issues/{id}/documents/{key}"),
    ("put", "/api/issues/{id}/documents/{key}"),
    ("delete", "/api/issues/{id}/documents/{key}"),
    ("get", "/api/issues/{id}/documents/{key}/revisions"),
    ("get", "/api/companies/{companyId}/activity"),
    ("post", "/api/companies/{companyId}/activity"),
    ("get", "/api/issues/{id}/runs"),
    ("get", "/api/heartbeat-runs/{runId}/issues"),
    ("get", "/api/issues/{issueId}/live-runs"),
    ("get", "/api/issues/{id}/activity"),
    ("get", "/api/agents/{id}/keys"),
    ("post", "/api/agents/{id}/keys"),
    ("delete", "/api/agents/{id}/keys/{keyId}"),
    ("get", "/api/agents/me"),
    ("get", "/api/agents/me/inbox-lite"),
    ("get", "/api/agents/me/inbox/mine"),
    ("post", "/api/issues/{id}/read"),
    ("delete", "/api/issues/{id}/read"),
    ("post", "/api/issues/{id}/inbox-archive"),
    ("delete", "/api/issues/{id}/inbox-archive"),
    ("get", "/api/agents/{id}/instructions-path"),
    ("patch", "/api/agents/{id}/instructions-path"),
    ("get", "/api/agents/{id}/instructions-bundle"),
    ("get", "/api/agents/{id}/instructions-bundle/file"),
    ("put", "/api/agents/{id}/instructions-bundle/file"),
    ("delete", "/api/agents/{id}/instructions-bundle/file"),
    ("post", "/api/agents/{id}/wakeup"),
    ("post", "/api/agents/{id}/heartbeat/invoke"),
    ("get", "/api/companies/{companyId}/heartbeat-runs"),
    ("get", "/api/companies/{companyId}/live-runs"),
    ("get", "/api/heartbeat-runs/{runId}"),
    ("get", "/api/heartbeat-runs/{runId}/events"),
    ("get", "/api/heartbeat-runs/{runId}/log"),
    ("post", "/api/heartbeat-runs/{runId}/cancel"),
    ("post", "/api/issues/{id}/queued-comments/interrupt"),
    ("post", "/api/heartbeat-runs/{runId}/callback"),
    ("get", "/api/issues/{issueId}/active-run"),
    ("get", "/api/issues/{id}/heartbeat-context"),
    ("get", "/api/companies/{companyId}/events/ws"),
    ("get", "/api/companies/{companyId}/events"),
    ("get", "/api/companies/{companyId}/approvals"),
    ("post", "/api/companies/{companyId}/approvals"),
    ("get", "/api/approvals/{id}"),
    ("post", "/api/approvals/{id}/approve"),
    ("post", "/api/approvals/{id}/reject"),
    ("post", "/api/approvals/{id}/request-revision"),
    ("post", "/api/approvals/{id}/resubmit"),
    ("post", "/api/approvals/{id}/cancel"),
    ("get", "/api/approvals/{id}/comments"),
    ("post", "/api/approvals/{id}/comments"),
    ("get", "/api/approvals/{id}/issues"),
    ("get", "/api/issues/{id}/approvals"),
    ("post", "/api/issues/{id}/approvals"),
    ("delete", "/api/issues/{id}/approvals/{approvalId}"),
    ("post", "/api/companies/{companyId}/agent-hires"),
    ("get", "/api/companies/{companyId}/cost-events"),
    ("post", "/api/companies/{companyId}/cost-events"),
    ("get", "/api/companies/{companyId}/costs/summary"),
    ("get", "/api/companies/{companyId}/costs/by-agent"),
    ("get", "/api/companies/{companyId}/costs/by-project"),
    ("get", "/api/companies/{companyId}/costs/by-model"),
    ("get", "/api/companies/{companyId}/costs/by-issue"),
    ("get", "/api/companies/{companyId}/costs/by-agent-model"),
    ("get", "/api/companies/{companyId}/costs/by-provider"),
    ("get", "/api/companies/{companyId}/costs/window-spend"),
    ("get", "/api/issues/{id}/cost-summary"),
    ("post", "/api/issues/{id}/children"),
    ("patch", "/api/agents/{id}/permissions"),
    ("get", "/api/companies/{companyId}/agent-configurations"),
    ("get", "/api/companies/{companyId}/sidebar-badges"),
    ("get", "/api/cli-auth/me"),
    (
        "post",
        "/api/issues/{id}/documents/{key}/revisions/{revisionId}/restore",
    ),
    ("post", "/api/issues/{id}/documents/{key}/lock"),
    ("post", "/api/issues/{id}/documents/{key}/unlock"),
    ("patch", "/api/companies/{companyId}/budgets"),
    ("patch", "/api/agents/{agentId}/budgets"),
    ("patch", "/api/projects/{projectId}/budgets"),
    ("get", "/api/companies/{companyId}/budget-incidents"),
    ("get", "/api/companies/{companyId}/dashboard"),
    ("get", "/api/agents/{id}/config-revisions"),
    ("get", "/api/agents/{id}/config-revisions/{revisionId}"),
    (
        "post",
        "/api/agents/{id}/config-revisions/{revisionId}/rollback",
    ),
    ("get", "/api/agents/{id}/configuration"),
    // Ours, not upstream's: the sample company of the first run.
    ("post", "/api/sample-company"),
    // Ours: Web Push to board people's devices.
    ("get", "/api/push/vapid-public-key"),
    ("get", "/api/push/subscriptions"),
    ("post", "/api/push/subscriptions"),
    ("delete", "/api/push/subscriptions/{id}"),
    ("get", "/api/push/preferences"),
    ("patch", "/api/push/preferences"),
    ("post", "/api/push/test"),
    ("post", "/api/push/actions/{token}"),
    // People of an authenticated instance (upstream's better-auth and access routes).
    ("post", "/api/auth/sign-up/email"),
    ("post", "/api/auth/sign-in/email"),
    ("post", "/api/auth/sign-out"),
    ("get", "/api/auth/get-session"),
    ("get", "/api/auth/profile"),
    ("patch", "/api/auth/profile"),
    ("post", "/api/auth/change-password"),
    ("get", "/api/companies/{companyId}/members"),
    ("patch", "/api/companies/{companyId}/members/{memberId}"),
    (
        "post",
        "/api/companies/{companyId}/members/{memberId}/archive",
    ),
    ("post", "/api/companies/{companyId}/invites"),
    ("get", "/api/companies/{companyId}/invites"),
    ("post", "/api/invites/{inviteId}/revoke"),
    ("get", "/api/invites/{token}"),
    ("post", "/api/invites/{token}/accept"),
    ("post", "/api/board-api-keys"),
    ("get", "/api/board-api-keys"),
    ("delete", "/api/board-api-keys/{keyId}"),
    // Company secrets.
    ("get", "/api/companies/{companyId}/secrets"),
    ("post", "/api/companies/{companyId}/secrets"),
    ("get", "/api/companies/{companyId}/secrets/catalog"),
    ("get", "/api/companies/{companyId}/secret-providers"),
    ("patch", "/api/secrets/{id}"),
    ("delete", "/api/secrets/{id}"),
    ("post", "/api/secrets/{id}/rotate"),
    ("post", "/api/agents/me/secret-proposals"),
    ("get", "/api/agents/me/secret-proposals"),
    ("get", "/api/agents/me/secret-proposals/{id}"),
    ("delete", "/api/agents/me/secret-proposals/{id}"),
    ("get", "/api/companies/{companyId}/secret-proposals"),
    (
        "post",
        "/api/companies/{companyId}/secret-proposals/{id}/approve",
    ),
    (
        "post",
        "/api/companies/{companyId}/secret-proposals/{id}/reject",
    ),
    ("get", "/api/agents/me/secrets"),
    ("post", "/api/agents/me/secrets/{key}/value"),
    // Routines.
    ("get", "/api/companies/{companyId}/routines"),
    ("post", "/api/companies/{companyId}/routines"),
    ("get", "/api/routines/{id}"),
    ("patch", "/api/routines/{id}"),
    ("get", "/api/routines/{id}/revisions"),
    ("post", "/api/routines/{id}/revisions/{revisionId}/restore"),
    ("get", "/api/routines/{id}/runs"),
    ("post", "/api/routines/{id}/triggers"),
    ("post", "/api/routines/{id}/run"),
    ("patch", "/api/routine-triggers/{id}"),
    ("delete", "/api/routine-triggers/{id}"),
    ("post", "/api/routine-triggers/{id}/rotate-secret"),
    ("post", "/api/routine-triggers/public/{publicId}/fire"),
    ("post", "/api/instance/test-clock"),
    ("get", "/api/instance/quiescence"),
    // Attachments and work products.
    (
        "post",
        "/api/companies/{companyId}/issues/{issueId}/attachments",
    ),
    ("get", "/api/issues/{id}/attachments"),
    ("get", "/api/attachments/{id}/content"),
    ("delete", "/api/attachments/{id}"),
    ("get", "/api/issues/{id}/work-products"),
    ("post", "/api/issues/{id}/work-products"),
    ("patch", "/api/work-products/{id}"),
    ("delete", "/api/work-products/{id}"),
];

#[tokio::test]
async fn openapi_lists_exactly_the_served_routes_with_schemas() {
    let server = TestServer::start().await;
    let doc = server.ok_get("/api/openapi.json").await;
    let paths = doc["paths"].as_object().unwrap();
    let mut documented = Vec::new();
    for (path, item) in paths {
        for method in item.as_object().unwrap().keys() {
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                documented.push((method.clone(), path.clone()));
            }
        }
    }
    for (method, path) in ROUTES {
        assert!(
            documented.iter().any(|(m, p)| m == method && p == path),
            "{} {path} is served but missing from /api/openapi.json",
            method.to_uppercase()
        );
        let op = &paths[*path][*method];
        assert!(
            op["responses"].as_object().is_some_and(|r| !r.is_empty()),
            "{method} {path} has responses"
        );
        if ["post", "put", "patch"].contains(method) && op.get("requestBody").is_some() {
            assert!(op["requestBody"]["content"]["application/json"]["schema"].is_object());
        }
    }
    for (method, path) in &documented {
        assert!(
            ROUTES.iter().any(|(m, p)| m == method && p == path),
            "{} {path} is documented but not in this test's route list",
            method.to_uppercase()
        );
    }
    // Every documented route is really served: a request with made-up ids gets
    // an answer from its handler (404 "... not found" etc.), never "No route".
    for (method, path) in ROUTES {
        let concrete = path
            .replace("{companyId}", "00000000-0000-4000-8000-000000000000")
            .replace("{id}", "00000000-0000-4000-8000-000000000001")
            .replace("{commentId}", "c")
            .replace("{labelId}", "l")
            .replace("{key}", "plan")
            .replace("{keyId}", "k")
            .replace("{runId}", "r")
            .replace("{issueId}", "i")
            .replace("{approvalId}", "a")
            .replace("{agentId}", "00000000-0000-4000-8000-000000000002")
            .replace("{projectId}", "00000000-0000-4000-8000-000000000003")
            .replace("{revisionId}", "v");
        let body = if *method == "get" || *method == "delete" {
            None
        } else {
            Some(json!({}))
        };
        let (status, resp) = server
            .request(&method.to_uppercase(), &concrete, body)
            .await;
        assert_ne!(status, 405, "{method} {path}");
        let text = resp.to_string();
        assert!(
            !text.contains("No route"),
            "{method} {path} is not routed: {text}"
        );
    }
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for name in [
        "Company",
        "Agent",
        "Issue",
        "Comment",
        "Goal",
        "Project",
        "Label",
        "Document",
        "ActivityEntry",
        "NewIssue",
        "IssuePatch",
    ] {
        assert!(schemas.contains_key(name), "schema {name} is documented");
    }
}

#[tokio::test]
async fn bad_bodies_get_clear_errors() {
    let server = TestServer::start().await;
    let (status, body) = server.post("/api/companies", json!({ "name": 42 })).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"], "Validation error");
    assert_eq!(body["details"][0]["path"], json!(["name"]));
    let (status, body) = server
        .post("/api/companies", json!({ "description": "no name" }))
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["details"][0]["path"], json!(["name"]));
    let (status, body) = server
        .post(
            "/api/companies",
            json!({ "name": "Ok Co", "somethingNew": [1, 2] }),
        )
        .await;
    assert_eq!(status, 201, "unknown fields are ignored: {body}");
    let cid = body["id"].as_str().unwrap();
    let (status, body) = server
        .post(
            &format!("/api/companies/{cid}/issues"),
            json!({ "title": "x", "labelIds": ["ok", 5] }),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["details"][0]["path"], json!(["labelIds", 1]));

    let resp = server
        .client()
        .post(server.url("/api/companies"))
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "Malformed JSON body");

    // Refused on the declared length, before the body is read: sent raw so
    // the answer is read whatever the client still had to write (a full
    // client could meet the closed socket mid-body, a broken pipe).
    let raw = {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut conn = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
        let head = format!(
            "POST /api/companies/{cid}/issues HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{{\"title\":\"big\",\"description\":\"",
            server.addr(),
            2 * 1024 * 1024
        );
        conn.write_all(head.as_bytes()).await.unwrap();
        let mut answer = String::new();
        let _ = conn.read_to_string(&mut answer).await;
        answer
    };
    assert!(raw.starts_with("HTTP/1.1 413"), "{raw}");
    assert!(raw.contains("Request body too large"), "{raw}");
    let list = server.ok_get(&format!("/api/companies/{cid}/issues")).await;
    assert_eq!(list, json!([]), "refused input stores nothing");

    let (status, body) = server.get("/api/nothing-here").await;
    assert_eq!(status, 404);
    assert!(body["error"].is_string());
}

#[test]
fn binding_beyond_loopback_is_refused_with_a_reason() {
    let dir = std::env::temp_dir().join(format!("paperclip-bind-{}", uuid::Uuid::new_v4()));
    let out = Command::new(env!("CARGO_BIN_EXE_paperclip"))
        .args(["run", "--port", "0", "--bind", "0.0.0.0", "--data-dir"])
        .arg(&dir)
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("loopback only"), "{stderr}");
    assert!(
        !dir.join("paperclip.db").exists(),
        "nothing is created when refusing to start"
    );
}

#[tokio::test]
async fn data_survives_a_restart() {
    let server = TestServer::start().await;
    let cid = server.company("Durable Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    server.issue(&cid, json!({ "title": "Survives" })).await;
    let (data_dir, database_url) = server.stop_keeping_data();
    let restarted = TestServer::start_with(data_dir, database_url, &[]).await;
    let issues = restarted
        .ok_get(&format!("/api/companies/{cid}/issues"))
        .await;
    assert_eq!(issues[0]["title"], "Survives");
    let next = restarted
        .issue(&cid, json!({ "title": "After restart" }))
        .await;
    assert_eq!(next["issueNumber"], 2, "the counter continues");
}

#[test]
fn the_config_file_and_env_vars_choose_where_data_lives() {
    let dir = std::env::temp_dir().join(format!("paperclip-config-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("paperclip.toml");
    let data = dir.join("from-config");
    std::fs::write(
        &config,
        format!("data_dir = {:?}\nport = 0\n", data.display().to_string()),
    )
    .unwrap();
    let first_lines = |cmd: &mut Command| -> String {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let text = format!(
            "{}\n{}",
            lines.next().unwrap().unwrap(),
            lines.next().unwrap().unwrap()
        );
        let _ = child.kill();
        let _ = child.wait();
        text
    };
    let out = first_lines(
        Command::new(env!("CARGO_BIN_EXE_paperclip"))
            .args(["run", "--config"])
            .arg(&config)
            .env_remove("DATABASE_URL"),
    );
    assert!(out.contains(&format!("Data: {}", data.display())), "{out}");
    assert!(data.join("paperclip.db").exists());

    let from_env = dir.join("from-env");
    let out = first_lines(
        Command::new(env!("CARGO_BIN_EXE_paperclip"))
            .args(["run"])
            .env("PAPERCLIP_CONFIG", &config)
            .env("PAPERCLIP_DATA_DIR", &from_env)
            .env_remove("DATABASE_URL"),
    );
    assert!(
        out.contains(&format!("Data: {}", from_env.display())),
        "the env var beats the file: {out}"
    );

    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "prot = 1\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_paperclip"))
        .args(["run", "--config"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "an unknown config key is an error, not ignored"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("prot"));
    let _ = std::fs::remove_dir_all(&dir);
}
