//! One project at `/{prefix}/projects/{projectKey}` (url key or id): why it
//! is paused, if it is, first; its description, status, lead, goals, icon,
//! budget and the variables its runs get; its codebase (the git repository
//! its tasks' worktrees are made from, set in a dialog), and its tasks
//! (newest 50 a page, with how many there are).

use axum::extract::{Path, Query, State};
use maud::{html, Markup};
use paperclip_core::model::Agent;
use paperclip_core::workspace::ProjectWorkspace;
use paperclip_store::{issues, org::agents, org::goals, org::workspaces};
use serde::Deserialize;

use super::by_id;
use super::links::project_by_key;
use crate::fmt::pill;
use crate::{html, layout, markdown, store_failure, Ctx, PageResult, Web};

/// Tasks a page shows; counts stop at [`COUNT_CAP`].
pub(crate) const TASKS_PAGE: i64 = 50;
const COUNT_CAP: i64 = 10_000;

#[derive(Deserialize, Default)]
pub struct Params {
    /// Tasks numbered below this: the next page.
    pub(crate) cursor: Option<String>,
}

#[paperclip_macros::handler]
pub async fn page(
    State(web): State<Web>,
    Path((prefix, key)): Path<(String, String)>,
    Query(q): Query<Params>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let project = project_by_key(&web, &ctx, &key).await?;
    let store = &web.store;
    let cid = &ctx.company.id;
    let filter = issues::Filter {
        project_id: Some(project.id.clone()),
        ..issues::Filter::default()
    };
    let tasks = TaskPage::load(&web, &ctx, filter, q.cursor.as_deref()).await?;
    let all_agents = agents::list(store, cid).await.map_err(store_failure)?;
    let names = by_id(&all_agents);
    let all_goals = goals::list(store, cid).await.map_err(store_failure)?;
    let codebase = workspaces::list(store, &project.id)
        .await
        .map_err(store_failure)?;
    let p = &ctx.company.issue_prefix;
    let its_goals: Vec<_> = all_goals
        .iter()
        .filter(|g| {
            project.goal_id.as_deref() == Some(g.id.as_str()) || project.goal_ids.contains(&g.id)
        })
        .collect();
    let lead = project.lead_agent_id.as_deref().and_then(|a| names.get(a));
    let body = html! {
        header.page-head {
            div.muted { a href={"/" (p) "/projects"} { "Projects" } " / " (project.name) }
            h1 { (project.name) " " (pill(&project.status)) }
        }
        @if let Some(since) = &project.look.paused_at {
            p.notice role="status" data-project-paused {
                strong { "Paused" } " since " (since) ": this project's monthly budget is spent, so no run starts for its tasks (runs already queued were cancelled). "
                "Raise its budget below to resume."
            }
        }
        article.description {
            @match project.description.as_deref().filter(|d| !d.trim().is_empty()) {
                Some(d) => (markdown::render(d)),
                None => p.muted { "No description." },
            }
        }
        dl.kv {
            dt { "Lead" } dd { @match lead { Some(a) => a href={"/" (p) "/agents/" (a.url_key)} { (a.name) }, None => span.muted { "None" } } }
            dt { "Goals" } dd { @for g in &its_goals { a href={"/" (p) "/goals/" (g.id)} { (g.title) } " " } @if its_goals.is_empty() { span.muted { "None" } } }
            @if let Some(t) = &project.target_date { dt { "Target date" } dd { (t) } }
            @if project.archived_at.is_some() { dt { "Archived" } dd { "yes" } }
            @if let Some(icon) = &project.look.icon { dt { "Icon" } dd data-project-icon { (serde_json::to_value(icon).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()) } }
            dt { "Run variables" } dd data-project-env { (env_list(project.look.env.as_ref())) }
        }
        (budget_form(&project))
        (codebase_section(&project.id, &codebase))
        (tasks.render(&ctx, &names, &format!("/{p}/projects/{}", project.url_key), Some(&format!("/{p}/tasks?project={}", project.id))))
    };
    let fixed = repository_dialog(&project.id);
    html(layout::page_with(
        &ctx,
        "projects",
        &project.name,
        body,
        fixed,
    ))
}

/// The variables the project's runs get over their agent's own: names and
/// plain values; a secret by its reference only (its value is resolved in
/// the run, never shown).
fn env_list(env: Option<&serde_json::Value>) -> Markup {
    let Some(vars) = env.and_then(|e| e.as_object()).filter(|v| !v.is_empty()) else {
        return html! { span.muted { "None (set with PATCH /api/projects/{id} and an env object)" } };
    };
    html! {
        @for (name, binding) in vars {
            code { (name) } " = "
            @match binding {
                serde_json::Value::String(v) => code { (v) },
                b if b.get("type").and_then(|t| t.as_str()) == Some("secret_ref") => span.muted { "a secret" },
                b => code { (b.get("value").and_then(|v| v.as_str()).unwrap_or("")) },
            }
            br;
        }
    }
}

/// The project's monthly budget, editable: raising it past the month's
/// spend lifts a hard stop.
fn budget_form(project: &paperclip_core::model::Project) -> Markup {
    let cents = project.budget.as_ref().map_or(0, |b| b.amount_cents);
    html! {
        form.inline-form data-api-form="budget" data-url={"/api/projects/" (project.id) "/budgets"} {
            label { "Monthly budget ($, 0 for none)" input name="budgetDollars" type="number" min="0" step="0.01" value=(format!("{:.2}", cents as f64 / 100.0)); }
            button type="submit" { "Save budget" }
        }
    }
}

/// Where the project's code is: the primary repository first. The board
/// sets it in [`repository_dialog`]. Removing it leaves the worktrees
/// already made (until their workspaces are closed), but runs from then on
/// work without one.
fn codebase_section(project_id: &str, codebase: &[ProjectWorkspace]) -> Markup {
    html! {
        section.codebase #codebase {
            h2 { "Codebase" }
            @if codebase.is_empty() {
                p.muted data-no-repository { "No repository. Declare the project's local git repository and each of its tasks runs in its own git worktree, on a branch of its own, and its changes show on the task." }
                button.small type="button" data-edit-repository=(project_id) { "Set repository" }
            }
            @for ws in codebase {
                dl.kv data-repository=(ws.cwd.as_deref().unwrap_or("")) {
                    dt { "Repository" } dd { code { (ws.cwd.as_deref().unwrap_or("—")) } @if codebase.len() > 1 && ws.is_primary { span.muted { " (primary: tasks run from it)" } } }
                    dt { "Default branch" } dd data-default-branch=(ws.default_ref.as_deref().unwrap_or("")) { @match &ws.default_ref { Some(b) => code { (b) }, None => span.muted { "the branch checked out in the repository" } } }
                }
                @if ws.is_primary {
                    div.actions.codebase-actions {
                        button.small type="button" data-edit-repository=(project_id) { "Edit" }
                        button.small.danger type="button" data-action="DELETE" data-url={"/api/projects/" (project_id) "/workspaces/" (ws.id)}
                            data-confirm="Remove the repository from this project? Worktrees already made stay until they are closed; runs from now on work without one." data-done="Repository removed" { "Remove" }
                    }
                }
            }
        }
    }
}

/// The repository form, outside the live region so a refusal and what was
/// typed stay put. The script fills it from the API when it opens, and
/// creates or updates the project's primary workspace.
fn repository_dialog(project_id: &str) -> Markup {
    html! {
        dialog #project-repository {
            form data-api-form="project-repository" data-project-id=(project_id) method="dialog" {
                h2 { "Project repository" }
                label { "Repository path" input name="cwd" required maxlength="4096" placeholder="/home/me/code/app" autocomplete="off"; }
                p.help { "The absolute path of a local git repository (a folder inside one names the repository)." }
                label { "Default branch (optional)" input name="defaultRef" maxlength="255" placeholder="main" autocomplete="off"; }
                p.help { "Task branches start from it. Empty: the branch checked out in the repository." }
                p.form-error role="alert" hidden {}
                div.actions {
                    button type="button" data-close-dialog { "Cancel" }
                    button.primary type="submit" { "Save" }
                }
            }
        }
    }
}

/// A page of the tasks a filter matches, newest first, and their count.
pub(crate) struct TaskPage {
    issues: Vec<paperclip_core::model::Issue>,
    next_cursor: Option<issues::Position>,
    total: (i64, bool),
    paged: bool,
}

impl TaskPage {
    pub(crate) async fn load(
        web: &Web,
        ctx: &Ctx,
        filter: issues::Filter,
        cursor: Option<&str>,
    ) -> Result<TaskPage, axum::response::Response> {
        let filter = issues::Filter {
            cursor: cursor.and_then(|c| issues::Position::parse(issues::Sort::Newest, c)),
            limit: TASKS_PAGE,
            ..filter
        };
        let cid = &ctx.company.id;
        let page = issues::list(&web.store, cid, &filter)
            .await
            .map_err(store_failure)?;
        let total = issues::count(&web.store, cid, &filter, COUNT_CAP)
            .await
            .map_err(store_failure)?;
        Ok(TaskPage {
            issues: page.issues,
            next_cursor: page.next_cursor,
            total,
            paged: filter.cursor.is_some(),
        })
    }

    /// The tasks section: `here` is this page's path (for the pager),
    /// `all` the task list filtered the same way, where it can be.
    pub(crate) fn render(
        &self,
        ctx: &Ctx,
        names: &std::collections::HashMap<&str, &Agent>,
        here: &str,
        all: Option<&str>,
    ) -> Markup {
        let p = &ctx.company.issue_prefix;
        let (n, more) = self.total;
        html! {
            section.tasks-of {
                h2 { "Tasks " span.muted data-task-count=(n) { "(" (n) @if more { "+" } ")" } @if let Some(all) = all { " " a.small href=(all) { "open in the task list" } } }
                table.data {
                    thead { tr { th { "Task" } th { "Status" } th { "Assignee" } } }
                    tbody {
                        @for i in &self.issues { tr {
                            td { a href={"/" (p) "/tasks/" (i.identifier)} { span.ident { (i.identifier) } " " (i.title) } }
                            td { (pill(&i.status)) }
                            td { @match i.assignee_agent_id.as_deref().and_then(|a| names.get(a)) { Some(a) => (a.name), None => span.muted { "—" } } }
                        } }
                        @if self.issues.is_empty() { tr { td colspan="3" .empty { "No tasks." } } }
                    }
                }
                nav.pager {
                    @if self.paged { a href=(here) { "Newest tasks" } " " }
                    @if let Some(c) = &self.next_cursor { a href={(here) "?cursor=" (c)} rel="next" { "Older tasks →" } }
                }
            }
        }
    }
}
