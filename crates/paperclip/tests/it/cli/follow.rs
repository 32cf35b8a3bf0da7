//! `agent wake --follow` and `runs log --follow`: the log while the run
//! goes, its outcome and exit code at the end.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::cli::{cli, cli_cmd, context_file, ok, text};
use common::TestServer;
use serde_json::{json, Value};

use super::id;

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
        activity.contains("finished a run of Mia Measurer")
            && activity.contains(short)
            && !activity.contains("heartbeat."),
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
