//! A task branch against its base: where it forked, the commits it added,
//! and the disk its worktree takes.

use std::path::Path;

use crate::workspace::error::WorkspaceError;
use crate::workspace::git::{check_rev, Git};
use crate::workspace::Commit;

/// The commit `a` and `b` last shared; `None` when they share no history.
pub(crate) async fn merge_base(
    dir: &Path,
    a: &str,
    b: &str,
) -> Result<Option<String>, WorkspaceError> {
    check_rev(a)?;
    check_rev(b)?;
    let output = Git::new(dir)
        .args(["merge-base", "--end-of-options", a, b])
        .output()
        .await?;
    match output.status.code() {
        Some(0) => Ok(Some(
            String::from_utf8_lossy(&output.stdout).trim().to_string(),
        )),
        Some(1) => Ok(None),
        _ => Err(WorkspaceError::git(
            format!("git merge-base {a} {b}"),
            output.status,
            &output.stderr,
        )),
    }
}

/// Commits reachable from `head` and not from `base`, newest first, at most
/// `max`.
pub(crate) async fn commits(
    dir: &Path,
    base: &str,
    head: &str,
    max: usize,
) -> Result<Vec<Commit>, WorkspaceError> {
    check_rev(base)?;
    check_rev(head)?;
    let git = Git::new(dir).args([
        "log".to_string(),
        format!("--max-count={max}"),
        // Fields split by NUL, records by the record separator: a subject
        // may hold anything else.
        "--format=%H%x00%s%x00%an%x00%cI%x1e".to_string(),
        "--end-of-options".to_string(),
        format!("{base}..{head}"),
    ]);
    let command = git.describe();
    let out = git.run_bytes().await?;
    let text = String::from_utf8_lossy(&out);
    let mut found = Vec::new();
    for record in text.split('\u{1e}') {
        let record = record.trim_start_matches('\n');
        if record.is_empty() {
            continue;
        }
        let mut fields = record.split('\0');
        let (Some(sha), Some(subject), Some(author), Some(at)) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(WorkspaceError::parse(&command, record.to_string()));
        };
        found.push(Commit {
            sha: sha.to_string(),
            subject: subject.to_string(),
            author_name: author.to_string(),
            committed_at: at.trim().to_string(),
        });
    }
    Ok(found)
}

/// Bytes the files under `dir` take, not following links and skipping
/// `.git` (a worktree's is a file naming the shared git dir, whose objects
/// belong to the repository). Blocking: call it on a blocking thread.
pub(crate) fn disk_usage(dir: &Path) -> u64 {
    let mut total = 0u64;
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            if current == dir && entry.file_name() == ".git" {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                pending.push(entry.path());
            } else {
                total = total.saturating_add(meta.len());
            }
        }
    }
    total
}
