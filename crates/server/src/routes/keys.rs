use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::model::AgentApiKey;
use paperclip_store::org::keys;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::{hash_key, new_key, Caller};
use crate::error::ApiResult;
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_keys, create_key))
        .routes(routes!(revoke_key))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct NewKey {
    pub name: String,
}

impl paperclip_core::limits::Validate for NewKey {
    fn validate(&self) -> Result<(), paperclip_core::limits::Violation> {
        paperclip_core::limits::text("name", &self.name, paperclip_core::limits::NAME_MAX_CHARS)
    }
}

/// Creates an API key for the agent. The response is the only place the
/// plaintext `token` ever appears; only its hash is stored.
#[utoipa::path(post, path = "/api/agents/{id}/keys", tag = "agents",
    params(("id" = String, Path)), request_body = NewKey,
    responses((status = 201, body = AgentApiKey), (status = 403, description = "Board access required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn create_key(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<NewKey>,
) -> ApiResult<(StatusCode, Json<AgentApiKey>)> {
    let actor = caller.require_board()?;
    let token = new_key();
    let mut key = keys::create(&app.store, actor, &id, &input.name, &hash_key(&token)).await?;
    key.token = Some(token);
    Ok((StatusCode::CREATED, Json(key)))
}

#[utoipa::path(get, path = "/api/agents/{id}/keys", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = [AgentApiKey])))]
#[paperclip_macros::handler]
async fn list_keys(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<AgentApiKey>>> {
    caller.require_board()?;
    paperclip_store::org::agents::get(&app.store, &id).await?;
    Ok(Json(keys::list(&app.store, &id).await?))
}

#[utoipa::path(delete, path = "/api/agents/{id}/keys/{keyId}", tag = "agents",
    params(("id" = String, Path), ("keyId" = String, Path)),
    responses((status = 200, body = AgentApiKey), (status = 404, description = "API key not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn revoke_key(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, key_id)): Path<(String, String)>,
) -> ApiResult<Json<AgentApiKey>> {
    let actor = caller.require_board()?;
    Ok(Json(keys::revoke(&app.store, actor, &id, &key_id).await?))
}
