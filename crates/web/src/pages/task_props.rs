//! The task page's properties panel, every field editable in place: status,
//! priority, assignee (an agent or the board), project, goal, labels (with a
//! new label made on the spot), parent and blockers (found by searching, never
//! by loading the company's tasks). Each control sends one `PATCH
//! /api/issues/:id` with just its field; `task-edit.js` drives the pickers.

use maud::{html, Markup};
use paperclip_core::actor::LOCAL_BOARD_USER_ID;
use paperclip_core::agent::AgentStatus;
use paperclip_core::issue::IssuePriority;
use paperclip_core::model::{Agent, Goal, Issue, Label, Project};
use serde_json::json;

use crate::fmt::{money, pill};

/// What the panel shows besides the issue itself.
pub struct Props<'a> {
    pub prefix: &'a str,
    pub agents: &'a [Agent],
    pub projects: &'a [Project],
    pub goals: &'a [Goal],
    pub labels: &'a [Label],
    pub parent: Option<&'a Issue>,
    pub children: &'a [Issue],
    pub moves: &'a [&'static str],
    pub cost: (i64, i64),
    /// The company's people `(user id, name)` on an authenticated instance.
    pub people: &'a [(String, String)],
    /// Who is looking: "Me" in the assignee list.
    pub me: &'a str,
    /// The assignee's session for the task: the Context row.
    pub context: Option<&'a paperclip_store::runs::context::TaskContext>,
}

// A person is `user:<id>` in the assignee select; the script sends it as
// `assigneeUserId` (upstream's field for a human assignee).

pub fn panel(issue: &Issue, p: &Props) -> Markup {
    let id = &issue.id;
    let link = |ident: &str| format!("/{}/tasks/{ident}", p.prefix);
    let assignee = match (&issue.assignee_agent_id, &issue.assignee_user_id) {
        (Some(a), _) => a.clone(),
        (None, Some(u)) => format!("user:{u}"),
        _ => String::new(),
    };
    let blockers: Vec<&str> = issue.blocked_by.iter().map(|b| b.id.as_str()).collect();
    html! {
        aside.properties data-issue-id=(id) data-updated-at=(issue.updated_at) {
            h2 { "Properties" }
            dl {
                dt { "Status" }
                dd {
                    (pill(&issue.status))
                    @if issue.status.is_terminal() {
                        // Back to todo: its agent is woken and continues in the task's workspace.
                        " " button.small type="button" data-reopen=(id) data-action="PATCH" data-url={"/api/issues/" (id)}
                            data-body=(json!({ "status": "todo" })) data-done={"Reopened " (issue.identifier)}
                            title="Back to todo; its agent is woken to continue where it left off" { "Reopen" }
                    }
                    @if !p.moves.is_empty() {
                        select aria-label="Change status" data-patch-issue=(id) data-field="status" {
                            option value="" { "Move to…" }
                            @for m in p.moves { option value=(m) { (m.replace('_', " ")) } }
                        }
                    }
                }
                dt { label for="prop-priority" { "Priority" } }
                dd { select #prop-priority data-patch-issue=(id) data-field="priority" {
                    @for pr in [IssuePriority::Low, IssuePriority::Medium, IssuePriority::High, IssuePriority::Critical] { option value=(pr) selected[issue.priority == pr] { (pr) } }
                } }
                dt { label for="prop-assignee" { "Assignee" } }
                dd { select #prop-assignee data-assign-issue=(id) {
                    option value="" { "Unassigned" }
                    @let mine = format!("user:{}", p.me);
                    option value=(mine) selected[assignee == mine] { @if p.me == LOCAL_BOARD_USER_ID { "Me (board)" } @else { "Me" } }
                    @if !p.people.is_empty() {
                        optgroup label="People" {
                            @for (uid, name) in p.people.iter().filter(|(u, _)| u != p.me) {
                                @let v = format!("user:{uid}");
                                option value=(v) selected[assignee == v] { (name) }
                            }
                        }
                    }
                    @if assignee.starts_with("user:") && assignee != mine && !p.people.iter().any(|(u, _)| assignee == format!("user:{u}")) {
                        option value=(assignee) selected { (assignee.trim_start_matches("user:")) }
                    }
                    optgroup label="Agents" {
                        @for a in p.agents.iter().filter(|a| a.status != AgentStatus::Terminated || issue.assignee_agent_id.as_deref() == Some(a.id.as_str())) {
                            option value=(a.id) selected[assignee == a.id] { (a.name) }
                        }
                    }
                } }
                dt { label for="prop-project" { "Project" } }
                dd { select #prop-project data-patch-issue=(id) data-field="projectId" {
                    option value="" { "None" }
                    @for x in p.projects { option value=(x.id) selected[issue.project_id.as_deref() == Some(x.id.as_str())] { (x.name) } }
                } }
                dt { label for="prop-goal" { "Goal" } }
                dd { select #prop-goal data-patch-issue=(id) data-field="goalId" {
                    option value="" { "None" }
                    @for g in p.goals { option value=(g.id) selected[issue.goal_id.as_deref() == Some(g.id.as_str())] { (g.title) } }
                } }
                dt { "Labels" }
                dd.labels-edit data-labels=(serde_json::to_string(&issue.label_ids).unwrap_or_default()) {
                    @for l in &issue.labels { span.label style={"--c:" (l.color)} { (l.name) } " " }
                    @if issue.labels.is_empty() { span.muted { "None" } }
                    details.picker.label-picker {
                        summary { "Edit labels" }
                        div.picker-body {
                            @for l in p.labels {
                                label.inline { input type="checkbox" data-label-toggle=(l.id) checked[issue.label_ids.contains(&l.id)]; " " span.label style={"--c:" (l.color)} { (l.name) } }
                            }
                            @if p.labels.is_empty() { p.muted { "No labels yet." } }
                            form.new-label data-api-form="new-label" data-issue-id=(id) {
                                label.visually-hidden for="new-label-name" { "New label" }
                                input #new-label-name name="name" placeholder="New label" maxlength="48" required;
                                button.small type="submit" { "Add" }
                            }
                        }
                    }
                }
                dt { "Parent" }
                dd {
                    @match p.parent {
                        Some(par) => {
                            a href=(link(&par.identifier)) { span.ident { (par.identifier) } " " (par.title) }
                            " " button.small.link type="button" data-action="PATCH" data-url={"/api/issues/" (id)}
                                data-body=(json!({ "parentId": null })) data-done="Parent removed" aria-label="Remove the parent" { "×" }
                        }
                        None => span.muted { "None" },
                    }
                    (picker("parent", id, "Set parent", "Find the parent task"))
                }
                dt { "Blocked by" }
                dd data-blockers=(serde_json::to_string(&blockers).unwrap_or_default()) {
                    @for b in &issue.blocked_by {
                        span.chip {
                            a href=(link(&b.identifier)) { span.ident { (b.identifier) } } " " (pill(&b.status))
                            " " button.small.link type="button" data-action="PATCH" data-url={"/api/issues/" (id)}
                                data-body=(json!({ "blockedByIssueIds": blockers.iter().filter(|x| **x != b.id).collect::<Vec<_>>() }))
                                data-done={(b.identifier) " no longer blocks this task"} aria-label={"Remove blocker " (b.identifier)} { "×" }
                        }
                        " "
                    }
                    @if issue.blocked_by.is_empty() { span.muted { "Nothing" } }
                    (picker("blocker", id, "Add blocker", "Find a blocking task"))
                }
                dt { "Blocks" }
                dd {
                    @for b in &issue.blocks { a href=(link(&b.identifier)) { span.ident { (b.identifier) } } " " (pill(&b.status)) " " }
                    @if issue.blocks.is_empty() { span.muted { "Nothing" } }
                }
                dt { "Sub-tasks" }
                dd {
                    @for c in p.children { div { a href=(link(&c.identifier)) { span.ident { (c.identifier) } " " (c.title) } " " (pill(&c.status)) } }
                    @if p.children.is_empty() { span.muted { "None" } }
                }
                (super::task_context::row(id, p.context))
                @if let Some(a) = issue.assignee_agent_id.as_deref().and_then(|aid| p.agents.iter().find(|a| a.id == aid)).filter(|a| a.adapter_type.ends_with("_local")) {
                    dt { "Session" }
                    dd { button.small type="button" data-action="POST" data-url={"/api/agents/" (a.id) "/runtime-state/reset-session"}
                        data-body=(json!({ "taskKey": issue.id }))
                        data-confirm={"Forget " (a.name) "'s conversation on this task? Its next run here starts fresh."} data-done="Session reset" { "Reset session" } }
                }
                dt { "Cost so far" } dd { (money(p.cost.0)) span.muted { " · " (p.cost.1) @if p.cost.1 == 1 { " cost event" } @else { " cost events" } } }
            }
        }
    }
}

/// A task picker: a search box whose results (from the full-text `q`) are
/// buttons; choosing one sets the parent or adds a blocker.
fn picker(kind: &str, issue_id: &str, summary: &str, placeholder: &str) -> Markup {
    html! {
        details.picker {
            summary { (summary) }
            div.picker-body {
                input type="search" data-pick-task=(kind) data-issue-id=(issue_id) placeholder=(placeholder) aria-label=(placeholder) autocomplete="off";
                div.pick-results role="listbox" aria-label="Matching tasks" {}
            }
        }
    }
}
