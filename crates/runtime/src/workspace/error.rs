//! What can go wrong with a workspace, typed so a caller can tell "git
//! failed" (record the operation's log, retry later) from "this request is
//! unsafe" (answer the board with the reason, nothing was touched).

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::process::ExitStatus;

/// The most of git's stderr (and of the command line) an error keeps: git's
/// messages are short, and an error may be stored with an operation.
pub const MAX_STDERR_BYTES: usize = 4096;

#[derive(Debug)]
pub enum WorkspaceError {
    /// git could not be started: no `git` on the PATH, or `cwd` is gone.
    Spawn {
        command: String,
        cwd: PathBuf,
        error: io::Error,
    },
    /// git ran and did not succeed.
    Git {
        command: String,
        status: ExitStatus,
        /// Bounded to [`MAX_STDERR_BYTES`].
        stderr: String,
    },
    /// git succeeded but said something this module does not understand.
    Parse { command: String, detail: String },
    /// A filesystem step of our own failed (making a parent dir, clearing
    /// a crash's leftover).
    Io {
        action: &'static str,
        path: PathBuf,
        error: io::Error,
    },
    /// The request is unsafe or contradicts what is on disk; nothing was
    /// changed.
    Refused(Refusal),
    /// The operation's task panicked or was cancelled by the runtime
    /// shutting down; the repository's lock has been released.
    Aborted { detail: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not a name `git check-ref-format --branch` accepts, or one that git
    /// would read as an option.
    InvalidRef(String),
    /// Worktree dirs must be absolute, so no argument can look like an option
    /// and nothing depends on the process's current dir.
    NotAbsolute(PathBuf),
    /// The dir is inside the repository's own tree and not git-ignored
    /// there, so it would show up as untracked in the main checkout.
    InsideRepository(PathBuf),
    /// A worktree is registered at the dir, on another branch (or detached).
    DirHoldsOtherBranch { dir: PathBuf, found: Option<String> },
    /// The branch is checked out in another worktree (or the main checkout);
    /// git allows a branch in one worktree only.
    BranchCheckedOutElsewhere { branch: String, dir: PathBuf },
    /// The dir holds files that are not a worktree of this repository; they
    /// may be someone's work, so they are never deleted.
    DirNotAWorktree(PathBuf),
}

impl WorkspaceError {
    pub(crate) fn git(command: String, status: ExitStatus, stderr: &[u8]) -> WorkspaceError {
        WorkspaceError::Git {
            command,
            status,
            stderr: bounded_text(stderr, MAX_STDERR_BYTES),
        }
    }

    pub(crate) fn parse(command: &str, detail: impl Into<String>) -> WorkspaceError {
        WorkspaceError::Parse {
            command: command.to_string(),
            detail: detail.into(),
        }
    }

    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, error: io::Error) -> Self {
        WorkspaceError::Io {
            action,
            path: path.into(),
            error,
        }
    }
}

impl From<Refusal> for WorkspaceError {
    fn from(refusal: Refusal) -> Self {
        WorkspaceError::Refused(refusal)
    }
}

impl fmt::Display for WorkspaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkspaceError::Spawn {
                command,
                cwd,
                error,
            } => write!(f, "could not run `{command}` in {}: {error}", cwd.display()),
            WorkspaceError::Git {
                command,
                status,
                stderr,
            } => write!(f, "`{command}` failed ({status}): {}", stderr.trim_end()),
            WorkspaceError::Parse { command, detail } => {
                write!(f, "unexpected output from `{command}`: {detail}")
            }
            WorkspaceError::Io {
                action,
                path,
                error,
            } => write!(f, "could not {action} {}: {error}", path.display()),
            WorkspaceError::Refused(refusal) => write!(f, "{refusal}"),
            WorkspaceError::Aborted { detail } => {
                write!(f, "workspace operation aborted: {detail}")
            }
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::InvalidRef(name) => write!(f, "`{name}` is not a valid git branch or ref"),
            Refusal::NotAbsolute(dir) => {
                write!(f, "worktree dir {} is not an absolute path", dir.display())
            }
            Refusal::InsideRepository(dir) => write!(
                f,
                "worktree dir {} is inside the repository and not git-ignored",
                dir.display()
            ),
            Refusal::DirHoldsOtherBranch { dir, found } => write!(
                f,
                "{} is a worktree of {}",
                dir.display(),
                found.as_deref().unwrap_or("a detached HEAD")
            ),
            Refusal::BranchCheckedOutElsewhere { branch, dir } => {
                write!(f, "branch {branch} is checked out at {}", dir.display())
            }
            Refusal::DirNotAWorktree(dir) => write!(
                f,
                "{} exists and is not a worktree of this repository",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for WorkspaceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WorkspaceError::Spawn { error, .. } | WorkspaceError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// `bytes` as text of at most `max` bytes, cut on a character boundary.
/// Returns whether anything was cut.
pub(crate) fn bounded(bytes: &[u8], max: usize) -> (String, bool) {
    let text = String::from_utf8_lossy(bytes);
    if text.len() <= max {
        return (text.into_owned(), false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_string(), true)
}

fn bounded_text(bytes: &[u8], max: usize) -> String {
    match bounded(bytes, max) {
        (text, false) => text,
        (text, true) => format!("{text}\n[… stderr truncated]"),
    }
}
