//! Our own `paperclip` CLI as a test harness: the built binary against a
//! test server with `--api-base`, an isolated saved context, and none of the
//! caller's PAPERCLIP_* settings.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::TestServer;

/// A CLI invocation against `base` with its own context file and none of
/// the caller's PAPERCLIP_* settings leaking in.
pub fn cli_cmd(base: &str, context: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_paperclip"));
    for var in [
        "PAPERCLIP_API_URL",
        "PAPERCLIP_API_KEY",
        "PAPERCLIP_RUN_ID",
        "PAPERCLIP_COMPANY",
        "PAPERCLIP_PORT",
        "PAPERCLIP_CONFIG",
        "PAPERCLIP_DATA_DIR",
        "DATABASE_URL",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("PAPERCLIP_CONTEXT_FILE", context)
        .env("RUST_BACKTRACE", "0")
        .arg("--api-base")
        .arg(base)
        .args(args);
    cmd
}

pub fn cli(base: &str, context: &Path, args: &[&str]) -> Output {
    cli_cmd(base, context, args)
        .output()
        .expect("run paperclip")
}

pub fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the CLI and expects exit 0; returns stdout.
pub fn ok(base: &str, context: &Path, args: &[&str]) -> String {
    let out = cli(base, context, args);
    let (stdout, stderr) = text(&out);
    assert!(
        out.status.success(),
        "paperclip {args:?} -> {:?}\nstdout: {stdout}\nstderr: {stderr}",
        out.status
    );
    stdout
}

pub fn context_file(s: &TestServer) -> PathBuf {
    s.data_dir.join("cli-context.toml")
}
