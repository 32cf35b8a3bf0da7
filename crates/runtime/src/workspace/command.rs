//! A project's setup or cleanup command, run in a worktree: `sh -c` with the
//! worktree as its directory, bounded in time and in what is kept of its
//! output, its process group killed when it overruns.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

/// The most of a command's output that is kept (head and tail are what a
/// person reads; the store bounds the log again).
const MAX_OUTPUT: usize = 64 * 1024;

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRun {
    /// `None` when it was killed (time out) or died of a signal.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// stdout and stderr interleaved as they came, bounded.
    pub output: String,
}

impl CommandRun {
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// Runs `command` with `sh -c` in `dir` with `env` added, for at most
/// `limit`. `Err` only when it could not be started.
pub async fn run_in(
    dir: &Path,
    command: &str,
    env: &[(String, String)],
    limit: Duration,
) -> std::io::Result<CommandRun> {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    // Its own group, so an overrun kills what it started too.
    cmd.as_std_mut().process_group(0);
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let (Some(mut out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(std::io::Error::other("the command's pipes were not open"));
    };
    let read_err = tokio::spawn(async move {
        let mut buf = Vec::new();
        let _ = (&mut err)
            .take(MAX_OUTPUT as u64)
            .read_to_end(&mut buf)
            .await;
        // Drained so the command never blocks on a full pipe.
        let _ = tokio::io::copy(&mut err, &mut tokio::io::sink()).await;
        buf
    });
    let work = async {
        let mut buf = Vec::new();
        let _ = (&mut out)
            .take(MAX_OUTPUT as u64)
            .read_to_end(&mut buf)
            .await;
        let _ = tokio::io::copy(&mut out, &mut tokio::io::sink()).await;
        let status = child.wait().await;
        (buf, status)
    };
    let (stdout, status, timed_out) = match tokio::time::timeout(limit, work).await {
        Ok((buf, status)) => (buf, status.ok(), false),
        Err(_) => {
            if let Some(pid) = pid {
                // SAFETY: signalling a process group we made; no memory involved.
                unsafe {
                    libc::kill(-(pid as i32), libc::SIGKILL);
                }
            }
            (Vec::new(), None, true)
        }
    };
    let stderr = read_err.await.unwrap_or_default();
    let mut output = String::from_utf8_lossy(&stdout).into_owned();
    if !stderr.is_empty() {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&String::from_utf8_lossy(&stderr));
    }
    Ok(CommandRun {
        exit_code: status.and_then(|s| s.code()),
        timed_out,
        output,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_command_runs_in_the_dir_with_the_env_and_is_bounded_in_time() {
        let dir = std::env::temp_dir();
        let env = vec![("GREETING".to_string(), "hi".to_string())];
        let ok = run_in(
            &dir,
            "echo $GREETING; pwd; echo oops >&2",
            &env,
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        assert!(ok.succeeded(), "{ok:?}");
        assert!(ok.output.starts_with("hi\n"), "{ok:?}");
        assert!(ok.output.contains("oops"), "{ok:?}");
        let failed = run_in(&dir, "exit 3", &[], Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(failed.exit_code, Some(3));
        let slow = run_in(&dir, "sleep 30", &[], Duration::from_millis(200))
            .await
            .unwrap();
        assert!(slow.timed_out && slow.exit_code.is_none(), "{slow:?}");
    }
}
