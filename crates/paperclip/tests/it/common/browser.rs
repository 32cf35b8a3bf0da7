//! Runs one headless-Chromium scenario (`tests/browser/<name>.mjs`, Playwright
//! driving Debian's Chromium) against a server. A scenario is called as
//! `node <name>.mjs <base-url> <screenshot-dir>`, prints `step: ...` lines,
//! and ends with a line `ok`; anything else fails the test with its output.
//!
//! Without Chromium or `tests/browser/node_modules` the scenario is skipped
//! with a message, unless `PAPERCLIP_REQUIRE_BROWSER=1` (CI), where that is a
//! failure.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

pub fn scenarios_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/browser")
}

/// Whether the browser scenarios can run here; panics in CI when they cannot.
pub fn ready() -> bool {
    let chromium = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let ok = chromium.exists()
        && scenarios_dir()
            .join("node_modules/playwright-core")
            .exists();
    if !ok {
        let why = "needs /usr/bin/chromium and `npm install --prefix tests/browser`";
        if std::env::var("PAPERCLIP_REQUIRE_BROWSER").as_deref() == Ok("1") {
            panic!("browser test required but not runnable: {why}");
        }
        eprintln!("skipping the browser test: {why}");
    }
    ok
}

/// Where a scenario's screenshots (and the files its agents wait on) go:
/// `target/tmp/ui-screenshots/<name>`, or `ui-screenshots-postgres/<name>`
/// on Postgres. CI runs both engines at once: with one folder, one
/// engine's scenario released the other's waiting agent before its page
/// had seen it run.
pub fn shots_dir(name: &str) -> PathBuf {
    let root = match std::env::var("PAPERCLIP_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => "ui-screenshots-postgres",
        _ => "ui-screenshots",
    };
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(root)
        .join(name)
}

/// Runs `tests/browser/<name>.mjs` against `base` to its end (at most
/// `limit`, and never less than [`HANG_FLOOR`]), panicking with its output
/// and screenshot folder on failure. Returns its stdout.
pub async fn run(name: &str, base: &str, limit: Duration) -> String {
    let limit = limit.max(HANG_FLOOR);
    let _slot = BrowserSlot::take().await;
    let shots = shots_dir(name);
    let _ = std::fs::remove_dir_all(&shots);
    let child = Command::new("node")
        .arg(format!("{name}.mjs"))
        .arg(base)
        .arg(&shots)
        .current_dir(scenarios_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run node");
    let out = tokio::time::timeout(limit, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("browser scenario {name} hung past {limit:?}"))
        .expect("wait for node");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "browser scenario {name} failed\n--- stdout\n{stdout}\n--- stderr\n{stderr}\nscreenshots in {}",
        shots.display()
    );
    stdout
}

/// The least time a scenario gets before it counts as hung. Its own limit is
/// what it takes on a quiet machine with room to spare; a CI run on two
/// loaded cores took three times that (a 60 s limit failed three scenarios
/// that pass alone in 20 s). nextest kills a test at 300 s regardless.
const HANG_FLOOR: Duration = Duration::from_secs(240);

/// How many Chromium scenarios run at once across the whole suite. Each is a
/// browser plus Node, CPU-heavy on CI's two cores; the suite runs many tests
/// at once (one process each under nextest), so the bound is a file lock
/// shared by processes, not a semaphore in one.
const BROWSER_SLOTS: usize = 2;

/// One of [`BROWSER_SLOTS`] held until dropped (closing the file frees the lock).
struct BrowserSlot(std::fs::File);

impl BrowserSlot {
    async fn take() -> BrowserSlot {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        super::until(600, "a browser slot to come free", async || {
            for i in 0..BROWSER_SLOTS {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .write(true)
                    .open(dir.join(format!("browser-slot-{i}.lock")))
                    .expect("open a browser slot lock");
                use std::os::fd::AsRawFd;
                // SAFETY: flock on a file descriptor we own.
                if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                    return Some(BrowserSlot(file));
                }
            }
            None
        })
        .await
    }
}
