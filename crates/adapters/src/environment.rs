//! The environment test behind `POST /api/companies/:id/adapters/:type/test-environment`:
//! can a run of this adapter start here? Each check says what was looked at,
//! how it went, and what to do about a failure, so the hire form can show it
//! before the first run fails.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::ConfigError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Info,
    Warn,
    Error,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub code: String,
    pub level: Level,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Check {
    pub fn new(code: &str, level: Level, message: impl Into<String>) -> Check {
        Check {
            code: code.into(),
            level,
            message: message.into(),
            detail: None,
            hint: None,
        }
    }

    pub fn detail(mut self, detail: impl Into<String>) -> Check {
        self.detail = Some(detail.into());
        self
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Check {
        self.hint = Some(hint.into());
        self
    }
}

/// `status` is `fail` when any check is an error, `warn` when any warns.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub adapter_type: String,
    pub status: &'static str,
    pub checks: Vec<Check>,
}

impl Report {
    pub fn new(adapter_type: &str, checks: Vec<Check>) -> Report {
        let status = if checks.iter().any(|c| c.level == Level::Error) {
            "fail"
        } else if checks.iter().any(|c| c.level == Level::Warn) {
            "warn"
        } else {
            "pass"
        };
        Report {
            adapter_type: adapter_type.into(),
            status,
            checks,
        }
    }
}

/// Config validity only: for adapters without anything local to probe.
pub(crate) fn basic(
    kind: &str,
    valid: Result<(), Vec<ConfigError>>,
    _default_cwd: &Path,
) -> Report {
    Report::new(kind, config_checks(valid))
}

pub(crate) fn config_checks(valid: Result<(), Vec<ConfigError>>) -> Vec<Check> {
    match valid {
        Ok(()) => vec![Check::new(
            "config_valid",
            Level::Info,
            "Configuration is valid",
        )],
        Err(errors) => errors
            .into_iter()
            .map(|e| {
                Check::new(
                    "invalid_config",
                    Level::Error,
                    format!("{}: {}", e.path.join("."), e.message),
                )
            })
            .collect(),
    }
}

/// Finds `command` the way a spawn would: a path as given (relative to
/// `cwd`), or the first executable match on `PATH`.
pub fn resolve_command(command: &str, path_var: Option<&str>, cwd: &Path) -> Option<PathBuf> {
    if command.contains('/') {
        let p = cwd.join(command);
        return is_executable(&p).then_some(p);
    }
    let path_var = path_var
        .map(str::to_string)
        .or_else(|| std::env::var("PATH").ok())?;
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(command))
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Runs `<program> --version` with a short timeout: proves the CLI starts and
/// says which version it is. `Err` carries what went wrong.
pub async fn version(program: &Path, env: &[(String, String)]) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new(program);
    crate::child_env::clear(&mut cmd, &[]);
    cmd.arg("--version")
        .envs(env.iter().cloned())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    match tokio::time::timeout(Duration::from_secs(20), cmd.output()).await {
        Err(_) => Err("did not answer --version within 20 s".into()),
        Ok(Err(e)) => Err(format!("could not start: {e}")),
        Ok(Ok(out)) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            Ok(text.lines().next().unwrap_or("").trim().to_string())
        }
        Ok(Ok(out)) => {
            let err = String::from_utf8_lossy(&out.stderr);
            Err(format!(
                "--version exited with {}: {}",
                out.status,
                err.lines().last().unwrap_or("").trim()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_is_the_worst_level() {
        let info = Check::new("a", Level::Info, "");
        let warn = Check::new("b", Level::Warn, "");
        let err = Check::new("c", Level::Error, "");
        assert_eq!(Report::new("x", vec![info.clone()]).status, "pass");
        assert_eq!(
            Report::new("x", vec![info.clone(), warn.clone()]).status,
            "warn"
        );
        assert_eq!(Report::new("x", vec![warn, err, info]).status, "fail");
    }

    #[test]
    fn commands_resolve_on_path_or_as_paths() {
        let cwd = Path::new("/");
        assert!(resolve_command("sh", Some("/usr/bin:/bin"), cwd).is_some());
        assert!(
            resolve_command("definitely-not-a-command-xyz", Some("/usr/bin:/bin"), cwd).is_none()
        );
        assert!(resolve_command("/bin/sh", None, cwd).is_some());
        assert!(resolve_command("./nope", None, cwd).is_none());
    }
}
