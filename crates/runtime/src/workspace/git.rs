//! Running the `git` CLI: no shell, arguments as a list, and an environment
//! that makes its behaviour independent of where the server was started.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::workspace::error::{bounded, WorkspaceError, MAX_STDERR_BYTES};

/// Variables that would point git at another repository, index or work tree
/// than the one `cwd` names; set when the server runs inside a git hook, or
/// by an operator's shell.
const REPOSITORY_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
];

pub(crate) struct Git {
    cwd: PathBuf,
    args: Vec<OsString>,
    env: Vec<(&'static str, OsString)>,
}

impl Git {
    pub(crate) fn new(cwd: &Path) -> Git {
        Git {
            cwd: cwd.to_path_buf(),
            // UTF-8 paths in patches and plain output stay readable instead
            // of octal-escaped.
            args: vec!["-c".into(), "core.quotepath=off".into()],
            env: Vec::new(),
        }
    }

    pub(crate) fn arg(mut self, arg: impl AsRef<OsStr>) -> Git {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    pub(crate) fn args<I, S>(mut self, args: I) -> Git
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    pub(crate) fn env(mut self, key: &'static str, value: impl AsRef<OsStr>) -> Git {
        self.env.push((key, value.as_ref().to_os_string()));
        self
    }

    /// The command line for messages, bounded like stderr.
    pub(crate) fn describe(&self) -> String {
        // The `-c` prefix is the same on every command: leave it out.
        let shown = self.args.iter().skip(2).map(|a| a.to_string_lossy());
        let line = std::iter::once("git".into())
            .chain(shown)
            .collect::<Vec<_>>()
            .join(" ");
        bounded(line.as_bytes(), MAX_STDERR_BYTES).0
    }

    fn command(&self) -> Command {
        let mut command = Command::new("git");
        command
            .args(&self.args)
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A git that asks for credentials would wait forever.
            .env("GIT_TERMINAL_PROMPT", "0")
            // Messages we match ("initializing") and parse stay English.
            .env("LC_ALL", "C");
        for key in REPOSITORY_ENV {
            command.env_remove(key);
        }
        for (key, value) in &self.env {
            command.env(key, value);
        }
        command
    }

    fn spawn_error(&self, error: std::io::Error) -> WorkspaceError {
        WorkspaceError::Spawn {
            command: self.describe(),
            cwd: self.cwd.clone(),
            error,
        }
    }

    /// Runs to the end whatever the exit status.
    pub(crate) async fn output(self) -> Result<Output, WorkspaceError> {
        self.command()
            .output()
            .await
            .map_err(|error| self.spawn_error(error))
    }

    /// Runs and requires success; stdout as bytes.
    pub(crate) async fn run_bytes(self) -> Result<Vec<u8>, WorkspaceError> {
        let describe = self.describe();
        let output = self.output().await?;
        if !output.status.success() {
            return Err(WorkspaceError::git(describe, output.status, &output.stderr));
        }
        Ok(output.stdout)
    }

    /// Runs and requires success; stdout as text with the final newline cut.
    pub(crate) async fn run(self) -> Result<String, WorkspaceError> {
        let stdout = self.run_bytes().await?;
        let text = String::from_utf8_lossy(&stdout);
        Ok(text.strip_suffix('\n').unwrap_or(&text).to_string())
    }

    /// For commands whose exit code is the answer (`--quiet`,
    /// `--is-ancestor`, `check-ignore`): `Ok(true)` on 0, `Ok(false)` on 1,
    /// an error otherwise.
    pub(crate) async fn test(self) -> Result<bool, WorkspaceError> {
        let describe = self.describe();
        let output = self.output().await?;
        match output.status.code() {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(WorkspaceError::git(describe, output.status, &output.stderr)),
        }
    }

    /// At most `max` bytes of stdout, and whether there was more. git is
    /// stopped once the limit is passed: a patch of a generated gigabyte file
    /// is neither read nor held in memory.
    pub(crate) async fn run_bounded(self, max: usize) -> Result<(Vec<u8>, bool), WorkspaceError> {
        let describe = self.describe();
        let mut child = self
            .command()
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| self.spawn_error(error))?;
        let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take())
        else {
            return Err(WorkspaceError::parse(
                &describe,
                "git's pipes were not open",
            ));
        };
        // stderr is drained alongside so git never blocks on a full pipe.
        let stderr_task = tokio::spawn(async move {
            let mut buf = Vec::new();
            let _ = (&mut stderr)
                .take(MAX_STDERR_BYTES as u64 * 4)
                .read_to_end(&mut buf)
                .await;
            buf
        });
        let mut kept = Vec::new();
        let read = (&mut stdout)
            .take((max as u64).saturating_add(1))
            .read_to_end(&mut kept)
            .await;
        let truncated = kept.len() > max;
        if truncated {
            kept.truncate(max);
            // The rest is not wanted; git dies of SIGKILL, not our concern.
            let _ = child.start_kill();
        }
        drop(stdout);
        let status = child
            .wait()
            .await
            .map_err(|error| WorkspaceError::io("wait for", "git", error))?;
        let stderr = stderr_task.await.unwrap_or_default();
        read.map_err(|error| WorkspaceError::io("read the output of", "git", error))?;
        if !truncated && !status.success() {
            return Err(WorkspaceError::git(describe, status, &stderr));
        }
        Ok((kept, truncated))
    }
}

/// The repository's shared git dir (where refs, objects and the worktree
/// registry live), absolute and canonical: the same for the main checkout
/// and every worktree of it, so it is the key of the per-repository lock.
pub(crate) async fn common_dir(path: &Path) -> Result<PathBuf, WorkspaceError> {
    let out = Git::new(path)
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .run()
        .await?;
    let dir = PathBuf::from(out);
    std::fs::canonicalize(&dir).map_err(|error| WorkspaceError::io("resolve", dir, error))
}

/// `git check-ref-format --branch` plus what it allows but our commands
/// would misread: a leading `-` (an option), `HEAD` and `@{`.
pub(crate) async fn check_branch(cwd: &Path, branch: &str) -> Result<(), WorkspaceError> {
    // `@{` would be expanded by `--branch` (`@{-1}` is the previous branch)
    // and then taken literally by the commands the name is given to.
    if branch.starts_with('-') || branch == "HEAD" || branch.contains("@{") {
        return Err(crate::workspace::Refusal::InvalidRef(branch.to_string()).into());
    }
    let valid = Git::new(cwd)
        .args(["check-ref-format", "--branch", branch])
        .output()
        .await?
        .status
        .success();
    if !valid {
        return Err(crate::workspace::Refusal::InvalidRef(branch.to_string()).into());
    }
    Ok(())
}

/// A revision given by a caller (base ref, start commit): anything git can
/// resolve, except what it would read as an option.
pub(crate) fn check_rev(rev: &str) -> Result<(), WorkspaceError> {
    if rev.is_empty() || rev.starts_with('-') || rev.contains('\0') {
        return Err(crate::workspace::Refusal::InvalidRef(rev.to_string()).into());
    }
    Ok(())
}
