use std::path::Path;

use crate::workspace::tests::{agent, git, numbered, write, Fixture};
use crate::workspace::{ChangeKind, Diff, WorkspaceError};

/// What an agent leaves behind: an edit (+3 −1), a staged edit (+1), a new
/// untracked text file (+4), a new binary file, a deleted file (−5) and an
/// ignored log that does not count.
fn make_changes(fx: &Fixture, dir: &Path) {
    let edited = numbered("line", 10).replace("line 3\n", "line three\n") + "line 11\nline 12\n";
    write(dir, "src/lib.rs", &edited);
    write(dir, "README.md", "# Fixture\nMore.\n");
    git(dir, &["add", "README.md"]);
    write(
        dir,
        "new/feature.rs",
        "fn a() {}\nfn b() {}\nfn c() {}\nfn d() {}\n",
    );
    std::fs::write(dir.join("image.bin"), [0u8, 159, 146, 150, 0, 1, 2]).unwrap();
    std::fs::remove_file(dir.join("notes.txt")).unwrap();
    // Ignored through the repository's exclude file, shared by its worktrees.
    write(&fx.repo, ".git/info/exclude", "*.log\n");
    write(dir, "debug.log", "noise\n");
}

fn summary(diff: &Diff) -> Vec<(String, ChangeKind, Option<u64>, Option<u64>)> {
    diff.files
        .iter()
        .map(|f| (f.path.clone(), f.kind, f.insertions, f.deletions))
        .collect()
}

#[tokio::test]
async fn diff_counts_edited_added_deleted_untracked_and_binary_files() {
    let fx = Fixture::new();
    let wt = fx.task("PAP-1", "t").await;
    make_changes(&fx, &wt.dir);
    let status_before = git(&wt.dir, &["status", "--porcelain"]);
    // A diff killed mid-way leaves its index's lock; it must not stop the next.
    let admin = git(&wt.dir, &["rev-parse", "--absolute-git-dir"]);
    std::fs::write(Path::new(&admin).join("paperclip-diff.index.lock"), "").unwrap();

    let diff = fx
        .workspaces
        .diff(&wt.dir, &wt.head, 1 << 20)
        .await
        .unwrap();
    use ChangeKind::*;
    let want = [
        ("README.md", Modified, Some(1), Some(0)),
        ("image.bin", Added, None, None),
        ("new/feature.rs", Added, Some(4), Some(0)),
        ("notes.txt", Deleted, Some(0), Some(5)),
        ("src/lib.rs", Modified, Some(3), Some(1)),
    ];
    let want: Vec<_> = want
        .into_iter()
        .map(|(p, k, i, d)| (p.to_string(), k, i, d))
        .collect();
    assert_eq!(summary(&diff), want);
    assert_eq!((diff.insertions, diff.deletions), (8, 6));
    assert_eq!(diff.from_commit, wt.head);
    assert!(!diff.truncated);
    assert!(
        diff.patch.contains("+line three\n-line 3\n")
            || diff.patch.contains("-line 3\n+line three\n")
    );
    assert!(
        diff.patch.contains("+fn d() {}"),
        "untracked files are in the patch"
    );
    assert!(diff.patch.contains("Binary files"));

    // Reading the diff staged nothing for the agent and left no files.
    assert_eq!(git(&wt.dir, &["status", "--porcelain"]), status_before);
    assert_eq!(fx.main_status(), "");
}

#[tokio::test]
async fn a_long_patch_is_cut_with_a_marker() {
    let fx = Fixture::new();
    let wt = fx.task("PAP-1", "t").await;
    write(
        &wt.dir,
        "big.txt",
        &numbered("a rather long generated line", 20_000),
    );

    let full = fx
        .workspaces
        .diff(&wt.dir, &wt.head, usize::MAX)
        .await
        .unwrap();
    assert!(!full.truncated && full.patch.len() > 500_000);
    let cut = fx.workspaces.diff(&wt.dir, &wt.head, 1000).await.unwrap();
    assert!(cut.truncated);
    assert!(
        cut.patch.len() <= 1000 && cut.patch.len() >= 500,
        "{}",
        cut.patch.len()
    );
    assert!(cut.patch.ends_with('\n') && full.patch.starts_with(&cut.patch));
    // The file list is complete whatever the patch's bound.
    assert_eq!(summary(&cut), summary(&full));
    assert_eq!(cut.insertions, 20_000);

    let nothing = fx.workspaces.diff(&wt.dir, &wt.head, 0).await.unwrap();
    assert_eq!((nothing.patch.as_str(), nothing.truncated), ("", true));
}

#[tokio::test]
async fn a_snapshot_commits_everything_and_the_run_diff_still_shows_it() {
    let fx = Fixture::new();
    let ws = &fx.workspaces;
    let wt = ws
        .ensure_worktree(&fx.repo, "main", "PAP-1", &fx.dir("t"))
        .await
        .unwrap();
    let start = ws.head(&wt.dir).await.unwrap();
    assert_eq!(start, wt.head);
    make_changes(&fx, &wt.dir);
    let before = ws.diff(&wt.dir, &start, 1 << 20).await.unwrap();

    let commit = ws
        .commit_snapshot(&wt.dir, "PAP-1: run 1", &agent())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ws.head(&wt.dir).await.unwrap(), commit);
    assert_eq!(
        git(&wt.dir, &["rev-parse", "PAP-1"]),
        commit,
        "the branch moved"
    );
    assert_eq!(git(&wt.dir, &["rev-parse", "HEAD^"]), start);
    let logged = git(&wt.dir, &["log", "-1", "--format=%an <%ae>|%cn|%s"]);
    assert_eq!(
        logged,
        "Paperclip Agent <agent@paperclip.invalid>|Paperclip Agent|PAP-1: run 1"
    );
    // Everything but the ignored log went in.
    assert_eq!(git(&wt.dir, &["status", "--porcelain"]), "");
    assert!(wt.dir.join("debug.log").exists());

    let after = ws.diff(&wt.dir, &start, 1 << 20).await.unwrap();
    assert_eq!(summary(&after), summary(&before));
    assert_eq!(after.patch, before.patch);
    let since_commit = ws.diff(&wt.dir, &commit, 1 << 20).await.unwrap();
    assert!(since_commit.files.is_empty() && since_commit.patch.is_empty());

    assert_eq!(
        ws.commit_snapshot(&wt.dir, "again", &agent())
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        git(&fx.repo, &["rev-parse", "main"]),
        start,
        "main did not move"
    );
    assert_eq!(fx.main_status(), "");
}

#[tokio::test]
async fn close_readiness_counts_uncommitted_files_and_unmerged_commits() {
    let fx = Fixture::new();
    let ws = &fx.workspaces;
    let dir = fx.dir("t");
    let wt = ws
        .ensure_worktree(&fx.repo, "main", "PAP-1", &dir)
        .await
        .unwrap();
    let ready = ws
        .close_readiness(&fx.repo, &dir, "PAP-1", "main")
        .await
        .unwrap();
    assert!(ready.worktree_present && ready.branch_exists);
    assert_eq!(
        (
            ready.uncommitted_files,
            ready.commits_ahead,
            ready.commits_behind
        ),
        (0, 0, 0)
    );

    write(&wt.dir, "a/one.txt", "1\n");
    write(&wt.dir, "a/two.txt", "2\n");
    write(&wt.dir, "README.md", "changed\n");
    git(&wt.dir, &["mv", "notes.txt", "renamed.txt"]);
    let dirty = ws
        .close_readiness(&fx.repo, &dir, "PAP-1", "main")
        .await
        .unwrap();
    assert_eq!(dirty.uncommitted_files, 4);

    ws.commit_snapshot(&wt.dir, "work", &agent())
        .await
        .unwrap()
        .unwrap();
    write(&fx.repo, "upstream.txt", "u\n");
    git(&fx.repo, &["add", "upstream.txt"]);
    git(&fx.repo, &["commit", "-q", "-m", "upstream"]);
    let committed = ws
        .close_readiness(&fx.repo, &dir, "PAP-1", "main")
        .await
        .unwrap();
    assert_eq!(
        (
            committed.uncommitted_files,
            committed.commits_ahead,
            committed.commits_behind
        ),
        (0, 1, 1)
    );

    ws.remove_worktree(&fx.repo, &dir, "PAP-1", Some("main"))
        .await
        .unwrap();
    let gone = ws
        .close_readiness(&fx.repo, &dir, "PAP-1", "main")
        .await
        .unwrap();
    assert!(!gone.worktree_present && gone.branch_exists);
    assert_eq!((gone.uncommitted_files, gone.commits_ahead), (0, 1));
}

#[tokio::test]
async fn failures_are_errors_not_panics() {
    let fx = Fixture::new();
    let ws = &fx.workspaces;
    let wt = ws
        .ensure_worktree(&fx.repo, "main", "PAP-1", &fx.dir("t"))
        .await
        .unwrap();
    let err = ws.diff(&wt.dir, "not-a-commit", 100).await.unwrap_err();
    assert!(matches!(err, WorkspaceError::Git { .. }), "{err}");
    let err = ws.diff(&wt.dir, "--output=/tmp/x", 100).await.unwrap_err();
    assert!(matches!(err, WorkspaceError::Refused(_)), "{err}");
    let err = ws
        .diff(&fx.dir("missing"), &wt.head, 100)
        .await
        .unwrap_err();
    assert!(matches!(err, WorkspaceError::Spawn { .. }), "{err}");
    let err = ws
        .commit_snapshot(&fx.dir("missing"), "x", &agent())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
    assert!(ws.head(&fx.dir("missing")).await.is_err());
}
