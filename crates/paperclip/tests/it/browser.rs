//! The board UI in headless Chromium: `tests/browser/board.mjs` (Playwright,
//! driving Debian's Chromium) works through the product as a person would
//! against a real server. Screenshots land in `target/tmp/ui-screenshots/board`.
//!
//! Without Chromium or `tests/browser/node_modules` the test is skipped with a
//! message, unless `PAPERCLIP_REQUIRE_BROWSER=1` (CI), where that is a failure.

use crate::common;

use std::path::PathBuf;
use std::process::Stdio;

use common::TestServer;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    path.exists().then_some(path)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_runs_the_company_from_the_board() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/browser");
    let ready = chromium().is_some() && dir.join("node_modules/playwright-core").exists();
    if !ready {
        let why = "needs /usr/bin/chromium and `npm install --prefix tests/browser`";
        if std::env::var("PAPERCLIP_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!("browser test required but not runnable: {why}");
        }
        eprintln!("skipping the browser test: {why}");
        return;
    }
    let mut server = TestServer::start().await;
    let port: u16 = server.base.rsplit(':').next().unwrap().parse().unwrap();
    let shots = crate::common::browser::shots_dir("board");
    let _ = std::fs::remove_dir_all(&shots);
    let mut node = Command::new("node")
        .arg("board.mjs")
        .arg(&server.base)
        .arg(&shots)
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run node");
    let mut stdin = node.stdin.take().unwrap();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let mut stdout = String::new();
    // A hung browser must fail the test, not stall CI.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(180);
    while let Some(line) = tokio::time::timeout_at(deadline, lines.next_line())
        .await
        .unwrap_or_else(|_| panic!("browser scenario hung; so far:\n{stdout}"))
        .unwrap()
    {
        stdout.push_str(&line);
        stdout.push('\n');
        if let Some(issue_id) = line.strip_prefix("restart-server ") {
            // A real drop of the live stream: the server goes away and comes
            // back on the same port and data; a comment lands meanwhile.
            let (data_dir, database_url) = server.stop_keeping_data();
            server = TestServer::start_on_port(data_dir, database_url, port, &[]).await;
            server
                .ok_post(
                    &format!("/api/issues/{issue_id}/comments"),
                    // A note: on the done task, it must not reopen it.
                    json!({ "body": "Written while you were away", "reopen": false }),
                )
                .await;
            stdin.write_all(b"restarted\n").await.unwrap();
        }
    }
    let out = node.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "browser scenario failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}\nscreenshots in {}",
        shots.display()
    );
    for name in [
        "dashboard",
        "task-detail",
        "tasks-board",
        "org",
        "approvals",
        "costs",
        "agent",
    ] {
        assert!(
            shots.join(format!("{name}.png")).exists(),
            "no screenshot of {name}"
        );
    }
}
