//! The environment test behind `POST /api/companies/:id/adapters/:type/test-environment`:
//! can a run of this adapter start here? Each check says what was looked at,
//! how it went, and what to do about a failure, so the hire form can show it
//! before the first run fails.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::{ConfigError, ErrorCode};

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

/// The working directory checks shared by local adapters; returns the
/// directory a command would be looked up from.
pub(crate) fn cwd_checks(
    cwd: Option<&Path>,
    default_cwd: &Path,
    checks: &mut Vec<Check>,
) -> PathBuf {
    match cwd {
        Some(cwd) if cwd.is_dir() => {
            checks.push(Check::new(
                "cwd_valid",
                Level::Info,
                format!("Working directory {} exists", cwd.display()),
            ));
            cwd.to_path_buf()
        }
        Some(cwd) => {
            let why = if cwd.exists() {
                "is not a directory"
            } else {
                "does not exist"
            };
            checks.push(
                Check::new(
                    ErrorCode::InvalidWorkingDirectory.as_str(),
                    Level::Error,
                    format!("Working directory {} {why}", cwd.display()),
                )
                .hint("Create it, or change cwd to an existing directory"),
            );
            default_cwd.to_path_buf()
        }
        None => {
            checks.push(Check::new(
                "cwd_default",
                Level::Info,
                format!(
                    "No working directory set: runs use the agent's own workspace, {}",
                    default_cwd.display()
                ),
            ));
            std::env::temp_dir()
        }
    }
}

/// `http`: the config, and whether the endpoint accepts connections. An
/// endpoint that is down today may be up by the first run, so that is a
/// warning, not a failure.
pub(crate) async fn http(config: &Value) -> Report {
    let cfg = match crate::http::HttpConfig::parse(config) {
        Ok(cfg) => cfg,
        Err(errors) => return Report::new("http", config_checks(Err(errors))),
    };
    let mut checks = config_checks(Ok(()));
    let host = cfg.url.host_str().unwrap_or_default().to_string();
    let port = cfg.url.port_or_known_default().unwrap_or(80);
    let target = format!("{host}:{port}");
    let connect = tokio::net::TcpStream::connect(target.clone());
    let failed = match tokio::time::timeout(Duration::from_secs(5), connect).await {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(_) => Some("no answer within 5 s".to_string()),
    };
    checks.push(match failed {
        None => Check::new(
            "url_reachable",
            Level::Info,
            format!("{target} accepts connections"),
        ),
        Some(why) => Check::new(
            "url_unreachable",
            Level::Warn,
            format!("Cannot connect to {target}"),
        )
        .detail(why)
        .hint("Check the url and that the agent's service is running; runs fail until it answers"),
    });
    Report::new("http", checks)
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
///
/// A success is remembered for a few minutes for the same file (path, size,
/// modification time) and environment: an agents page or a hire form checks
/// the same CLI again and again, and a Node CLI costs one to two seconds of
/// CPU to start. Replacing or removing the CLI changes the key; a failure is
/// never remembered.
pub async fn version(program: &Path, env: &[(String, String)]) -> Result<String, String> {
    let key = version_key(program, env);
    if let Some(known) = key.as_ref().and_then(remembered_version) {
        return Ok(known);
    }
    // Generous: a Node CLI on a busy machine has taken over 20 s to start,
    // and a slow answer is still an answer.
    let answer = version_within(program, env, Duration::from_secs(60)).await;
    if let (Some(key), Ok(version)) = (key, &answer) {
        remember_version(key, version.clone());
    }
    answer
}

/// How long a CLI's `--version` answer is trusted, and how many are kept.
const VERSION_TTL: Duration = Duration::from_secs(300);
const VERSIONS_KEPT: usize = 64;

type VersionKey = (
    PathBuf,
    u64,
    Option<std::time::SystemTime>,
    Vec<(String, String)>,
);

static VERSIONS: std::sync::Mutex<Vec<(VersionKey, std::time::Instant, String)>> =
    std::sync::Mutex::new(Vec::new());

fn version_key(program: &Path, env: &[(String, String)]) -> Option<VersionKey> {
    let meta = std::fs::metadata(program).ok()?;
    let mut env = env.to_vec();
    env.sort();
    Some((program.to_path_buf(), meta.len(), meta.modified().ok(), env))
}

fn remembered_version(key: &VersionKey) -> Option<String> {
    let kept = VERSIONS.lock().unwrap_or_else(|e| e.into_inner());
    kept.iter()
        .find(|(k, at, _)| k == key && at.elapsed() < VERSION_TTL)
        .map(|(_, _, version)| version.clone())
}

fn remember_version(key: VersionKey, version: String) {
    let mut kept = VERSIONS.lock().unwrap_or_else(|e| e.into_inner());
    kept.retain(|(k, at, _)| *k != key && at.elapsed() < VERSION_TTL);
    if kept.len() >= VERSIONS_KEPT {
        kept.remove(0);
    }
    kept.push((key, std::time::Instant::now(), version));
}

/// [`version`] with its own bound.
pub async fn version_within(
    program: &Path,
    env: &[(String, String)],
    limit: Duration,
) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new(program);
    crate::child_env::clear(&mut cmd, &[]);
    // A group of its own, killed whole past the limit: a CLI that relaunches
    // itself (gemini restarts as its own child with a larger heap) would
    // otherwise leave the child running after its parent is killed.
    cmd.arg("--version")
        .envs(env.iter().cloned())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return Err(format!("could not start: {e}")),
    };
    let group = child.id().map(|pid| pid as i32);
    match tokio::time::timeout(limit, child.wait_with_output()).await {
        Err(_) => {
            if let Some(group) = group.filter(|g| *g > 0) {
                // SAFETY: killpg only sends a signal, to the group this
                // call created.
                unsafe { libc::killpg(group, libc::SIGKILL) };
            }
            Err(format!(
                "did not answer --version within {} s",
                limit.as_secs()
            ))
        }
        Ok(Err(e)) => Err(format!("could not start: {e}")),
        Ok(Ok(out)) if out.status.success() => {
            // Some CLIs (`pi`) print their version on stderr.
            let first = |b: &[u8]| {
                let text = String::from_utf8_lossy(b);
                text.lines().next().unwrap_or("").trim().to_string()
            };
            let version = first(&out.stdout);
            Ok(if version.is_empty() {
                first(&out.stderr)
            } else {
                version
            })
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

    /// A CLI that starts a child and hangs: past the limit, its whole group
    /// goes (the script writes its pid, the group's id, before forking).
    #[tokio::test]
    async fn a_version_probe_past_its_limit_kills_the_whole_group() {
        let dir = std::env::temp_dir().join(format!("pc-version-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("relaunching-cli");
        let pid_file = dir.join("group.pid");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho $$ > {}\nsleep 300 &\nwait\n",
                pid_file.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let answer = version_within(&script, &[], Duration::from_secs(1)).await;
        assert!(answer.unwrap_err().contains("within 1 s"));
        let group: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while crate::tree::group_alive(group) {
            assert!(
                std::time::Instant::now() < deadline,
                "the group {group} outlived the probe"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

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

    #[tokio::test]
    async fn a_version_is_remembered_for_the_same_file_and_env_and_a_failure_never() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("pc-version-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let runs = dir.join("runs");
        let cli = dir.join("cli");
        // Counts its starts; fails while `$FAIL` is set.
        let script = format!(
            "#!/bin/sh\necho x >> {}\n[ -n \"$FAIL\" ] && exit 3\necho 'cli 1.2.3'\n",
            runs.display()
        );
        std::fs::write(&cli, script).unwrap();
        std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o755)).unwrap();
        let starts = || std::fs::read_to_string(&runs).map_or(0, |t| t.lines().count());
        let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };

        assert!(version(&cli, &env(&[("FAIL", "1")])).await.is_err());
        assert!(version(&cli, &env(&[("FAIL", "1")])).await.is_err());
        assert_eq!(starts(), 2, "a failure is checked again");

        assert_eq!(
            version(&cli, &env(&[("A", "1")])).await.unwrap(),
            "cli 1.2.3"
        );
        assert_eq!(
            version(&cli, &env(&[("A", "1")])).await.unwrap(),
            "cli 1.2.3"
        );
        assert_eq!(starts(), 3, "the same file and env start once");
        version(&cli, &env(&[("A", "2")])).await.unwrap();
        assert_eq!(starts(), 4, "another env starts again");

        // A replaced CLI (another size) is asked again.
        let mut script = std::fs::read_to_string(&cli).unwrap();
        script.push_str("# replaced\n");
        std::fs::write(&cli, script).unwrap();
        version(&cli, &env(&[("A", "1")])).await.unwrap();
        assert_eq!(starts(), 5, "a replaced file starts again");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
