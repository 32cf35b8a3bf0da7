//! The environment test of a `process` agent: the config, the working
//! directory, the command (found on `PATH`, or a path that exists and is
//! executable), every argument that names a script or a path (it exists
//! and can be read), and a dry run that reads the script without running
//! it (`sh -n`, `node --check`, ...). The agent's program itself is never
//! started: a run of it is the agent's work.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::environment::{config_checks, cwd_checks, resolve_command, Check, Level, Report};
use crate::ErrorCode;

/// Endings that make an argument a script even without a `/`.
const SCRIPT_ENDINGS: &[&str] = &[
    ".sh", ".bash", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php",
];

/// Whether an argument names a file on this machine (rather than a flag,
/// a URL, a `key=value` or inline code).
pub(crate) fn looks_like_path(arg: &str) -> bool {
    !arg.is_empty()
        && !arg.starts_with('-')
        && !arg.contains("://")
        && !arg.contains('=')
        && !arg.chars().any(char::is_whitespace)
        && (arg.contains('/') || SCRIPT_ENDINGS.iter().any(|e| arg.ends_with(e)))
}

/// How an interpreter reads a script without running it, by the
/// interpreter's program name; `None` for programs with no such mode.
fn syntax_flags(program: &str, script: &Path) -> Option<Vec<String>> {
    let script = script.display().to_string();
    let name = program.rsplit('/').next().unwrap_or(program);
    let flags: Vec<&str> = match name {
        "sh" | "bash" | "dash" | "zsh" | "ksh" => vec!["-n"],
        "node" | "nodejs" => vec!["--check"],
        "ruby" => vec!["-c"],
        "perl" => vec!["-c"],
        n if n == "python" || n.starts_with("python3") => vec![
            "-c",
            "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])",
        ],
        _ => return None,
    };
    let mut args: Vec<String> = flags.into_iter().map(str::to_string).collect();
    args.push(script);
    Some(args)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

pub(crate) async fn process(config: &Value, default_cwd: &Path) -> Report {
    let cfg = match crate::process::ProcessConfig::parse(config) {
        Ok(cfg) => cfg,
        Err(errors) => return Report::new("process", config_checks(Err(errors))),
    };
    let mut checks = config_checks(Ok(()));
    cwd_checks(cfg.cwd.as_deref(), default_cwd, &mut checks);
    // Where a run starts, so where relative paths are looked up.
    let run_dir = cfg.cwd.clone().unwrap_or_else(|| default_cwd.to_path_buf());
    let path_var = cfg.env.get("PATH").map(String::as_str);
    let program = command_check(&cfg.command, path_var, &run_dir, &mut checks);

    let mut script: Option<PathBuf> = None;
    for arg in cfg.args.iter().filter(|a| looks_like_path(a)) {
        let path = run_dir.join(arg);
        if let Some(readable) = path_check(arg, &path, &mut checks) {
            script = script.or(Some(readable));
        }
    }
    // A command that is itself a shell script is read by `sh -n` too.
    if script.is_none() && cfg.command.contains('/') && cfg.command.ends_with(".sh") {
        if let (Some(p), Some(sh)) = (&program, resolve_command("sh", path_var, &run_dir)) {
            dry_run(&sh, p, &cfg, &mut checks).await;
            return Report::new("process", checks);
        }
    }
    match (&program, &script) {
        (Some(interpreter), Some(script)) => dry_run(interpreter, script, &cfg, &mut checks).await,
        // Nothing to read: say that the program itself was left alone,
        // unless a path is already wrong (then that is the news).
        (Some(_), None) if !checks.iter().any(|c| c.level == Level::Error) => {
            checks.push(Check::new(
                "dry_run_skipped",
                Level::Info,
                "The command was not started: a test run would do the agent's work",
            ))
        }
        _ => {}
    }
    Report::new("process", checks)
}

/// The command: a path (relative to the run's directory) that must exist
/// and be executable, or a name found on `PATH`. Returns the program found.
fn command_check(
    command: &str,
    path_var: Option<&str>,
    run_dir: &Path,
    checks: &mut Vec<Check>,
) -> Option<PathBuf> {
    if command.contains('/') {
        let path = run_dir.join(command);
        let check = if !path.exists() {
            Check::new(
                ErrorCode::AdapterNotInstalled.as_str(),
                Level::Error,
                format!("Command {} does not exist", path.display()),
            )
            .hint(format!(
                "Fix the path; a relative one starts from the working directory ({})",
                run_dir.display()
            ))
        } else if path.is_dir() {
            Check::new(
                ErrorCode::AdapterNotInstalled.as_str(),
                Level::Error,
                format!("Command {} is a directory, not a program", path.display()),
            )
            .hint("Set command to the program or script inside it")
        } else if !is_executable(&path) {
            Check::new(
                "command_not_executable",
                Level::Error,
                format!("Command {} exists but is not executable", path.display()),
            )
            .hint(format!(
                "Run `chmod +x {}`, or set command to its interpreter (e.g. sh) and the path as its argument",
                path.display()
            ))
        } else {
            checks.push(Check::new(
                "command_found",
                Level::Info,
                format!("Command {} exists and is executable", path.display()),
            ));
            return Some(path);
        };
        checks.push(check);
        return None;
    }
    match resolve_command(command, path_var, run_dir) {
        Some(program) => {
            checks.push(Check::new(
                "command_found",
                Level::Info,
                format!("Command `{command}` found on PATH: {}", program.display()),
            ));
            Some(program)
        }
        None => {
            checks.push(
                Check::new(
                    ErrorCode::AdapterNotInstalled.as_str(),
                    Level::Error,
                    format!("`{command}` is not installed or not on PATH"),
                )
                .hint("Install it, or set command to its full path"),
            );
            None
        }
    }
}

/// One argument that names a path: it must exist; a file must be readable.
/// Returns the path when it is a readable file (a script to dry-run).
fn path_check(arg: &str, path: &Path, checks: &mut Vec<Check>) -> Option<PathBuf> {
    let what = if SCRIPT_ENDINGS.iter().any(|e| arg.ends_with(e)) {
        "Script"
    } else {
        "Path"
    };
    if !path.exists() {
        checks.push(
            Check::new(
                "script_missing",
                Level::Error,
                format!("{what} {} does not exist", path.display()),
            )
            .hint(
                "Fix the argument: the path is looked up on the server, a relative one from the \
                 working directory; or create the file there",
            ),
        );
        return None;
    }
    if path.is_dir() {
        checks.push(Check::new(
            "path_found",
            Level::Info,
            format!("Directory {} exists", path.display()),
        ));
        return None;
    }
    if let Err(e) = std::fs::File::open(path) {
        checks.push(
            Check::new(
                "script_unreadable",
                Level::Error,
                format!("{what} {} cannot be read", path.display()),
            )
            .detail(e.to_string())
            .hint(format!(
                "Let the server's user read it, e.g. `chmod a+r {}`",
                path.display()
            )),
        );
        return None;
    }
    checks.push(Check::new(
        "script_found",
        Level::Info,
        format!("{what} {} exists and is readable", path.display()),
    ));
    Some(path.to_path_buf())
}

/// Has the interpreter read the script without running it, where it can.
async fn dry_run(
    interpreter: &Path,
    script: &Path,
    cfg: &crate::process::ProcessConfig,
    checks: &mut Vec<Check>,
) {
    let name = interpreter.display().to_string();
    let Some(args) = syntax_flags(&name, script) else {
        checks.push(Check::new(
            "dry_run_skipped",
            Level::Info,
            format!(
                "{} was not run: a test run would do the agent's work",
                script.display()
            ),
        ));
        return;
    };
    let short = name.rsplit('/').next().unwrap_or(&name).to_string();
    let how = format!("`{short} {}`", args[..args.len() - 1].join(" "));
    let mut cmd = tokio::process::Command::new(interpreter);
    crate::child_env::clear(&mut cmd, &[]);
    cmd.args(&args)
        .envs(cfg.env.iter())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let outcome = tokio::time::timeout(Duration::from_secs(10), cmd.output()).await;
    checks.push(match outcome {
        Ok(Ok(out)) if out.status.success() => Check::new(
            "script_syntax_ok",
            Level::Info,
            format!(
                "Dry run: {how} read {} without errors (the script was not run)",
                script.display()
            ),
        ),
        Ok(Ok(out)) => {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err.lines().rev().take(3).collect();
            Check::new(
                "script_syntax_error",
                Level::Error,
                format!("Dry run: {how} found an error in {}", script.display()),
            )
            .detail(tail.into_iter().rev().collect::<Vec<_>>().join("\n"))
            .hint("Fix the script; its first run would stop at the same place")
        }
        Ok(Err(e)) => Check::new(
            "dry_run_failed",
            Level::Warn,
            format!("Dry run: {how} could not start"),
        )
        .detail(e.to_string()),
        Err(_) => Check::new(
            "dry_run_failed",
            Level::Warn,
            format!("Dry run: {how} did not finish within 10 s"),
        ),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codes(r: &Report) -> Vec<&str> {
        r.checks.iter().map(|c| c.code.as_str()).collect()
    }

    #[test]
    fn arguments_that_name_files_are_told_from_the_rest() {
        for yes in ["/home/me/agent.sh", "agent.py", "./run", "scripts/a.mjs"] {
            assert!(looks_like_path(yes), "{yes}");
        }
        for no in [
            "-c",
            "--flag=/x",
            "https://x.test/a.sh",
            "echo a/b",
            "true",
            "k=v/w",
            "",
        ] {
            assert!(!looks_like_path(no), "{no}");
        }
    }

    #[tokio::test]
    async fn a_missing_script_fails_the_check_naming_its_path() {
        let ws = std::env::temp_dir();
        let r = process(
            &json!({ "command": "sh", "args": ["/no/such/agent.sh"], "cwd": "/" }),
            &ws,
        )
        .await;
        assert_eq!(r.status, "fail");
        let missing = r
            .checks
            .iter()
            .find(|c| c.code == "script_missing")
            .unwrap();
        assert_eq!(missing.message, "Script /no/such/agent.sh does not exist");
        assert!(missing.hint.is_some());
    }

    #[tokio::test]
    async fn a_script_is_read_but_not_run_and_a_broken_one_fails() {
        let dir = std::env::temp_dir().join(format!("pc-pcheck-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.sh");
        // Running it would leave a file behind; the dry run must not.
        let ran = dir.join("ran");
        std::fs::write(&good, format!("touch {}\n", ran.display())).unwrap();
        let r = process(
            &json!({ "command": "sh", "args": [good], "cwd": dir }),
            &dir,
        )
        .await;
        assert_eq!(r.status, "pass", "{:?}", r.checks);
        assert_eq!(
            codes(&r),
            [
                "config_valid",
                "cwd_valid",
                "command_found",
                "script_found",
                "script_syntax_ok"
            ]
        );
        assert!(!ran.exists(), "the dry run ran the script");

        std::fs::write(dir.join("bad.sh"), "if then fi (\n").unwrap();
        let r = process(
            &json!({ "command": "sh", "args": ["bad.sh"], "cwd": dir }),
            &dir,
        )
        .await;
        assert_eq!(r.status, "fail");
        assert!(codes(&r).contains(&"script_syntax_error"), "{:?}", r.checks);

        // A command given as a path must be executable.
        let r = process(&json!({ "command": "./good.sh", "cwd": dir }), &dir).await;
        assert_eq!(r.status, "fail");
        assert!(
            codes(&r).contains(&"command_not_executable"),
            "{:?}",
            r.checks
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
