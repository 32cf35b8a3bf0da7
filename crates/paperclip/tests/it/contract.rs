//! The API contract: the OpenAPI document covers every route, errors have
//! upstream's shape, and the binary refuses unsafe configuration.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::TestServer;
use serde_json::{json, Value};

#[path = "contract_routes.rs"]
mod routes;
use routes::ROUTES;

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
