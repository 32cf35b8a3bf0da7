//! Questions about a repository a project declares, asked before any
//! worktree exists: is it one, and what is checked out.

use std::path::{Path, PathBuf};

use super::git::Git;
use super::WorkspaceError;

/// The top of the work tree `path` is in: an error if `path` is not inside
/// a git work tree (or does not exist).
pub async fn repository_root(path: &Path) -> Result<PathBuf, WorkspaceError> {
    let out = Git::new(path)
        .args(["rev-parse", "--show-toplevel"])
        .run()
        .await?;
    Ok(PathBuf::from(out))
}

/// The branch checked out in `repo`'s main work tree, `None` when its HEAD
/// is detached (or unborn on no branch).
pub async fn current_branch(repo: &Path) -> Result<Option<String>, WorkspaceError> {
    let out = Git::new(repo)
        .args(["symbolic-ref", "--quiet", "--short", "HEAD"])
        .output()
        .await?;
    let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok(Some(name).filter(|n| out.status.success() && !n.is_empty()))
}

/// Clones `url` into `dest` (which must not exist), for a project that
/// declares its codebase by URL. Bounded in time: a remote that hangs does
/// not hold the request. On failure nothing is left at `dest`.
pub async fn clone_repository(url: &str, dest: &Path) -> Result<PathBuf, WorkspaceError> {
    let parent = dest.parent().unwrap_or(dest);
    std::fs::create_dir_all(parent).map_err(|e| WorkspaceError::io("create", parent, e))?;
    let clone = Git::new(parent)
        .args([
            "clone",
            "--quiet",
            "--no-recurse-submodules",
            "--end-of-options",
            url,
        ])
        .arg(dest)
        .env("GIT_ALLOW_PROTOCOL", ALLOWED_PROTOCOLS)
        .run();
    let done = match tokio::time::timeout(CLONE_LIMIT, clone).await {
        Ok(done) => done,
        Err(_) => Err(WorkspaceError::Aborted {
            detail: format!("the clone took longer than {} s", CLONE_LIMIT.as_secs()),
        }),
    };
    if let Err(e) = done {
        let _ = std::fs::remove_dir_all(dest);
        return Err(e);
    }
    Ok(dest.canonicalize().unwrap_or_else(|_| dest.to_path_buf()))
}

/// Transports a declared URL may use: never `ext::`, which runs a command
/// of the URL's choosing.
const ALLOWED_PROTOCOLS: &str = "file:git:http:https:ssh";

/// How long a clone may take.
const CLONE_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

/// Brings a cloned repository's `origin` up to date (its remote-tracking
/// branches; no local branch moves).
pub async fn fetch_origin(repo: &Path) -> Result<(), WorkspaceError> {
    Git::new(repo)
        .args(["fetch", "--quiet", "--prune", "origin"])
        .env("GIT_ALLOW_PROTOCOL", ALLOWED_PROTOCOLS)
        .run()
        .await
        .map(|_| ())
}
