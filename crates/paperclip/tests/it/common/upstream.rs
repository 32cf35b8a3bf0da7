//! The upstream `paperclipai` CLI as a test harness. The CLI is
//! `$PAPERCLIP_UPSTREAM_CLI` or `paperclipai` on `PATH`; its directory goes
//! first on the child's `PATH`, so a local install (`npm install paperclipai
//! node@24` puts both `paperclipai` and Node 24 in `node_modules/.bin`) runs
//! with the Node it needs. Without the CLI its tests are skipped with a
//! message, unless `PAPERCLIP_REQUIRE_UPSTREAM_CLI=1`, where that is a failure.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::process::Command;

use super::{try_until_blocking, TestServer};

/// The upstream CLI, or `None` (after saying why) when the test should skip.
pub fn upstream_cli() -> Option<PathBuf> {
    wait_for_install();
    let found = match std::env::var_os("PAPERCLIP_UPSTREAM_CLI") {
        Some(path) if !path.is_empty() => Some(PathBuf::from(path)).filter(|p| p.is_file()),
        _ => std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join("paperclipai"))
                .find(|p| p.is_file())
        }),
    };
    if found.is_none() {
        let why = "needs the upstream CLI: `npm install paperclipai@2026.916.1 node@24` in a \
                   scratch folder, then PAPERCLIP_UPSTREAM_CLI=<folder>/node_modules/.bin/paperclipai";
        if std::env::var("PAPERCLIP_REQUIRE_UPSTREAM_CLI").as_deref() == Ok("1") {
            panic!("upstream CLI test required but not runnable: {why}");
        }
        eprintln!("skipping the upstream CLI test: {why}");
    }
    found
}

/// `.ci/run` installs the CLI (1.6 GB) beside the build and the other tests:
/// while the file `$PAPERCLIP_UPSTREAM_CLI_INSTALLING` names does not exist,
/// the install is still running. Waits for it, at most 20 minutes; past
/// that the test goes on without it (and skips, or fails where required).
fn wait_for_install() {
    let Some(done) = std::env::var_os("PAPERCLIP_UPSTREAM_CLI_INSTALLING") else {
        return;
    };
    let done = PathBuf::from(done);
    if try_until_blocking(1200, || done.exists().then_some(())).is_none() {
        eprintln!(
            "timed out after 1200 s waiting for the upstream CLI install to finish ({} to exist)",
            done.display()
        );
    }
}

/// `PATH` for the CLI: its own directory first (a sibling Node 24), then ours.
pub fn path_with(cli: &Path) -> std::ffi::OsString {
    let mut dirs = vec![cli.parent().unwrap().to_path_buf()];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap()
}

/// One V8 code cache for every CLI process of the run (and the next runs):
/// Node checks each entry against its source, so a stale one is only
/// ignored. It cut a process's CPU by about 5% (0.93 s to 0.88 s, the
/// 7.5 MB bundle compiled once), and a sweep runs a hundred of them.
fn node_compile_cache() -> PathBuf {
    std::env::temp_dir().join("paperclip-node-compile-cache")
}

pub struct Cli {
    pub path: PathBuf,
    pub base: String,
    /// The CLI's own home (`context.json`, stored board logins): empty, so
    /// nothing from the machine's `~/.paperclip` takes part.
    pub home: PathBuf,
    /// One Node process running this CLI's commands (`upstream_batch.mjs`),
    /// started by the first command.
    batch: tokio::sync::Mutex<Option<Batch>>,
}

pub struct Outcome {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("CLI printed no JSON ({e}): {}", self.stdout))
    }
}

/// The environment every command runs in: the person, no key, no run, our URL.
fn person_env(cmd: &mut Command, cli: &Cli) {
    cmd.env("PATH", path_with(&cli.path))
        .env("PAPERCLIP_API_URL", &cli.base)
        .env("PAPERCLIP_HOME", &cli.home)
        .env("NO_COLOR", "1")
        .env("PAPERCLIP_TELEMETRY_DISABLED", "1")
        .env("NODE_COMPILE_CACHE", node_compile_cache())
        .env_remove("PAPERCLIP_API_KEY")
        .env_remove("PAPERCLIP_RUN_ID")
        .env_remove("PAPERCLIP_COMPANY_ID")
        .env_remove("PAPERCLIP_CONTEXT")
        .kill_on_drop(true);
}

/// With `PAPERCLIP_CLI_COVERAGE=<file>`, a command run in its own process
/// appends `{"args": [...], "ok": ...}` there (the batch writes its own
/// lines, `upstream_batch.mjs`). Only the words before the first option are
/// kept, never an option's value; `cli_commands.mjs --coverage` names the
/// command from them.
fn log_coverage(args: &[&str], ok: bool) {
    use std::io::Write;
    let Some(file) = std::env::var_os("PAPERCLIP_CLI_COVERAGE").filter(|f| !f.is_empty()) else {
        return;
    };
    let words: Vec<&str> = args
        .iter()
        .copied()
        .take_while(|a| !a.starts_with('-'))
        .collect();
    let mut line = serde_json::json!({ "args": words, "ok": ok }).to_string();
    line.push('\n');
    // One write per line, appended: concurrent tests' lines stay whole.
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!("coverage log {}: {e}", file.to_string_lossy());
    }
}

/// A command may take this long (a loaded CI machine included).
const COMMAND_LIMIT: Duration = Duration::from_secs(60);

struct Batch {
    _child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
}

#[derive(serde::Deserialize)]
struct BatchAnswer {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Cli {
    pub fn new(cli: PathBuf, server: &TestServer) -> Cli {
        let home = server.data_dir.join("upstream-cli-home");
        std::fs::create_dir_all(&home).unwrap();
        Cli {
            path: cli,
            base: server.base.clone(),
            home,
            batch: tokio::sync::Mutex::new(None),
        }
    }

    /// Runs `paperclipai <args>` as the person: no key, no run, our URL.
    pub async fn run(&self, args: &[&str]) -> Outcome {
        let ran = if std::env::var("PAPERCLIP_UPSTREAM_CLI_PROCESSES").as_deref() == Ok("1") {
            tokio::time::timeout(COMMAND_LIMIT, self.run_process(args)).await
        } else {
            tokio::time::timeout(COMMAND_LIMIT, self.run_batched(args)).await
        };
        ran.unwrap_or_else(|_| panic!("paperclipai {args:?} did not finish within 60 s"))
    }

    async fn run_process(&self, args: &[&str]) -> Outcome {
        let mut cmd = Command::new(&self.path);
        cmd.args(args).stdin(Stdio::null());
        person_env(&mut cmd, self);
        let output = cmd.output().await.expect("spawn the upstream CLI");
        log_coverage(args, output.status.success());
        Outcome {
            ok: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    async fn run_batched(&self, args: &[&str]) -> Outcome {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let mut batch = self.batch.lock().await;
        if batch.is_none() {
            *batch = Some(self.start_batch());
        }
        let b = batch.as_mut().unwrap();
        let mut line = serde_json::to_string(&serde_json::json!({ "args": args })).unwrap();
        line.push('\n');
        b.stdin
            .write_all(line.as_bytes())
            .await
            .expect("send a command to the upstream CLI");
        let mut answer = String::new();
        b.stdout
            .read_line(&mut answer)
            .await
            .expect("read the upstream CLI's answer");
        assert!(
            !answer.is_empty(),
            "the upstream CLI's process ended during paperclipai {args:?}"
        );
        let answer: BatchAnswer = serde_json::from_str(&answer)
            .unwrap_or_else(|e| panic!("the upstream CLI's batch answered {answer:?}: {e}"));
        Outcome {
            ok: answer.code == 0,
            stdout: answer.stdout,
            stderr: answer.stderr,
        }
    }

    fn start_batch(&self) -> Batch {
        // The bin is a link to the CLI's bundle; Node 24 sits beside it
        // (`Command` looks a program up in our PATH, not the child's).
        let entry = std::fs::canonicalize(&self.path).expect("resolve the upstream CLI");
        let node = std::env::split_paths(&path_with(&self.path))
            .map(|dir| dir.join("node"))
            .find(|p| p.is_file())
            .expect("node beside the upstream CLI or on PATH");
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/common/upstream_batch.mjs");
        let mut cmd = Command::new(node);
        person_env(&mut cmd, self);
        cmd.arg(script)
            .arg(entry)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("start the upstream CLI's batch");
        let stdin = child.stdin.take().unwrap();
        let stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
        Batch {
            _child: child,
            stdin,
            stdout,
        }
    }

    /// Runs a command that must succeed; returns its stdout.
    pub async fn ok(&self, args: &[&str]) -> Outcome {
        let out = self.run(args).await;
        assert!(
            out.ok,
            "paperclipai {args:?} failed\nstdout: {}\nstderr: {}",
            out.stdout, out.stderr
        );
        out
    }
}
