//! Secrets (`/{prefix}/company/secrets`): the company's secrets by name, key
//! and version, never their values. Adding one, rotating it (a new version;
//! agents whose env says `latest` get it on their next run) and deleting it
//! go through upstream's secret routes; the page shows how an agent's env
//! refers to a secret.

use axum::extract::{Path, State};
use maud::{html, Markup};
use paperclip_core::secret_proposal::{ProposalKind, ProposalStatus, SecretProposal};
use paperclip_core::team::Permission;

use crate::fmt::pill;
use crate::{html, layout, store_failure, viewer, PageResult, Web};

#[paperclip_macros::handler]
pub async fn page(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let c = &ctx.company;
    let viewer = viewer::current();
    // The local board manages everything; a person as their role allows.
    let can_manage = viewer.companies.is_none()
        || viewer
            .role_in(&c.id)
            .is_some_and(|r| r.grants(Permission::SecretsManage));
    let secrets = paperclip_store::org::secrets::list(&web.store, &c.id)
        .await
        .map_err(store_failure)?;
    let pending = paperclip_store::org::secret_proposals::list_for_board(
        &web.store,
        &c.id,
        Some(ProposalStatus::Pending),
    )
    .await
    .map_err(store_failure)?;
    let body = html! {
        header.page-head {
            h1 { "Secrets" }
            p.muted { "Stored encrypted (AES-256-GCM) with this instance's master key; values are never shown again, here or through the API." }
        }
        @if !pending.is_empty() {
            (proposals(&pending, can_manage))
        }
        section.card {
            @if secrets.is_empty() {
                p.muted #no-secrets { "No secrets yet." }
            } @else {
                table.secrets #secrets {
                    thead { tr { th { "Name" } th { "Key" } th { "Version" } th { "Status" } th { "Updated" } @if can_manage { th { "" } } } }
                    tbody {
                        @for s in &secrets {
                            tr data-secret-id=(s.id) {
                                td { (s.name) br; code.muted title="Its secretId, for an agent's env" { (s.id) } }
                                td { code { (s.key) } }
                                td { (s.latest_version) }
                                td { (pill(s.status.as_str())) }
                                td { (s.updated_at.get(..16).unwrap_or(&s.updated_at).replace('T', " ")) }
                                @if can_manage {
                                    td.actions {
                                        button.small type="button" data-secret-rotate=(s.id) data-name=(s.name) { "Rotate" }
                                        " "
                                        button.small.danger type="button" data-secret-delete=(s.id)
                                            data-confirm={"Delete the secret " (s.name) "? Agents that use it will fail to start."} { "Delete" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        section.card {
            h2 { "Using a secret in an agent" }
            p { "In the agent's adapter config, give an environment variable a reference instead of a value:" }
            pre { code { r#""env": { "OPENAI_API_KEY": { "type": "secret_ref", "secretId": "<id>", "version": "latest" } }"# } }
            p.muted { "It is resolved only when the agent's process starts, and the value is removed from run logs." }
        }
    };
    let fixed = html! {
        @if can_manage {
            form.card #secret-form data-api-form="new-secret" data-company-id=(c.id) autocomplete="off" {
                h2 { "Add a secret" }
                label { "Name" input name="name" required maxlength="200" placeholder="OpenAI API key"; }
                label { "Value" input name="value" type="password" required autocomplete="new-password"; }
                label { "Description" input name="description" maxlength="500"; }
                div.actions { button.primary type="submit" { "Add secret" } }
            }
        }
    };
    html(layout::page_with(
        &ctx,
        "company/secrets",
        "Secrets",
        body,
        fixed,
    ))
}

/// What agents asked for and the board has not answered: a new secret (its
/// value already sealed, never shown) or access to an existing one. Approve
/// and Reject call upstream's proposal routes; a rejection needs a reason,
/// which the agent reads.
fn proposals(pending: &[SecretProposal], can_manage: bool) -> Markup {
    let text = |v: &serde_json::Value, key: &str| v[key].as_str().unwrap_or("").to_string();
    html! {
        section.card #secret-proposals {
            h2 { "Asked for by agents" }
            p.muted { "An agent proposes a secret it needs, or access to one the company has. Nothing is usable until you approve it." }
            ul.plain {
                @for p in pending {
                    li data-proposal-id=(p.id) {
                        strong { (text(&p.proposed_by, "name")) }
                        @match p.kind {
                            ProposalKind::Secret => {
                                " proposes a new secret "
                                code { (p.proposed_name.as_deref().unwrap_or("")) }
                            }
                            ProposalKind::Binding => {
                                " asks for "
                                code { (p.secret_name.as_deref().or(p.secret_proposal_name.as_deref()).unwrap_or("a secret")) }
                                @if let Some(path) = &p.config_path { " as " code { (path) } }
                                @let target = text(&p.target, "name");
                                @if !target.is_empty() { " for " (target) }
                            }
                        }
                        @let issue = text(&p.origin_issue, "key");
                        @if !issue.is_empty() { " (on " (issue) ")" }
                        p { (p.justification) }
                        p.muted { "Expires " (p.expires_at.get(..10).unwrap_or(&p.expires_at)) }
                        @if can_manage {
                            div.actions {
                                button.small.primary type="button" data-proposal-approve=(p.id) data-company-id=(p.company_id) { "Approve" }
                                " "
                                button.small.danger type="button" data-proposal-reject=(p.id) data-company-id=(p.company_id) { "Reject" }
                            }
                        }
                    }
                }
            }
        }
    }
}
