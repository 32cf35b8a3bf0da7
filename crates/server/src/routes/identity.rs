//! Who a board client is talking as: upstream's `cli-auth/me`, which its CLI's
//! `whoami` reads. This build has one board identity, the local board of a
//! `local_trusted` instance (people and memberships come with authenticated
//! deployments), so `user` and `memberships` are left out.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(me))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BoardIdentity {
    user_id: String,
    /// The local board administers the instance.
    is_instance_admin: bool,
    /// Every company it can act in.
    company_ids: Vec<String>,
    /// How the request was recognised: `local_implicit`, a loopback request
    /// with no credentials.
    source: &'static str,
    /// The board API key used, if any (none exist yet).
    key_id: Option<String>,
}

#[utoipa::path(get, path = "/api/cli-auth/me", tag = "health",
    responses((status = 200, body = BoardIdentity),
        (status = 401, description = "Board authentication required (an agent key was sent)")))]
async fn me(State(app): State<AppState>, caller: Caller) -> ApiResult<Json<BoardIdentity>> {
    if !caller.actor().is_board() {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "Board authentication required",
        ));
    }
    let companies = paperclip_store::companies::list(&app.store).await?;
    Ok(Json(BoardIdentity {
        user_id: caller.actor().id.clone(),
        is_instance_admin: true,
        company_ids: companies.into_iter().map(|c| c.id).collect(),
        source: "local_implicit",
        key_id: None,
    }))
}
