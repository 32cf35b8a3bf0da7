//! What a task shows on the board's cards and the list's rows alike: its
//! priority, labels, open blockers, assignee (a person or an agent), the
//! running indicator with the agent's newest step, the selection box, and
//! the bulk action bar that acts on the selected tasks.

use std::collections::HashMap;

use maud::{html, Markup};
use paperclip_core::actor::LOCAL_BOARD_USER_ID;
use paperclip_core::agent::AgentStatus;
use paperclip_core::issue::{IssuePriority, IssueStatus};
use paperclip_core::model::{Agent, Issue, Label};
use paperclip_store::views::board::RunningTask;

use super::tasks::COLUMNS;
use crate::Web;

/// Who a task can be assigned to, by id, for naming without a query each.
pub(crate) struct Names<'a> {
    pub agents: HashMap<&'a str, &'a Agent>,
    /// The company's people `(user id, name)` (an authenticated instance).
    pub people: &'a [(String, String)],
    /// Who is looking: their own tasks read "Me".
    pub me: &'a str,
}

/// A task's assignee as shown: `(kind, name)`, the kind `agent` or `person`.
pub(crate) fn assignee<'a>(issue: &Issue, names: &'a Names) -> Option<(&'static str, String)> {
    if let Some(id) = issue.assignee_agent_id.as_deref() {
        let name = names
            .agents
            .get(id)
            .map(|a| a.name.clone())
            .unwrap_or_else(|| "An agent".into());
        return Some(("agent", name));
    }
    let user = issue.assignee_user_id.as_deref()?;
    Some(("person", person_name(user, names)))
}

pub(crate) fn person_name(user: &str, names: &Names) -> String {
    if user == names.me {
        return "Me".into();
    }
    if user == LOCAL_BOARD_USER_ID {
        return "Board".into();
    }
    names
        .people
        .iter()
        .find(|(id, _)| id == user)
        .map(|(_, n)| n.clone())
        .unwrap_or_else(|| "A person".into())
}

/// A status as a person reads it.
pub(crate) fn status_label(status: IssueStatus) -> &'static str {
    match status {
        IssueStatus::Backlog => "Backlog",
        IssueStatus::Todo => "Todo",
        IssueStatus::InProgress => "In progress",
        IssueStatus::InReview => "In review",
        IssueStatus::Blocked => "Blocked",
        IssueStatus::Done => "Done",
        IssueStatus::Cancelled => "Cancelled",
    }
}

pub(crate) const PRIORITIES: [IssuePriority; 4] = [
    IssuePriority::Critical,
    IssuePriority::High,
    IssuePriority::Medium,
    IssuePriority::Low,
];

/// Priority as bars (one to three; critical three in red) and its word.
/// The class is exactly `prio p-<priority>`: list readers key on it.
pub(crate) fn priority(p: IssuePriority) -> Markup {
    let level = match p {
        IssuePriority::Low => 1,
        IssuePriority::Medium => 2,
        IssuePriority::High | IssuePriority::Critical => 3,
    };
    html! {
        span class={"prio p-" (p.as_str())} title={(capitalised(p.as_str())) " priority"} {
            svg.prio-icon viewBox="0 0 12 12" width="12" height="12" aria-hidden="true" {
                @for (n, (y, h)) in [(8, 3), (5, 6), (2, 9)].into_iter().enumerate() {
                    rect x=(1 + n * 4) y=(y) width="2" height=(h) rx="0.5" class=@if n < level { "on" } @else { "off" } {}
                }
            }
            (p.as_str())
        }
    }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

pub(crate) fn labels(labels: &[Label]) -> Markup {
    html! {
        @if !labels.is_empty() {
            span.card-labels {
                @for l in labels { span.label.label-chip style={"--c:" (l.color)} { (l.name) } }
            }
        }
    }
}

/// The blockers of `issue` that are still open.
pub(crate) fn open_blockers(issue: &Issue) -> Vec<&str> {
    issue
        .blocked_by
        .iter()
        .filter(|b| !b.status.is_terminal())
        .map(|b| b.identifier.as_str())
        .collect()
}

pub(crate) fn blocked_mark(issue: &Issue) -> Markup {
    let open = open_blockers(issue);
    html! {
        @if let Some(first) = open.first() {
            span.blocked-mark data-blocked-by=(open.join(" ")) title={"Waiting on " (open.join(", "))} {
                "Blocked by " (first) @if open.len() > 1 { " +" (open.len() - 1) }
            }
        }
    }
}

pub(crate) fn assignee_chip(issue: &Issue, names: &Names) -> Markup {
    html! {
        @match assignee(issue, names) {
            Some((kind, name)) => {
                span class={"assignee " (kind)} title={(if kind == "agent" { "Agent " } else { "Person " }) (name)} {
                    span.avatar aria-hidden="true" { (name.chars().next().unwrap_or('?')) }
                    (name)
                }
            }
            None => span.assignee.none { "Unassigned" },
        }
    }
}

pub(crate) fn select_box(issue: &Issue) -> Markup {
    html! {
        input.card-select type="checkbox" data-select=(issue.id) aria-label={"Select " (issue.identifier)};
    }
}

/// A run working on a task now, as its card shows it.
pub(crate) struct Live {
    pub run_id: String,
    pub agent_name: String,
    pub run_href: String,
    /// What the agent is doing: its newest output line, or its newest step.
    pub step: Option<String>,
    /// `log` when the step is an output line (the page's script follows the
    /// live log to replace it), `event` for a transcript step.
    pub step_kind: &'static str,
}

pub(crate) fn running(live: Option<&Live>) -> Markup {
    html! {
        @if let Some(live) = live {
            a.card-run href=(live.run_href) data-run-id=(live.run_id) data-step-kind=(live.step_kind)
                title="Running now: open the run" {
                span.run-dot aria-hidden="true" {}
                span.run-who { (live.agent_name) }
                span.run-step { @match &live.step { Some(s) => (s), None => "is working…" } }
            }
        }
    }
}

/// How much of a live log's end is read for its newest line.
const TAIL_BYTES: u64 = 4 * 1024;
/// A step is one line of this many characters at most.
const STEP_CHARS: usize = 140;

/// The company's running runs on tasks, each with its log's newest output
/// line: one query, then the end of each running log (few: at most each
/// agent's concurrency).
pub(crate) async fn live_runs(
    web: &Web,
    company_id: &str,
) -> paperclip_store::Result<Vec<(RunningTask, Option<String>)>> {
    let running = paperclip_store::views::board::running_tasks(&web.store, company_id).await?;
    if running.is_empty() {
        return Ok(Vec::new());
    }
    let reader = web.logs.clone();
    let refs: Vec<(String, u64)> = running
        .iter()
        .map(|r| {
            let log = r
                .log_ref
                .clone()
                .unwrap_or_else(|| format!("{company_id}/{}.ndjson", r.run_id));
            (log, u64::try_from(r.log_bytes.unwrap_or(0)).unwrap_or(0))
        })
        .collect();
    // A log that cannot be read only loses its line: the step stays.
    let tails: Vec<Option<String>> = tokio::task::spawn_blocking(move || {
        refs.iter()
            .map(|(log, bytes)| {
                let from = bytes.saturating_sub(TAIL_BYTES);
                let (text, _) = reader(log, from, TAIL_BYTES * 4).ok()?;
                last_output_line(&text, from > 0)
            })
            .collect()
    })
    .await
    .unwrap_or_default();
    let mut tails = tails.into_iter();
    Ok(running
        .into_iter()
        .map(|r| (r, tails.next().flatten()))
        .collect())
}

/// [`live_runs`] by task id, as cards show them.
pub(crate) fn named(
    runs: Vec<(RunningTask, Option<String>)>,
    agents: &[Agent],
    prefix: &str,
) -> HashMap<String, Live> {
    let by_id: HashMap<&str, &Agent> = agents.iter().map(|a| (a.id.as_str(), a)).collect();
    let mut out = HashMap::new();
    for (r, tail) in runs {
        let (step, step_kind) = pick_step(&r, tail);
        let agent = by_id.get(r.agent_id.as_str());
        let live = Live {
            run_href: match agent {
                Some(a) => format!("/{prefix}/agents/{}/runs/{}", a.url_key, r.run_id),
                None => format!("/{prefix}/tasks"),
            },
            agent_name: agent
                .map(|a| a.name.clone())
                .unwrap_or_else(|| "An agent".into()),
            run_id: r.run_id,
            step,
            step_kind,
        };
        // Two runs on one task at once (two agents): the newest shows.
        out.insert(r.issue_id, live);
    }
    out
}

/// A coding CLI's transcript says best what it does; a process agent's
/// output line, else the command it was started with.
fn pick_step(run: &RunningTask, tail: Option<String>) -> (Option<String>, &'static str) {
    let transcript = run
        .step
        .as_ref()
        .filter(|(kind, _)| kind.starts_with("transcript."));
    if let Some((_, message)) = transcript {
        return (Some(one_line(message)), "event");
    }
    if let Some(line) = tail {
        return (Some(line), "log");
    }
    let step = run.step.as_ref().map(|(_, m)| one_line(m));
    (step, "log")
}

/// The newest line the agent printed (stdout or stderr) in `ndjson`, a
/// piece of its log; `partial` when it starts mid-line. Lines of JSON (a
/// CLI's event stream) say nothing to a person and are passed over.
pub(crate) fn last_output_line(ndjson: &str, partial: bool) -> Option<String> {
    let mut lines = ndjson.lines();
    if partial {
        lines.next();
    }
    let mut text = String::new();
    for line in lines {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let stream = v.get("stream").and_then(|s| s.as_str()).unwrap_or("");
        if stream == "stdout" || stream == "stderr" {
            text.push_str(v.get("chunk").and_then(|c| c.as_str()).unwrap_or(""));
        }
    }
    text.lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with('{'))
        .map(one_line)
}

fn one_line(s: &str) -> String {
    let line = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut out: String = line.chars().take(STEP_CHARS).collect();
    if line.chars().count() > STEP_CHARS {
        out.push('…');
    }
    out
}

/// The bar the selected tasks are changed from, kept outside the live
/// region so a choice half made survives a re-render.
pub(crate) fn bulk_bar(
    agents: &[Agent],
    people: &[(String, String)],
    me: &str,
    all_labels: &[Label],
) -> Markup {
    html! {
        div.bulk-bar #bulk-bar data-bulk-bar hidden role="region" aria-label="Change the selected tasks" {
            strong data-bulk-count { "0 selected" }
            select data-bulk-field="status" aria-label="Set status" {
                option value="" { "Status…" }
                @for s in COLUMNS { option value=(s.as_str()) { (status_label(s)) } }
            }
            select data-bulk-field="assignee" aria-label="Set assignee" {
                option value="" { "Assignee…" }
                option value="none" { "Unassigned" }
                option value={"user:" (me)} { @if me == LOCAL_BOARD_USER_ID { "Me (board)" } @else { "Me" } }
                @for (uid, name) in people.iter().filter(|(u, _)| u != me) { option value={"user:" (uid)} { (name) } }
                @for a in agents.iter().filter(|a| a.status != AgentStatus::Terminated) { option value=(a.id) { (a.name) } }
            }
            select data-bulk-field="label" aria-label="Add a label" {
                option value="" { "Add label…" }
                @for l in all_labels { option value=(l.id) { (l.name) } }
            }
            select data-bulk-field="priority" aria-label="Set priority" {
                option value="" { "Priority…" }
                @for p in PRIORITIES { option value=(p.as_str()) { (capitalised(p.as_str())) } }
            }
            button.primary type="button" data-bulk-apply { "Apply" }
            button type="button" data-bulk-clear { "Clear selection" }
            span.bulk-progress data-bulk-progress role="status" {}
            ul.bulk-report data-bulk-report hidden {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(stream: &str, chunk: &str) -> String {
        serde_json::json!({ "ts": "t", "stream": stream, "chunk": chunk, "seq": 1 }).to_string()
    }

    #[test]
    fn the_newest_output_line_is_the_step() {
        let log = [
            line("stdout", "working: step 1 of 6\nworking: st"),
            line("stdout", "ep 2 of 6\n\n"),
            line("system", "[paperclip] something\n"),
        ]
        .join("\n");
        assert_eq!(
            last_output_line(&log, false).as_deref(),
            Some("working: step 2 of 6")
        );
        // Read from mid-log, the first (partial) line is dropped.
        let cut = format!("ep\":\"x\"}}\n{}", line("stderr", "warning: slow\n"));
        assert_eq!(
            last_output_line(&cut, true).as_deref(),
            Some("warning: slow")
        );
        // A CLI's JSON events are no step.
        assert_eq!(
            last_output_line(&line("stdout", "{\"type\":\"x\"}\n"), false),
            None
        );
    }

    #[test]
    fn a_transcript_step_wins_over_output() {
        let run = RunningTask {
            run_id: "r".into(),
            issue_id: "i".into(),
            agent_id: "a".into(),
            log_ref: None,
            log_bytes: None,
            step: Some((
                "transcript.tool_call".into(),
                "Bash: cargo test\nmore".into(),
            )),
        };
        assert_eq!(
            pick_step(&run, Some("x".into())),
            (Some("Bash: cargo test".into()), "event")
        );
        let started = RunningTask {
            step: Some(("adapter.invoke".into(), "started sh".into())),
            ..run
        };
        assert_eq!(
            pick_step(&started, Some("step 2".into())),
            (Some("step 2".into()), "log")
        );
        assert_eq!(
            pick_step(&started, None),
            (Some("started sh".into()), "log")
        );
    }

    #[test]
    fn long_steps_are_cut() {
        let long = "x".repeat(200);
        assert_eq!(one_line(&long).chars().count(), STEP_CHARS + 1);
    }
}
