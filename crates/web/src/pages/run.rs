//! One run, at the original's path `/{prefix}/agents/{agentKey}/runs/{runId}`:
//! its outcome first (status in words, the error with what to do about it,
//! the task, why it woke), then its timing and cost, then its steps, then
//! the end of its raw log (capped; the whole log is a link away).

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use maud::{html, Markup};
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::model::{Agent, HeartbeatRun};
use paperclip_core::run_status::{RunEventType, StatusUpdate};
use paperclip_store::{issues, runs, views::detail};

use super::links::agent_by_key;
use super::thread_words::{board_changes, outcome, wake_words, Waker};
use crate::fmt::{pill, time};
use crate::{html, layout, not_found, store_failure, Ctx, PageResult, Web};

/// How much of the log the page shows: its end, where failures are.
const LOG_SHOWN: u64 = 64 * 1024;
/// Steps shown on the page.
const STEPS_SHOWN: i64 = 1000;
/// The plain-text full log stops here (the API pages through the rest).
const FULL_LOG_MAX: u64 = 32 * 1024 * 1024;

/// Who wrote the comment a run was woken for.
enum Author {
    Agent(String),
    Person(Option<String>),
}

/// What the run changed on the board (activity rows naming it), and who
/// wrote the comment it was woken for: three small queries.
async fn what_and_who(
    web: &Web,
    ctx: &Ctx,
    run: &HeartbeatRun,
    agents: &[Agent],
) -> Result<(Vec<String>, Option<Author>), Response> {
    let store = &web.store;
    let filter = paperclip_store::audit::activity::Filter {
        run_id: Some(run.id.clone()),
        limit: 500,
        ..Default::default()
    };
    let rows = paperclip_store::audit::activity::list(store, &ctx.company.id, &filter)
        .await
        .map_err(store_failure)?;
    let did = board_changes(&run.id, &rows);
    let comment = match (&run.issue_id, super::thread_words::wake_comment_id(run)) {
        (Some(issue), Some(id)) => paperclip_store::thread::comments::get(store, issue, id)
            .await
            .ok(),
        _ => None,
    };
    let author = match comment {
        Some(c) => match (c.author_agent_id, c.author_user_id) {
            (Some(a), _) => agents
                .iter()
                .find(|x| x.id == a)
                .map(|x| Author::Agent(x.name.clone())),
            (None, Some(u)) => {
                let names = paperclip_store::org::people::names(store, std::slice::from_ref(&u))
                    .await
                    .map_err(store_failure)?;
                Some(Author::Person(names.into_iter().next().map(|(_, n)| n)))
            }
            (None, None) => Some(Author::Person(None)),
        },
        None => None,
    };
    Ok((did, author))
}

/// The run `run_id` of the agent `key`, or a 404 page.
async fn load(
    web: &Web,
    ctx: &Ctx,
    key: &str,
    run_id: &str,
) -> Result<(HeartbeatRun, Agent, Vec<Agent>), Response> {
    let (agent, all) = agent_by_key(web, ctx, key).await?;
    let missing = || {
        not_found(
            "No such run",
            &format!("{} has no run {run_id}.", agent.name),
        )
    };
    match runs::get(&web.store, run_id).await {
        Ok(run) if run.company_id == ctx.company.id && run.agent_id == agent.id => {
            Ok((run, agent, all))
        }
        Ok(_) | Err(paperclip_store::Error::NotFound(_)) => Err(missing()),
        Err(e) => Err(store_failure(e)),
    }
}

#[paperclip_macros::handler]
pub async fn page(
    State(web): State<Web>,
    Path((prefix, key, run_id)): Path<(String, String, String)>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let (run, agent, all) = load(&web, &ctx, &key, &run_id).await?;
    let store = &web.store;
    let task = match &run.issue_id {
        Some(id) => issues::get(store, id).await.ok(),
        None => None,
    };
    let events = runs::events(store, &run.id, 0, STEPS_SHOWN)
        .await
        .map_err(store_failure)?;
    let retries = detail::retries_of(store, &ctx.company.id, &agent.id, &run.id)
        .await
        .map_err(store_failure)?;
    let (changes, workspace_steps) = tokio::try_join!(
        paperclip_store::runs::workspaces::changes_of_run(store, &run.id),
        paperclip_store::runs::workspace_ops::of_run_with_logs(store, &run.id),
    )
    .map_err(store_failure)?;
    let log = read_tail(&web, &run).await;
    let cut = match run.log_removed_at {
        Some(_) => None,
        None => (web.log_cut)(&log_ref(&run)).ok().flatten(),
    };
    let now = Utc::now();
    let p = &ctx.company.issue_prefix;
    let base = format!("/{p}/agents/{}", agent.url_key);
    let live = matches!(run.status, RunStatus::Running | RunStatus::Queued);
    let step_refs: Vec<_> = events.iter().collect();
    let ids = super::thread_ids::of_task(
        store,
        &ctx.company,
        &all,
        std::slice::from_ref(&run),
        &[],
        &events,
    )
    .await
    .map_err(store_failure)?;
    let names = super::by_id(&all);
    let (did, waker_name) = what_and_who(&web, &ctx, &run, &all).await?;
    let (tone, words) = outcome(&run, &did);
    let waker = match &waker_name {
        Some(Author::Agent(n)) => Waker::Agent(n),
        Some(Author::Person(n)) => Waker::Person(n.as_deref()),
        None => Waker::Unknown,
    };
    let body = html! {
        header.page-head {
            div.muted { a href={"/" (p) "/agents"} { "Agents" } " / " a href=(base) { (agent.name) } " / " a href={(base) "/runs"} { "Runs" } }
            h1 { "Run of " (agent.name) @if let Some(t) = &task { " on " span.ident { (t.identifier) } } " " (pill(&run.status)) }
            p.run-outcome data-run-id=(run.id) data-run-status=(run.status) { strong { (status_words(run.status)) } " " (summary(&run, now)) }
            @if let Some(line) = status_line(&events) {
                p.run-status-line data-status-color=(line.color.map_or("none", |c| c.as_str())) {
                    (crate::fmt::status_line(&line)) @if !live { span.muted { " (its last status)" } }
                }
            }
            div.actions {
                @if retryable(run.status) {
                    button.primary type="button" data-retry-run=(run.id) data-agent-id=(agent.id) data-agent-key=(agent.url_key) { "Retry" }
                }
                @if live {
                    button type="button" data-action="POST" data-url={"/api/heartbeat-runs/" (run.id) "/cancel"} data-confirm="Stop this run?" data-done="Stopped" { "Stop" }
                }
            }
        }
        section.run-detail {
            h2 { "Outcome" }
            @if let Some(err) = &run.error {
                @if run.status == RunStatus::Cancelled { p.run-note { "Stopped: " (err) } }
                @else {
                    p.run-error data-error-code=(run.error_code.as_deref().unwrap_or("")) { strong { (run.error_code.as_deref().unwrap_or("error")) ": " } (err) }
                    p.hint { strong { "What to do: " } (what_to_do(run.error_code.as_deref())) }
                }
            }
            dl.kv {
                dt { "Task" } dd { @match &task {
                    Some(t) => { a href={"/" (p) "/tasks/" (t.identifier)} { span.ident { (t.identifier) } " " (t.title) } " " (pill(&t.status)) },
                    None => span.muted { "No task (a heartbeat with nothing assigned)" },
                } }
                @if let (Some(c), Some(t)) = (&changes, &task) {
                    dt { "Changes" } dd { (super::task_changes::run_summary(c, p, &t.identifier)) }
                }
                dt { "Outcome" } dd { span class={"outcome tone-" (tone.class())} data-outcome=(tone.class()) { (words) } }
                @if let Some(state) = run.liveness_state {
                    dt { "Liveness" } dd data-liveness=(state.as_str()) { (state.as_str().replace('_', " ")) @if let Some(r) = &run.liveness_reason { span.muted { " · " (r) } } }
                }
                dt { "Why it ran" } dd data-wake { (wake_words(&run, waker)) }
                @if run.exit_code.is_some() || run.signal.is_some() {
                    dt { "Process" } dd { @if let Some(c) = run.exit_code { "exited with code " (c) } @if let Some(s) = &run.signal { " killed by " (s) } }
                }
                @if let Some(prev) = &run.retry_of_run_id {
                    dt { @if run.continuation_attempt > 0 { "Continues" } @else { "Retry of" } }
                    dd { a href={(base) "/runs/" (prev)} { "an earlier run" } }
                }
                @if !retries.is_empty() {
                    dt { "Retried as" }
                    dd { @for (id, status) in &retries { a href={(base) "/runs/" (id)} data-retry-link { "a newer run" } " " (pill(status)) " " } }
                }
                @if run.coalesced_count > 0 { dt { "Folded in" } dd { (run.coalesced_count) " later wakes" } }
            }
            h2 { "Timing and cost" }
            dl.kv {
                dt { "Queued" } dd { (exact(&run.created_at, now)) }
                dt { "Started" } dd { @match &run.started_at { Some(t) => (exact(t, now)), None => span.muted { "not yet" } } }
                dt { "Finished" } dd { @match &run.finished_at { Some(t) => (exact(t, now)), None => span.muted { @if live { "still working" } @else { "—" } } } }
                dt { "Duration" } dd data-duration { (duration(&run, now).unwrap_or_else(|| "—".into())) }
                dt { "Cost" } dd { (run.usage_json.as_ref().and_then(crate::fmt::run_usage).unwrap_or_else(|| "no usage reported".into())) }
                @if run.session_id_before.is_some() || run.session_id_after.is_some() {
                    dt { "Session" } dd { code { (run.session_id_after.as_deref().or(run.session_id_before.as_deref()).unwrap_or("")) }
                        @if run.session_id_before.is_some() && run.session_id_before == run.session_id_after { span.muted { " (resumed)" } } }
                }
            }
        }
        (super::workspace_steps::section(&workspace_steps))
        section.runs {
            h2 { "Steps" }
            (super::thread_steps::steps(&run, &step_refs, usize::MAX, "", &ids))
            @if events.len() as i64 >= STEPS_SHOWN { p.muted { "Only the first " (STEPS_SHOWN) " events are shown; the full log below has everything." } }
        }
        section.run-log {
            h2 { "Log" }
            @if let Some(at) = &run.log_removed_at {
                p.run-note data-log-removed=(at) { "This run's log was removed by the company's log retention on " (exact(at, now)) ". "
                    @match ctx.company.run_log_retention_days { Some(d) => { "Logs of runs that finished more than " (d) " days ago are deleted" }, None => { "Retention has since been turned off" } }
                    " (company settings). The excerpts below were kept on the run." }
                @if let Some(out) = &run.stdout_excerpt { h3 { "stdout (excerpt)" } pre { (out) } }
            }
            @if let Some(c) = &cut {
                p.run-note data-log-cut=(c.tail_start - c.head_bytes) { "This run wrote more than a run log keeps (" (kib(c.max_bytes)) "): "
                    strong { (c.tail_start - c.head_bytes) " bytes" } " (" (kib(c.tail_start - c.head_bytes)) ") in the middle were left out. The log keeps its first "
                    (kib(c.head_bytes)) " and its last part; a marker line shows where the cut is." }
            }
            @if run.log_removed_at.is_some() {} @else { @match &log {
                Ok(tail) => {
                    @if tail.skipped > 0 { p.muted { "Showing the last " (kib(LOG_SHOWN)) " of " (kib(tail.total)) "." } }
                    @if tail.more_after { p.muted { "Showing the first " (kib(LOG_SHOWN)) "; the run is still writing, and the full log has the rest." } }
                    @if tail.lines.is_empty() { @match unavailable(&run) {
                        Some(why) => p.run-note data-log-unavailable { strong { "Log unavailable. " } (why) " The excerpts kept on the run are below." }
                        None => p.muted { @if live { "Nothing logged yet." } @else { "The run logged nothing." } }
                    } }
                    @else { pre.log { @for (stream, text) in &tail.lines { @if stream == "stderr" { span.log-err { (text) } } @else { (text) } } } }
                }
                Err(e) => p.run-error { "The log could not be read: " (e) }
            } }
            @if let Some(out) = run.stdout_excerpt.as_ref().filter(|_| run.log_removed_at.is_none() && log.as_ref().is_ok_and(|t| t.lines.is_empty()) && unavailable(&run).is_some()) {
                h3 { "stdout (excerpt)" } pre data-excerpt="stdout" { (out) }
            }
            @if let Some(err) = run.stderr_excerpt.as_ref().filter(|_| log.as_ref().map(|t| t.lines.is_empty()).unwrap_or(true)) {
                h3 { "stderr (excerpt)" } pre { (err) }
            }
            p { a href={(base) "/runs/" (run.id) "/log"} { "Full log (text)" } " · " a.muted href={"/api/heartbeat-runs/" (run.id) "/log"} { "as JSON" } }
        }
    };
    let _ = names;
    let title = match &task {
        Some(t) => format!("Run of {} on {}", agent.name, t.identifier),
        None => format!("Run of {}", agent.name),
    };
    html(layout::page(&ctx, "agents", &title, body))
}

/// The newest status line the adapter reported, if any.
fn status_line(events: &[paperclip_core::model::RunEvent]) -> Option<StatusUpdate> {
    let kind = RunEventType::AdapterStatus.as_str();
    let e = events.iter().rev().find(|e| e.event_type == kind)?;
    let color = paperclip_store::views::run_status::color_of(e.payload.as_ref()).ok()?;
    StatusUpdate::new(e.message.as_deref().unwrap_or(""), color)
}

/// Why the finished run's log cannot be read, when the page found it empty.
fn unavailable(run: &HeartbeatRun) -> Option<&'static str> {
    paperclip_core::run_status::log_unavailable(paperclip_core::run_status::LogFacts {
        live: run.status.is_live(),
        started: run.started_at.is_some(),
        has_ref: run.log_ref.is_some(),
        bytes: run.log_bytes,
        removed: run.log_removed_at.is_some(),
        offset: 0,
        read_empty: true,
    })
}

/// The run's whole log as plain text (stdout and stderr as they came),
/// up to [`FULL_LOG_MAX`].
#[paperclip_macros::handler]
pub async fn full_log(
    State(web): State<Web>,
    Path((prefix, key, run_id)): Path<(String, String, String)>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let (run, _, _) = load(&web, &ctx, &key, &run_id).await?;
    if let Some(at) = &run.log_removed_at {
        let text = format!("[this run's log was removed by the company's log retention at {at}]\n");
        return Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response());
    }
    let log_ref = log_ref(&run);
    let reader = web.logs.clone();
    let text = tokio::task::spawn_blocking(move || {
        let mut out = String::new();
        let mut offset = 0;
        while offset < FULL_LOG_MAX {
            let (content, next) = reader(&log_ref, offset, 1024 * 1024)?;
            if next == offset {
                return Ok(out);
            }
            for (_, chunk) in lines(&content) {
                out.push_str(&chunk);
            }
            offset = next;
        }
        out.push_str(&format!(
            "\n[the log goes on past {}; page through it with GET /api/heartbeat-runs/{}/log?offset={offset}]\n",
            kib(FULL_LOG_MAX),
            run.id
        ));
        Ok::<_, std::io::Error>(out)
    })
    .await;
    match text {
        Ok(Ok(text)) => {
            Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response())
        }
        _ => Err(crate::failure(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "The log could not be read",
            "The run's log file could not be read; see the server's log.",
        )),
    }
}

/// The end of a log: its lines as `(stream, text)`, and how much was left out.
struct Tail {
    lines: Vec<(String, String)>,
    total: u64,
    skipped: u64,
    /// A live run's log (size not yet known) goes on past what is shown.
    more_after: bool,
}

fn log_ref(run: &HeartbeatRun) -> String {
    run.log_ref
        .clone()
        .unwrap_or_else(|| format!("{}/{}.ndjson", run.company_id, run.id))
}

/// The last [`LOG_SHOWN`] bytes of the log. A finished run knows its log's
/// size; a live one is read from its start (its steps show what it does).
async fn read_tail(web: &Web, run: &HeartbeatRun) -> Result<Tail, String> {
    let total = u64::try_from(run.log_bytes).unwrap_or(0);
    let mut from = total.saturating_sub(LOG_SHOWN);
    let reader = web.logs.clone();
    let cut_of = web.log_cut.clone();
    let log_ref = log_ref(run);
    let read = tokio::task::spawn_blocking(move || {
        // In the part a cut log left out: from where its tail starts, a
        // line's start.
        let mut whole_lines = from == 0;
        if let Some(cut) = cut_of(&log_ref)? {
            if from > cut.head_bytes && from <= cut.tail_start {
                from = cut.tail_start;
                whole_lines = true;
            }
        }
        let (content, next) = reader(&log_ref, from, LOG_SHOWN)?;
        // Size unknown (a live run): whether anything follows the page.
        let more = total == 0 && reader(&log_ref, next, 4)?.1 > next;
        Ok::<_, std::io::Error>((content, more, whole_lines))
    })
    .await;
    let (content, more_after, whole_lines) = match read {
        Ok(Ok(page)) => page,
        Ok(Err(e)) => return Err(e.to_string()),
        Err(e) => return Err(e.to_string()),
    };
    // Read from the middle of the log: its first line may be a part.
    let content = if !whole_lines {
        content.split_once('\n').map(|(_, rest)| rest).unwrap_or("")
    } else {
        &content
    };
    // Consecutive chunks of one stream read as one block.
    let mut merged: Vec<(String, String)> = Vec::new();
    for (stream, chunk) in lines(content) {
        match merged.last_mut() {
            Some((s, text)) if *s == stream => text.push_str(&chunk),
            _ => merged.push((stream, chunk)),
        }
    }
    Ok(Tail {
        lines: merged,
        total,
        skipped: from,
        more_after,
    })
}

/// `(stream, chunk)` of each NDJSON line `{ts, stream, chunk, seq}`.
fn lines(content: &str) -> impl Iterator<Item = (String, String)> + '_ {
    content.lines().filter_map(|line| {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let text = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
        Some((text("stream"), text("chunk")))
    })
}

fn kib(bytes: u64) -> String {
    if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    } else {
        format!("{} KB", bytes.div_ceil(1024))
    }
}

pub(crate) fn retryable(status: RunStatus) -> bool {
    matches!(
        status,
        RunStatus::Failed | RunStatus::TimedOut | RunStatus::Cancelled
    )
}

pub(crate) fn status_words(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Queued => "Queued: waiting to start.",
        RunStatus::Running => "Working.",
        RunStatus::Succeeded => "Succeeded.",
        RunStatus::Failed => "Failed.",
        RunStatus::TimedOut => "Timed out.",
        RunStatus::Cancelled => "Stopped.",
    }
}

/// One line: when it ran and for how long.
fn summary(run: &HeartbeatRun, now: DateTime<Utc>) -> String {
    let when = |ts: &str| crate::fmt::ago(ts, now);
    match (&run.started_at, duration(run, now)) {
        (Some(start), Some(d)) if run.finished_at.is_some() => {
            format!("Started {}, took {d}.", when(start))
        }
        (Some(start), Some(d)) => format!("Started {}, working for {d}.", when(start)),
        _ => format!("Queued {}.", when(&run.created_at)),
    }
}

/// What a person can do about a failure with this code.
pub(crate) fn what_to_do(code: Option<&str>) -> &'static str {
    match code.unwrap_or("") {
        "adapter_not_installed" => "the agent's program is not installed on this machine: install it, or change the adapter in the agent's configuration, then retry.",
        "invalid_working_directory" => "the working directory in the agent's configuration is missing or unusable: fix it, then retry.",
        "spawn_failed" => "the agent's process could not be started: check the command and its arguments in the agent's configuration, then retry.",
        "timeout" => "the run went past its time limit: raise the adapter's timeout in the agent's configuration, or split the task, then retry.",
        "nonzero_exit" => "the agent's process ended with an error: read the end of the log below for its cause, fix that, then retry.",
        "output_parse_error" => "the agent's output could not be understood: check the adapter and its version; the log below shows what it printed.",
        "http_error" => "the agent's endpoint answered with an error: check its URL and that the service is up, then retry.",
        "resume_session_invalid" | "context_window_exceeded" => "the saved conversation cannot be continued: reset the agent's session on its page, then retry.",
        "model_unavailable" => "the provider refused the model: choose another model in the agent's configuration, then retry.",
        "model_tool_use_unsupported" => "the model cannot call tools, which an agent needs: choose a larger model or one tuned for tool use in the agent's configuration, then retry.",
        "permission_denied" => "the agent asked to do something its permission mode does not allow and could not ask anyone: widen permissionMode (or set nonInteractivePermissions to deny) in the agent's configuration, then retry.",
        "auth_required" => "the agent has no working credentials: log its CLI in or set its API key, then retry.",
        "rate_limited" => "the provider's rate or usage limit was reached: retry once it resets.",
        "budget_exceeded" | "budget_blocked" => "the budget is spent: raise the agent's or the company's monthly budget, then retry.",
        "control_plane_restart" => "the server restarted while the run was working: retry it.",
        "run_setup_failed" => "the server could not prepare the run (its database or its log storage failed): check the server's log, then retry.",
        "k8s_oom_killed" => "Kubernetes killed the agent's container at its memory limit: raise resources.limits.memory in the agent's adapter config (the error above names the limit), then retry.",
        "k8s_job_deleted_externally" => "something outside Paperclip deleted the run's Job: find who in the cluster's audit log, keep Jobs labelled app.kubernetes.io/managed-by=paperclip out of cleanups, then retry.",
        "callback_timeout" => "the remote agent never reported back: check it is running and can reach this server, then retry.",
        _ => "read the log below for the cause, fix it, then retry.",
    }
}

fn parse(ts: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(ts)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `2026-12-03 21:40:05 UTC (5 min ago)`.
fn exact(ts: &str, now: DateTime<Utc>) -> Markup {
    match parse(ts) {
        Some(t) => {
            html! { time datetime=(ts) { (t.format("%Y-%m-%d %H:%M:%S UTC")) } span.muted { " · " (crate::fmt::ago(ts, now)) } }
        }
        None => html! { (ts) },
    }
}

/// How long the run took (or has been working); none before it started.
pub(crate) fn duration(run: &HeartbeatRun, now: DateTime<Utc>) -> Option<String> {
    super::thread_words::duration(run, now)
}

/// The start time and duration of a run row: `5 min ago · 12.4 s`.
pub(crate) fn when_and_how_long(run: &HeartbeatRun, now: DateTime<Utc>) -> Markup {
    html! {
        (time(run.started_at.as_deref().unwrap_or(&run.created_at), now))
        @if let Some(d) = duration(run, now) { span.muted data-duration { " · " (d) } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_keep_their_stream_and_text() {
        let content = "{\"ts\":\"t\",\"stream\":\"stdout\",\"chunk\":\"hi\\n\",\"seq\":1}\nnot json\n{\"stream\":\"stderr\",\"chunk\":\"oops\"}\n";
        let got: Vec<_> = lines(content).collect();
        assert_eq!(
            got,
            vec![
                ("stdout".to_string(), "hi\n".to_string()),
                ("stderr".to_string(), "oops".to_string())
            ]
        );
        assert_eq!(kib(1), "1 KB");
        assert_eq!(kib(64 * 1024), "64 KB");
        assert_eq!(kib(3 * 1024 * 1024), "3.0 MB");
    }
}
