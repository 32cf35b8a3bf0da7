//! Real git repositories for the workspace tests: a repository with one
//! commit on `main`, a project that declares it, and `git` that must
//! succeed.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use super::TestServer;

/// `git -C dir args…`, which must succeed; its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with one commit (`README.md`) on `main`, in a temp dir of
/// its own (never under a server's data dir, where worktrees go).
pub fn repository() -> PathBuf {
    repository_in(&std::env::temp_dir())
}

/// Like [`repository`], under `parent`.
pub fn repository_in(parent: &Path) -> PathBuf {
    let dir = parent.join(format!("paperclip-repo-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["config", "user.email", "dev@example.com"]);
    git(&dir, &["config", "user.name", "Dev"]);
    std::fs::write(dir.join("README.md"), "hello\n").unwrap();
    git(&dir, &["add", "README.md"]);
    git(&dir, &["commit", "-q", "-m", "first"]);
    std::fs::canonicalize(dir).unwrap()
}

/// Commits `content` as `file` on the repository's current branch.
pub fn commit_file(repo: &Path, file: &str, content: &str) {
    std::fs::write(repo.join(file), content).unwrap();
    git(repo, &["add", file]);
    git(repo, &["commit", "-q", "-m", &format!("{file}")]);
}

/// A project "App" of company `cid` that declares a fresh repository: the
/// repository's path and the project's id.
pub async fn project_on_repository(server: &TestServer, cid: &str) -> (PathBuf, String) {
    let repo = repository();
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App" }),
        )
        .await;
    let pid = str_of(&project["id"]).to_string();
    server
        .ok_post(
            &format!("/api/projects/{pid}/workspaces"),
            json!({ "cwd": repo.to_str().unwrap() }),
        )
        .await;
    (repo, pid)
}

/// A JSON string; panics naming the value otherwise.
pub fn str_of(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}
