//! The command-line client (`paperclip issue|agent|runs|company|…`), black
//! box: a real server on an ephemeral port, the built binary run against it
//! with `--api-base`, and its output, exit codes and saved context checked.
//! Every test isolates the saved context with `PAPERCLIP_CONTEXT_FILE`.

mod follow;

use crate::common;

use std::process::{Command, Output};

use common::cli::{cli, context_file, ok, text};
use common::TestServer;
use serde_json::{json, Value};

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn issue_commands_take_and_show_identifiers() {
    let s = TestServer::start().await;
    let ctx = context_file(&s);
    let company = s.company("Acme Rockets").await;
    let cid = id(&company);
    let prefix = company["issuePrefix"].as_str().unwrap().to_string();
    let agent = s.agent(&cid, "Rita Builder", None).await;
    let first = s
        .issue(
            &cid,
            json!({ "title": "Paint the rocket", "status": "todo",
            "assigneeAgentId": id(&agent), "description": "Red, with a white stripe." }),
        )
        .await;
    let second = s
        .issue(&cid, json!({ "title": "Order fuel", "status": "backlog" }))
        .await;
    let (ident1, ident2) = (
        first["identifier"].as_str().unwrap().to_string(),
        second["identifier"].as_str().unwrap().to_string(),
    );
    assert!(ident1.starts_with(&prefix));

    // The table: identifiers and names, never UUIDs.
    let table = ok(&s.base, &ctx, &["issue", "list"]);
    assert!(table.lines().next().unwrap().starts_with("ID"), "{table}");
    for want in [
        &ident1,
        &ident2,
        "Paint the rocket",
        "Rita Builder",
        "todo",
        "backlog",
    ] {
        assert!(table.contains(want), "missing {want} in\n{table}");
    }
    assert!(
        !table.contains(&cid) && !table.contains(&id(&agent)),
        "{table}"
    );
    let widths: Vec<usize> = table
        .lines()
        .map(|l| l.find("STATUS").unwrap_or(0))
        .collect();
    assert!(widths[0] > 0, "header has STATUS: {table}");
    for line in table.lines().skip(1) {
        let status = &line[widths[0]..];
        assert!(
            status.starts_with("todo") || status.starts_with("backlog"),
            "columns align: {line:?}"
        );
    }

    // Filters: status and assignee by name or url-key.
    let todo = ok(
        &s.base,
        &ctx,
        &["issue", "list", "--status", "todo,in_progress"],
    );
    assert!(todo.contains(&ident1) && !todo.contains(&ident2), "{todo}");
    let key = agent["urlKey"].as_str().unwrap();
    let mine = ok(&s.base, &ctx, &["issue", "list", "--assignee", key]);
    assert!(mine.contains(&ident1) && !mine.contains(&ident2), "{mine}");

    // --json is the API's JSON.
    let json_out = ok(&s.base, &ctx, &["issue", "list", "--json"]);
    let list: Value = serde_json::from_str(&json_out).expect("--json parses");
    let rows = list.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows
        .iter()
        .all(|r| r["identifier"].is_string() && r["id"].is_string()));

    // show: title, description, assignee by name.
    let shown = ok(&s.base, &ctx, &["issue", "show", &ident1]);
    assert!(shown.starts_with(&ident1), "outcome line first: {shown}");
    for want in [
        "Paint the rocket",
        "Red, with a white stripe.",
        "Rita Builder",
        "todo",
    ] {
        assert!(shown.contains(want), "missing {want} in\n{shown}");
    }
    let shown_json: Value =
        serde_json::from_str(&ok(&s.base, &ctx, &["issue", "show", &ident1, "--json"])).unwrap();
    assert_eq!(shown_json["identifier"], ident1.as_str());
    assert!(shown_json["comments"].is_array());

    // create with an assignee by name, then update and comment by identifier.
    let created = ok(
        &s.base,
        &ctx,
        &[
            "issue",
            "create",
            "Write the launch checklist",
            "--assignee",
            "rita builder",
            "--priority",
            "high",
            "--description",
            "Every step.",
        ],
    );
    assert!(created.starts_with("Created "), "{created}");
    let ident3 = created.split_whitespace().nth(1).unwrap().to_string();
    let fetched = s.ok_get(&format!("/api/issues/{ident3}")).await;
    assert_eq!(fetched["title"], "Write the launch checklist");
    assert_eq!(fetched["assigneeAgentId"], id(&agent).as_str());
    assert_eq!(fetched["priority"], "high");

    let updated = ok(
        &s.base,
        &ctx,
        &[
            "issue",
            "update",
            &ident2,
            "--status",
            "todo",
            "--priority",
            "low",
        ],
    );
    assert!(
        updated.contains(&ident2) && updated.contains("todo"),
        "{updated}"
    );
    let fetched = s.ok_get(&format!("/api/issues/{ident2}")).await;
    assert_eq!(fetched["status"], "todo");
    assert_eq!(fetched["priority"], "low");

    ok(
        &s.base,
        &ctx,
        &[
            "issue",
            "comment",
            &ident2,
            "Fuel ordered from the usual place.",
        ],
    );
    let comments = s.ok_get(&format!("/api/issues/{ident2}/comments")).await;
    assert!(
        comments
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["body"] == "Fuel ordered from the usual place."),
        "{comments}"
    );
    let shown = ok(&s.base, &ctx, &["issue", "show", &ident2]);
    assert!(
        shown.contains("Fuel ordered from the usual place."),
        "{shown}"
    );
}

#[tokio::test]
async fn errors_read_as_sentences_with_exit_codes() {
    let s = TestServer::start().await;
    let ctx = context_file(&s);
    let company = s.company("Acme").await;
    let prefix = company["issuePrefix"].as_str().unwrap();

    // An unknown identifier: the 404 in words, exit 1.
    let missing = format!("{prefix}-99");
    let out = cli(&s.base, &ctx, &["issue", "show", &missing]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("{missing}: no such task (404)")),
        "{stderr}"
    );
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "{stderr}"
    );

    let out = cli(
        &s.base,
        &ctx,
        &["issue", "update", &missing, "--status", "done"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("no such task (404)"),
        "{}",
        text(&out).1
    );

    // An unknown agent names the ones there are.
    s.agent(&id(&company), "Casey", None).await;
    let out = cli(&s.base, &ctx, &["agent", "wake", "nobody"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out).1;
    assert!(
        stderr.contains("nobody: no such agent (404)") && stderr.contains("casey"),
        "{stderr}"
    );

    // The server's validation message comes through.
    let out = cli(&s.base, &ctx, &["issue", "list", "--status", "bogus"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out).1;
    assert!(
        stderr.contains("Invalid status") && stderr.contains("(400)"),
        "{stderr}"
    );

    // Usage errors are clap's, exit 2.
    let out = cli(&s.base, &ctx, &["issue", "frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    let out = cli(&s.base, &ctx, &["issue", "show"]);
    assert_eq!(out.status.code(), Some(2));

    // Nothing listening: say so, and how to fix it.
    let base = s.base.clone();
    drop(s);
    let out = cli(&base, &ctx, &["issue", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out).1;
    assert!(
        stderr.contains(&format!("cannot reach the server at {base}"))
            && stderr.contains("paperclip run"),
        "{stderr}"
    );
}

#[tokio::test]
async fn company_use_saves_the_context_and_flags_override_it() {
    let s = TestServer::start().await;
    let ctx = context_file(&s);
    let a = s.company("Alpha Works").await;
    let b = s.company("Beta Labs").await;
    let (pa, pb) = (
        a["issuePrefix"].as_str().unwrap().to_string(),
        b["issuePrefix"].as_str().unwrap().to_string(),
    );
    s.issue(&id(&a), json!({ "title": "Alpha task" })).await;
    s.issue(&id(&b), json!({ "title": "Beta task" })).await;

    // Two companies and no choice made: say which there are.
    let out = cli(&s.base, &ctx, &["issue", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out).1;
    assert!(
        stderr.contains(&pa) && stderr.contains(&pb) && stderr.contains("company use"),
        "{stderr}"
    );

    let listed = ok(&s.base, &ctx, &["company", "list"]);
    assert!(
        listed.contains("Alpha Works") && listed.contains(&pb),
        "{listed}"
    );

    // `company use` by prefix in any case, saved to the context file.
    let used = ok(&s.base, &ctx, &["company", "use", &pb.to_lowercase()]);
    assert!(used.contains(&pb), "{used}");
    let saved = std::fs::read_to_string(&ctx).expect("context file written");
    assert!(
        saved.contains(&id(&b)) && saved.contains(&s.base),
        "{saved}"
    );

    let tasks = ok(&s.base, &ctx, &["issue", "list"]);
    assert!(
        tasks.contains("Beta task") && !tasks.contains("Alpha task"),
        "{tasks}"
    );
    let listed = ok(&s.base, &ctx, &["company", "list"]);
    let marked = listed.lines().find(|l| l.starts_with('*')).unwrap();
    assert!(marked.contains(&pb), "{listed}");

    // --company (prefix or name) wins over the saved one.
    let tasks = ok(&s.base, &ctx, &["issue", "list", "--company", &pa]);
    assert!(
        tasks.contains("Alpha task") && !tasks.contains("Beta task"),
        "{tasks}"
    );
    let tasks = ok(
        &s.base,
        &ctx,
        &["--company", "alpha works", "issue", "list"],
    );
    assert!(tasks.contains("Alpha task"), "{tasks}");

    // The saved context also gives the server when --api-base is left out.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_paperclip"));
    cmd.env_remove("PAPERCLIP_API_URL")
        .env_remove("PAPERCLIP_COMPANY")
        .env("PAPERCLIP_CONTEXT_FILE", &ctx)
        .args(["company", "show"]);
    let out = cmd.output().unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("Beta Labs") && stdout.contains(&pb),
        "{stdout}"
    );

    let out = cli(&s.base, &ctx, &["company", "use", "ZZZ"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("ZZZ: no such company"),
        "{}",
        text(&out).1
    );

    let shown: Value =
        serde_json::from_str(&ok(&s.base, &ctx, &["company", "show", "--json"])).unwrap();
    assert_eq!(shown["issuePrefix"], pb.as_str());
}

#[tokio::test]
async fn approvals_are_listed_and_decided_by_short_id() {
    let s = TestServer::start().await;
    let ctx = context_file(&s);
    let cid = id(&s.company("Acme").await);
    let approval = s
        .ok_post(
            &format!("/api/companies/{cid}/approvals"),
            json!({ "type": "approve_ceo_strategy", "payload": { "plan": "sell more" } }),
        )
        .await;
    let aid = id(&approval);
    let short = &aid[aid.len() - 8..];
    let table = ok(&s.base, &ctx, &["approval", "list"]);
    assert!(
        table.contains(short) && table.contains("pending"),
        "{table}"
    );
    let decided = ok(
        &s.base,
        &ctx,
        &["approval", "approve", short, "--note", "go"],
    );
    assert!(decided.starts_with("approved"), "{decided}");
    let fetched = s.ok_get(&format!("/api/approvals/{aid}")).await;
    assert_eq!(fetched["status"], "approved");
    assert_eq!(fetched["decisionNote"], "go");
    // Deciding twice is the server's 409, in words.
    let out = cli(&s.base, &ctx, &["approval", "reject", short]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("(409)") || text(&out).1.contains("(422)"),
        "{}",
        text(&out).1
    );
}

fn doctor(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_paperclip"));
    for var in [
        "PAPERCLIP_PORT",
        "PAPERCLIP_CONFIG",
        "PAPERCLIP_DATA_DIR",
        "DATABASE_URL",
        "PAPERCLIP_BIND",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("RUST_BACKTRACE", "0")
        .arg("doctor")
        .args(args)
        .envs(env.iter().copied());
    cmd.output().unwrap()
}

#[tokio::test]
async fn doctor_checks_what_run_would_use() {
    let s = TestServer::start().await;
    let port = s.addr().rsplit(':').next().unwrap().to_string();
    let data = s.data_dir.to_str().unwrap().to_string();
    let env: Vec<(&str, &str)> = match &s.database_url {
        Some(url) => vec![("DATABASE_URL", url.as_str())],
        None => vec![],
    };

    // The live server's data dir, database and port: nothing broken.
    let out = doctor(&["--data-dir", &data, "--port", &port], &env);
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("is writable"), "{stdout}");
    let db = if s.database_url.is_some() {
        "postgres"
    } else {
        "opens (schema"
    };
    assert!(stdout.contains(db), "{stdout}");
    assert!(
        stdout.contains("this Paperclip is already running there"),
        "{stdout}"
    );
    for cli in ["claude", "codex", "opencode"] {
        assert!(
            stdout.lines().any(|l| l.contains(cli)),
            "{cli} checked: {stdout}"
        );
    }
    let report: Value = serde_json::from_str(
        &text(&doctor(
            &["--data-dir", &data, "--port", &port, "--json"],
            &env,
        ))
        .0,
    )
    .expect("doctor --json parses");
    assert_eq!(report["ok"], true, "{report}");
    assert!(report["checks"].as_array().unwrap().len() >= 6);

    // A data dir that is a file: broken, with a fix, exit 1.
    let file = s.data_dir.join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    // The checks below are about the data dir and the port: a PATH without
    // the coding CLIs spares asking each its version again (seconds each).
    let no_clis = [("PATH", "/nonexistent")];
    let out = doctor(
        &["--data-dir", file.to_str().unwrap(), "--port", "0"],
        &no_clis,
    );
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("FAIL") && stdout.contains("fix:"),
        "{stdout}"
    );

    // A port held by something that is not paperclip.
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = other.local_addr().unwrap().port().to_string();
    let fresh = s.data_dir.join("fresh");
    let out = doctor(
        &["--data-dir", fresh.to_str().unwrap(), "--port", &busy],
        &no_clis,
    );
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("not this Paperclip") && stdout.contains("--port"),
        "{stdout}"
    );
    assert!(
        stdout.contains("made on first"),
        "a new data dir is fine: {stdout}"
    );
    drop(other);
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(env!("CARGO_BIN_EXE_paperclip"))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8(out.stdout).unwrap();
        assert!(
            script.contains("paperclip") && script.contains("issue"),
            "{shell}: {script}"
        );
    }
}
