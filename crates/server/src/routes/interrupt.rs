//! Interrupt the run working on a task, so the board's newest comment reaches
//! the agent now rather than after the current turn (upstream's
//! `queued-comments/interrupt`; its queue ids and revisions are not modelled
//! here: every comment already waits as the task's queued run).

use axum::extract::{Path, State};
use axum::Json;
use paperclip_core::model::HeartbeatRun;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::JsonBody;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(interrupt))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InterruptBody {
    /// The run the person means to interrupt; 409 if another (or none) is
    /// working on the task now.
    target_run_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InterruptResult {
    /// The run that was stopped (`cancelled`), if one was running.
    interrupted_run: Option<HeartbeatRun>,
    /// The run that carries on with the new comments.
    next_run: Option<HeartbeatRun>,
}

/// Stops the run working on the task and starts the next one with the
/// comments it has not seen. Board only.
#[utoipa::path(post, path = "/api/issues/{id}/queued-comments/interrupt", tag = "issues",
    params(("id" = String, Path)), request_body = InterruptBody,
    responses((status = 200, body = InterruptResult), (status = 403, description = "Board access required"),
        (status = 409, description = "The target run is no longer working on the task")))]
#[paperclip_macros::handler]
async fn interrupt(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<InterruptBody>,
) -> ApiResult<Json<InterruptResult>> {
    let actor = caller.require_board()?;
    let issue = access::issue(&app, &caller, &id).await?;
    let done = app
        .runtime
        .interrupt(actor, &issue, body.target_run_id.as_deref())
        .await?;
    Ok(Json(InterruptResult {
        interrupted_run: done.stopped,
        next_run: done.next,
    }))
}
