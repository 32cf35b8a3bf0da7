//! Records the git commit the binary is built from, for the health answer
//! (`commit`, `serverInfo.git`): `PAPERCLIP_GIT_*` at compile time, empty
//! when the source is not a git checkout (a crate tarball) or git is absent.
//!
//! It reruns only when HEAD moves (a checkout, a commit, a reset), never on
//! a source edit: whether the tree is dirty is not recorded for that reason.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim_end().to_string())
}

fn watch(path: &Path) {
    println!("cargo:rerun-if-changed={}", path.display());
}

/// The files whose change means HEAD moved. Only existing paths: cargo
/// reruns a script on every build while a watched path is missing.
fn watch_head() {
    let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]).map(PathBuf::from) else {
        return;
    };
    watch(&git_dir.join("HEAD"));
    let common = git(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .map(PathBuf::from)
        .unwrap_or_else(|| git_dir.clone());
    let packed = common.join("packed-refs");
    if packed.exists() {
        watch(&packed);
    }
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        let loose = common.join(&reference);
        // A packed ref comes back as a loose file at the next commit: its
        // folder changes then.
        match (loose.exists(), loose.parent()) {
            (true, _) => watch(&loose),
            (false, Some(folder)) if folder.exists() => watch(folder),
            _ => {}
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let commit = git(&["show", "-s", "--format=%H%n%h%n%s%n%cI", "HEAD"]);
    if commit.is_some() {
        watch_head();
    }
    let mut fields = commit
        .as_deref()
        .unwrap_or_default()
        .splitn(4, '\n')
        .map(str::to_string)
        .collect::<Vec<_>>();
    fields.resize(4, String::new());
    let branch = commit
        .as_ref()
        .and_then(|_| git(&["symbolic-ref", "--quiet", "--short", "HEAD"]))
        .unwrap_or_default();
    for (name, value) in [
        ("SHA", &fields[0]),
        ("SHORT_SHA", &fields[1]),
        ("SUBJECT", &fields[2]),
        ("COMMITTED_AT", &fields[3]),
        ("BRANCH", &branch),
    ] {
        println!("cargo:rustc-env=PAPERCLIP_GIT_{name}={}", value.trim());
    }
}
