//! One agent: overview and actions, current run, recent tasks and runs,
//! costs and budget, API keys, the config editor (the hire form's fields of
//! the adapter type with its JSON view and environment check, heartbeat
//! policy, prompt template with variable pills) and config revisions.

use axum::extract::{Path, State};
use chrono::Utc;
use maud::{html, Markup};
use paperclip_core::agent::AgentStatus;
use paperclip_core::heartbeat::HeartbeatPolicy;
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::template::{is_sensitive, CATALOG};
use paperclip_store::{audit::revisions, issues, org::agents, org::keys, runs, runs::sessions};

use super::hire;
use crate::fmt::{money, percent, pill, time};
use crate::{html, layout, store_failure, PageResult, Web};

#[paperclip_macros::handler]
pub async fn page(
    State(web): State<Web>,
    Path((prefix, url_key)): Path<(String, String)>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let store = &web.store;
    let cid = &ctx.company.id;
    // This agent and its manager only: a company may have a thousand.
    let found = agents::by_key(store, cid, &url_key)
        .await
        .map_err(store_failure)?;
    let Some(agent) = found else {
        return Err(crate::failure(
            axum::http::StatusCode::NOT_FOUND,
            "No such agent",
            &format!("{} has no agent {url_key}.", ctx.company.name),
        ));
    };
    let manager = match agent.reports_to.as_deref() {
        Some(id) => agents::by_key(store, cid, id)
            .await
            .map_err(store_failure)?,
        None => None,
    };
    let tasks = issues::list(
        store,
        cid,
        &issues::Filter {
            assignee_agent_id: Some(agent.id.clone()),
            limit: 15,
            ..issues::Filter::default()
        },
    )
    .await
    .map_err(store_failure)?;
    let agent_runs = runs::list(
        store,
        cid,
        &runs::Filter {
            agent_id: Some(agent.id.clone()),
            limit: 15,
            ..runs::Filter::default()
        },
    )
    .await
    .map_err(store_failure)?;
    let api_keys = keys::list(store, &agent.id).await.map_err(store_failure)?;
    let revs = revisions::list(store, &agent.id)
        .await
        .map_err(store_failure)?;
    let state = sessions::runtime_state(store, &agent)
        .await
        .map_err(store_failure)?;
    let now = Utc::now();
    let spend = paperclip_store::money::thrift::get(store, cid, Some(&agent.id), now)
        .await
        .map_err(store_failure)?;
    let wakes = paperclip_store::wakes::list(store, &agent.id, None, None, 20)
        .await
        .map_err(store_failure)?;
    // Runs may be on tasks no longer among its recent ones: one lookup.
    let run_tasks: Vec<&str> = agent_runs
        .iter()
        .filter_map(|r| r.issue_id.as_deref())
        .collect();
    let run_idents = paperclip_store::views::detail::identifiers(store, cid, &run_tasks)
        .await
        .map_err(store_failure)?;
    let task_names: std::collections::HashMap<&str, &str> = run_idents
        .iter()
        .map(|(id, ident)| (id.as_str(), ident.as_str()))
        .collect();
    let quota = paperclip_store::runs::context::quota_snapshot(store, &agent.id)
        .await
        .map_err(store_failure)?;
    let p = &ctx.company.issue_prefix;
    let policy = HeartbeatPolicy::from_runtime_config(&agent.runtime_config);
    let template = agent
        .adapter_config
        .get("promptTemplate")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    // The form posts this back; placeholders keep the stored secrets.
    let mut config = agent.redacted_config();
    if let Some(obj) = config.as_object_mut() {
        obj.remove("promptTemplate");
    }
    let current = agent_runs
        .iter()
        .find(|r| r.status == RunStatus::Running || r.status == RunStatus::Queued);
    let pending = agent.status == AgentStatus::PendingApproval;
    let hire_approval = if pending {
        hire_approval_of(store, cid, &agent.id).await?
    } else {
        None
    };
    let skills_section = super::skills::agent_section(&web, &agent).await;
    let id = &agent.id;
    let body = html! {
        header.page-head {
            div.muted { a href={"/" (p) "/agents"} { "Agents" } " / " (agent.name) }
            h1 { (agent.name) " " (pill(&agent.status)) " " (crate::thrift::usage_limit(agent.usage_limited_until.as_deref())) }
            p.muted { (agent.title.as_deref().unwrap_or(agent.role.as_str())) " · " code { (agent.adapter_type) }
                @if let Some(m) = &manager { " · reports to " a href={"/" (p) "/agents/" (m.url_key)} { (m.name) } } }
            @if let Some(reason) = &agent.error_reason { p.run-error { "Last error: " (reason) } }
            // A hire waiting for the board cannot run or take work: the
            // decision is what it needs.
            @if pending {
                p.notice data-pending-hire {
                    (agent.name) " waits for the board to approve the hire; until then it cannot run or take tasks."
                    @if let Some(a) = &hire_approval { " " a href={"/" (p) "/approvals/" (a.id)} { "Open the request" } }
                }
            }
            div.actions {
                @if pending {
                    @if let Some(a) = hire_approval.as_ref().filter(|a| a.status == paperclip_core::approval::ApprovalStatus::Pending) {
                        button.primary type="button" data-action="POST" data-url={"/api/approvals/" (a.id) "/approve"} data-body="{}" data-done={(agent.name) " is hired"} { "Approve hire" }
                        button.danger type="button" data-action="POST" data-url={"/api/approvals/" (a.id) "/reject"} data-body="{}" data-confirm={"Reject the hire of " (agent.name) "?"} data-done="Hire rejected" { "Reject" }
                    }
                } @else {
                    button type="button" data-open-dialog="new-task" data-preset-assignee=(id) { "Assign task" }
                    button type="button" data-action="POST" data-url={"/api/agents/" (id) "/wakeup"} data-body=r#"{"reason":"manual"}"# data-done="Run queued" { "Run now" }
                }
                @if agent.status == AgentStatus::Paused {
                    button type="button" data-action="POST" data-url={"/api/agents/" (id) "/resume"} data-done="Resumed" { "Resume" }
                } @else if agent.status != AgentStatus::Terminated && !pending {
                    button type="button" data-action="POST" data-url={"/api/agents/" (id) "/pause"} data-confirm={"Pause " (agent.name) "? Its running work stops."} data-done="Paused" { "Pause" }
                }
                // Only the coding CLIs keep sessions; an overflowing or confused
                // one is otherwise resumed on every run of its task.
                @if matches!(agent.adapter_type.as_str(), "claude_local" | "codex_local" | "opencode_local" | "gemini_local") {
                    button type="button" data-action="POST" data-url={"/api/agents/" (id) "/runtime-state/reset-session"} data-body="{}" data-confirm={"Forget " (agent.name) "'s saved sessions? Its next run on each task starts a fresh conversation."} data-done="Sessions reset" { "Reset session" }
                }
                @if agent.status != AgentStatus::Terminated {
                    button.danger type="button" data-action="POST" data-url={"/api/agents/" (id) "/terminate"} data-confirm={"Terminate " (agent.name) "? This cannot be undone."} data-done="Terminated" { "Terminate" }
                }
            }
        }
        div.columns {
            section {
                h2 { "Current run" }
                @match current {
                    Some(r) => p { (pill(&r.status)) " " @match r.issue_id.as_deref().and_then(|i| task_names.get(i)) {
                        Some(ident) => a href={"/" (p) "/tasks/" (ident)} { span.ident { (ident) } }, None => span.muted { "no task" } } " · started " (time(r.started_at.as_deref().unwrap_or(&r.created_at), now)) " · " a href={"/" (p) "/agents/" (agent.url_key) "/runs/" (r.id)} { "watch" }
                        " " button.small type="button" data-action="POST" data-url={"/api/heartbeat-runs/" (r.id) "/cancel"} data-confirm="Cancel this run?" data-done="Cancelled" { "Cancel" } },
                    None => p.muted { "Idle." },
                }
                h2 { "Costs" }
                dl.kv {
                    dt { "This month" } dd { (money(agent.spent_monthly_cents)) @if agent.budget_monthly_cents > 0 { " of " (money(agent.budget_monthly_cents)) } }
                    dt { "All time" } dd { (money(state.total_cost_cents)) " · " (crate::fmt::count(state.total_input_tokens)) " in / " (crate::fmt::count(state.total_output_tokens)) " out tokens" }
                }
                @if agent.budget_monthly_cents > 0 { (crate::pages::costs::bar(agent.spent_monthly_cents, agent.budget_monthly_cents)) }
                form.inline-form data-api-form="budget" data-url={"/api/agents/" (id) "/budgets"} {
                    label { "Monthly budget ($)" input name="budgetDollars" type="number" min="0" step="0.01" value=(format!("{:.2}", agent.budget_monthly_cents as f64 / 100.0)); }
                    button type="submit" { "Save budget" }
                }
            }
            section {
                h2 { "Recent tasks" }
                ul.tasklist { @for i in &tasks.issues { li { a href={"/" (p) "/tasks/" (i.identifier)} { span.ident { (i.identifier) } " " (i.title) } " " (pill(&i.status)) } } }
                @if tasks.issues.is_empty() { p.muted { "No tasks assigned." } }
            }
        }
        (crate::thrift::section(&spend))
        (super::task_context::quota_section(quota.as_ref()))
        section data-wakes {
            h2 { "Wakes" }
            p.muted { "Every time something tried to wake " (agent.name) ", and what became of it." }
            table.data {
                thead { tr { th { "Why" } th { "Task" } th { "Outcome" } th { "When" } } }
                tbody { @for w in &wakes {
                    tr data-wake-status=(w.request.status) {
                        td { (crate::fmt::wake_why(Some(w.request.source.as_str()), w.request.reason.as_deref())) }
                        td { @match &w.issue_identifier { Some(ident) => a href={"/" (p) "/tasks/" (ident)} { span.ident { (ident) } }, None => span.muted { "—" } } }
                        td { @match (&w.request.skip_reason, &w.run_status) {
                            (Some(reason), _) => span.muted data-skip-reason=(reason) { "skipped: " (crate::thrift::skip_reason_text(reason.as_str())) },
                            (None, Some(status)) => (pill(status)),
                            (None, None) => (pill(&w.request.status)),
                        } }
                        td { (time(&w.request.created_at, now)) }
                    }
                } @if wakes.is_empty() { tr { td colspan="4" .empty { "No wakes yet." } } } }
            }
        }
        section {
            h2 { "Runs" " " a.small href={"/" (p) "/agents/" (agent.url_key) "/runs"} { "all runs" } }
            table.data {
                thead { tr { th { "Run" } th { "Task" } th { "Outcome" } th { "Started · took" } th { "Details" } } }
                tbody { @for r in &agent_runs {
                    tr data-run-status=(r.status) {
                        td { (pill(&r.status)) }
                        td { @match r.issue_id.as_deref().and_then(|i| task_names.get(i)) { Some(ident) => a href={"/" (p) "/tasks/" (ident)} { span.ident { (ident) } }, None => span.muted { "—" } } }
                        td { (crate::pages::thread::outcome_cell(r)) }
                        td { (crate::pages::run::when_and_how_long(r, now)) }
                        td { a href={"/" (p) "/agents/" (agent.url_key) "/runs/" (r.id)} { "steps and log" } }
                    }
                } }
            }
        }
        section {
            h2 { "API keys" }
            ul.keys { @for k in &api_keys {
                li { strong { (k.name) } " " span.muted { "created " (time(&k.created_at, now)) }
                    @if k.revoked_at.is_some() { " " span.pill.s-cancelled { "revoked" } } @else {
                        " " button.small.danger type="button" data-action="DELETE" data-url={"/api/agents/" (id) "/keys/" (k.id)} data-confirm="Revoke this key? Agents using it lose access." data-done="Key revoked" { "Revoke" } }
                }
            } }
            form.inline-form data-api-form="key" data-url={"/api/agents/" (id) "/keys"} {
                label { "Key name" input name="name" required placeholder="e.g. laptop"; }
                button type="submit" { "Create key" }
            }
            div #new-key-token hidden {}
        }
        (super::agent_instructions::section(&agent))
        (skills_section)
        section {
            h2 { "Configuration" }
            form.config data-api-form="config" data-url={"/api/agents/" (id)} data-agent-id=(id) data-runtime-config=(agent.redacted_runtime_config().to_string()) novalidate {
                label { "Adapter" (hire::adapter_select(&agent.adapter_type)) }
                // The hire form's fields; the template has its own editor below.
                (hire::editor("cfg", &agent.adapter_type, &["promptTemplate"], &config))
                (template_editor(template, id))
                fieldset {
                    legend { "Heartbeat policy" }
                    label.inline { input type="checkbox" name="hb.enabled" checked[policy.enabled]; " Timer heartbeats" }
                    label { "Every (seconds)" input type="number" name="hb.intervalSec" min="0" value=(policy.interval_sec); }
                    label.inline { input type="checkbox" name="hb.wakeOnAssignment" checked[policy.wake_on_assignment]; " Wake on assignment" }
                    label.inline { input type="checkbox" name="hb.wakeOnOnDemand" checked[policy.wake_on_on_demand]; " Wake on demand" }
                    label.inline { input type="checkbox" name="hb.wakeOnAutomation" checked[policy.wake_on_automation]; " Wake on automation" }
                    label.inline title="Off: a timer heartbeat with no assigned task, new comment or missed wake is recorded as skipped and costs nothing." { input type="checkbox" name="hb.wakeWhenIdle" checked[policy.wake_when_idle]; " Run timer heartbeats even with nothing to do" }
                    label { "Max concurrent runs" input type="number" name="hb.maxConcurrentRuns" min="1" value=(policy.max_concurrent_runs); }
                }
                div.actions {
                    button type="button" data-hire-check { "Check environment" }
                    button.primary type="submit" { "Save configuration" }
                }
            }
            h3 { "Revisions" }
            table.data {
                thead { tr { th { "#" } th { "Change" } th { "When" } th {} } }
                tbody { @for r in &revs {
                    tr { td { (r.revision_number) } td { (r.change_summary.as_deref().unwrap_or("config changed")) } td { (time(&r.created_at, now)) }
                        td { button.small type="button" data-action="POST" data-url={"/api/agents/" (id) "/config-revisions/" (r.id) "/rollback"} data-confirm={"Roll back to revision " (r.revision_number) "?"} data-done="Rolled back" { "Roll back" } } }
                } @if revs.is_empty() { tr { td colspan="4" .empty { "No revisions yet." } } } }
            }
        }
    };
    let _ = percent;
    html(layout::page(&ctx, "agents", &agent.name, body))
}

/// The prompt template with the catalog's variables as pills that insert
/// `{{name}}` (credentials marked: they work, but an environment variable is
/// the better way), and beside it a preview of the prompt for a sample wake
/// with credentials masked. Unknown variables are flagged before saving (and
/// refused by the server).
fn template_editor(template: &str, agent_id: &str) -> Markup {
    html! {
        div.template-editor data-preview-url={"/api/agents/" (agent_id) "/prompt-preview"} {
            div.template-edit {
                label { "Prompt template" textarea name="promptTemplate" rows="8" data-template data-catalog=(CATALOG.join(" ")) { (template) } }
                div.pills { @for v in CATALOG {
                    @if is_sensitive(v) {
                        button.var.sensitive type="button" data-insert-var=(v) data-sensitive
                            title="A credential: resolved when the run starts, masked in the preview and redacted from logs. Prefer the PAPERCLIP_API_KEY environment variable every run already has." {
                            (v) " " span.sensitive-badge { "sensitive" }
                        }
                    } @else { button.var type="button" data-insert-var=(v) { (v) } }
                } }
                p.template-error.error-text hidden {}
                p.template-warning.warn-text data-sensitive-warning hidden {}
                p.muted { "Leave empty to use the default prompt (the task, why the agent woke, new comments, approval results)." }
            }
            div.template-preview {
                div.preview-head { strong { "Preview" } span.muted { " for a sample wake; credentials are masked" } }
                pre.prompt-preview data-prompt-preview aria-live="polite" { "Loading the preview…" }
            }
        }
    }
}

/// The hire approval that names a pending agent: the open one, else one
/// sent back for revision.
async fn hire_approval_of(
    store: &paperclip_store::Store,
    cid: &str,
    agent_id: &str,
) -> Result<Option<paperclip_core::model::Approval>, axum::response::Response> {
    for status in ["pending", "revision_requested"] {
        let found = paperclip_store::approvals::list(store, cid, Some(status))
            .await
            .map_err(store_failure)?
            .into_iter()
            .find(|a| a.payload.get("agentId").and_then(|v| v.as_str()) == Some(agent_id));
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}
