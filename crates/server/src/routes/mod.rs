//! One module per resource. Each exposes `router()`; handlers carry
//! `#[utoipa::path]` so the OpenAPI document lists exactly what is routed.

mod accounts;
mod activity;
mod adapter_detect;
mod adapters;
mod agent_secrets;
mod agents;
mod approvals;
mod attachments;
mod attention;
mod board_keys;
mod chats;
pub(crate) mod chief;
mod comments;
mod companies;
mod company_branding;
mod company_port;
mod company_port_export;
mod context;
mod context_quota;
mod cost_views;
mod costs;
mod decisions;
mod documents;
mod events;
mod folders;
mod goals;
mod health;
mod heartbeats;
mod identity;
mod inbox;
mod inbox_state;
mod instructions;
mod interactions;
mod interrupt;
mod invites;
mod issues;
mod keys;
mod labels;
mod mcp;
mod members;
mod model_servers;
mod projects;
mod prompt_preview;
mod push;
mod revisions;
mod routine_triggers;
mod routines;
mod run_links;
mod secrets;
mod sessions;
pub(crate) mod skills;
mod tree_control;
mod wakes;
mod work_products;
mod workspace_ops;
mod workspaces;

use axum::http::{StatusCode, Uri};
use utoipa_axum::router::OpenApiRouter;

use crate::error::ApiError;
use crate::AppState;
pub(crate) use invites::expiry;

#[cfg(not(test))]
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(health::router())
        .merge(identity::router())
        .merge(accounts::router())
        .merge(members::router())
        .merge(invites::router())
        .merge(board_keys::router())
        .merge(companies::router())
        .merge(company_branding::router())
        .merge(company_port::router())
        .merge(agents::router())
        .merge(goals::router())
        .merge(projects::router())
        .merge(workspaces::router())
        .merge(workspace_ops::router())
        .merge(issues::router())
        .merge(comments::router())
        .merge(chats::router())
        .merge(chief::router())
        .merge(interactions::router())
        .merge(decisions::router())
        .merge(attention::router())
        .merge(labels::router())
        .merge(documents::router())
        .merge(activity::router())
        .merge(keys::router())
        .merge(heartbeats::router())
        .merge(inbox_state::router())
        .merge(tree_control::router())
        .merge(instructions::router())
        .merge(interrupt::router())
        .merge(context::router())
        .merge(context_quota::router())
        .merge(events::router())
        .merge(approvals::router())
        .merge(costs::router())
        .merge(cost_views::router())
        .merge(revisions::router())
        .merge(run_links::router())
        .merge(secrets::router())
        .merge(agent_secrets::router())
        .merge(routines::router())
        .merge(folders::router())
        .merge(routine_triggers::router())
        .merge(push::router())
        .merge(sessions::router())
        .merge(prompt_preview::router())
        .merge(adapter_detect::router())
        .merge(model_servers::router())
        .merge(skills::router())
        .merge(adapters::router())
        .merge(wakes::router())
        .merge(attachments::router())
        .merge(work_products::router())
        .merge(inbox::router())
        .merge(mcp::router())
        .merge(crate::sample::router())
}

/// `{ "ok": true }`: what a deletion answers.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub(crate) struct Acknowledged {
    ok: bool,
}

pub(crate) fn acknowledged() -> axum::Json<Acknowledged> {
    axum::Json(Acknowledged { ok: true })
}

pub async fn not_found(uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("No route for {}", uri.path()),
    )
}
