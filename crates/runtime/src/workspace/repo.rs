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
