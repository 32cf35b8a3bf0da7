//! Reading what a worktree changed, committing it, and what closing it would
//! lose.
//!
//! A diff has to include files the agent created and never `git add`ed. We
//! stage the whole worktree into a temporary index (a copy of the real one,
//! so git's stat cache spares rehashing unchanged files), write it as a
//! tree, and compare trees. That gives git's own line counts, binary
//! detection and renames for every file in three processes, and the file
//! list and the patch describe the same snapshot even while an agent is
//! still writing. The alternatives were worse: `git add -N` changes the
//! agent's real index (its `git status` and `git diff` would change under
//! it), and `git diff` plus `ls-files --others` needs our own line counting
//! and patch for each untracked file.

use std::path::{Path, PathBuf};

use crate::workspace::error::{bounded, WorkspaceError};
use crate::workspace::git::{check_branch, check_rev, Git};
use crate::workspace::{Author, ChangeKind, CloseReadiness, Diff, FileChange};

pub(crate) async fn head(dir: &Path) -> Result<String, WorkspaceError> {
    resolve_commit(dir, "HEAD").await
}

pub(crate) async fn diff(
    dir: &Path,
    from_commit: &str,
    max_patch_bytes: usize,
) -> Result<Diff, WorkspaceError> {
    check_rev(from_commit)?;
    let from = resolve_commit(dir, from_commit).await?;
    let tree = snapshot_tree(dir).await?;

    let names = diff_tree(dir, &["--name-status"], &from, &tree).await?;
    let counts = diff_tree(dir, &["--numstat"], &from, &tree).await?;
    let command = format!("git diff-tree -r -M --numstat -z {from} {tree}");
    let files =
        join_changes(&names, &counts).map_err(|detail| WorkspaceError::parse(&command, detail))?;

    let (patch, truncated) = Git::new(dir)
        .args([
            "diff-tree",
            "-r",
            "-M",
            "-p",
            "--no-color",
            "--no-ext-diff",
            &from,
            &tree,
        ])
        .run_bounded(max_patch_bytes)
        .await?;
    let (patch, truncated) = bound_patch(&patch, max_patch_bytes, truncated);
    Ok(Diff {
        from_commit: from,
        insertions: files.iter().filter_map(|f| f.insertions).sum(),
        deletions: files.iter().filter_map(|f| f.deletions).sum(),
        files,
        patch,
        truncated,
    })
}

/// Commits with plumbing (`write-tree`, `commit-tree`, `update-ref`) rather
/// than `git commit`: the repository's hooks, signing and templates cannot
/// block or hang a snapshot, and `update-ref` with the old value refuses to
/// move a branch that moved since we read it.
pub(crate) async fn commit_snapshot(
    dir: &Path,
    message: &str,
    author: &Author,
) -> Result<Option<String>, WorkspaceError> {
    Git::new(dir).args(["add", "-A"]).run().await?;
    let parent = head(dir).await?;
    let clean = Git::new(dir)
        .args(["diff-index", "--cached", "--quiet", &parent])
        .test()
        .await?;
    if clean {
        return Ok(None);
    }
    let tree = Git::new(dir).arg("write-tree").run().await?;
    let message = if message.trim().is_empty() {
        "Snapshot"
    } else {
        message
    };
    let commit = Git::new(dir)
        .args([
            "commit-tree",
            "--no-gpg-sign",
            &tree,
            "-p",
            &parent,
            "-m",
            message,
        ])
        .env("GIT_AUTHOR_NAME", &author.name)
        .env("GIT_AUTHOR_EMAIL", &author.email)
        .env("GIT_COMMITTER_NAME", &author.name)
        .env("GIT_COMMITTER_EMAIL", &author.email)
        .run()
        .await?;
    Git::new(dir)
        .args([
            "update-ref",
            "-m",
            "paperclip: snapshot",
            "HEAD",
            &commit,
            &parent,
        ])
        .run()
        .await?;
    Ok(Some(commit))
}

pub(crate) async fn close_readiness(
    repo: &Path,
    dir: &Path,
    branch: &str,
    base_ref: &str,
) -> Result<CloseReadiness, WorkspaceError> {
    check_branch(repo, branch).await?;
    check_rev(base_ref)?;
    let worktree_present = dir.join(".git").exists();
    let (uncommitted_files, untracked_files) = if worktree_present {
        let status = Git::new(dir)
            .args(["status", "--porcelain=v1", "-z", "--untracked-files=all"])
            // Read-only: git may not take the index lock to refresh it,
            // which would collide with an agent's own git in the worktree.
            .env("GIT_OPTIONAL_LOCKS", "0")
            .run_bytes()
            .await?;
        count_status_entries(&status)
    } else {
        (0, 0)
    };
    let branch_ref = format!("refs/heads/{branch}");
    let branch_exists = Git::new(repo)
        .args(["show-ref", "--verify", "--quiet", &branch_ref])
        .test()
        .await?;
    let (mut commits_behind, mut commits_ahead) = (0usize, 0usize);
    if branch_exists {
        let git = Git::new(repo).args([
            "rev-list",
            "--left-right",
            "--count",
            &format!("{base_ref}...{branch_ref}"),
        ]);
        let command = git.describe();
        let counts = git.run().await?;
        let parsed = counts
            .split_once('\t')
            .and_then(|(left, right)| Some((left.parse().ok()?, right.parse().ok()?)));
        (commits_behind, commits_ahead) =
            parsed.ok_or_else(|| WorkspaceError::parse(&command, counts.clone()))?;
    }
    Ok(CloseReadiness {
        worktree_present,
        uncommitted_files,
        untracked_files,
        branch_exists,
        commits_ahead,
        commits_behind,
    })
}

async fn resolve_commit(dir: &Path, rev: &str) -> Result<String, WorkspaceError> {
    Git::new(dir)
        .args([
            "rev-parse",
            "--verify",
            "--end-of-options",
            &format!("{rev}^{{commit}}"),
        ])
        .run()
        .await
}

/// The worktree as it is now, as a tree object, via a temporary index in
/// the worktree's own git dir (never in the worktree, where it would be a
/// change itself).
async fn snapshot_tree(dir: &Path) -> Result<String, WorkspaceError> {
    let git_path = |name: &str| {
        Git::new(dir)
            .args(["rev-parse", "--path-format=absolute", "--git-path", name])
            .run()
    };
    let index = PathBuf::from(git_path("index").await?);
    let temporary = PathBuf::from(git_path("paperclip-diff.index").await?);
    // Only this module uses the name, under the repository's lock, so a
    // lock file beside it is a killed earlier diff's and would fail this one.
    let _ = std::fs::remove_file(temporary.with_extension("index.lock"));
    // A missing or unreadable index only costs rehashing every file.
    if std::fs::copy(&index, &temporary).is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    let tree = async {
        Git::new(dir)
            .args(["add", "-A"])
            .env("GIT_INDEX_FILE", &temporary)
            .run()
            .await?;
        Git::new(dir)
            .arg("write-tree")
            .env("GIT_INDEX_FILE", &temporary)
            .run()
            .await
    }
    .await;
    let _ = std::fs::remove_file(&temporary);
    tree
}

async fn diff_tree(
    dir: &Path,
    format: &[&str],
    from: &str,
    tree: &str,
) -> Result<Vec<u8>, WorkspaceError> {
    Git::new(dir)
        .args(["diff-tree", "-r", "-M", "-z"])
        .args(format)
        .args([from, tree])
        .run_bytes()
        .await
}

/// Joins `--name-status -z` and `--numstat -z` of the same two trees, which
/// list the same files in the same order.
fn join_changes(names: &[u8], counts: &[u8]) -> Result<Vec<FileChange>, String> {
    let mut names = fields(names);
    let mut counts = fields(counts);
    let mut files = Vec::new();
    while let Some(status) = names.next() {
        let (kind, old_path, path) = match status.as_bytes().first() {
            Some(b'R' | b'C') => {
                let kind = if status.starts_with('R') {
                    ChangeKind::Renamed
                } else {
                    ChangeKind::Copied
                };
                let old = names.next().ok_or("rename without its source")?;
                (
                    kind,
                    Some(old),
                    names.next().ok_or("rename without its target")?,
                )
            }
            Some(letter) => {
                let kind = match letter {
                    b'A' => ChangeKind::Added,
                    b'D' => ChangeKind::Deleted,
                    b'T' => ChangeKind::TypeChanged,
                    _ => ChangeKind::Modified,
                };
                (kind, None, names.next().ok_or("status without a path")?)
            }
            None => return Err("empty status".to_string()),
        };
        let count = counts
            .next()
            .ok_or_else(|| format!("no line counts for {path}"))?;
        let mut parts = count.splitn(3, '\t');
        let (added, deleted, inline_path) = (parts.next(), parts.next(), parts.next());
        let counted_path = match inline_path {
            Some("") => {
                counts.next();
                counts.next()
            }
            other => other.map(str::to_string),
        };
        if counted_path.as_deref() != Some(path.as_str()) {
            return Err(format!(
                "line counts for {counted_path:?} where {path} was expected"
            ));
        }
        files.push(FileChange {
            path,
            old_path,
            kind,
            // `-` for both on a binary file.
            insertions: added.and_then(|n| n.parse().ok()),
            deletions: deleted.and_then(|n| n.parse().ok()),
        });
    }
    if counts.next().is_some() {
        return Err("more line counts than files".to_string());
    }
    Ok(files)
}

fn fields(out: &[u8]) -> impl Iterator<Item = String> + '_ {
    out.split(|&b| b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| String::from_utf8_lossy(f).into_owned())
}

/// `git status --porcelain -z` entries (`XY path`; a rename or copy is
/// followed by its source as a field of its own): all, and the untracked
/// (`??`) among them.
fn count_status_entries(out: &[u8]) -> (usize, usize) {
    let mut fields = out.split(|&b| b == 0).filter(|f| !f.is_empty());
    let (mut n_entries, mut untracked) = (0, 0);
    while let Some(entry) = fields.next() {
        n_entries += 1;
        if entry.starts_with(b"??") {
            untracked += 1;
        }
        if matches!(entry.first(), Some(b'R' | b'C')) || matches!(entry.get(1), Some(b'R' | b'C')) {
            fields.next();
        }
    }
    (n_entries, untracked)
}

/// The patch as text of at most `max` bytes. When cut, it ends at the last
/// line end in its second half, so a reader never sees half a line.
fn bound_patch(raw: &[u8], max: usize, cut_by_git: bool) -> (String, bool) {
    let (mut text, cut_here) = bounded(raw, max);
    let truncated = cut_by_git || cut_here;
    if truncated {
        if let Some(end) = text.rfind('\n').filter(|&at| at + 1 >= max / 2) {
            text.truncate(end + 1);
        }
    }
    (text, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_names_and_counts() {
        let names = b"M\0a.txt\0R087\0old name.txt\0new name.txt\0A\0bin.png\0D\0gone.txt\0";
        let counts =
            b"3\t1\ta.txt\x002\t0\t\0old name.txt\0new name.txt\0-\t-\tbin.png\x000\t4\tgone.txt\0";
        let files = join_changes(names, counts).unwrap();
        assert_eq!(files.len(), 4);
        assert_eq!(
            (files[0].kind, files[0].insertions, files[0].deletions),
            (ChangeKind::Modified, Some(3), Some(1))
        );
        assert_eq!(files[1].kind, ChangeKind::Renamed);
        assert_eq!(files[1].old_path.as_deref(), Some("old name.txt"));
        assert_eq!(files[1].path, "new name.txt");
        assert_eq!(
            (files[2].kind, files[2].insertions),
            (ChangeKind::Added, None)
        );
        assert_eq!(
            (files[3].kind, files[3].deletions),
            (ChangeKind::Deleted, Some(4))
        );
        assert!(join_changes(b"M\0a\0", b"1\t1\tb\0").is_err());
        assert!(join_changes(b"", b"1\t1\tb\0").is_err());
    }

    #[test]
    fn counts_status_entries() {
        assert_eq!(count_status_entries(b""), (0, 0));
        assert_eq!(count_status_entries(b" M a\0?? b\0R  c\0d\0 D e\0"), (4, 1));
    }

    #[test]
    fn bounds_patches_at_line_ends() {
        assert_eq!(
            bound_patch(b"ab\ncd\n", 10, false),
            ("ab\ncd\n".to_string(), false)
        );
        assert_eq!(
            bound_patch(b"ab\ncd\nef", 7, false),
            ("ab\ncd\n".to_string(), true)
        );
        assert_eq!(
            bound_patch(b"ab\ncd\n", 6, true),
            ("ab\ncd\n".to_string(), true)
        );
        // No line end near: cut between characters instead.
        assert_eq!(
            bound_patch("a\u{e9}\u{e9}".as_bytes(), 4, true),
            ("a\u{e9}".to_string(), true)
        );
    }
}
