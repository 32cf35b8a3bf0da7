//! Creating, reusing, repairing and removing worktrees. Callers hold the
//! repository's lock (see `Workspaces`), so what git lists cannot change
//! under us from this process.
//!
//! Repair works from what git itself records rather than from our own
//! bookkeeping, so it also covers a `kill -9` of the server mid-operation:
//! - a registration whose dir is gone is pruned (`git worktree prune`);
//! - a registration git still marks "initializing" is a `worktree add` that
//!   never finished: its partial checkout is removed and made again;
//! - a dir whose `.git` link points into this repository's worktree registry
//!   but is not registered is a lost worktree: it is removed and made again;
//! - a branch without a worktree is checked out again, never re-created, so
//!   its commits are kept.
//!
//! Anything else at the dir (someone's files, another repository) is never
//! deleted: the request is refused.

use std::path::{Path, PathBuf};

use crate::workspace::error::{Refusal, WorkspaceError};
use crate::workspace::git::{check_branch, check_rev, common_dir, Git};
use crate::workspace::{BranchFate, Removal, Repair, Worktree, WorktreeOrigin};

/// One entry of `git worktree list --porcelain`.
#[derive(Debug, Default)]
struct Listed {
    path: PathBuf,
    /// `refs/heads/<name>`, or `None` when detached or bare.
    branch: Option<String>,
    lock_reason: Option<String>,
    prunable: bool,
}

impl Listed {
    fn is_on(&self, branch: &str) -> bool {
        self.branch.as_deref() == Some(format!("refs/heads/{branch}").as_str())
    }

    /// git writes this lock reason while `worktree add` runs and removes the
    /// lock when it finishes (LC_ALL=C keeps it untranslated).
    fn is_interrupted(&self) -> bool {
        self.lock_reason.as_deref() == Some("initializing")
    }
}

pub(crate) async fn ensure(
    repo: &Path,
    base_ref: &str,
    branch: &str,
    dir: &Path,
) -> Result<Worktree, WorkspaceError> {
    check_branch(repo, branch).await?;
    check_rev(base_ref)?;
    let dir = place(repo, dir).await?;
    let mut repairs = Vec::new();
    let mut listed = list_pruned(repo, &mut repairs).await?;

    if let Some(at_dir) = listed.iter().position(|w| w.path == dir) {
        let entry = listed.remove(at_dir);
        if entry.is_interrupted() || entry.prunable {
            // Prunable here means locked (prune skips locked entries) with
            // its dir gone: nothing is left to keep.
            discard_registered(repo, &entry).await?;
            repairs.push(if entry.is_interrupted() {
                Repair::RemovedInterrupted(dir.clone())
            } else {
                Repair::PrunedStale(vec![dir.clone()])
            });
        } else if entry.is_on(branch) {
            return ready(dir, branch, WorktreeOrigin::Reused, repairs).await;
        } else {
            let found = entry
                .branch
                .map(|b| b.trim_start_matches("refs/heads/").to_string());
            return Err(Refusal::DirHoldsOtherBranch { dir, found }.into());
        }
    }
    if let Some(other) = listed.iter().find(|w| w.is_on(branch)) {
        return Err(Refusal::BranchCheckedOutElsewhere {
            branch: branch.to_string(),
            dir: other.path.clone(),
        }
        .into());
    }
    if clear_unregistered(repo, &dir).await? {
        repairs.push(Repair::RemovedOrphan(dir.clone()));
    }

    let origin = if branch_exists(repo, branch).await? {
        Git::new(repo)
            .args(["worktree", "add"])
            .arg(&dir)
            .arg(branch)
            .run()
            .await?;
        WorktreeOrigin::ExistingBranch
    } else {
        // --no-track: a branch made from `origin/main` would otherwise have
        // it as upstream, and a bare `git push` by the agent would aim there.
        Git::new(repo)
            .args(["worktree", "add", "--no-track", "-b", branch])
            .arg(&dir)
            .arg(base_ref)
            .run()
            .await?;
        WorktreeOrigin::NewBranch
    };
    ready(dir, branch, origin, repairs).await
}

pub(crate) async fn remove(
    repo: &Path,
    dir: &Path,
    branch: &str,
    delete_if_merged_into: Option<&str>,
) -> Result<Removal, WorkspaceError> {
    check_branch(repo, branch).await?;
    if let Some(base) = delete_if_merged_into {
        check_rev(base)?;
    }
    let dir = place(repo, dir).await?;
    let mut listed = list_pruned(repo, &mut Vec::new()).await?;

    let mut worktree_removed = false;
    if let Some(at_dir) = listed.iter().position(|w| w.path == dir) {
        discard_registered(repo, &listed.remove(at_dir)).await?;
        worktree_removed = true;
    } else if clear_unregistered(repo, &dir).await? {
        worktree_removed = true;
    }
    // An empty dir is what an interrupted add or a caller's mkdir leaves.
    if std::fs::read_dir(&dir).is_ok_and(|mut entries| entries.next().is_none()) {
        std::fs::remove_dir(&dir).map_err(|e| WorkspaceError::io("remove", &dir, e))?;
    }

    let fate = if !branch_exists(repo, branch).await? {
        BranchFate::Absent
    } else if let Some(other) = listed.iter().find(|w| w.is_on(branch)) {
        BranchFate::KeptCheckedOut(other.path.clone())
    } else if let Some(base) = delete_if_merged_into {
        let merged = Git::new(repo)
            .args([
                "merge-base",
                "--is-ancestor",
                &format!("refs/heads/{branch}"),
                base,
            ])
            .test()
            .await?;
        if merged {
            // -D: merged was checked against `base`; -d would check against
            // the main checkout's HEAD, which may be another branch.
            Git::new(repo).args(["branch", "-D", branch]).run().await?;
            BranchFate::Deleted
        } else {
            BranchFate::KeptUnmerged
        }
    } else {
        BranchFate::KeptAsAsked
    };
    Ok(Removal {
        worktree_removed,
        branch: fate,
    })
}

/// `dir` made canonical (its parent created), after checking it is
/// absolute and outside the repository's tree or ignored there.
async fn place(repo: &Path, dir: &Path) -> Result<PathBuf, WorkspaceError> {
    if !dir.is_absolute() || dir.file_name().is_none() {
        return Err(Refusal::NotAbsolute(dir.to_path_buf()).into());
    }
    let dir = resolve(dir)?;
    let bare = Git::new(repo)
        .args(["rev-parse", "--is-bare-repository"])
        .run()
        .await?;
    if bare != "true" {
        let top = Git::new(repo)
            .args(["rev-parse", "--show-toplevel"])
            .run()
            .await?;
        let top =
            std::fs::canonicalize(&top).map_err(|e| WorkspaceError::io("resolve", &top, e))?;
        // git matches an ignored `dir/` pattern against the leading
        // components of a path even before they exist.
        let inside = dir.starts_with(&top)
            && !Git::new(repo)
                .args(["check-ignore", "-q"])
                .arg(&dir)
                .test()
                .await?;
        if inside {
            return Err(Refusal::InsideRepository(dir).into());
        }
    }
    // Checked first, so a refused dir leaves no parents behind.
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| WorkspaceError::io("create", parent, e))?;
    }
    Ok(dir)
}

/// An absolute path with the symlinks (and `..`) of its longest existing
/// ancestor resolved; the rest is appended as given.
fn resolve(path: &Path) -> Result<PathBuf, WorkspaceError> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        match std::fs::canonicalize(existing) {
            Ok(real) => return Ok(rest.iter().rev().fold(real, |p, c| p.join(c))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
                    return Err(WorkspaceError::io("resolve", path, e));
                };
                rest.push(name.to_os_string());
                existing = parent;
            }
            Err(e) => return Err(WorkspaceError::io("resolve", path, e)),
        }
    }
}

/// The registered worktrees after pruning those whose dirs are gone.
async fn list_pruned(
    repo: &Path,
    repairs: &mut Vec<Repair>,
) -> Result<Vec<Listed>, WorkspaceError> {
    let listed = list(repo).await?;
    let (stale, kept): (Vec<Listed>, Vec<Listed>) = listed
        .into_iter()
        .partition(|w| w.prunable && w.lock_reason.is_none());
    if !stale.is_empty() {
        Git::new(repo).args(["worktree", "prune"]).run().await?;
        repairs.push(Repair::PrunedStale(
            stale.into_iter().map(|w| w.path).collect(),
        ));
    }
    Ok(kept)
}

async fn list(repo: &Path) -> Result<Vec<Listed>, WorkspaceError> {
    let git = Git::new(repo).args(["worktree", "list", "--porcelain", "-z"]);
    let command = git.describe();
    let out = git.run_bytes().await?;
    parse_list(&out).map_err(|detail| WorkspaceError::parse(&command, detail))
}

/// Records are NUL-separated `key value` fields, ended by an empty field.
fn parse_list(out: &[u8]) -> Result<Vec<Listed>, String> {
    let mut entries = Vec::new();
    let mut current: Option<Listed> = None;
    for field in out.split(|&b| b == 0) {
        let field = String::from_utf8_lossy(field);
        if field.is_empty() {
            entries.extend(current.take());
            continue;
        }
        let (key, value) = field.split_once(' ').unwrap_or((field.as_ref(), ""));
        if key == "worktree" {
            entries.extend(current.take());
            // Canonical where it exists, so it compares with `place`'s
            // result even if the repository was reached through a symlink.
            let path = PathBuf::from(value);
            let path = std::fs::canonicalize(&path).unwrap_or(path);
            current = Some(Listed {
                path,
                ..Listed::default()
            });
            continue;
        }
        let Some(entry) = current.as_mut() else {
            return Err(format!("`{field}` before any `worktree` line"));
        };
        match key {
            "branch" => entry.branch = Some(value.to_string()),
            "locked" => entry.lock_reason = Some(value.to_string()),
            "prunable" => entry.prunable = true,
            _ => {}
        }
    }
    entries.extend(current);
    Ok(entries)
}

/// Removes a registered worktree, dirty, locked or with its dir gone.
async fn discard_registered(repo: &Path, entry: &Listed) -> Result<(), WorkspaceError> {
    if entry.path.exists() {
        // Twice: once for uncommitted changes, once for a lock.
        Git::new(repo)
            .args(["worktree", "remove", "--force", "--force"])
            .arg(&entry.path)
            .run()
            .await?;
    } else {
        if entry.lock_reason.is_some() {
            Git::new(repo)
                .args(["worktree", "unlock"])
                .arg(&entry.path)
                .run()
                .await?;
        }
        Git::new(repo).args(["worktree", "prune"]).run().await?;
    }
    Ok(())
}

/// Clears a dir that no registered worktree is at, if it is safe to: an
/// empty dir, or a worktree of this repository that git has lost. Returns
/// whether a lost worktree was removed.
async fn clear_unregistered(repo: &Path, dir: &Path) -> Result<bool, WorkspaceError> {
    let mut entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(WorkspaceError::io("read", dir, e)),
    };
    if entries.next().is_none() {
        // git accepts an empty dir as a worktree's place.
        return Ok(false);
    }
    let common = common_dir(repo).await?;
    if !links_into(dir, &common) {
        return Err(Refusal::DirNotAWorktree(dir.to_path_buf()).into());
    }
    std::fs::remove_dir_all(dir).map_err(|e| WorkspaceError::io("remove", dir, e))?;
    Ok(true)
}

/// Whether `dir/.git` is a worktree link to `<common>/worktrees/<id>`.
/// The id's own dir may be gone (that is the case being repaired), so only
/// the common dir, which exists, is resolved and compared.
fn links_into(dir: &Path, common: &Path) -> bool {
    let Ok(link) = std::fs::read_to_string(dir.join(".git")) else {
        return false;
    };
    let Some(admin) = link.strip_prefix("gitdir:").map(|p| dir.join(p.trim())) else {
        return false;
    };
    let Some(registry) = admin.parent() else {
        return false;
    };
    registry.file_name() == Some(std::ffi::OsStr::new("worktrees"))
        && registry
            .parent()
            .and_then(|linked| std::fs::canonicalize(linked).ok())
            .is_some_and(|linked| linked == common)
}

async fn branch_exists(repo: &Path, branch: &str) -> Result<bool, WorkspaceError> {
    Git::new(repo)
        .args([
            "show-ref",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ])
        .test()
        .await
}

/// Checks the worktree is usable and on the branch, and reads its head.
async fn ready(
    dir: PathBuf,
    branch: &str,
    origin: WorktreeOrigin,
    repairs: Vec<Repair>,
) -> Result<Worktree, WorkspaceError> {
    let git = Git::new(&dir).args(["symbolic-ref", "-q", "HEAD"]);
    let command = git.describe();
    let on = git.run().await?;
    if on != format!("refs/heads/{branch}") {
        return Err(WorkspaceError::parse(
            &command,
            format!("worktree is on {on}, not {branch}"),
        ));
    }
    let head = crate::workspace::changes::head(&dir).await?;
    Ok(Worktree {
        dir,
        branch: branch.to_string(),
        head,
        origin,
        repairs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_porcelain_list() {
        let out = b"worktree /nonexistent/main\0HEAD 0123\0branch refs/heads/main\0\0\
worktree /nonexistent/a\0HEAD 4567\0detached\0locked initializing\0\0\
worktree /nonexistent/b\0HEAD 89ab\0branch refs/heads/b\0prunable gitdir file points to non-existent location\0\0";
        let listed = parse_list(out).unwrap();
        assert_eq!(listed.len(), 3);
        assert!(listed[0].is_on("main") && !listed[0].prunable);
        assert!(listed[1].branch.is_none() && listed[1].is_interrupted());
        assert!(listed[2].is_on("b") && listed[2].prunable && listed[2].lock_reason.is_none());
        assert!(parse_list(b"HEAD 0123\0").is_err());
    }
}
