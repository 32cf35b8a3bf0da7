//! The command-line client (`paperclip issue|agent|runs|company|…`), black
//! box: a real server on an ephemeral port, the built binary run against it
//! with `--api-base`, and its output, exit codes and saved context checked.
//! Every test isolates the saved context with `PAPERCLIP_CONTEXT_FILE`.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::cli::{cli, cli_cmd, context_file, ok, text};
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

/// `agent wake --follow` (and so `runs log --follow`) prints the log while
/// the run is going and returns when it has finished, with the outcome.
#[tokio::test]
async fn wake_and_follow_a_run_to_its_end() {
    let s = TestServer::start().await;
    let ctx = context_file(&s);
    let company = s.company("Acme").await;
    let cid = id(&company);
    let gate = s.data_dir.join("gate");
    let script = format!(
        "echo 'step one: measuring'\nwhile [ ! -f '{}' ]; do sleep 0.05; done\necho 'step two: done measuring'\n",
        gate.display()
    );
    let agent = s
        .script_agent(&cid, "Mia Measurer", &script, json!({}))
        .await;

    let mut child = cli_cmd(
        &s.base,
        &ctx,
        &["agent", "wake", "mia measurer", "--follow"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    // The first step shows while the run is still going (it waits on the gate).
    while !seen.iter().any(|l: &String| l.contains("step one")) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("no progress shown in 30 s: {seen:?}"),
        }
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "follow ended before the run: {seen:?}"
    );
    let running = s.runs_of(&cid, &id(&agent)).await;
    assert_eq!(running.last().unwrap()["status"], "running");
    std::fs::write(&gate, "go").unwrap();
    let status = common::until(30, "the follow to end", async || child.try_wait().unwrap()).await;
    assert!(status.success(), "{seen:?}");
    seen.extend(rx.iter());
    let all = seen.join("\n");
    assert!(all.contains("Woke Mia Measurer"), "{all}");
    assert!(all.contains("step two: done measuring"), "{all}");
    let last = seen.last().unwrap();
    assert!(
        last.starts_with("run ") && last.contains("succeeded"),
        "outcome last: {all}"
    );

    // The run in the run commands: the short id shown, agent by name.
    let runs = s.runs_of(&cid, &id(&agent)).await;
    let run_id = id(runs.last().unwrap());
    let short = &run_id[run_id.len() - 8..];
    let table = ok(&s.base, &ctx, &["runs", "list"]);
    assert!(table.starts_with("STATUS"), "outcome first: {table}");
    assert!(
        table.contains(short) && table.contains("Mia Measurer") && table.contains("succeeded"),
        "{table}"
    );
    assert!(!table.contains(&run_id), "{table}");
    let only = ok(
        &s.base,
        &ctx,
        &["runs", "list", "--agent", "mia-measurer", "--json"],
    );
    let only: Value = serde_json::from_str(&only).unwrap();
    assert_eq!(only.as_array().unwrap().len(), 1);
    assert_eq!(only[0]["id"], run_id.as_str());

    let shown = ok(&s.base, &ctx, &["runs", "show", short]);
    assert!(shown.starts_with("succeeded"), "{shown}");
    assert!(
        shown.contains(&run_id) && shown.contains("Mia Measurer"),
        "{shown}"
    );
    let log = ok(&s.base, &ctx, &["runs", "log", short]);
    assert!(
        log.contains("step one") && log.contains("step two"),
        "{log}"
    );
    // Following a finished run prints it all and returns at once.
    let log = ok(&s.base, &ctx, &["runs", "log", &run_id, "--follow"]);
    assert!(
        log.contains("step two") && log.contains("succeeded"),
        "{log}"
    );
    let ndjson = ok(&s.base, &ctx, &["runs", "log", short, "--json"]);
    for line in ndjson.lines() {
        let entry: Value = serde_json::from_str(line).expect("NDJSON lines parse");
        assert!(entry["stream"].is_string(), "{line}");
    }
    let out = cli(&s.base, &ctx, &["runs", "show", "ffffffff"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).1.contains("ffffffff: no such run (404)"),
        "{}",
        text(&out).1
    );

    // Agents by name; the dashboard and activity speak identifiers and names.
    let agents = ok(&s.base, &ctx, &["agent", "list"]);
    assert!(
        agents.contains("Mia Measurer") && agents.contains("process"),
        "{agents}"
    );
    let one = ok(&s.base, &ctx, &["agent", "show", "mia-measurer"]);
    assert!(one.contains("Mia Measurer") && one.contains(short), "{one}");
    let board = ok(&s.base, &ctx, &["dashboard"]);
    assert!(
        board.contains("Acme") && board.contains("Tasks:") && board.contains("Agents:"),
        "{board}"
    );
    let d: Value = serde_json::from_str(&ok(&s.base, &ctx, &["dashboard", "--json"])).unwrap();
    assert!(d["tasks"].is_object() && d["agents"].is_object(), "{d}");
    let activity = ok(&s.base, &ctx, &["activity"]);
    assert!(
        activity.contains("heartbeat") && activity.contains(short),
        "{activity}"
    );
    let costs = ok(&s.base, &ctx, &["cost", "summary"]);
    assert!(costs.starts_with("Spent $0.00"), "{costs}");
}

/// A failed run makes `--follow` exit 1 with the outcome, so scripts can
/// chain on it.
#[tokio::test]
async fn follow_exits_non_zero_when_the_run_fails() {
    let s = TestServer::start().await;
    let ctx = context_file(&s);
    let cid = id(&s.company("Acme").await);
    s.script_agent(&cid, "Fay", "echo 'trying'\nexit 3\n", json!({}))
        .await;
    let out = cli(&s.base, &ctx, &["agent", "wake", "fay", "--follow"]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("trying") && stdout.contains("failed (exit 3)"),
        "{stdout}"
    );
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
    assert!(stdout.contains("a paperclip server (version"), "{stdout}");
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
    let out = doctor(&["--data-dir", file.to_str().unwrap(), "--port", "0"], &[]);
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
        &[],
    );
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("not paperclip") && stdout.contains("--port"),
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
