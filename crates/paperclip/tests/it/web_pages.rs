//! The board UI over plain HTTP: every page renders from real data, names
//! tasks by identifier, shows failed runs with their cause, and is the
//! board's alone. (Behaviour in a browser is `browser.rs`.)

use crate::common;

use common::visible_text;

use common::TestServer;
use reqwest::StatusCode;
use serde_json::json;

/// Status, content type and body of a page.
async fn page(server: &TestServer, path: &str) -> (StatusCode, String, String) {
    let resp = server.client().get(server.url(path)).send().await.unwrap();
    let status = resp.status();
    let kind = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, kind, resp.text().await.unwrap())
}

/// The number a dashboard counter shows.
fn counter(html: &str, name: &str) -> String {
    let at = html
        .find(&format!(r#"data-counter="{name}""#))
        .unwrap_or_else(|| panic!("no counter {name}"));
    let rest = &html[at..];
    let start = rest.find("<b>").unwrap() + 3;
    let end = rest.find("</b>").unwrap();
    rest[start..end].to_string()
}

#[tokio::test]
async fn every_page_renders_from_real_data_and_names_tasks_by_identifier() {
    let server = TestServer::start().await;
    let company = server.company("Acme").await;
    let cid = company["id"].as_str().unwrap();
    let prefix = company["issuePrefix"].as_str().unwrap();
    let lead = server.agent(cid, "Lead", None).await;
    let coder = server
        .agent(cid, "Coder", Some(lead["id"].as_str().unwrap()))
        .await;
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Website" }),
        )
        .await;
    let first = server
        .issue(
            cid,
            json!({ "title": "Draft the homepage", "description": "Use **bold** claims",
            "projectId": project["id"], "status": "backlog" }),
        )
        .await;
    let second = server
        .issue(
            cid,
            json!({ "title": "Review copy", "parentId": first["id"], "status": "backlog" }),
        )
        .await;
    server
        .ok_post(
            &format!("/api/issues/{}/comments", first["id"].as_str().unwrap()),
            json!({ "body": "Looks _good_ <script>alert(1)</script>" }),
        )
        .await;

    let ident = first["identifier"].as_str().unwrap();
    let pages = [
        "dashboard".to_string(),
        "inbox".into(),
        "tasks".into(),
        "tasks?view=board".into(),
        format!("tasks/{ident}"),
        "projects".into(),
        "goals".into(),
        "agents".into(),
        "agents/coder".into(),
        "org".into(),
        "approvals".into(),
        "costs".into(),
        "activity".into(),
    ];
    let ids = [
        first["id"].as_str().unwrap(),
        second["id"].as_str().unwrap(),
    ];
    for p in &pages {
        let (status, kind, body) = page(&server, &format!("/{prefix}/{p}")).await;
        assert_eq!(status, StatusCode::OK, "{p}: {body}");
        assert!(kind.starts_with("text/html"), "{p}: {kind}");
        let text = visible_text(&body);
        for id in ids {
            assert!(!text.contains(id), "{p} shows a task's UUID to the reader");
        }
        assert!(
            !body.contains("<script>alert"),
            "{p} renders raw HTML from a comment"
        );
    }

    let (_, _, task) = page(&server, &format!("/{prefix}/tasks/{ident}")).await;
    assert!(
        task.contains("<strong>bold</strong>"),
        "description is Markdown"
    );
    assert!(task.contains("<em>good</em>"), "comments are Markdown");
    assert!(
        visible_text(&task).contains(second["identifier"].as_str().unwrap()),
        "sub-task listed"
    );
    assert!(task.contains("Website"), "project shown");

    let (_, _, org) = page(&server, &format!("/{prefix}/org")).await;
    let lead_at = org.find("Lead").unwrap();
    let coder_at = org.find("Coder").unwrap();
    assert!(
        lead_at < coder_at && org[lead_at..coder_at].contains("<ul>"),
        "Coder is drawn under Lead"
    );

    let (_, _, board) = page(&server, &format!("/{prefix}/tasks?view=board")).await;
    assert!(
        board.contains(r#"data-column="backlog""#)
            && board.contains(r#"data-allowed="todo cancelled""#)
    );

    let (_, _, filtered) = page(&server, &format!("/{prefix}/tasks?q=Review")).await;
    let text = visible_text(&filtered);
    assert!(text.contains("Review copy") && !text.contains("Draft the homepage"));

    let (_, _, dash) = page(&server, &format!("/{prefix}/dashboard")).await;
    assert_eq!(counter(&dash, "agents-enabled"), "2");
    assert_eq!(counter(&dash, "tasks-open"), "2");
    assert_eq!(counter(&dash, "month-spend"), "$0.00");
    let _ = coder;
}

#[tokio::test]
async fn a_failed_run_shows_its_cause_on_the_task_and_the_agent() {
    let server = TestServer::start().await;
    let company = server.company("Globex").await;
    let cid = company["id"].as_str().unwrap();
    let prefix = company["issuePrefix"].as_str().unwrap();
    let agent = server
        .script_agent(
            cid,
            "Flaky",
            "echo 'ANTHROPIC_API_KEY is not set' >&2\nexit 3\n",
            json!({}),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    let issue = server
        .issue(
            cid,
            json!({ "title": "Ship it", "assigneeAgentId": aid, "status": "todo" }),
        )
        .await;
    server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            30,
            |runs| {
                runs.as_array()
                    .is_some_and(|r| r.first().is_some_and(|r| r["status"] == "failed"))
            },
        )
        .await;
    let ident = issue["identifier"].as_str().unwrap();
    let (_, _, task) = page(&server, &format!("/{prefix}/tasks/{ident}")).await;
    assert!(task.contains(r#"data-run-status="failed""#));
    assert!(
        task.contains("ANTHROPIC_API_KEY is not set"),
        "the cause is on the task page"
    );
    let (_, _, agent_page) = page(&server, &format!("/{prefix}/agents/flaky")).await;
    assert!(
        agent_page.contains("ANTHROPIC_API_KEY is not set"),
        "the cause is on the agent page"
    );
    let (_, _, dash) = page(&server, &format!("/{prefix}/dashboard")).await;
    assert_eq!(counter(&dash, "agents-error"), "1");
}

#[tokio::test]
async fn the_ui_is_the_boards_and_unknown_places_are_404() {
    let server = TestServer::start().await;
    let (status, _, welcome) = page(&server, "/").await;
    assert_eq!(status, StatusCode::OK);
    assert!(welcome.contains("Create your first company"));

    let company = server.company("Initech").await;
    let cid = company["id"].as_str().unwrap();
    let prefix = company["issuePrefix"].as_str().unwrap();
    let resp = server.client().get(server.url("/")).send().await.unwrap();
    assert!(
        resp.url().path().ends_with(&format!("/{prefix}/dashboard")),
        "home goes to the company"
    );

    let (status, _, _) = page(&server, &format!("/{}/dashboard", prefix.to_lowercase())).await;
    assert_eq!(status, StatusCode::OK, "prefixes are case-insensitive");
    let (status, _, body) = page(&server, "/NOPE/dashboard").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains("No company uses the prefix NOPE"));
    let (status, _, body) = page(&server, &format!("/{prefix}/tasks/{prefix}-999")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body.contains(&format!("{prefix}-999 is not a task")));
    let (status, value) = server.get("/api/no-such-route").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        value["error"].as_str().is_some(),
        "API 404s stay JSON: {value}"
    );

    let agent = server.agent(cid, "Sneaky", None).await;
    let token = server.key(agent["id"].as_str().unwrap()).await;
    let resp = server
        .client()
        .get(server.url(&format!("/{prefix}/dashboard")))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    let body: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(body["error"], "Board access required");

    let css = server
        .client()
        .get(server.url("/ui/app.css"))
        .send()
        .await
        .unwrap();
    assert_eq!(css.status(), StatusCode::OK);
    assert!(css.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/css"));
    let js = server
        .client()
        .get(server.url("/ui/app.js"))
        .send()
        .await
        .unwrap();
    assert!(js.text().await.unwrap().contains("EventSource"));

    // The icon every page links, and where browsers look for one unasked.
    let page = server.page(&format!("/{prefix}/dashboard")).await;
    assert!(page.contains(r#"<link rel="icon" type="image/svg+xml" href="/ui/favicon.svg">"#));
    for path in ["/ui/favicon.svg", "/favicon.ico"] {
        let icon = server.client().get(server.url(path)).send().await.unwrap();
        assert_eq!(icon.status(), StatusCode::OK, "{path}");
        assert_eq!(icon.headers()["content-type"], "image/svg+xml", "{path}");
        assert!(icon.text().await.unwrap().starts_with("<svg"), "{path}");
    }
}

/// A coding agent's page offers to forget its saved sessions through the
/// API; an agent without sessions does not show the button.
#[tokio::test]
async fn a_coding_agents_page_can_reset_its_sessions() {
    let server = TestServer::start().await;
    let company = server.company("Initech").await;
    let cid = company["id"].as_str().unwrap();
    let prefix = company["issuePrefix"].as_str().unwrap();
    let coder = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Coder", "adapterType": "claude_local", "adapterConfig": {} }),
        )
        .await;
    server.agent(cid, "Scripted", None).await;
    let url = format!(
        "/api/agents/{}/runtime-state/reset-session",
        coder["id"].as_str().unwrap()
    );
    let (_, _, html) = page(&server, &format!("/{prefix}/agents/coder")).await;
    let button = html
        .find(&format!(r#"data-url="{url}""#))
        .map(|at| &html[at..])
        .expect("no reset button on the coding agent's page");
    assert!(
        visible_text(&button[..button.find("</button>").unwrap() + 9]).contains("Reset session"),
        "{button}"
    );
    // What the button sends is accepted.
    let reset = server.ok_post(&url, json!({})).await;
    assert_eq!(reset["cleared"], 0, "{reset}");
    let (_, _, other) = page(&server, &format!("/{prefix}/agents/scripted")).await;
    assert!(
        !other.contains("reset-session"),
        "a process agent has no sessions"
    );
    // A task assigned to the coding agent resets only its own session.
    let task = server
        .issue(
            cid,
            json!({ "title": "Refactor", "assigneeAgentId": coder["id"] }),
        )
        .await;
    let ident = task["identifier"].as_str().unwrap();
    let (_, _, html) = page(&server, &format!("/{prefix}/tasks/{ident}")).await;
    let body = format!(
        "{{&quot;taskKey&quot;:&quot;{}&quot;}}",
        task["id"].as_str().unwrap()
    );
    assert!(
        html.contains(&format!(r#"data-url="{url}""#)) && html.contains(&body),
        "the task page resets this task's session"
    );
    let reset = server.ok_post(&url, json!({ "taskKey": task["id"] })).await;
    assert_eq!(reset["cleared"], 0, "{reset}");
}

/// The value of the first `name="..."` attribute in `html`, unescaped.
fn attr(html: &str, name: &str) -> String {
    let at = html
        .find(&format!(r#"{name}=""#))
        .unwrap_or_else(|| panic!("no {name}"));
    let rest = &html[at + name.len() + 2..];
    rest[..rest.find('"').unwrap()].replace("&amp;", "&")
}

#[tokio::test]
async fn the_task_list_pages_with_a_count_and_board_columns_keep_their_own() {
    let server = TestServer::start().await;
    let company = server.company("Paged Co").await;
    let cid = company["id"].as_str().unwrap();
    let prefix = company["issuePrefix"].as_str().unwrap();
    for n in 0..205 {
        server
            .issue(
                cid,
                json!({ "title": format!("Chore {n}"), "status": "todo" }),
            )
            .await;
    }
    for n in 0..3 {
        server
            .issue(cid, json!({ "title": format!("Idea {n}") }))
            .await;
    }

    let (_, _, list) = page(&server, &format!("/{prefix}/tasks")).await;
    assert_eq!(attr(&list, "data-task-count"), "208");
    assert!(visible_text(&list).contains("208 tasks"));
    assert_eq!(list.matches("data-issue-id=").count(), 200, "one page");
    let (_, _, older) = page(&server, &attr(&list, "data-next-page href")).await;
    assert_eq!(older.matches("data-issue-id=").count(), 8, "the rest");
    assert!(visible_text(&older).contains(&format!("{prefix}-1 ")));
    assert!(!older.contains("data-next-page"), "no page after the last");
    assert!(older.contains("Newest"));

    // Each column shows its own newest cards and counts all of its tasks,
    // however many of the newest tasks other columns hold.
    let (_, _, board) = page(&server, &format!("/{prefix}/tasks?view=board")).await;
    let column = |status: &str| {
        let start = board.find(&format!(r#"data-column="{status}""#)).unwrap();
        let rest = &board[start + 10..];
        let end = rest.find("data-column=").unwrap_or(rest.len());
        board[start..start + 10 + end].to_string()
    };
    let todo = column("todo");
    assert_eq!(attr(&todo, "data-column-total"), "205");
    assert_eq!(todo.matches("task-card").count(), 50);
    assert!(visible_text(&todo).contains("All 205 in the list"));
    assert!(attr(&todo, "class=\"more\" href").ends_with("status=todo"));
    let backlog = column("backlog");
    assert_eq!(attr(&backlog, "data-column-total"), "3");
    assert_eq!(backlog.matches("task-card").count(), 3);
    assert!(!backlog.contains("in the list"));
}

#[tokio::test]
async fn a_database_failure_on_a_page_says_where_its_cause_is_without_showing_it() {
    let server = TestServer::start().await;
    let company = server.company("Broken Co").await;
    let prefix = company["issuePrefix"].as_str().unwrap().to_string();
    let (status, _, _) = page(&server, &format!("/{prefix}/inbox")).await;
    assert_eq!(status, StatusCode::OK);
    // The inbox reads its dismissals; without their table the database
    // answers with an error naming it.
    let db = common::database(&common::database_url(
        &server.data_dir,
        &server.database_url,
    ))
    .await;
    sqlx::query("DROP TABLE inbox_dismissals")
        .execute(&db)
        .await
        .unwrap();
    db.close().await;
    let (status, _, html) = page(&server, &format!("/{prefix}/inbox")).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    let text = visible_text(&html);
    assert!(
        text.contains("The database could not answer this page"),
        "{text}"
    );
    assert!(text.contains("server's log"), "{text}");
    for leak in [
        "inbox_dismissals",
        "relation",
        "no such table",
        "database error:",
        "SELECT",
    ] {
        assert!(!html.contains(leak), "the page shows {leak:?}: {text}");
    }
}
