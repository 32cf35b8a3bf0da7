//! Codes become words and the tools say what they did (issue 37): the CLI's
//! activity and dashboard are sentences, a cut list says so, a task made in
//! the backlog says who starts it and when; the Costs and Activity pages
//! word tokens, tasks, routines and bulk creations; a taken port names
//! `--port` and what holds it, and `doctor` fails on a server that is not
//! this Paperclip.

use crate::common;

use std::process::Command;

use common::cli::{cli, context_file, ok, text};
use common::{visible_text, TestServer};
use serde_json::{json, Value};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn the_cli_speaks_in_sentences_and_says_when_a_list_is_cut() {
    let s = TestServer::start().await;
    let ctx = context_file(&s);
    let company = s.company("Acme Words").await;
    let cid = id(&company);
    let prefix = company["issuePrefix"].as_str().unwrap().to_string();
    s.agent(&cid, "Builder", None).await;
    for title in ["Paint the fence", "Order paint", "Sweep the yard"] {
        s.issue(&cid, json!({ "title": title })).await;
    }
    ok(&s.base, &ctx, &["company", "use", &prefix]);

    // A list cut by --limit says so, with the way to see the rest.
    let out = cli(&s.base, &ctx, &["issue", "list", "--limit", "2"]);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(stdout.lines().count(), 3, "a header and two rows: {stdout}");
    assert!(
        stderr.contains("Showing the newest 2 of 3 tasks") && stderr.contains("--limit 3"),
        "{stderr}"
    );
    let (_, all) = text(&cli(&s.base, &ctx, &["issue", "list"]));
    assert!(
        !all.contains("Showing"),
        "an uncut list says nothing: {all}"
    );

    // Made in the backlog with an assignee: who starts it, and when.
    let made = ok(
        &s.base,
        &ctx,
        &["issue", "create", "Later work", "--assignee", "builder"],
    );
    assert!(
        made.contains("in the backlog")
            && made.contains("Builder starts it when you move it to todo"),
        "{made}"
    );

    // The feed and the dashboard in sentences, no action codes.
    let feed = ok(&s.base, &ctx, &["activity"]);
    assert!(feed.contains("Board created"), "{feed}");
    assert!(
        feed.contains("Later work") && feed.contains("Board added Builder"),
        "{feed}"
    );
    let dash = ok(&s.base, &ctx, &["dashboard"]);
    assert!(dash.contains("Board created"), "{dash}");
    for out in [&feed, &dash] {
        for code in ["issue.", "agent.", "company.", "_"] {
            assert!(!out.contains(code), "{code} in {out}");
        }
    }

    // No budget is said as such, not "$0.00 of $0.00".
    let shown = ok(&s.base, &ctx, &["agent", "show", "builder"]);
    assert!(
        shown.contains("no budget") && !shown.contains("of $0.00"),
        "{shown}"
    );
}

#[tokio::test]
async fn pages_word_tokens_tasks_routines_and_bulk_creations() {
    let s = TestServer::start().await;
    let company = s.company("Words Co").await;
    let cid = id(&company);
    let p = company["issuePrefix"].as_str().unwrap().to_string();
    let agent = s.agent(&cid, "Writer", None).await;
    let aid = id(&agent);
    let task = s.issue(&cid, json!({ "title": "Write the digest" })).await;
    s.ok_post(
        &format!("/api/companies/{cid}/cost-events"),
        json!({ "agentId": aid, "issueId": id(&task), "provider": "anthropic",
            "model": "claude-sonnet-4", "inputTokens": 240000, "outputTokens": 36000,
            "costCents": 874 }),
    )
    .await;
    let costs = visible_text(&s.page(&format!("/{p}/costs")).await);
    assert!(costs.contains("240,000 in / 36,000 out"), "{costs}");
    let ident = task["identifier"].as_str().unwrap();
    assert!(
        costs.contains(&format!("{ident} Write the digest")),
        "by task: {costs}"
    );

    let routine = s
        .ok_post(
            &format!("/api/companies/{cid}/routines"),
            json!({ "title": "Daily digest", "assigneeAgentId": aid }),
        )
        .await;
    let rid = id(&routine);
    s.ok_post(
        &format!("/api/routines/{rid}/triggers"),
        json!({ "kind": "schedule", "cronExpression": "0 9 * * *" }),
    )
    .await;
    s.ok_patch(
        &format!("/api/routines/{rid}"),
        json!({ "description": "Every morning" }),
    )
    .await;
    s.ok_post(&format!("/api/routines/{rid}/run"), json!({}))
        .await;
    // The routine's run ends first: its activity row landing amid the burst
    // below would split it (a fold is of rows next to each other).
    common::until(60, "the routine's run to end", async || {
        let runs = s
            .ok_get(&format!("/api/companies/{cid}/heartbeat-runs"))
            .await;
        let runs = runs.as_array()?;
        (!runs.is_empty()
            && runs
                .iter()
                .all(|r| !matches!(r["status"].as_str(), Some("queued" | "running"))))
        .then_some(())
    })
    .await;
    // A script's burst of new tasks is one row.
    for n in 0..5 {
        s.issue(&cid, json!({ "title": format!("Bulk {n}") })).await;
    }
    let html = s.page(&format!("/{p}/activity")).await;
    let feed = visible_text(&html);
    for sentence in [
        "Board ran routine Daily digest",
        "Board added a schedule trigger to routine Daily digest",
        "Board saved a new revision of routine Daily digest",
        "Board created routine Daily digest",
        "Bulk 4 and 4 more tasks",
    ] {
        assert!(feed.contains(sentence), "{sentence:?} in {feed}");
    }
    assert!(
        html.contains(&format!(r#"href="/{p}/routines/{rid}""#)),
        "linked"
    );
    assert!(
        !feed.contains("routine.") && !html.contains("title=\"routine."),
        "{feed}"
    );
}

/// A stand-in for another server on the port: upstream Paperclip answers
/// its health check with its own version and none of ours.
async fn upstream_on_a_port() -> u16 {
    let app = axum::Router::new().route(
        "/api/health",
        axum::routing::get(|| async {
            axum::Json(json!({ "status": "ok", "version": "2026.916.1", "deploymentMode": "local_trusted" }))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// The binary with `args`, off the test's runtime (which serves the
/// stand-in it talks to), none of the caller's PAPERCLIP_* settings.
async fn paperclip(args: Vec<String>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_paperclip"));
        for var in [
            "PAPERCLIP_PORT",
            "PAPERCLIP_CONFIG",
            "PAPERCLIP_DATA_DIR",
            "PAPERCLIP_BIND",
            "DATABASE_URL",
        ] {
            cmd.env_remove(var);
        }
        cmd.env("RUST_BACKTRACE", "0").args(args).output().unwrap()
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn a_taken_port_names_what_holds_it_and_how_to_pick_another() {
    let port = upstream_on_a_port().await;
    let data = std::env::temp_dir().join(format!("pc-port-{}", uuid::Uuid::new_v4()));
    let with = |cmd: &str| {
        vec![
            cmd.to_string(),
            "--data-dir".into(),
            data.display().to_string(),
            "--port".into(),
            port.to_string(),
        ]
    };

    let out = paperclip(with("run")).await;
    let (stdout, stderr) = text(&out);
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("port {port}"))
            && stderr.contains("2026.916.1")
            && stderr.contains(&format!("--port {}", port + 1))
            && stderr.contains("PAPERCLIP_PORT"),
        "{stderr}"
    );

    // doctor: another server there is a failure with the fix, never "ok".
    let out = paperclip(with("doctor")).await;
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.contains("port "))
        .unwrap_or_default();
    assert!(
        line.starts_with("FAIL") && line.contains("2026.916.1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("not this Paperclip") && stdout.contains("--port"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&data);
}
