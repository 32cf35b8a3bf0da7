//! Agent Chat on the original's routes: a person's chat with one agent,
//! found (`GET`, or `null`) or opened (`POST`) per agent; and `GET
//! /api/companies/{companyId}/chats`, ours, the person's chats (the original
//! has no list; the board's Chats page needs one). Messages are comments
//! (`comments.rs` checks a chat's rules). On by default here: the original
//! hides Agent Chat behind an experimental setting that defaults off.

use axum::extract::{Path, State};
use axum::Json;
use paperclip_core::model::{Agent, Issue};
use paperclip_store::issues::chat;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_chat, open_chat))
        .routes(routes!(list_chats))
}

/// The person calling: a chat belongs to a board person, never an agent.
fn person(caller: &Caller) -> ApiResult<&str> {
    caller
        .actor()
        .user_id()
        .ok_or_else(|| ApiError::forbidden("Board user access required"))
}

async fn agent_of(app: &AppState, company_id: &str, agent_ref: &str) -> ApiResult<Agent> {
    paperclip_store::org::agents::by_key(&app.store, company_id, agent_ref)
        .await?
        .or(
            // A name as typed ("Coder") reaches the agent by its url key.
            paperclip_store::org::agents::by_key(
                &app.store,
                company_id,
                &paperclip_core::naming::url_key(agent_ref),
            )
            .await?,
        )
        .ok_or_else(|| ApiError::not_found("Agent not found"))
}

#[utoipa::path(get, path = "/api/companies/{companyId}/chats/{agentRef}", tag = "chats",
    params(("companyId" = String, Path), ("agentRef" = String, Path, description = "Agent id or url key")),
    responses((status = 200, description = "The person's chat with the agent, or null", body = Option<Issue>),
        (status = 403, description = "Not a board person", body = crate::error::ErrorBody),
        (status = 404, description = "Company or agent not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_chat(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, agent_ref)): Path<(String, String)>,
) -> ApiResult<Json<Option<Issue>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let user = person(&caller)?;
    let agent = agent_of(&app, &company_id, &agent_ref).await?;
    Ok(Json(
        chat::find(&app.store, &company_id, &agent.id, user).await?,
    ))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/chats/{agentRef}", tag = "chats",
    params(("companyId" = String, Path), ("agentRef" = String, Path, description = "Agent id or url key")),
    responses((status = 200, description = "The person's chat with the agent, opened if new", body = Issue),
        (status = 403, description = "Not a board person", body = crate::error::ErrorBody),
        (status = 404, description = "Company or agent not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn open_chat(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, agent_ref)): Path<(String, String)>,
) -> ApiResult<Json<Issue>> {
    access::company_scope(&app, &caller, &company_id).await?;
    person(&caller)?;
    let agent = agent_of(&app, &company_id, &agent_ref).await?;
    Ok(Json(
        chat::open(&app.store, caller.actor(), &company_id, &agent.id).await?,
    ))
}

/// A person's chat as listed: the chat, its agent, its last message.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ListedChat {
    #[serde(flatten)]
    issue: Issue,
    agent_name: String,
    last_message: Option<String>,
    last_message_at: Option<String>,
    last_message_by_agent: bool,
}

#[utoipa::path(get, path = "/api/companies/{companyId}/chats", tag = "chats",
    params(("companyId" = String, Path)),
    responses((status = 200, description = "The calling person's chats, latest first", body = [ListedChat]),
        (status = 403, description = "Not a board person", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn list_chats(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<ListedChat>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let user = person(&caller)?;
    let list = chat::list_for(&app.store, &company_id, user).await?;
    Ok(Json(
        list.into_iter()
            .map(|c| ListedChat {
                issue: c.issue,
                agent_name: c.agent_name,
                last_message: c.last_body,
                last_message_at: c.last_at,
                last_message_by_agent: c.last_by_agent,
            })
            .collect(),
    ))
}

/// The chat rules of a message posted on a chat by a person: only the chat's
/// own person writes there, and every message carries a request id so a
/// retry cannot send it twice.
pub(crate) fn check_message(
    caller: &Caller,
    issue: &Issue,
    client_request_id: Option<&str>,
) -> ApiResult<()> {
    if issue.conversation_agent_id.is_none() || !caller.actor().is_board() {
        return Ok(());
    }
    if caller.actor().user_id() != issue.conversation_user_id.as_deref() {
        return Err(ApiError::forbidden(
            "Only the chat's owner can send messages or start a new session",
        ));
    }
    if client_request_id.is_none_or(|id| id.trim().is_empty()) {
        return Err(ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "Chat messages require a clientRequestId for safe retries",
        ));
    }
    Ok(())
}
