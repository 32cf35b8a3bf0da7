//! Task detail: the description, properties, comments with a composer,
//! documents, and the runs on this task. A run is shown by progressive
//! disclosure: its outcome in words, then its steps, then its output
//! (`thread.rs`).

use axum::extract::{Path, State};
use chrono::Utc;
use maud::{html, Markup};
use paperclip_core::agent::AgentStatus;
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::RunEvent;
use paperclip_store::thread::comments::Order;
use paperclip_store::{
    issues, issues::labels, org::agents, org::goals, org::projects, runs, thread::comments,
    thread::documents, views::ui,
};

use super::tasks::allowed_moves;
use super::{by_id, task_props};
use crate::fmt::time;
use crate::{html, layout, markdown, store_failure, PageResult, Web};

#[paperclip_macros::handler]
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
    let tree_hold = super::task_control::load(store, &issue)
        .await
        .map_err(store_failure)?;
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
    let context_row = paperclip_store::runs::context::for_issue(store, &issue)
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
    let activity = paperclip_store::audit::activity::list(
        store,
        cid,
        &paperclip_store::audit::activity::Filter {
            entity_type: Some("issue".into()),
            entity_id: Some(issue.id.clone()),
            limit: 500,
            ..Default::default()
        },
    )
    .await
    .map_err(store_failure)?;
    let ids =
        super::thread_ids::of_task(store, &ctx.company, &agents, &task_runs, &thread, &events)
            .await
            .map_err(store_failure)?;
    let thread_ctx = super::thread::Thread {
        ids: &ids,
        runs: &task_runs,
        names: &names,
        people: &people,
        comments: &thread,
        activity: &activity,
        diffs: changes.runs(),
        now,
    };
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
                (super::task_control::section(&issue, tree_hold.as_ref()))
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
                    @let waiting = issue.assignee_agent_id.as_deref().and_then(|id| names.get(id)).filter(|_| issue.status == IssueStatus::Backlog);
                    @if let Some(agent) = waiting {
                        // Backlog means not started, whoever is assigned.
                        p.muted #backlog-waits { "Not started: it is in the backlog. " (agent.name) " starts when you move it to todo." }
                    } @else if task_runs.is_empty() { p.muted { "No runs on this task yet." } }
                    @for run in &task_runs {
                        @let of_run: Vec<&RunEvent> = events.iter().filter(|e| e.run_id == run.id).collect();
                        (super::thread::run_card(run, &of_run, &thread_ctx))
                    }
                }
                section.comments {
                    h2 { "Comments" }
                    @for c in &thread {
                        @let author = match c.author_agent_id.as_deref().and_then(|id| names.get(id)) {
                            Some(a) => a.name.as_str(),
                            None => c.author_user_id.as_deref().and_then(|u| people.get(u)).map(String::as_str).unwrap_or("Board"),
                        };
                        @let via = c.derived_author_agent_id.as_deref().and_then(|id| names.get(id)).map(|a| a.name.as_str());
                        (super::comment_view::article(c, author, via, time(&c.created_at, now), markdown::render(&ids.markdown(&c.body))))
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
                context: context_row.as_ref(),
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
