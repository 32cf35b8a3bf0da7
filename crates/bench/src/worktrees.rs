//! `paperclip-bench worktrees`: what execution workspaces cost on a
//! repository of 10,000 files, measured on the runtime's own
//! `Workspaces` (the code every run goes through) beside the plain `git`
//! commands that do the least of the same work, as a floor:
//!
//! - a task's first run: a fresh worktree on a new branch
//!   (`ensure_worktree`, against `git worktree add -b`);
//! - every later run: reusing it (`ensure_worktree` again, against
//!   `git worktree list --porcelain`, the one command reuse cannot skip);
//! - every run's end: recording what it changed (`Workspaces::diff`) when it
//!   changed 1, 100 or 1,000 files, half of them new untracked files, against
//!   `git diff HEAD --numstat` (counts, but blind to untracked files),
//!   `git status --porcelain -uall` (names only) and `git diff HEAD` (the
//!   patch, again without untracked files).
//!
//! Each figure is the median of `--repeats` timed runs (min and max beside
//! it) after one untimed warm-up, with the repository in the page cache.
//! Everything is under `$TMPDIR` (a worktree goes to the server's data dir,
//! so that disk is the one to measure). No server is started. It reports figures and asserts nothing about speed;
//! it fails only when a diff does not find the files it changed.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use paperclip_runtime::workspace::{Workspaces, WorktreeOrigin};
use tokio::process::Command;

/// The runtime's bound on a stored patch (`run/workspace.rs`).
const MAX_PATCH_BYTES: usize = 256 * 1024;

#[derive(clap::Args)]
pub struct WorktreeArgs {
    /// Files in the repository, 100 to a folder.
    #[arg(long, default_value_t = 10_000)]
    files: usize,
    /// Lines in each file (about 40 bytes each).
    #[arg(long, default_value_t = 30)]
    lines: usize,
    /// Timed runs of each measurement.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Files a run changes, one diff case each; half (rounded down) are
    /// edits of committed files, the rest new untracked files.
    #[arg(long, value_delimiter = ',', default_value = "1,100,1000")]
    changed: Vec<usize>,
}

struct Row {
    what: String,
    ours: Vec<Duration>,
    floors: Vec<(&'static str, Vec<Duration>)>,
    note: String,
}

pub async fn run(args: &WorktreeArgs) -> anyhow::Result<()> {
    let root = std::env::temp_dir().join(format!(
        "paperclip-bench-worktrees-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let rows = measure(&root, args).await;
    let _ = std::fs::remove_dir_all(&root);
    print(&rows?, args);
    Ok(())
}

async fn measure(root: &Path, args: &WorktreeArgs) -> anyhow::Result<Vec<Row>> {
    let repo = root.join("repo");
    let trees = root.join("trees");
    std::fs::create_dir_all(&trees)?;
    let started = Instant::now();
    make_repository(&repo, args.files, args.lines).await?;
    eprintln!(
        "repository of {} files ({} lines each) committed in {:.1} s",
        args.files,
        args.lines,
        started.elapsed().as_secs_f64()
    );
    let ws = Workspaces::new();
    let repeats = args.repeats.max(1);
    let mut rows = Vec::new();

    // Fresh worktrees. Ours and the floor take turns going first, so
    // neither always runs on the other's warm cache; the first round warms
    // up and is not counted; each worktree is removed, untimed, after.
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    for i in 0..=repeats {
        let order = if i % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for is_ours in order {
            let branch = format!("{}-{i}", if is_ours { "ours" } else { "floor" });
            let dir = trees.join(&branch);
            let path = dir.to_str().context("temp path")?;
            let t = Instant::now();
            if is_ours {
                let wt = ws.ensure_worktree(&repo, "main", &branch, &dir).await?;
                if wt.origin != WorktreeOrigin::NewBranch {
                    bail!("fresh worktree {branch} was {:?}", wt.origin);
                }
            } else {
                git(
                    &repo,
                    &["worktree", "add", "-q", "-b", &branch, path, "main"],
                )
                .await?;
            }
            let took = t.elapsed();
            if i > 0 {
                if is_ours { &mut ours } else { &mut floor }.push(took);
            }
            git(&repo, &["worktree", "remove", "--force", path]).await?;
            // The removal's writeback would otherwise land in the next
            // timed checkout.
            Command::new("sync")
                .status()
                .await
                .context("running sync")?;
        }
        eprint!(".");
    }
    rows.push(Row {
        what: format!("Fresh worktree on a new branch ({} files)", args.files),
        ours,
        floors: vec![("git worktree add -b", floor)],
        note: String::new(),
    });

    // Reuse: the worktree a task's earlier run left.
    let kept = "kept";
    let dir = trees.join(&kept);
    ws.ensure_worktree(&repo, "main", kept, &dir).await?;
    let (mut ours, mut floor) = (Vec::new(), Vec::new());
    for i in 0..=repeats {
        let t = Instant::now();
        let wt = ws.ensure_worktree(&repo, "main", kept, &dir).await?;
        let took = t.elapsed();
        if wt.origin != WorktreeOrigin::Reused {
            bail!("reusing {kept} gave {:?}", wt.origin);
        }
        let f = timed(&repo, &["worktree", "list", "--porcelain"]).await?;
        if i > 0 {
            ours.push(took);
            floor.push(f);
        }
    }
    rows.push(Row {
        what: "Reuse the task's worktree (a later run)".into(),
        ours,
        floors: vec![("git worktree list --porcelain", floor)],
        note: String::new(),
    });
    eprintln!();

    for &n in &args.changed {
        rows.push(diff_case(&ws, &repo, &trees, args, n, repeats).await?);
        eprint!(".");
    }
    eprintln!();
    Ok(rows)
}

/// A fresh worktree where a run changed `n` files, then its diff, timed.
async fn diff_case(
    ws: &Workspaces,
    repo: &Path,
    trees: &Path,
    args: &WorktreeArgs,
    n: usize,
    repeats: usize,
) -> anyhow::Result<Row> {
    let branch = format!("diff-{n}");
    let dir = trees.join(&branch);
    let wt = ws.ensure_worktree(repo, "main", &branch, &dir).await?;
    let edited = (n / 2).min(args.files);
    for i in 0..edited {
        let file = dir.join(source_path(i * (args.files / edited.max(1)), args.files));
        let mut text = std::fs::read_to_string(&file)?;
        text.push_str("// changed by the run\n");
        std::fs::write(&file, text)?;
    }
    std::fs::create_dir_all(dir.join("new"))?;
    for i in edited..n {
        std::fs::write(
            dir.join(format!("new/file_{i}.rs")),
            "fn added() {}\n// by the run\n// line three\n// line four\n// line five\n",
        )?;
    }
    let (mut ours, mut numstat, mut status, mut patch) = (vec![], vec![], vec![], vec![]);
    let mut note = String::new();
    for i in 0..=repeats {
        let t = Instant::now();
        let diff = ws.diff(&dir, &wt.head, MAX_PATCH_BYTES).await?;
        let took = t.elapsed();
        if diff.files.len() != n {
            bail!("the diff of {n} changed files found {}", diff.files.len());
        }
        note = format!(
            "+{} −{}, patch {} KiB{}",
            diff.insertions,
            diff.deletions,
            diff.patch.len() / 1024,
            if diff.truncated {
                " (cut at the bound)"
            } else {
                ""
            }
        );
        let a = timed(&dir, &["diff", "HEAD", "--numstat"]).await?;
        let b = timed(&dir, &["status", "--porcelain", "-uall"]).await?;
        let c = timed(&dir, &["diff", "HEAD"]).await?;
        if i > 0 {
            ours.push(took);
            numstat.push(a);
            status.push(b);
            patch.push(c);
        }
    }
    git(
        repo,
        &["worktree", "remove", "--force", dir.to_str().unwrap()],
    )
    .await?;
    Ok(Row {
        what: format!(
            "Record a run's diff: {n} file{} changed ({edited} edited, {} new)",
            if n == 1 { "" } else { "s" },
            n - edited
        ),
        ours,
        floors: vec![
            ("git diff HEAD --numstat", numstat),
            ("git status --porcelain -uall", status),
            ("git diff HEAD", patch),
        ],
        note,
    })
}

fn source_path(i: usize, files: usize) -> String {
    let i = i.min(files.saturating_sub(1));
    format!("src/m{:03}/file_{i}.rs", i / 100)
}

/// `files` files of `lines` lines each, committed on `main`.
async fn make_repository(repo: &Path, files: usize, lines: usize) -> anyhow::Result<()> {
    std::fs::create_dir_all(repo)?;
    git(repo, &["init", "-q", "-b", "main"]).await?;
    git(repo, &["config", "user.email", "bench@example.com"]).await?;
    git(repo, &["config", "user.name", "Bench"]).await?;
    for i in 0..files {
        let path = repo.join(source_path(i, files));
        if i % 100 == 0 {
            std::fs::create_dir_all(path.parent().unwrap())?;
        }
        let mut text = String::with_capacity(lines * 40);
        for l in 0..lines {
            text.push_str(&format!("pub fn f_{i}_{l}() -> u64 {{ {} }}\n", i * l));
        }
        std::fs::write(path, text)?;
    }
    git(repo, &["add", "-A"]).await?;
    git(repo, &["commit", "-q", "-m", "the code"]).await?;
    // Packed, as a cloned repository is: a checkout then reads one pack,
    // not 10,000 loose objects.
    git(repo, &["repack", "-a", "-d", "-q"]).await?;
    Ok(())
}

async fn git(dir: &Path, args: &[&str]) -> anyhow::Result<Vec<u8>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .await
        .context("running git")?;
    if !out.status.success() {
        bail!(
            "git {args:?} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(out.stdout)
}

async fn timed(dir: &Path, args: &[&str]) -> anyhow::Result<Duration> {
    let t = Instant::now();
    git(dir, args).await?;
    Ok(t.elapsed())
}

/// `median ms (min–max)`.
fn stat(times: &[Duration]) -> String {
    let mut v: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    v.sort_by(f64::total_cmp);
    match (v.first(), v.last()) {
        (Some(min), Some(max)) => format!("{:.1} ms ({min:.1}–{max:.1})", v[v.len() / 2]),
        _ => "-".into(),
    }
}

fn print(rows: &[Row], args: &WorktreeArgs) {
    println!(
        "\nRepository: {} files of {} lines; median of {} runs (min–max).\n",
        args.files, args.lines, args.repeats
    );
    println!("| Measurement | Ours (`Workspaces`) | Plain git (floor) | Diff found |");
    println!("|---|---|---|---|");
    for row in rows {
        let floors: Vec<String> = row
            .floors
            .iter()
            .map(|(cmd, t)| format!("`{cmd}` {}", stat(t)))
            .collect();
        println!(
            "| {} | {} | {} | {} |",
            row.what,
            stat(&row.ours),
            floors.join("; "),
            if row.note.is_empty() { "-" } else { &row.note }
        );
    }
}
