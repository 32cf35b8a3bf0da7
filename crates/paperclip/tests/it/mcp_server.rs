//! Paperclip as an MCP server over streamable HTTP (`/api/mcp`): the
//! protocol as an assistant speaks it, the tools as the local board, and on
//! an authenticated instance: off until an administrator turns it on, a
//! viewer's key reads but cannot create, an agent's key is refused, and every
//! write is in the activity log with the person as actor.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::common::teams::{self, call, Session};
use crate::common::{restart_keeping_data_env, TestServer};

async fn rpc(server: &TestServer, key: Option<&str>, body: Value) -> (StatusCode, Value) {
    let mut req = server
        .client()
        .post(server.url("/api/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(key) = key {
        req = req.bearer_auth(key);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A `tools/call`'s result (a tool error is a result too).
async fn tool(server: &TestServer, key: Option<&str>, name: &str, args: Value) -> Value {
    let (status, body) = rpc(
        server,
        key,
        json!({ "jsonrpc": "2.0", "id": name, "method": "tools/call",
                "params": { "name": name, "arguments": args } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{name}: {body}");
    assert_eq!(body["id"], name, "{body}");
    assert!(body["result"].is_object(), "{name}: {body}");
    body["result"].clone()
}

fn ok(result: &Value) -> &Value {
    assert_eq!(result["isError"], false, "{result}");
    assert!(result["content"][0]["text"].is_string(), "{result}");
    &result["structuredContent"]
}

/// The JSON-RPC error of a call that must fail as a protocol error.
async fn rpc_error(server: &TestServer, body: Value) -> (StatusCode, Value) {
    let (status, reply) = rpc(server, None, body).await;
    assert!(reply["error"]["code"].is_i64(), "{reply}");
    (status, reply["error"].clone())
}

#[tokio::test]
async fn mcp_serves_the_local_board_and_people_within_their_roles() {
    let (local, (auth, admin)) = tokio::join!(TestServer::start(), teams::instance(&[]));
    local_board(&local).await;
    attacks(&local).await;
    bridge(&local.base).await;
    bridge("http://127.0.0.1:9").await;
    people(auth, admin).await;
}

async fn local_board(s: &TestServer) {
    let (status, init) = rpc(
        s,
        None,
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "test", "version": "1" } } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{init}");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "paperclip");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    let (status, _) = rpc(
        s,
        None,
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
    )
    .await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let get = s.client().get(s.url("/api/mcp")).send().await.unwrap();
    assert_eq!(get.status(), StatusCode::METHOD_NOT_ALLOWED);
    let (_, list) = rpc(
        s,
        None,
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
    )
    .await;
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert_eq!(t["inputSchema"]["type"], "object", "{t}");
            t["name"].as_str().unwrap()
        })
        .collect();
    for want in [
        "list_tasks",
        "search_tasks",
        "get_task",
        "create_task",
        "update_task",
        "add_comment",
        "answer_card",
        "approve",
        "get_run",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }

    let company = s.company("Acme").await;
    let cid = company["id"].as_str().unwrap();
    let builder = s.agent(cid, "Builder", None).await;
    let created = tool(
        s,
        None,
        "create_task",
        json!({ "title": "Draft the launch plan", "description": "By Friday", "priority": "high", "assignee": "builder" }),
    )
    .await;
    let task = ok(&created).clone();
    assert_eq!(task["identifier"], "ACM-1");
    assert_eq!(task["assigneeAgentId"], builder["id"]);
    assert!(created["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("ACM-1"));
    ok(&tool(
        s,
        None,
        "add_comment",
        json!({ "task": "ACM-1", "body": "Keep it to one page" }),
    )
    .await);
    let listed = tool(
        s,
        None,
        "list_tasks",
        json!({ "assignee": "Builder", "limit": 10 }),
    )
    .await;
    assert_eq!(ok(&listed)["tasks"][0]["identifier"], "ACM-1", "{listed}");
    let found = tool(s, None, "search_tasks", json!({ "q": "launch" })).await;
    assert_eq!(ok(&found)["tasks"][0]["identifier"], "ACM-1", "{found}");
    let read = tool(s, None, "get_task", json!({ "task": "ACM-1" })).await;
    let read = ok(&read);
    assert_eq!(read["description"], "By Friday");
    assert!(
        read["comments"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["body"] == "Keep it to one page"),
        "{read}"
    );
    let updated = tool(
        s,
        None,
        "update_task",
        json!({ "task": "ACM-1", "priority": "low", "assignee": null }),
    )
    .await;
    let updated = ok(&updated);
    assert_eq!(updated["priority"], "low");
    assert!(updated["assigneeAgentId"].is_null(), "{updated}");
    // A rule the API enforces is a tool error in words, not a protocol error.
    let bad = tool(
        s,
        None,
        "update_task",
        json!({ "task": "ACM-1", "status": "bogus" }),
    )
    .await;
    assert_eq!(bad["isError"], true, "{bad}");
    assert!(
        bad["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("status"),
        "{bad}"
    );
    let missing = tool(s, None, "get_task", json!({ "task": "ACM-999" })).await;
    assert_eq!(missing["isError"], true, "{missing}");
    let run = tool(
        s,
        None,
        "get_run",
        json!({ "run": "00000000-0000-4000-8000-000000000009" }),
    )
    .await;
    assert_eq!(run["isError"], true, "{run}");
    // A pending approval decided, and a card answered, through the tools.
    let approval = s
        .ok_post(
            &format!("/api/companies/{cid}/approvals"),
            json!({ "type": "approve_ceo_strategy", "payload": { "plan": "sell more" } }),
        )
        .await;
    let decided = tool(
        s,
        None,
        "approve",
        json!({ "approval": approval["id"], "decision": "approve", "note": "go" }),
    )
    .await;
    assert_eq!(ok(&decided)["status"], "approved", "{decided}");
    let again = tool(
        s,
        None,
        "approve",
        json!({ "approval": approval["id"], "decision": "reject" }),
    )
    .await;
    assert_eq!(
        again["isError"], true,
        "a decided approval stays decided: {again}"
    );
    s.ok_post(
        &format!("/api/issues/{}/interactions", task["id"].as_str().unwrap()),
        json!({ "kind": "ask_user_questions", "payload": { "questions": [{ "id": "db", "prompt": "Which database?",
            "selectionMode": "single", "required": true,
            "options": [{ "id": "pg", "label": "Postgres" }, { "id": "lite", "label": "SQLite" }] }] } }),
    )
    .await;
    let answered = tool(
        s,
        None,
        "answer_card",
        json!({ "task": "ACM-1", "action": "respond", "answers": [{ "questionId": "db", "optionIds": ["pg"] }] }),
    )
    .await;
    assert_eq!(ok(&answered)["status"], "answered", "{answered}");
    let none_left = tool(
        s,
        None,
        "answer_card",
        json!({ "task": "ACM-1", "action": "accept" }),
    )
    .await;
    assert_eq!(none_left["isError"], true, "{none_left}");
    let actions = s.actions(cid).await;
    for action in ["issue.created", "issue.comment_added", "issue.updated"] {
        assert!(
            actions.iter().any(|a| a == action),
            "{action} in {actions:?}"
        );
    }
}

async fn attacks(s: &TestServer) {
    let call = |params: Value| json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params });
    let huge: Vec<u32> = vec![7; 150_000];
    let (status, err) = rpc_error(
        s,
        json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": huge }),
    )
    .await;
    assert_eq!(
        (status, err["code"].as_i64()),
        (StatusCode::OK, Some(-32602)),
        "{err}"
    );
    let (_, err) = rpc_error(
        s,
        call(json!({ "name": "create_task", "arguments": { "title": "a\u{0}b" } })),
    )
    .await;
    assert_eq!(err["code"], -32602, "{err}");
    assert_eq!(err["data"]["path"], json!(["arguments", "title"]), "{err}");
    let (_, err) = rpc_error(
        s,
        call(json!({ "name": "list_tasks", "arguments": { "limit": i64::MAX } })),
    )
    .await;
    assert_eq!(err["code"], -32602, "{err}");
    assert_eq!(err["data"]["path"], json!(["arguments", "limit"]), "{err}");
    let (_, err) = rpc_error(
        s,
        call(json!({ "name": "create_task", "arguments": { "title": 5 } })),
    )
    .await;
    assert_eq!(err["data"]["path"], json!(["arguments", "title"]), "{err}");
    let (_, err) = rpc_error(s, call(json!({ "name": "drop_tables", "arguments": {} }))).await;
    assert_eq!(err["code"], -32602, "{err}");
    let (_, err) = rpc_error(
        s,
        json!({ "jsonrpc": "2.0", "id": 3, "method": "resources/list" }),
    )
    .await;
    assert_eq!(err["code"], -32601, "{err}");
    let batch: Vec<Value> = (0..21)
        .map(|i| json!({ "jsonrpc": "2.0", "id": i, "method": "ping" }))
        .collect();
    let (status, err) = rpc_error(s, json!(batch)).await;
    assert_eq!(
        (status, err["code"].as_i64()),
        (StatusCode::BAD_REQUEST, Some(-32600))
    );
    let (status, pong) = rpc(
        s,
        None,
        json!([{ "jsonrpc": "2.0", "id": "a", "method": "ping" }]),
    )
    .await;
    assert_eq!(
        (status, &pong[0]["result"]),
        (StatusCode::OK, &json!({})),
        "{pong}"
    );
    let raw = s
        .client()
        .post(s.url("/api/mcp"))
        .header("content-type", "application/json")
        .body("{\"jsonrpc\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(raw.status(), StatusCode::BAD_REQUEST);
    assert_eq!(raw.json::<Value>().await.unwrap()["error"]["code"], -32700);
}

async fn board_key(server: &TestServer, who: &Session) -> String {
    let (status, key) = call(
        server,
        Method::POST,
        "/api/board-api-keys",
        Some(who),
        Some(json!({ "name": "mcp" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{key}");
    key["token"].as_str().unwrap().to_string()
}

async fn people(server: TestServer, admin: Session) {
    let (status, company) = call(
        &server,
        Method::POST,
        "/api/companies",
        Some(&admin),
        Some(json!({ "name": "Globex" })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{company}");
    let cid = company["id"].as_str().unwrap().to_string();
    let (status, agent) = call(
        &server,
        Method::POST,
        &format!("/api/companies/{cid}/agents"),
        Some(&admin),
        Some(json!({ "name": "Worker", "adapterType": "process", "adapterConfig": { "command": "true" } })),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{agent}");
    let agent_key = teams::agent_key_of(&server, &admin, agent["id"].as_str().unwrap()).await;
    let viewer = teams::join(&server, &admin, &cid, "viewer", "vera@example.com").await;
    let (admin_key, viewer_key) = (
        board_key(&server, &admin).await,
        board_key(&server, &viewer).await,
    );
    let ping = json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" });
    let (status, off) = rpc(&server, Some(&admin_key), ping.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{off}");
    assert_eq!(off["code"], "mcp_disabled", "{off}");
    assert!(off["error"].as_str().unwrap().contains("--mcp"), "{off}");

    let server = restart_keeping_data_env(
        server,
        &[
            ("PAPERCLIP_DEPLOYMENT_MODE", "authenticated"),
            ("PAPERCLIP_MCP_ENABLED", "true"),
        ],
    )
    .await;
    let (status, pong) = rpc(&server, Some(&admin_key), ping.clone()).await;
    assert_eq!(
        (status, &pong["result"]),
        (StatusCode::OK, &json!({})),
        "{pong}"
    );
    let (status, refused) = rpc(&server, Some(&agent_key), ping.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("MCP is for people"),
        "{refused}"
    );
    let (status, _) = rpc(&server, None, ping).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    let created = tool(
        &server,
        Some(&admin_key),
        "create_task",
        json!({ "title": "Ship it" }),
    )
    .await;
    let identifier = ok(&created)["identifier"].as_str().unwrap().to_string();
    ok(&tool(
        &server,
        Some(&admin_key),
        "add_comment",
        json!({ "task": identifier, "body": "As Ada" }),
    )
    .await);
    let seen = tool(&server, Some(&viewer_key), "list_tasks", json!({})).await;
    assert_eq!(
        ok(&seen)["tasks"][0]["identifier"],
        identifier.as_str(),
        "{seen}"
    );
    let denied = tool(
        &server,
        Some(&viewer_key),
        "create_task",
        json!({ "title": "Not mine to make" }),
    )
    .await;
    assert_eq!(denied["isError"], true, "{denied}");
    let why = denied["content"][0]["text"].as_str().unwrap();
    assert!(why.contains("read-only") && why.contains("role"), "{why}");
    let denied = tool(
        &server,
        Some(&viewer_key),
        "add_comment",
        json!({ "task": identifier, "body": "x" }),
    )
    .await;
    assert_eq!(denied["isError"], true, "{denied}");

    let (status, log) = call(
        &server,
        Method::GET,
        &format!("/api/companies/{cid}/activity?limit=200"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{log}");
    let by = |action: &str| -> Vec<Value> {
        log.as_array()
            .unwrap()
            .iter()
            .filter(|a| a["action"] == action)
            .cloned()
            .collect()
    };
    for action in ["issue.created", "issue.comment_added"] {
        let rows = by(action);
        assert_eq!(rows.len(), 1, "one {action}: {log}");
        assert_eq!(rows[0]["actorType"], "user", "{action}: {}", rows[0]);
        assert_eq!(
            rows[0]["actorId"],
            admin.user_id.as_str(),
            "{action}: {}",
            rows[0]
        );
    }
}

/// `paperclip mcp`: a line in, a line out; a notification gets none; a server
/// that is down is a JSON-RPC error for the request, and EOF ends it with 0.
async fn bridge(base: &str) {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_paperclip"))
        .args(["mcp", "--api-base", base])
        .env_remove("PAPERCLIP_API_KEY")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        json!({ "jsonrpc": "2.0", "id": "t", "method": "tools/call",
                "params": { "name": "get_task", "arguments": { "task": "ACM-1" } } }),
    ];
    for line in &lines {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
    }
    drop(stdin);
    let out = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("the bridge ends at EOF")
        .unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let replies: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(replies.len(), 2, "one line per request: {replies:?}");
    assert_eq!(
        (&replies[0]["id"], &replies[1]["id"]),
        (&json!(1), &json!("t"))
    );
    if base.ends_with(":9") {
        assert_eq!(replies[0]["error"]["code"], -32000, "{}", replies[0]);
        assert!(replies[1]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not reachable"));
    } else {
        assert_eq!(replies[0]["result"], json!({}));
        assert_eq!(
            replies[1]["result"]["structuredContent"]["identifier"],
            "ACM-1"
        );
    }
}
