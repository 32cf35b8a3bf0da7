//! Members (`/{prefix}/company/members`): who belongs to the company and in
//! what role, and invite links. Owners change roles, suspend and remove;
//! owners and admins invite. On a local trusted instance there is one board
//! and nobody to invite, and the page says how to share the instance.

use axum::extract::{Path, State};
use maud::html;
use paperclip_core::team::{MembershipStatus, Permission, Role};

use crate::fmt::pill;
use crate::{html, layout, store_failure, viewer, PageResult, Web};

#[paperclip_macros::handler]
pub async fn page(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let c = &ctx.company;
    let viewer = viewer::current();
    let Some(_) = &viewer.companies else {
        let body = html! {
            header.page-head { h1 { "Members" } }
            section.card #members-local {
                p { "This instance runs in local trusted mode: the person at this machine is the board, and nobody else can reach it." }
                p { "To share it with a team, start it with " code { "--deployment-mode authenticated" } ": people then sign in, join by invite links and get roles (viewer, operator, admin, owner). See the README, \"Teams\"." }
            }
        };
        return html(layout::page(&ctx, "company/members", "Members", body));
    };
    let role = viewer.role_in(&c.id);
    let can_manage = role.is_some_and(|r| r.grants(Permission::UsersManage));
    let can_invite = role.is_some_and(|r| r.grants(Permission::UsersInvite));
    let members = paperclip_store::org::members::list(&web.store, &c.id)
        .await
        .map_err(store_failure)?;
    let invites = if can_invite {
        paperclip_store::org::members::invites(&web.store, &c.id)
            .await
            .map_err(store_failure)?
    } else {
        Vec::new()
    };
    let now = paperclip_store::now();
    let open: Vec<_> = invites
        .iter()
        .filter(|i| i.unusable(&now).is_none())
        .collect();
    let body = html! {
        header.page-head {
            h1 { "Members" }
            p.muted { (members.len()) " people · your role: " (role.map(Role::as_str).unwrap_or("none")) }
        }
        section.card {
            table.members #members {
                thead { tr { th { "Name" } th { "Email" } th { "Role" } th { "Status" } @if can_manage { th { "" } } } }
                tbody {
                    @for m in &members {
                        tr data-member-id=(m.id) {
                            td { (m.user_name) }
                            td { (m.user_email) }
                            td {
                                @if can_manage {
                                    select data-member-role=(m.id) aria-label={"Role of " (m.user_name)} {
                                        @for r in Role::ALL.iter().rev() {
                                            option value=(r.as_str()) selected[*r == m.role] { (r.as_str()) }
                                        }
                                    }
                                } @else { (m.role.as_str()) }
                            }
                            td { (pill(m.status.as_str())) }
                            @if can_manage {
                                td.actions {
                                    @if m.status == MembershipStatus::Active {
                                        button.small type="button" data-member-status="suspended" data-member=(m.id) { "Suspend" }
                                    } @else {
                                        button.small type="button" data-member-status="active" data-member=(m.id) { "Reactivate" }
                                    }
                                    " "
                                    button.small.danger type="button" data-member-remove=(m.id)
                                        data-confirm={"Remove " (m.user_name) " from " (c.name) "?"} { "Remove" }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if can_invite {
            section.card #open-invites {
                h2 { "Open invites" }
                @if open.is_empty() { p.muted { "None." } }
                ul {
                    @for i in &open {
                        li { (i.role.as_str()) " · expires " (i.expires_at.get(..16).unwrap_or(&i.expires_at).replace('T', " ")) " "
                            button.small type="button" data-invite-revoke=(i.id) { "Revoke" } }
                    }
                }
            }
        }
    };
    let fixed = html! {
        @if can_invite {
            form.card #invite-form data-api-form="invite" data-company-id=(c.id) {
                h2 { "Invite someone" }
                label { "Role"
                    select name="humanRole" {
                        option value="viewer" { "viewer: reads everything, changes nothing" }
                        option value="operator" selected { "operator: works on tasks and wakes agents" }
                        option value="admin" { "admin: also hires agents, settings, invites" }
                        @if role == Some(Role::Owner) { option value="owner" { "owner: everything" } }
                    }
                }
                div.actions { button.primary type="submit" { "Create invite link" } }
                div #invite-link hidden {
                    p { "Send this link to the person (it works once, for 72 hours, and is not shown again):" }
                    div.copy-row { code #invite-url {} }
                }
            }
        }
    };
    html(layout::page_with(
        &ctx,
        "company/members",
        "Members",
        body,
        fixed,
    ))
}
