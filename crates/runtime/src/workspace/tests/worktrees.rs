use std::sync::Arc;

use crate::workspace::tests::{git, write, Fixture};
use crate::workspace::{BranchFate, Refusal, Repair, WorkspaceError, WorktreeOrigin};

#[tokio::test]
async fn two_tasks_are_isolated_and_the_main_checkout_stays_clean() {
    let fx = Fixture::new();
    let a = fx.task("PAP-1-a", "a").await;
    let b = fx.task("PAP-2-b", "b").await;
    assert_eq!(
        (a.origin, b.origin),
        (WorktreeOrigin::NewBranch, WorktreeOrigin::NewBranch)
    );
    assert_eq!(a.dir, fx.dir("a"));
    assert_eq!(a.head, git(&fx.repo, &["rev-parse", "main"]));
    assert_eq!(git(&a.dir, &["branch", "--show-current"]), "PAP-1-a");

    write(&a.dir, "only-in-a.txt", "a\n");
    write(&b.dir, "only-in-b.txt", "b\n");
    git(&b.dir, &["add", "only-in-b.txt"]);
    git(&b.dir, &["commit", "-q", "-m", "b's work"]);
    assert!(!b.dir.join("only-in-a.txt").exists());
    assert!(!a.dir.join("only-in-b.txt").exists());
    assert!(!fx.repo.join("only-in-a.txt").exists() && !fx.repo.join("only-in-b.txt").exists());
    assert_eq!(fx.main_status(), "");
    assert_eq!(git(&fx.repo, &["branch", "--show-current"]), "main");
}

#[tokio::test]
async fn a_second_ensure_reuses_the_worktree() {
    let fx = Fixture::new();
    let first = fx.task("PAP-1", "t").await;
    write(&first.dir, "work.txt", "in progress\n");
    let again = fx.task("PAP-1", "t").await;
    assert_eq!(again.origin, WorktreeOrigin::Reused);
    assert_eq!((again.dir, again.head), (first.dir.clone(), first.head));
    assert!(again.repairs.is_empty());
    // Reuse keeps uncommitted work.
    assert!(first.dir.join("work.txt").exists());
}

#[tokio::test]
async fn a_deleted_dir_is_pruned_and_its_branch_checked_out_again() {
    let fx = Fixture::new();
    let wt = fx.task("PAP-1", "t").await;
    write(&wt.dir, "done.txt", "done\n");
    git(&wt.dir, &["add", "done.txt"]);
    git(&wt.dir, &["commit", "-q", "-m", "work"]);
    let committed = git(&wt.dir, &["rev-parse", "HEAD"]);
    std::fs::remove_dir_all(&wt.dir).unwrap();

    let again = fx.task("PAP-1", "t").await;
    assert_eq!(again.origin, WorktreeOrigin::ExistingBranch);
    assert_eq!(
        again.repairs,
        vec![Repair::PrunedStale(vec![wt.dir.clone()])]
    );
    assert_eq!(again.head, committed, "the branch's commit survives");
    assert!(again.dir.join("done.txt").exists());
    assert_eq!(fx.main_status(), "");
}

#[tokio::test]
async fn a_dir_whose_registration_was_lost_is_replaced() {
    let fx = Fixture::new();
    let wt = fx.task("PAP-1", "t").await;
    // What a crash between git's steps, or a lost registry, leaves: the
    // checkout with its `.git` link, and no registration.
    let admin = git(&wt.dir, &["rev-parse", "--absolute-git-dir"]);
    std::fs::remove_dir_all(admin).unwrap();
    assert!(!git(&fx.repo, &["worktree", "list"]).contains("PAP-1"));

    let again = fx.task("PAP-1", "t").await;
    assert_eq!(again.origin, WorktreeOrigin::ExistingBranch);
    assert_eq!(again.repairs, vec![Repair::RemovedOrphan(wt.dir.clone())]);
    assert_eq!(git(&again.dir, &["status", "--porcelain"]), "");
}

#[tokio::test]
async fn an_interrupted_worktree_add_is_redone() {
    let fx = Fixture::new();
    let wt = fx.task("PAP-1", "t").await;
    // A `git worktree add` killed mid-checkout: still locked "initializing",
    // files missing.
    let admin = git(&wt.dir, &["rev-parse", "--absolute-git-dir"]);
    std::fs::write(std::path::Path::new(&admin).join("locked"), "initializing").unwrap();
    std::fs::remove_dir_all(wt.dir.join("src")).unwrap();

    let again = fx.task("PAP-1", "t").await;
    assert_eq!(again.origin, WorktreeOrigin::ExistingBranch);
    assert_eq!(
        again.repairs,
        vec![Repair::RemovedInterrupted(wt.dir.clone())]
    );
    assert!(again.dir.join("src/lib.rs").exists());
    assert!(!git(&fx.repo, &["worktree", "list", "--porcelain"]).contains("locked"));
}

#[tokio::test]
async fn an_empty_dir_is_used_and_foreign_files_are_never_deleted() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.dir("empty")).unwrap();
    let wt = fx.task("PAP-1", "empty").await;
    assert_eq!(wt.origin, WorktreeOrigin::NewBranch);

    write(&fx.dir("foreign"), "someone.txt", "keep me\n");
    let err = fx
        .workspaces
        .ensure_worktree(&fx.repo, "main", "PAP-2", &fx.dir("foreign"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, WorkspaceError::Refused(Refusal::DirNotAWorktree(_))),
        "{err}"
    );
    assert!(fx.dir("foreign").join("someone.txt").exists());

    let err = fx
        .workspaces
        .ensure_worktree(&fx.repo, "main", "PAP-1", &fx.dir("other"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            WorkspaceError::Refused(Refusal::BranchCheckedOutElsewhere { .. })
        ),
        "{err}"
    );
    let err = fx
        .workspaces
        .ensure_worktree(&fx.repo, "main", "PAP-3", &fx.dir("empty"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            WorkspaceError::Refused(Refusal::DirHoldsOtherBranch { .. })
        ),
        "{err}"
    );
}

#[tokio::test]
async fn bad_requests_are_refused_with_reasons() {
    let fx = Fixture::new();
    let ws = &fx.workspaces;
    let inside = fx.repo.join("worktrees/t");
    let err = ws
        .ensure_worktree(&fx.repo, "main", "PAP-1", &inside)
        .await
        .unwrap_err();
    assert!(
        matches!(err, WorkspaceError::Refused(Refusal::InsideRepository(_))),
        "{err}"
    );
    assert!(
        !fx.repo.join("worktrees").exists(),
        "a refused dir leaves nothing behind"
    );

    for branch in ["", "-x", "a..b", "x.lock", "HEAD", "@{-1}", "a b"] {
        let err = ws
            .ensure_worktree(&fx.repo, "main", branch, &fx.dir("t"))
            .await
            .unwrap_err();
        assert!(
            matches!(err, WorkspaceError::Refused(Refusal::InvalidRef(_))),
            "{branch:?}: {err}"
        );
    }
    let err = ws
        .ensure_worktree(&fx.repo, "--orphan", "PAP-1", &fx.dir("t"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, WorkspaceError::Refused(Refusal::InvalidRef(_))),
        "{err}"
    );
    let err = ws
        .ensure_worktree(&fx.repo, "main", "PAP-1", "relative/t".as_ref())
        .await
        .unwrap_err();
    assert!(
        matches!(err, WorkspaceError::Refused(Refusal::NotAbsolute(_))),
        "{err}"
    );

    // git's own failure comes back typed, with its command and stderr.
    let err = ws
        .ensure_worktree(&fx.repo, "no-such-base", "PAP-1", &fx.dir("t"))
        .await
        .unwrap_err();
    let WorkspaceError::Git {
        command,
        status,
        stderr,
    } = &err
    else {
        panic!("{err}");
    };
    assert!(command.starts_with("git worktree add"), "{command}");
    assert!(
        !status.success() && stderr.contains("no-such-base"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_git_ignored_dir_inside_the_repository_is_allowed() {
    let fx = Fixture::new();
    write(&fx.repo, ".gitignore", ".worktrees/\n");
    git(&fx.repo, &["add", ".gitignore"]);
    git(&fx.repo, &["commit", "-q", "-m", "ignore worktrees"]);
    let dir = fx.repo.join(".worktrees/t");
    let wt = fx
        .workspaces
        .ensure_worktree(&fx.repo, "main", "PAP-1", &dir)
        .await
        .unwrap();
    write(&wt.dir, "new.txt", "x\n");
    assert_eq!(fx.main_status(), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_ensures_on_one_repository_all_succeed() {
    let fx = Arc::new(Fixture::new());
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..8 {
        let fx = fx.clone();
        tasks.spawn(async move {
            let branch = format!("PAP-{i}");
            fx.workspaces
                .ensure_worktree(&fx.repo, "main", &branch, &fx.dir(&branch))
                .await
        });
    }
    // Two callers racing for one task's worktree: one makes it, one reuses.
    for _ in 0..2 {
        let fx = fx.clone();
        tasks.spawn(async move {
            fx.workspaces
                .ensure_worktree(&fx.repo, "main", "PAP-same", &fx.dir("same"))
                .await
        });
    }
    let mut origins = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        origins.push(joined.unwrap().unwrap().origin);
    }
    assert_eq!(
        origins
            .iter()
            .filter(|o| **o == WorktreeOrigin::NewBranch)
            .count(),
        9
    );
    assert_eq!(
        origins
            .iter()
            .filter(|o| **o == WorktreeOrigin::Reused)
            .count(),
        1
    );
    let listed = git(&fx.repo, &["worktree", "list", "--porcelain"]);
    assert_eq!(listed.matches("\nbranch refs/heads/PAP-").count(), 9);
    assert_eq!(fx.main_status(), "");
}

#[tokio::test]
async fn remove_deletes_a_merged_branch_and_keeps_an_unmerged_one() {
    let fx = Fixture::new();
    let ws = &fx.workspaces;
    let idle = ws
        .ensure_worktree(&fx.repo, "main", "PAP-1", &fx.dir("idle"))
        .await
        .unwrap();
    let busy = ws
        .ensure_worktree(&fx.repo, "main", "PAP-2", &fx.dir("busy"))
        .await
        .unwrap();
    write(&busy.dir, "feature.txt", "feature\n");
    git(&busy.dir, &["add", "-A"]);
    git(&busy.dir, &["commit", "-q", "-m", "feature"]);
    write(&busy.dir, "scratch.txt", "uncommitted\n");

    let removed = ws
        .remove_worktree(&fx.repo, &idle.dir, "PAP-1", Some("main"))
        .await
        .unwrap();
    assert!(removed.worktree_removed);
    assert_eq!(removed.branch, BranchFate::Deleted);
    let removed = ws
        .remove_worktree(&fx.repo, &busy.dir, "PAP-2", Some("main"))
        .await
        .unwrap();
    assert!(removed.worktree_removed, "removed although dirty");
    assert_eq!(removed.branch, BranchFate::KeptUnmerged);
    assert!(!idle.dir.exists() && !busy.dir.exists());
    assert_eq!(
        git(&fx.repo, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
    assert_eq!(git(&fx.repo, &["branch", "--list", "PAP-*"]), "  PAP-2");

    // Idempotent.
    let again = ws
        .remove_worktree(&fx.repo, &busy.dir, "PAP-2", Some("main"))
        .await
        .unwrap();
    assert!(!again.worktree_removed);
    assert_eq!(again.branch, BranchFate::KeptUnmerged);
    let gone = ws
        .remove_worktree(&fx.repo, &idle.dir, "PAP-1", Some("main"))
        .await
        .unwrap();
    assert_eq!(gone.branch, BranchFate::Absent);

    // Once merged, it goes; without a base it stays.
    git(&fx.repo, &["merge", "-q", "--ff-only", "PAP-2"]);
    let kept = ws
        .remove_worktree(&fx.repo, &busy.dir, "PAP-2", None)
        .await
        .unwrap();
    assert_eq!(kept.branch, BranchFate::KeptAsAsked);
    let merged = ws
        .remove_worktree(&fx.repo, &busy.dir, "PAP-2", Some("main"))
        .await
        .unwrap();
    assert_eq!(merged.branch, BranchFate::Deleted);
    assert_eq!(fx.main_status(), "");
}

#[tokio::test]
async fn remove_keeps_a_branch_checked_out_elsewhere_and_clears_a_crashed_dir() {
    let fx = Fixture::new();
    let ws = &fx.workspaces;
    let wt = ws
        .ensure_worktree(&fx.repo, "main", "PAP-1", &fx.dir("t"))
        .await
        .unwrap();
    let admin = git(&wt.dir, &["rev-parse", "--absolute-git-dir"]);
    std::fs::remove_dir_all(admin).unwrap();
    let removed = ws
        .remove_worktree(&fx.repo, &wt.dir, "PAP-1", Some("main"))
        .await
        .unwrap();
    assert!(removed.worktree_removed && !wt.dir.exists());
    assert_eq!(removed.branch, BranchFate::Deleted);

    ws.ensure_worktree(&fx.repo, "main", "PAP-2", &fx.dir("u"))
        .await
        .unwrap();
    let main = ws
        .remove_worktree(&fx.repo, &fx.dir("u"), "main", Some("main"))
        .await
        .unwrap();
    assert_eq!(main.branch, BranchFate::KeptCheckedOut(fx.repo.clone()));
}
