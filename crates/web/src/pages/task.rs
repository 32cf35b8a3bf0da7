//! Task detail: the description, properties, comments with a composer,
//! documents, and the runs on this task. A run is shown by progressive
//! disclosure: its outcome in one line, then its steps, then the raw log.

use axum::extract::{Path, State};
use chrono::Utc;
use maud::{html, Markup};
use paperclip_core::agent::AgentStatus;
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::{HeartbeatRun, RunEvent};
use paperclip_store::thread::comments::Order;
use paperclip_store::{
    issues, issues::labels, org::agents, org::goals, org::projects, runs, thread::comments,
    thread::documents, views::ui,
};

use super::tasks::allowed_moves;
use super::{by_id, task_props};
use crate::fmt::{pill, time};
use crate::{html, layout, markdown, store_failure, PageResult, Web};

pub async fn page(
    State(web): State<Web>,
    Path((prefix, identifier)): Path<(String, String)>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let store = &web.store;
    let cid = &ctx.company.id;
    let issue = match issues::get(store, &identifier).await {
        Ok(i) if i.company_id == *cid => i,
        _ => {
            return Err(crate::failure(
                axum::http::StatusCode::NOT_FOUND,
                "No such task",
                &format!("{identifier} is not a task of {}.", ctx.company.name),
            ))
        }
    };
    let agents = agents::list(store, cid).await.map_err(store_failure)?;
    let projects = projects::list(store, cid).await.map_err(store_failure)?;
    let goals = goals::list(store, cid).await.map_err(store_failure)?;
    let thread = comments::list(store, &issue.id, None, Order::Asc, 500)
        .await
        .map_err(store_failure)?;
    let docs = documents::list(store, &issue.id)
        .await
        .map_err(store_failure)?;
    let children = issues::list(
        store,
        cid,
        &issues::Filter {
            parent_id: Some(issue.id.clone()),
            limit: 100,
            ..issues::Filter::default()
        },
    )
    .await
    .map_err(store_failure)?;
    let parent = match &issue.parent_id {
        Some(id) => issues::get(store, id).await.ok(),
        None => None,
    };
    let task_runs = runs::list(
        store,
        cid,
        &runs::Filter {
            issue_id: Some(issue.id.clone()),
            limit: 20,
            ..runs::Filter::default()
        },
    )
    .await
    .map_err(store_failure)?;
    let events = ui::run_events_of_issue(store, &issue.id)
        .await
        .map_err(store_failure)?;
    let (cost, cost_events) = ui::issue_cost(store, &issue.id)
        .await
        .map_err(store_failure)?;
    let wake_loop = paperclip_store::wakes::loops::state(store, &issue.id)
        .await
        .map_err(store_failure)?
        .filter(|l| l.held_at.is_some());
    let cards = paperclip_store::thread::interactions::list(store, &issue)
        .await
        .map_err(store_failure)?;
    let all_labels = labels::list(store, cid).await.map_err(store_failure)?;
    let files = super::task_files::load(store, &issue.id)
        .await
        .map_err(store_failure)?;
    let changes = super::task_changes::load(store, cid, &issue.id)
        .await
        .map_err(store_failure)?;
    let names = by_id(&agents);
    // People who commented, by name (an authenticated instance); one query.
    let mut authors: Vec<String> = thread
        .iter()
        .filter_map(|c| c.author_user_id.clone())
        .chain(cards.iter().filter_map(|c| c.resolved_by_user_id.clone()))
        .collect();
    authors.sort();
    authors.dedup();
    let people: std::collections::HashMap<String, String> =
        paperclip_store::org::people::names(store, &authors)
            .await
            .map_err(store_failure)?
            .into_iter()
            .collect();
    let viewer = crate::viewer::current();
    let members: Vec<(String, String)> = paperclip_store::org::members::list(store, cid)
        .await
        .map_err(store_failure)?
        .into_iter()
        .filter(|m| m.status == paperclip_core::team::MembershipStatus::Active)
        .map(|m| (m.user_id, m.user_name))
        .collect();
    let now = Utc::now();
    // A viewer reads the board's requests; answering them is a write.
    let can_answer = viewer.role_in(cid) != Some(paperclip_core::team::Role::Viewer);
    let p = &ctx.company.issue_prefix;
    let moves = allowed_moves(issue.status);

    let body = html! {
        div.task-page data-issue-id=(issue.id) {
            div.task-main {
                header.page-head {
                    div.muted { a href={"/" (p) "/tasks"} { "Tasks" } " / " span.ident { (issue.identifier) } }
                    h1 { span.ident { (issue.identifier) } " " (issue.title) }
                    button.small type="button" data-edit-task=(issue.id) title="Edit the title and description" { "Edit" }
                }
                article.description {
                    @match issue.description.as_deref().filter(|d| !d.trim().is_empty()) {
                        Some(d) => (markdown::render(d)),
                        None => p.muted { "No description." },
                    }
                }
                @if !docs.is_empty() {
                    section.documents {
                        h2 { "Documents" }
                        @for d in &docs {
                            details.doc id={"document-" (d.key)} {
                                summary { strong { (d.title.as_deref().unwrap_or(&d.key)) } span.muted { " · " (d.key) " · rev " (d.latest_revision_number) } }
                                div.doc-body { @if d.format == "markdown" { (markdown::render(&d.body)) } @else { pre { (d.body) } } }
                            }
                        }
                    }
                }
                (super::cards::section(&issue.id, &cards, &names, &people, can_answer, now))
                @if let Some(held) = &wake_loop {
                    div.run-error.wake-loop data-wake-loop-held=(held.held_at.as_deref().unwrap_or("")) {
                        p { strong { "Agents are waiting on the board: " }
                            "they woke each other " (held.wakes) " times within " (held.window_minutes) " minutes without changing the task's status, so further wakes between agents are held"
                            @if held.held_wakes > 0 { " (" (held.held_wakes) " so far)" } ". "
                            "Comment to give direction, change the status, or let them carry on." }
                        button.small type="button" data-action="POST" data-url={"/api/issues/" (issue.id) "/wake-loop/release"} data-body="{}" data-done="Released" { "Let them carry on" }
                    }
                }
                @if let Some(run) = task_runs.first().filter(|r| issue.status == IssueStatus::Blocked && matches!(r.status, RunStatus::Failed | RunStatus::TimedOut)) {
                    p.run-error.task-blocked { strong { "Blocked: " } "its last run "
                        (if run.status == RunStatus::TimedOut { "timed out" } else { "failed" })
                        " (" (run.error_code.as_deref().unwrap_or("error")) "). Retry it below, or comment to give new direction." }
                }
                (super::task_files::section(&files))
                (super::task_changes::section(&changes, &task_runs, &names, p))
                section.runs {
                    h2 { "Runs" }
                    @if task_runs.is_empty() { p.muted { "No runs on this task yet." } }
                    @for run in &task_runs {
                        (run_view(run, events.iter().filter(|e| e.run_id == run.id), &names))
                    }
                }
                section.comments {
                    h2 { "Comments" }
                    @for c in &thread {
                        // `#comment-<id>`: the anchor the original's links use.
                        article.comment data-comment-id=(c.id) id={"comment-" (c.id)} {
                            header {
                                strong { @match c.author_agent_id.as_deref().and_then(|id| names.get(id)) {
                                    Some(a) => (a.name),
                                    None => (c.author_user_id.as_deref().and_then(|u| people.get(u)).map(String::as_str).unwrap_or("Board")),
                                } }
                                " " (time(&c.created_at, now))
                            }
                            div.comment-body { (markdown::render(&c.body)) }
                        }
                    }
                    @if thread.is_empty() { p.muted { "No comments yet." } }
                    (reopen_choice(&issue, &names))
                }
            }
            (task_props::panel(&issue, &task_props::Props {
                prefix: p,
                agents: &agents,
                projects: &projects,
                goals: &goals,
                labels: &all_labels,
                parent: parent.as_ref(),
                children: &children.issues,
                moves: &moves,
                cost: (cost, cost_events),
                people: &members,
                me: viewer.user_id(),
            }))
        }
    };
    // The composer sits outside the live region so typing survives updates.
    let composer = html! {
        form.composer #task-composer data-api-form="comment" data-issue-id=(issue.id) {
            label { "Comment (Markdown; @name mentions an agent and wakes it; Ctrl+Enter sends)" textarea name="body" rows="4" required {} }
            div.mentions { @for a in agents.iter().filter(|a| a.status != AgentStatus::Terminated) { button type="button" data-mention=(a.name) { "@" (a.name) } } }
            button.primary type="submit" { "Comment" }
            @if let Some(run) = task_runs.iter().find(|r| r.status == RunStatus::Running) {
                " " button type="submit" name="interrupt" value=(run.id) title="Stop the run working now and hand this comment to the next run at once" { "Comment and interrupt" }
            }
        }
    };
    let fixed = html! { (composer) (super::task_files::upload_form(cid, &issue.id)) (edit_dialog(&issue.id)) };
    let title = format!("{} {}", issue.identifier, issue.title);
    html(layout::page_with(&ctx, "tasks", &title, body, fixed))
}

/// On a closed task, whether the comment reopens it (upstream's default: a
/// person's comment reopens work an agent owns); unticked, it is a note that
/// wakes nobody. In the live region, so it comes and goes with the status,
/// and in the composer's form through `form=`.
fn reopen_choice(
    issue: &paperclip_core::model::Issue,
    names: &std::collections::HashMap<&str, &paperclip_core::model::Agent>,
) -> Markup {
    let agent = issue
        .assignee_agent_id
        .as_deref()
        .and_then(|a| names.get(a));
    html! {
        @if issue.status.is_terminal() {
            label.inline.reopen-choice {
                input type="checkbox" name="reopen" form="task-composer" checked[agent.is_some()];
                " Reopen " (issue.identifier)
                @if let Some(a) = agent { " and wake " (a.name) }
                " with this comment (it is " (issue.status.as_str()) ")"
            }
        }
    }
}

/// Title and description are edited in a dialog outside the live region, so
/// a live update never resets what the person is writing. The script fills it
/// from the API when it opens and checks for someone else's change on save.
fn edit_dialog(issue_id: &str) -> Markup {
    html! {
        dialog #edit-task {
            form data-api-form="edit-task" data-issue-id=(issue_id) method="dialog" {
                h2 { "Edit task" }
                div.conflict.run-error hidden {}
                label { "Title" input name="title" required maxlength="500"; }
                div.tabs role="tablist" {
                    button.tab.active type="button" role="tab" data-edit-tab="write" aria-selected="true" { "Write" }
                    button.tab type="button" role="tab" data-edit-tab="preview" aria-selected="false" { "Preview" }
                }
                label.edit-write { "Description (Markdown)" textarea name="description" rows="12" {} }
                div.edit-preview.description hidden {}
                div.actions {
                    button type="button" data-close-dialog { "Cancel" }
                    button.primary type="submit" { "Save" }
                }
            }
        }
    }
}

/// One run: outcome line, then steps, then the raw log.
pub fn run_view<'a>(
    run: &HeartbeatRun,
    events: impl Iterator<Item = &'a RunEvent>,
    names: &std::collections::HashMap<&str, &paperclip_core::model::Agent>,
) -> Markup {
    let agent = names
        .get(run.agent_id.as_str())
        .map(|a| a.name.as_str())
        .unwrap_or("Agent");
    let steps: Vec<&RunEvent> = events.filter(|e| is_step(&e.event_type)).collect();
    let live = run.status == RunStatus::Running || run.status == RunStatus::Queued;
    // A stop is something someone chose, not a fault: shown plainly.
    let stopped = run.status == RunStatus::Cancelled;
    html! {
        details.run data-run-id=(run.id) data-run-status=(run.status) open[live || run.status == RunStatus::Failed] {
            summary {
                (pill(&run.status)) " "
                strong { (agent) } " "
                (outcome_line(run))
                @if live {
                    " " button.small type="button" data-action="POST" data-url={"/api/heartbeat-runs/" (run.id) "/cancel"} data-confirm="Stop this run?" data-done="Stopped" { "Stop" }
                }
                @if matches!(run.status.as_str(), "failed" | "timed_out" | "cancelled") {
                    " " button.small type="button" data-action="POST" data-url={"/api/agents/" (run.agent_id) "/wakeup"}
                        data-body=(serde_json::json!({ "failedRunId": run.id, "reason": "retry_failed_run" })) data-done="Retry queued" { "Retry" }
                }
            }
            @if let Some(err) = &run.error {
                @if stopped { p.run-note { "Stopped: " (err) } }
                @else { p.run-error { strong { (run.error_code.as_deref().unwrap_or("error")) ": " } (err) } }
            }
            ol.steps {
                @for e in &steps { li class={"step " (e.event_type.replace('.', "-")) " lvl-" (step_level(run, e))} { (step(e)) } }
                @if steps.is_empty() { li.muted { @if live { "Waiting for the agent's first step…" } @else { "No steps recorded." } } }
            }
            details.raw {
                summary { "Raw log" }
                @if let Some(out) = &run.stdout_excerpt { h4 { "stdout" } pre { (out) } }
                @if let Some(err) = &run.stderr_excerpt { h4 { "stderr" } pre { (err) } }
                // Relative: the task page is `/{prefix}/tasks/{identifier}`.
                @let key = names.get(run.agent_id.as_str()).map(|a| a.url_key.as_str()).unwrap_or(run.agent_id.as_str());
                p { a href={"../agents/" (key) "/runs/" (run.id)} data-run-page { "Run page (timing, full log)" } }
            }
        }
    }
}

/// The lifecycle record of a stopped run says `error` (every unsuccessful end
/// does, in the store); on the page a stop is not an error.
pub(crate) fn step_level<'a>(run: &HeartbeatRun, e: &'a RunEvent) -> &'a str {
    if run.status == RunStatus::Cancelled && e.event_type == "lifecycle" && e.level == "error" {
        "info"
    } else {
        &e.level
    }
}

pub(crate) fn is_step(kind: &str) -> bool {
    kind.starts_with("transcript.")
        || matches!(
            kind,
            "adapter.invoke" | "adapter.signal" | "session.reset" | "lifecycle"
        )
}

fn outcome_line(run: &HeartbeatRun) -> String {
    let mut line = match run.status.as_str() {
        "succeeded" => "finished".to_string(),
        "running" => "is working".into(),
        "queued" => "is queued".into(),
        "cancelled" => "was stopped".into(),
        "timed_out" => "timed out".into(),
        _ => "failed".into(),
    };
    if run.continuation_attempt > 0 {
        line.push_str(&format!(
            " · continues after a restart ({} of {})",
            run.continuation_attempt,
            paperclip_store::runs::follow_up::CONTINUATIONS
        ));
    } else if run.retry_of_run_id.is_some() {
        line.push_str(" · a retry");
    }
    if let Some(reason) = &run.wake_reason {
        line.push_str(&format!(" · woken by {}", reason.replace('_', " ")));
    }
    if let Some(usage) = run.usage_json.as_ref().and_then(crate::fmt::run_usage) {
        line.push_str(&format!(" · {usage}"));
    }
    line
}

pub(crate) fn step(e: &RunEvent) -> Markup {
    let payload = e.payload.clone().unwrap_or_default();
    let text = |k: &str| {
        payload
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    match e.event_type.as_str() {
        "transcript.assistant" => {
            html! { span.who { "said" } div.said { (markdown::render(&text("text"))) } }
        }
        "transcript.tool_call" => {
            html! { span.who { "ran " (text("name")) } code.cmd { (e.message.as_deref().unwrap_or("")) } }
        }
        "transcript.tool_result" => {
            let failed = payload
                .get("isError")
                .and_then(|v| v.as_bool())
                .unwrap_or(false);
            html! {
                span.who { @if failed { "tool failed" } @else { "result" } }
                details.output { summary { (e.message.as_deref().unwrap_or("(no output)")) } pre { (text("output")) } }
            }
        }
        "transcript.error" => {
            html! { span.who.error-text { "error" } " " (e.message.as_deref().unwrap_or("")) }
        }
        "lifecycle" => html! { span.muted { (e.message.as_deref().unwrap_or("")) } },
        "adapter.invoke" => {
            html! { span.who { "started" } " " code.cmd { (e.message.as_deref().unwrap_or("").trim_start_matches("started ")) } }
        }
        "session.reset" => {
            html! { span.who.warn-text { "fresh session" } " " (e.message.as_deref().unwrap_or("")) }
        }
        "transcript.init" => {
            html! { span.who { "started" } " " span.muted { (e.message.as_deref().unwrap_or("")) } }
        }
        _ => {
            html! { span.who.muted { (e.event_type) } " " span.muted { (e.message.as_deref().unwrap_or("")) } }
        }
    }
}
