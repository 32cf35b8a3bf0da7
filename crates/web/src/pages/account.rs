//! Your account (`/{prefix}/account`) on an authenticated instance: name,
//! password, and board API keys for scripts and the `paperclipai` CLI (the
//! token is shown once, when it is made). On a local trusted instance there
//! is no account, and the page says so. On both, the Notifications section:
//! Web Push to this device (`assets/push.js`) and what to be told about.

use axum::extract::{Path, State};
use maud::{html, Markup};
use paperclip_core::actor::LOCAL_BOARD_USER_ID;

use crate::fmt::pill;
use crate::{html, layout, store_failure, viewer, PageResult, Web};

#[paperclip_macros::handler]
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
        let push = notifications(&web, LOCAL_BOARD_USER_ID, true).await?;
        return html(layout::page_with(&ctx, "account", "Account", body, push));
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
    let push = notifications(&web, &user_id, false).await?;
    let fixed = html! {
        (push)
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

/// Push notifications to this device: enable or turn off (push.js does it
/// in the browser), what to be told about, a test, and the devices that
/// hear already. Outside the live region: a live update must not untick a
/// box being ticked.
async fn notifications(
    web: &Web,
    user_id: &str,
    local: bool,
) -> Result<Markup, axum::response::Response> {
    let prefs = paperclip_store::push::preferences::get(&web.store, user_id)
        .await
        .map_err(store_failure)?;
    let devices = paperclip_store::push::subscriptions::of_user(&web.store, user_id)
        .await
        .map_err(store_failure)?;
    let kinds = [
        ("questions", "Questions from agents", prefs.questions),
        (
            "approvals",
            "Approvals waiting on the board",
            prefs.approvals,
        ),
        ("failedRuns", "Failed runs", prefs.failed_runs),
        ("budgetStops", "Budget stops", prefs.budget_stops),
    ];
    Ok(html! {
        section.card.push-settings #push-settings {
            h2 { "Notifications" }
            p.muted { "Hear on your phone or computer when an agent asks a question, an approval waits, a run fails or a budget stops agents, and approve, reject or reply from the notification." }
            p.push-status #push-status role="status" { "Checking this device…" }
            p.muted.push-hint { "Browsers allow it on a secure page: the board over HTTPS (authenticated mode behind TLS, for a phone) or on this machine at 127.0.0.1 or localhost. Setting it up on a phone: docs/phone.md." }
            div.push-needs #push-needs hidden {
                p { "Notifications need a secure page. " }
                @if local {
                    p { "On this machine, open the board at " code { "http://127.0.0.1" } " or " code { "http://localhost" } ". For a phone, run Paperclip in authenticated mode behind HTTPS (docs/phone.md)." }
                } @else {
                    p { "Serve the board over HTTPS (a reverse proxy with TLS and " code { "--public-url https://…" } "; docs/phone.md)." }
                }
            }
            div.actions {
                button.primary type="button" #push-enable hidden { "Enable on this device" }
                button type="button" #push-disable hidden { "Turn off on this device" }
                button type="button" #push-test { "Send a test notification" }
            }
            fieldset.push-kinds #push-kinds {
                legend { "Tell me about" }
                @for (name, label, on) in kinds {
                    label.check { input type="checkbox" name=(name) checked[on]; " " (label) }
                }
            }
            h3 { "Devices that hear" }
            @if devices.is_empty() {
                p.muted #push-devices { "None yet." }
            } @else {
                ul.push-devices #push-devices {
                    @for d in &devices {
                        li data-push-id=(d.id) {
                            span { (device_name(d.user_agent.as_deref())) }
                            span.muted { " · since " (d.created_at.get(..10).unwrap_or(&d.created_at)) }
                            @if let Some(at) = &d.last_sent_at {
                                span.muted { " · last notified " (at.get(..16).unwrap_or(at).replace('T', " ")) }
                            }
                        }
                    }
                }
            }
        }
    })
}

/// A device as a person knows it, from its browser's user agent.
fn device_name(agent: Option<&str>) -> String {
    let agent = agent.unwrap_or("");
    let browser = ["Edg/", "Firefox/", "Chrome/", "Safari/"]
        .iter()
        .find(|b| agent.contains(*b))
        .map(|b| match *b {
            "Edg/" => "Edge",
            "Firefox/" => "Firefox",
            "Chrome/" => "Chrome",
            _ => "Safari",
        });
    let system = ["Android", "iPhone", "iPad", "Mac OS X", "Windows", "Linux"]
        .iter()
        .find(|s| agent.contains(*s))
        .map(|s| if *s == "Mac OS X" { "macOS" } else { s });
    match (browser, system) {
        (Some(b), Some(s)) => format!("{b} on {s}"),
        (Some(b), None) => b.to_string(),
        (None, Some(s)) => s.to_string(),
        (None, None) => "A browser".to_string(),
    }
}
