//! A task's Changes view (issue 36): where its runs work (the task branch
//! and its worktree), then everything the task changed on its branch
//! against the base ("All changes on <branch>", with its commits), then what
//! each run changed, newest first. Each reads outcome first ("changed 3
//! files, +120 −8" or "no changes"), then its files, then the patch,
//! collapsed when long. The run page links here (`#changes-run-<run>`).
//!
//! Patches are bounded by the runtime (256 KB a run), but a task can have
//! many runs and the page is fetched again on every live event, so the page
//! shows the newest [`RUNS_SHOWN`] runs and at most [`PATCH_BUDGET`] bytes of
//! patch in all; a patch past that is a link to its JSON.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use maud::{html, Markup};
use paperclip_core::model::{Agent, HeartbeatRun};
use paperclip_core::workspace::{
    ChangedFile, ExecutionWorkspace, FileChangeKind, RunWorkspaceChanges,
};
use paperclip_core::workspace_ops::{change_summary, TaskWorkspaceChanges};
use paperclip_store::runs::{workspace_life, workspaces as exec_ws};

use crate::fmt::{pill, time};

/// Runs whose changes the page shows.
const RUNS_SHOWN: i64 = 10;
/// Bytes of patch the page renders in all; later patches are links.
const PATCH_BUDGET: usize = 512 * 1024;
/// A patch longer than this many lines starts collapsed.
const OPEN_LINES: usize = 60;

/// What the view shows: the task's workspace (its latest, open or closed),
/// what the task changed on its branch, and its runs' changes, newest first.
pub struct Changes {
    workspace: Option<ExecutionWorkspace>,
    task: Option<TaskWorkspaceChanges>,
    runs: Vec<RunWorkspaceChanges>,
    /// More runs changed things than are shown.
    more: bool,
}

impl Changes {
    /// The runs' changes shown, newest first (the thread's run lines say them).
    pub fn runs(&self) -> &[RunWorkspaceChanges] {
        &self.runs
    }
}

/// Three queries: the task's workspace, then the task's and its runs'
/// changes.
pub async fn load(
    store: &paperclip_store::Store,
    company_id: &str,
    issue_id: &str,
) -> paperclip_store::Result<Changes> {
    let filter = exec_ws::Filter {
        issue_id: Some(issue_id.to_string()),
        ..exec_ws::Filter::default()
    };
    let workspace = exec_ws::list_company(store, company_id, &filter, 1)
        .await?
        .into_iter()
        .next();
    let (task, mut runs) = match &workspace {
        Some(ws) => (
            workspace_life::task_changes(store, &ws.id).await?,
            exec_ws::changes_of_workspace(store, &ws.id, RUNS_SHOWN + 1).await?,
        ),
        None => (None, Vec::new()),
    };
    let more = runs.len() as i64 > RUNS_SHOWN;
    runs.truncate(RUNS_SHOWN as usize);
    Ok(Changes {
        workspace,
        task,
        runs,
        more,
    })
}

/// The section, or nothing for a task that never ran in a worktree.
/// `task_runs` are the task's recent runs (to name who made each change);
/// `prefix` the company's, for links.
pub fn section(
    c: &Changes,
    task_runs: &[HeartbeatRun],
    names: &HashMap<&str, &Agent>,
    prefix: &str,
) -> Markup {
    let Some(ws) = &c.workspace else {
        return html! {};
    };
    let now = Utc::now();
    let mut budget = PATCH_BUDGET;
    let task_patch = c.task.as_ref().map(|t| t.patch.as_str());
    html! {
        section.changes #changes {
            h2 { "Changes" }
            p.changes-where {
                "Branch " code.branch { (ws.branch_name) }
                " from " code { (ws.base_ref) }
                @if let Some(base) = ws.metadata.get("baseCommit").and_then(|v| v.as_str()) {
                    " at " code { (short(base)) }
                }
                " · worktree " code.worktree { (ws.cwd) }
                " " (pill(ws.status.as_str()))
            }
            @if let Some(t) = &c.task {
                (task_changes(t, &ws.branch_name, now, &mut budget))
            }
            @if c.runs.is_empty() {
                p.muted { "No run has finished in this worktree yet." }
            } @else if c.task.is_some() {
                h3.changes-by-run { "By run" }
            }
            @for change in &c.runs {
                @let run = task_runs.iter().find(|r| r.id == change.run_id);
                (run_changes(change, run, names, prefix, task_patch, now, &mut budget))
            }
            @if c.more {
                p.muted { "Only the newest " (RUNS_SHOWN) " runs' changes are shown." }
            }
        }
    }
}

/// The run page's line on what the run changed, linking to its place in
/// the task's Changes view.
pub fn run_summary(c: &RunWorkspaceChanges, prefix: &str, identifier: &str) -> Markup {
    html! {
        strong.change-summary data-files-changed=(c.files_changed) {
            (change_summary(c.files_changed, c.insertions, c.deletions))
        }
        @if c.truncated { span.muted { " (a long patch, truncated)" } }
        " · "
        a href={"/" (prefix) "/tasks/" (identifier) "#changes-run-" (c.run_id)} {
            @if c.files_changed == 0 { "the task's changes" } @else { "see the diff" }
        }
    }
}

fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// Everything the task changed on its branch: outcome, commits, files,
/// patch.
fn task_changes(
    t: &TaskWorkspaceChanges,
    branch: &str,
    now: DateTime<Utc>,
    budget: &mut usize,
) -> Markup {
    let diff = Diff {
        files: &t.files,
        patch: &t.patch,
        truncated: t.truncated,
        json: None,
        repeats: false,
    };
    html! {
        article.changes-task data-details-scope="changes-task" data-files-changed=(t.files_changed) {
            h3 { "All changes on " code { (branch) } }
            header {
                strong.change-summary { (change_summary(t.files_changed, t.insertions, t.deletions)) }
                " · " span.muted { "against " code { (short(&t.base_commit)) } ", at " code { (short(&t.head_commit)) } }
                " · " (time(&t.updated_at, now))
            }
            @if !t.commits.is_empty() {
                ul.commits {
                    @for commit in &t.commits {
                        li { code { (short(&commit.sha)) } " " (commit.subject)
                            span.muted { " · " (commit.author_name) " · " (time(&commit.committed_at, now)) } }
                    }
                }
            }
            (diff.render(budget))
        }
    }
}

/// One run's changes: outcome, who and when, files, patch.
fn run_changes(
    c: &RunWorkspaceChanges,
    run: Option<&HeartbeatRun>,
    names: &HashMap<&str, &Agent>,
    prefix: &str,
    task_patch: Option<&str>,
    now: DateTime<Utc>,
    budget: &mut usize,
) -> Markup {
    let agent = run.and_then(|r| names.get(r.agent_id.as_str()));
    let diff = Diff {
        files: &c.files,
        patch: &c.patch,
        truncated: c.truncated,
        json: Some(format!(
            "/api/heartbeat-runs/{}/workspace-changes",
            c.run_id
        )),
        repeats: task_patch == Some(c.patch.as_str()),
    };
    html! {
        article.changes-run id={"changes-run-" (c.run_id)} data-details-scope={"changes-" (c.run_id)} data-files-changed=(c.files_changed) {
            header {
                strong.change-summary { (change_summary(c.files_changed, c.insertions, c.deletions)) }
                " · "
                @match (run, agent) {
                    (Some(r), Some(a)) => {
                        a href={"/" (prefix) "/agents/" (a.url_key) "/runs/" (r.id)} { (a.name) "'s run" }
                        " " (pill(&r.status))
                    },
                    _ => span.muted { "an earlier run" },
                }
                " · " (time(&c.created_at, now))
                " · " span.muted { "from " code { (short(&c.from_commit)) } }
            }
            (diff.render(budget))
        }
    }
}

/// The parts of a diff the view renders, for a run's changes and (when the
/// store serves it) the whole task's.
struct Diff<'a> {
    files: &'a [ChangedFile],
    patch: &'a str,
    truncated: bool,
    /// Where the patch is when the page has no room left for it.
    json: Option<String>,
    /// The same patch as the whole task's shown above (a task of one run):
    /// it starts collapsed, and says so.
    repeats: bool,
}

impl Diff<'_> {
    /// The file list, then the patch; `budget` is what is left of
    /// [`PATCH_BUDGET`].
    fn render(&self, budget: &mut usize) -> Markup {
        if self.files.is_empty() && self.patch.is_empty() {
            return html! {};
        }
        let lines = self.patch.lines().count();
        let shown = self.patch.len() <= *budget;
        if shown {
            *budget -= self.patch.len();
        }
        html! {
            table.data.changed-files {
                thead { tr { th { "File" } th { "Change" } th.num { "Lines" } } }
                tbody {
                    @for f in self.files {
                        tr data-path=(f.path) {
                            td { code {
                                @if let Some(old) = f.old_path.as_deref().filter(|o| *o != f.path) { (old) " → " }
                                (f.path)
                            } }
                            td { span class={"change-kind k-" (f.kind.as_str())} { (kind_words(f.kind)) } }
                            td.num {
                                @match (f.insertions, f.deletions) {
                                    (Some(i), Some(d)) => { span.d-plus { "+" (i) } " " span.d-minus { "\u{2212}" (d) } },
                                    _ => span.muted { "binary" },
                                }
                            }
                        }
                    }
                }
            }
            @if !self.patch.is_empty() {
                @if shown {
                    details.patch open[lines <= OPEN_LINES && !self.repeats] {
                        summary { "Patch (" (lines) " lines" @if self.truncated { ", truncated" } @if self.repeats { ", the same as all changes above" } ")" }
                        pre.diff { (render_patch(self.patch)) }
                        @if self.truncated {
                            p.diff-truncated data-truncated {
                                strong { "Truncated: " }
                                "the patch was cut at the size a run's diff keeps; the file list above is complete."
                            }
                        }
                    }
                } @else {
                    p.muted { "The patch (" (lines) " lines) is not shown here, to keep the page light"
                        @if let Some(json) = &self.json { ": " a href=(json) { "read it as JSON" } } "." }
                }
            }
        }
    }
}

fn kind_words(kind: FileChangeKind) -> &'static str {
    match kind {
        FileChangeKind::Added => "added",
        FileChangeKind::Modified => "modified",
        FileChangeKind::Deleted => "deleted",
        FileChangeKind::Renamed => "renamed",
        FileChangeKind::Copied => "copied",
        FileChangeKind::TypeChanged => "type changed",
    }
}

/// How a line of a unified diff reads.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Line {
    /// `diff --git a/x b/x`: a file starts.
    File,
    /// `index`, `---`, `+++`, modes, renames, `Binary files`, `\ No newline`.
    Meta,
    /// `@@ -1,3 +1,4 @@`.
    Hunk,
    Added,
    Removed,
    Context,
}

/// Each line's kind. `---`/`+++` are headers only between a file's start
/// and its first hunk: inside a hunk they are a removed `--` line or an
/// added `++` line.
fn classify(patch: &str) -> Vec<(Line, &str)> {
    let mut in_header = false;
    patch
        .lines()
        .map(|line| {
            let kind = if line.starts_with("diff --git ") {
                in_header = true;
                Line::File
            } else if line.starts_with("@@") {
                in_header = false;
                Line::Hunk
            } else if in_header || line.starts_with('\\') {
                Line::Meta
            } else if line.starts_with('+') {
                Line::Added
            } else if line.starts_with('-') {
                Line::Removed
            } else {
                Line::Context
            };
            (kind, line)
        })
        .collect()
}

fn render_patch(patch: &str) -> Markup {
    html! {
        @for (kind, line) in classify(patch) {
            @let class = match kind {
                Line::File => "d-file",
                Line::Meta => "d-meta",
                Line::Hunk => "d-hunk",
                Line::Added => "d-add",
                Line::Removed => "d-del",
                Line::Context => "d-ctx",
            };
            span class=(class) { (line) "\n" }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_reads_line_by_line() {
        let patch = "diff --git a/README.md b/README.md\nindex 1..2 100644\n--- a/README.md\n+++ b/README.md\n@@ -1 +1,2 @@\n-hello\n+hello world\n+--- not a header\n--- removed dashes\n context\n\\ No newline at end of file\n";
        let kinds: Vec<Line> = classify(patch).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            kinds,
            [
                Line::File,
                Line::Meta,
                Line::Meta,
                Line::Meta,
                Line::Hunk,
                Line::Removed,
                Line::Added,
                Line::Added,
                Line::Removed,
                Line::Context,
                Line::Meta,
            ]
        );
        let html = render_patch("diff --git a/x b/x\n@@ -0,0 +1 @@\n+<b>hi</b>\n").into_string();
        assert!(
            html.contains("<span class=\"d-add\">+&lt;b&gt;hi&lt;/b&gt;\n</span>"),
            "{html}"
        );
    }

    #[test]
    fn a_long_patch_past_the_budget_is_a_link() {
        let files = [ChangedFile {
            path: "a.txt".into(),
            old_path: None,
            kind: FileChangeKind::Added,
            insertions: Some(1),
            deletions: Some(0),
        }];
        let diff = Diff {
            files: &files,
            patch: "diff --git a/a.txt b/a.txt\n@@ -0,0 +1 @@\n+x\n",
            truncated: true,
            json: Some("/api/x".into()),
            repeats: false,
        };
        let mut budget = 1000;
        let shown = diff.render(&mut budget).into_string();
        assert!(
            shown.contains("data-truncated") && shown.contains("<details class=\"patch\" open"),
            "{shown}"
        );
        assert!(budget < 1000);
        let mut none = 3;
        let linked = diff.render(&mut none).into_string();
        assert!(
            linked.contains("href=\"/api/x\"") && !linked.contains("<pre"),
            "{linked}"
        );
        assert_eq!(none, 3);
    }
}
