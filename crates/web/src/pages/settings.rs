//! Company settings (`/{prefix}/company/settings`, upstream's path): name,
//! description, hire approval, budget and run log retention (saved with upstream's
//! `PATCH /api/companies/{id}`), the logo (uploaded to `.../logo`, set with
//! `PATCH .../branding`), the company id for API users, and archiving.
//! The issue prefix is shown but not editable: upstream's PATCH schema has no
//! field for it (task identifiers would change under people's links).

use axum::extract::{Path, State};
use maud::html;

use crate::fmt::{money, pill};
use crate::{html, layout, PageResult, Web};

#[paperclip_macros::handler]
pub async fn page(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let c = &ctx.company;
    let archived = c.status.as_str() == "archived";
    let body = html! {
        header.page-head {
            h1 { "Company settings" }
            p.muted { (c.name) " · " (pill(c.status.as_str()))
                " · " (money(c.spent_monthly_cents)) " spent this month" }
        }
    };
    // Outside the live region: a live update must not reset unsaved edits.
    let budget_dollars = format!("{:.2}", c.budget_monthly_cents as f64 / 100.0);
    let fixed = html! {
        form.card.settings data-api-form="company-settings" data-company-id=(c.id) novalidate {
            h2 { "General" }
            label { "Name" span.required title="Required" { " *" }
                input name="name" value=(c.name) required maxlength="200" autocomplete="off"; }
            label { "Description"
                textarea name="description" rows="3" { (c.description.as_deref().unwrap_or("")) } }
            label { "Issue prefix"
                input name="issuePrefix" value=(c.issue_prefix) readonly aria-describedby="prefix-help"; }
            div.help #prefix-help { "Task identifiers start with it (" (c.issue_prefix) "-12). It is set when the company is created and cannot be changed." }
            h2 { "Hiring and budget" }
            label.inline {
                input type="checkbox" name="requireBoardApprovalForNewAgents"
                    checked[c.require_board_approval_for_new_agents];
                " New hires need board approval"
            }
            label { "Monthly budget ($)"
                input name="budgetDollars" type="number" min="0" step="0.01" value=(budget_dollars) aria-describedby="budget-help"; }
            div.help #budget-help { "0 means no limit. At 100 % the company's work is paused." }
            h2 { "Run logs" }
            label { "Keep run logs (days)"
                input name="runLogRetentionDays" type="number" min="1" max="3650" step="1"
                    value=(c.run_log_retention_days.map(|d| d.to_string()).unwrap_or_default())
                    placeholder="forever" aria-describedby="retention-help"; }
            div.help #retention-help { "Empty keeps every log. Otherwise the log of a run that finished longer ago is deleted (checked hourly); its page then says so. A running run's log is never deleted." }
            h2 { "Task worktrees" }
            label { "Remove a closed task's worktree after (days)"
                input name="workspaceRetentionDays" type="number" min="1" max="3650" step="1"
                    value=(c.workspace_retention_days.map(|d| d.to_string()).unwrap_or_default())
                    placeholder="7" aria-describedby="ws-retention-help"; }
            div.help #ws-retention-help { "Tasks of a project with a repository each work in their own git worktree. Once a task has been done or cancelled this long, its worktree is removed (checked hourly); its work stays committed on its branch, and a reopened task gets the worktree back." }
            label { "Disk budget for worktrees (MiB)"
                input name="workspaceDiskBudgetMb" type="number" min="1" step="1"
                    value=(c.workspace_disk_budget_mb.map(|d| d.to_string()).unwrap_or_default())
                    placeholder="10240" aria-describedby="ws-budget-help"; }
            div.help #ws-budget-help { "Past it, a task that has no worktree yet does not get one (its run fails saying so); tasks that have one go on. Empty: 10 GiB." }
            div.actions { button.primary type="submit" { "Save settings" } }
        }
        section.card.settings-card #logo-card {
            h2 { "Logo" }
            p.muted { "Shown beside the company's name in the sidebar. A PNG, JPEG, WebP, GIF or SVG image." }
            @if let Some(url) = &c.logo_url {
                img.logo-preview src=(url) alt={(c.name) " logo"};
            } @else {
                p #no-logo { "No logo yet." }
            }
            form data-upload-logo=(c.id) {
                label { "Image"
                    input type="file" name="file" required
                        accept="image/png,image/jpeg,image/webp,image/gif,image/svg+xml"; }
                div.actions {
                    button.primary type="submit" { "Upload logo" }
                    @if c.logo_url.is_some() {
                        button type="button" data-remove-logo=(c.id) { "Remove logo" }
                    }
                }
            }
        }
        section.card.settings-card {
            h2 { "API access" }
            p.muted { "Scripts and curl calls name the company by its id." }
            div.copy-row {
                code #company-id { (c.id) }
                button.small type="button" data-copy="#company-id" { "Copy" }
            }
        }
        (crate::pages::company_port::card(&c.id))
        section.card.settings-card.danger-zone {
            h2 { "Danger zone" }
            @if archived {
                p { "This company is archived. Restoring makes it active again." }
                button type="button" data-company-status="active" data-company-id=(c.id) { "Restore company" }
            } @else {
                p { "Archiving marks the company as archived; its tasks, agents and history stay readable, and it can be restored here." }
                button.danger type="button" data-company-status="archived" data-company-id=(c.id)
                    data-confirm={"Archive " (c.name) "?"} { "Archive company" }
            }
        }
    };
    html(layout::page_with(
        &ctx,
        "company/settings",
        "Company settings",
        body,
        fixed,
    ))
}
