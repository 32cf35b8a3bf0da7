//! Execution workspaces: each task works in its own git worktree on its own
//! branch, and what it changed can be read back as a diff.
//!
//! This module drives the real `git` CLI and knows nothing of the store,
//! runs or routes; callers record its results as workspace operations.
//!
//! - [`branch::branch_name`] turns the branch template, a task's identifier
//!   and title into a valid branch name.
//! - [`Workspaces`] owns one lock per repository: every operation that may
//!   write to a repository (its refs, objects, worktree registry, or a
//!   worktree's index) holds it, so concurrent runs in this process never
//!   race git's own lock files. The lock is per process; two servers on one
//!   repository are not supported.
//! - `worktree` creates, reuses, repairs and removes worktrees; `changes`
//!   reads diffs, commits snapshots and answers close-readiness.
//!
//! Worktrees live where the caller says, which must be outside the
//! repository's own tree (or git-ignored there), so they never show up as
//! untracked files in the main checkout.

pub mod branch;
mod changes;
pub mod command;
pub mod error;
mod git;
mod history;
mod repo;
mod worktree;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use branch::{branch_name, DEFAULT_BRANCH_TEMPLATE};
pub use error::{Refusal, WorkspaceError};
pub use repo::{clone_repository, current_branch, repository_root};

/// A task's worktree, ready to run in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// Canonical (symlinks of its parent resolved).
    pub dir: PathBuf,
    pub branch: String,
    /// The commit checked out: a run's start commit, to diff against later.
    pub head: String,
    pub origin: WorktreeOrigin,
    /// What was found broken and fixed before the worktree was ready.
    pub repairs: Vec<Repair>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorktreeOrigin {
    /// A healthy worktree for the branch was already at the dir.
    Reused,
    /// The branch existed (an earlier worktree was removed or never
    /// finished) and was checked out again.
    ExistingBranch,
    /// A new branch was made from the base ref.
    NewBranch,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// Registrations of worktrees whose dirs were gone were pruned.
    PrunedStale(Vec<PathBuf>),
    /// A `git worktree add` had been killed before it finished (git still
    /// marked it "initializing"); its partial checkout was removed.
    RemovedInterrupted(PathBuf),
    /// The dir held a worktree of this repository that git no longer knew
    /// (its registration was lost); it was removed. Its committed work is
    /// on its branch; git kept no record of what was uncommitted.
    RemovedOrphan(PathBuf),
}

/// What changed in a worktree since a commit, uncommitted and untracked
/// files included (ignored ones are not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    /// The full id of the commit compared against.
    pub from_commit: String,
    pub files: Vec<FileChange>,
    pub insertions: u64,
    pub deletions: u64,
    /// The unified diff, at most the asked bytes, cut at a line end where
    /// one is near.
    pub patch: String,
    /// Whether `patch` was cut.
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    /// The path before a rename or copy.
    pub old_path: Option<String>,
    pub kind: ChangeKind,
    /// `None` for a binary file (changed, but no line counts).
    pub insertions: Option<u64>,
    pub deletions: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
    Renamed,
    Copied,
    /// File, symlink and submodule turned into one another.
    TypeChanged,
}

/// Who a snapshot commit is by (author and committer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    pub name: String,
    pub email: String,
}

/// A commit on a task branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub sha: String,
    pub subject: String,
    pub author_name: String,
    /// Strict ISO 8601, as git prints it.
    pub committed_at: String,
}

/// Where a task branch stands against its base.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchHistory {
    /// The commit the branch forked from (the merge base with the base
    /// ref), or the fallback given when the base ref is gone.
    pub fork_commit: String,
    /// Newest first, bounded.
    pub commits: Vec<Commit>,
}

/// What closing a workspace would lose or leave behind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloseReadiness {
    pub worktree_present: bool,
    /// Changed, staged, deleted or untracked files (ignored ones are not
    /// counted): lost when the worktree is removed.
    pub uncommitted_files: usize,
    /// Of those, the files git does not track yet.
    pub untracked_files: usize,
    pub branch_exists: bool,
    /// Commits on the branch that the base does not have.
    pub commits_ahead: usize,
    /// Commits on the base that the branch does not have.
    pub commits_behind: usize,
}

/// What `remove_worktree` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    /// Whether there was anything at the dir to remove.
    pub worktree_removed: bool,
    pub branch: BranchFate,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BranchFate {
    Deleted,
    /// It has commits the base does not.
    KeptUnmerged,
    /// No base was given to check it against.
    KeptAsAsked,
    /// It is checked out in another worktree or the main checkout.
    KeptCheckedOut(PathBuf),
    Absent,
}

/// Workspace operations, serialized per repository.
#[derive(Default)]
pub struct Workspaces {
    /// Keyed by the repository's canonical common git dir, which the main
    /// checkout and all its worktrees share. One small entry per repository
    /// ever touched, never removed: a removed entry could be re-created while
    /// someone still holds the old one, and two locks would exist.
    locks: std::sync::Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
}

impl Workspaces {
    pub fn new() -> Workspaces {
        Workspaces::default()
    }

    /// Makes `dir` a worktree of `repo` on `branch`, creating the branch
    /// from `base_ref` if it does not exist, or reuses the one already there.
    /// Idempotent, and repairs what an interrupted earlier call left.
    pub async fn ensure_worktree(
        &self,
        repo: &Path,
        base_ref: &str,
        branch: &str,
        dir: &Path,
    ) -> Result<Worktree, WorkspaceError> {
        let (repo, base_ref, branch, dir) = owned(repo, base_ref, branch, dir);
        let key = repo.clone();
        self.serialized(&key, async move {
            worktree::ensure(&repo, &base_ref, &branch, &dir).await
        })
        .await
    }

    /// Brings a cloned repository's remote-tracking branches up to date,
    /// under its lock (a fetch writes refs).
    pub async fn fetch_origin(&self, repo: &Path) -> Result<(), WorkspaceError> {
        let repo = repo.to_path_buf();
        let key = repo.clone();
        self.serialized(&key, async move { repo::fetch_origin(&repo).await })
            .await
    }

    /// The commit checked out in `dir`. Takes no lock: it reads one ref,
    /// which git always replaces atomically.
    pub async fn head(&self, dir: &Path) -> Result<String, WorkspaceError> {
        changes::head(dir).await
    }

    /// What changed in `dir` since `from_commit`, committed or not.
    pub async fn diff(
        &self,
        dir: &Path,
        from_commit: &str,
        max_patch_bytes: usize,
    ) -> Result<Diff, WorkspaceError> {
        let (dir, from_commit) = (dir.to_path_buf(), from_commit.to_string());
        let key = dir.clone();
        self.serialized(&key, async move {
            changes::diff(&dir, &from_commit, max_patch_bytes).await
        })
        .await
    }

    /// Commits everything in `dir` (untracked files too, ignored ones not)
    /// on its branch; `None` if there was nothing to commit.
    pub async fn commit_snapshot(
        &self,
        dir: &Path,
        message: &str,
        author: &Author,
    ) -> Result<Option<String>, WorkspaceError> {
        let (dir, message, author) = (dir.to_path_buf(), message.to_string(), author.clone());
        let key = dir.clone();
        self.serialized(&key, async move {
            changes::commit_snapshot(&dir, &message, &author).await
        })
        .await
    }

    /// The commits `dir`'s HEAD has beyond `base_ref` (or beyond
    /// `fallback_base` when the base ref cannot be resolved), at most `max`.
    pub async fn history(
        &self,
        dir: &Path,
        base_ref: &str,
        fallback_base: &str,
        max: usize,
    ) -> Result<BranchHistory, WorkspaceError> {
        let (dir, base_ref, fallback) = (
            dir.to_path_buf(),
            base_ref.to_string(),
            fallback_base.to_string(),
        );
        let key = dir.clone();
        self.serialized(&key, async move {
            let fork = match history::merge_base(&dir, &base_ref, "HEAD").await {
                Ok(Some(fork)) => fork,
                Ok(None) | Err(_) => fallback,
            };
            let commits = history::commits(&dir, &fork, "HEAD", max).await?;
            Ok(BranchHistory {
                fork_commit: fork,
                commits,
            })
        })
        .await
    }

    /// Bytes the worktree's own files take (not the shared git objects).
    pub async fn disk_usage(&self, dir: &Path) -> u64 {
        let dir = dir.to_path_buf();
        tokio::task::spawn_blocking(move || history::disk_usage(&dir))
            .await
            .unwrap_or(0)
    }

    pub async fn close_readiness(
        &self,
        repo: &Path,
        dir: &Path,
        branch: &str,
        base_ref: &str,
    ) -> Result<CloseReadiness, WorkspaceError> {
        let (repo, base_ref, branch, dir) = owned(repo, base_ref, branch, dir);
        let key = repo.clone();
        self.serialized(&key, async move {
            changes::close_readiness(&repo, &dir, &branch, &base_ref).await
        })
        .await
    }

    /// Removes the worktree at `dir` (discarding uncommitted changes: ask
    /// [`Workspaces::close_readiness`] first) and deletes `branch` if it is
    /// merged into `delete_branch_if_merged_into`. Idempotent.
    pub async fn remove_worktree(
        &self,
        repo: &Path,
        dir: &Path,
        branch: &str,
        delete_branch_if_merged_into: Option<&str>,
    ) -> Result<Removal, WorkspaceError> {
        let (repo, _, branch, dir) = owned(repo, "", branch, dir);
        let base = delete_branch_if_merged_into.map(str::to_string);
        let key = repo.clone();
        self.serialized(&key, async move {
            worktree::remove(&repo, &dir, &branch, base.as_deref()).await
        })
        .await
    }

    /// Runs `operation` holding the lock of the repository `path` is in.
    async fn serialized<T, F>(&self, path: &Path, operation: F) -> Result<T, WorkspaceError>
    where
        F: Future<Output = Result<T, WorkspaceError>> + Send + 'static,
        T: Send + 'static,
    {
        let key = git::common_dir(path).await?;
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            locks.entry(key).or_default().clone()
        };
        let guard = lock.lock_owned().await;
        // Once started, the operation runs to its end on its own task even
        // if the caller drops its future: otherwise the lock would be
        // released while a git process still works on the repository.
        let task = tokio::spawn(async move {
            let _guard = guard;
            operation.await
        });
        task.await.map_err(|error| WorkspaceError::Aborted {
            detail: error.to_string(),
        })?
    }
}

fn owned(repo: &Path, rev: &str, branch: &str, dir: &Path) -> (PathBuf, String, String, PathBuf) {
    (
        repo.to_path_buf(),
        rev.to_string(),
        branch.to_string(),
        dir.to_path_buf(),
    )
}
