//! The board UI in headless Chromium: `tests/browser/board.mjs` (Playwright,
//! driving Debian's Chromium) works through the product as a person would
//! against a real server. Screenshots land in `target/tmp/ui-screenshots`.
//!
//! Without Chromium or `tests/browser/node_modules` the test is skipped with a
//! message, unless `PAPERCLIP_REQUIRE_BROWSER=1` (CI), where that is a failure.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::TestServer;

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
    let server = TestServer::start().await;
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
    let _ = std::fs::remove_dir_all(&shots);
    let out = tokio::task::spawn_blocking({
        let base = server.base.clone();
        let shots = shots.clone();
        move || {
            Command::new("node")
                .arg("board.mjs")
                .arg(&base)
                .arg(&shots)
                .current_dir(&dir)
                .output()
                .expect("run node")
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
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
