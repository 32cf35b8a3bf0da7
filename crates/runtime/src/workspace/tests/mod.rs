//! Tests against the real `git` in temp dirs. Fixtures are set up with
//! plain synchronous git, so what is under test is only the module.

mod changes;
mod worktrees;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::workspace::{Author, Workspaces, Worktree};

/// A repository with one commit on `main`, a dir for worktrees beside it
/// (outside its tree, as the data dir is), and the module under test.
pub(super) struct Fixture {
    root: PathBuf,
    pub repo: PathBuf,
    pub workspaces: Workspaces,
}

impl Fixture {
    pub fn new() -> Fixture {
        let root = std::env::temp_dir().join(format!("paperclip-ws-{}", uuid::Uuid::new_v4()));
        let repo = root.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["config", "user.name", "Fixture"]);
        git(&repo, &["config", "user.email", "fixture@example.com"]);
        git(&repo, &["config", "commit.gpgsign", "false"]);
        write(&repo, "README.md", "# Fixture\n");
        write(&repo, "src/lib.rs", &numbered("line", 10));
        write(&repo, "notes.txt", &numbered("note", 5));
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-q", "-m", "initial"]);
        Fixture {
            // Canonical, so paths compare with what the module returns.
            root: std::fs::canonicalize(&root).unwrap(),
            repo: std::fs::canonicalize(&repo).unwrap(),
            workspaces: Workspaces::new(),
        }
    }

    /// Where a task's worktree goes: beside the repository, not in it.
    /// The task worktree `branch` off `main` in the scratch dir `name`, as a
    /// run would ask for it.
    pub async fn task(&self, branch: &str, name: &str) -> Worktree {
        self.workspaces
            .ensure_worktree(&self.repo, "main", branch, &self.dir(name))
            .await
            .unwrap()
    }

    pub fn dir(&self, name: &str) -> PathBuf {
        self.root.join("worktrees").join(name)
    }

    /// `git status --porcelain` of the main checkout: empty when untouched.
    pub fn main_status(&self) -> String {
        git(
            &self.repo,
            &["status", "--porcelain", "--untracked-files=all"],
        )
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// Runs git synchronously and returns its trimmed stdout; panics on failure.
pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .trim_end()
        .to_string()
}

pub(super) fn write(dir: &Path, path: &str, text: &str) {
    let file = dir.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
}

/// `n` distinct lines `<word> 1`, `<word> 2`, …
pub(super) fn numbered(word: &str, n: usize) -> String {
    (1..=n).map(|i| format!("{word} {i}\n")).collect()
}

pub(super) fn agent() -> Author {
    Author {
        name: "Paperclip Agent".to_string(),
        email: "agent@paperclip.invalid".to_string(),
    }
}
