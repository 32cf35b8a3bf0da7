//! Your account (`/{prefix}/account`) on an authenticated instance: name,
//! password, and board API keys for scripts and the `paperclipai` CLI (the
//! token is shown once, when it is made). On a local trusted instance there
//! is no account, and the page says so.

use axum::extract::{Path, State};
use maud::html;

use crate::fmt::pill;
use crate::{html, layout, store_failure, viewer, PageResult, Web};

pub async fn page(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let viewer = viewer::current();
    let Some(user_id) = viewer.user_id.clone() else {
        let body = html! {
            header.page-head { h1 { "Account" } }
            section.card #account-local {
                p { "This instance runs in local trusted mode: you are the board at this machine, with no account, and the CLI needs no key here." }
                p { "Accounts, passwords and board API keys come with " code { "--deployment-mode authenticated" } " (README, \"Teams\")." }
            }
        };
        return html(layout::page(&ctx, "account", "Account", body));
    };
    let keys = paperclip_store::org::board_keys::list(&web.store, &user_id)
        .await
        .map_err(store_failure)?;
    let companies = paperclip_store::org::companies::list(&web.store)
        .await
        .map_err(store_failure)?;
    let company_name = |id: &str| {
        companies
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.name.clone())
            .unwrap_or_else(|| "(deleted)".into())
    };
    let short = |t: &str| t.get(..16).unwrap_or(t).replace('T', " ");
    let body = html! {
        header.page-head {
            h1 { "Account" }
            p.muted { (viewer.name.clone().unwrap_or_default()) }
        }
        section.card #board-keys {
            h2 { "Board API keys" }
            p.muted { "For scripts and the paperclipai CLI: send " code { "Authorization: Bearer pcp_board_…" } ". A key acts as you, within the companies it names and your role there." }
            @if keys.is_empty() { p.muted { "No keys yet." } }
            @else {
                table {
                    thead { tr { th { "Name" } th { "Companies" } th { "Created" } th { "Last used" } th { "Expires" } th { "" } } }
                    tbody {
                        @for k in &keys {
                            tr data-key-id=(k.id) {
                                td { (k.name) }
                                td { @if k.company_ids.is_empty() { "all of yours" } @else { (k.company_ids.iter().map(|c| company_name(c)).collect::<Vec<_>>().join(", ")) } }
                                td { (short(&k.created_at)) }
                                td { (k.last_used_at.as_deref().map(short).unwrap_or_else(|| "never".into())) }
                                td { (k.expires_at.as_deref().map(short).unwrap_or_else(|| "never".into())) }
                                td {
                                    @if k.revoked_at.is_some() { (pill("revoked")) }
                                    @else { button.small.danger type="button" data-board-key-revoke=(k.id) data-confirm={"Revoke the key " (k.name) "?"} { "Revoke" } }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    let fixed = html! {
        form.card #board-key-form data-api-form="new-board-key" data-company-id=(ctx.company.id) autocomplete="off" {
            h2 { "New board API key" }
            label { "Name" input name="name" required maxlength="120" value="paperclipai cli"; }
            label { "Companies"
                select name="scope" {
                    option value="company" selected { "Only " (ctx.company.name) }
                    option value="all" { "All my companies" }
                }
            }
            label { "Expires"
                select name="expires" {
                    option value="30" selected { "in 30 days" }
                    option value="365" { "in a year" }
                    option value="never" { "never" }
                }
            }
            div.actions { button.primary type="submit" { "Create key" } }
            div #board-key-token hidden {
                p { "Copy it now: it is not shown again." }
                div.copy-row { code #board-key-value {} }
            }
        }
        form.card #password-form data-api-form="change-password" autocomplete="off" {
            h2 { "Change password" }
            label { "Current password" input name="currentPassword" type="password" autocomplete="current-password" required; }
            label { "New password (8 characters or more)" input name="newPassword" type="password" autocomplete="new-password" minlength="8" required; }
            p.muted { "Your other sessions are signed out." }
            div.actions { button type="submit" { "Change password" } }
        }
    };
    html(layout::page_with(&ctx, "account", "Account", body, fixed))
}
