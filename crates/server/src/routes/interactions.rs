//! Issue-thread interactions: an agent asks the board (questions, a
//! confirmation, a plan approval, suggested tasks, verdicts) and a person
//! (or, where the card allows, an agent) resolves it.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::interaction::{
    AcceptInteraction, Interaction, InteractionReason, NewInteraction, RespondInteraction,
    VerdictsInteraction,
};
use paperclip_core::interaction_payload::normalize;
use paperclip_store::thread::interactions::{self, Resolve};
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_interactions, create_interaction))
        .routes(routes!(accept))
        .routes(routes!(reject))
        .routes(routes!(respond))
        .routes(routes!(verdicts))
        .routes(routes!(withdraw))
        .routes(routes!(skip))
        .routes(routes!(cancel))
}

#[utoipa::path(get, path = "/api/issues/{id}/interactions", tag = "interactions",
    params(("id" = String, Path)), responses((status = 200, body = [Interaction])))]
#[paperclip_macros::handler]
async fn list_interactions(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Interaction>>> {
    let issue = access::issue(&app, &caller, &id).await?;
    Ok(Json(interactions::list(&app.store, &issue).await?))
}

/// Puts a card in the task's thread. An agent names its run; a repeated
/// `idempotencyKey` returns the card it made.
#[utoipa::path(post, path = "/api/issues/{id}/interactions", tag = "interactions",
    params(("id" = String, Path)), request_body = NewInteraction,
    responses((status = 201, body = Interaction), (status = 401, description = "Agent run id required"),
        (status = 409, description = "The task is closed, or the key was used for another card"),
        (status = 422, description = "A reference or rule is broken")))]
#[paperclip_macros::handler]
async fn create_interaction(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<NewInteraction>,
) -> ApiResult<(StatusCode, Json<Interaction>)> {
    let issue = access::issue(&app, &caller, &id).await?;
    let actor = caller.require_run()?;
    let payload = normalize(input.kind, &input.payload).map_err(|e| match e.rule {
        true => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, e.message),
        false => ApiError::validation(
            json!([{ "code": "invalid_value", "path": e.path, "message": e.message }]),
        ),
    })?;
    let (card, _) = interactions::create(&app.store, actor, &issue.id, input, payload).await?;
    Ok((StatusCode::CREATED, Json(card)))
}

async fn resolve(
    app: &AppState,
    caller: &Caller,
    id: &str,
    card: &str,
    input: Resolve,
) -> ApiResult<Json<Interaction>> {
    let issue = access::issue(app, caller, id).await?;
    let resolved =
        interactions::resolve(&app.store, caller.actor(), &issue.id, card, input).await?;
    Ok(Json(resolved))
}

#[utoipa::path(post, path = "/api/issues/{id}/interactions/{interactionId}/accept", tag = "interactions",
    params(("id" = String, Path), ("interactionId" = String, Path)), request_body = AcceptInteraction,
    responses((status = 200, body = Interaction), (status = 403, description = "Not this caller's to resolve"),
        (status = 409, description = "Already resolved or superseded")))]
#[paperclip_macros::handler]
async fn accept(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, card)): Path<(String, String)>,
    JsonBody(input): JsonBody<AcceptInteraction>,
) -> ApiResult<Json<Interaction>> {
    resolve(&app, &caller, &id, &card, Resolve::Accept(input)).await
}

#[utoipa::path(post, path = "/api/issues/{id}/interactions/{interactionId}/reject", tag = "interactions",
    params(("id" = String, Path), ("interactionId" = String, Path)), request_body = InteractionReason,
    responses((status = 200, body = Interaction)))]
#[paperclip_macros::handler]
async fn reject(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, card)): Path<(String, String)>,
    JsonBody(input): JsonBody<InteractionReason>,
) -> ApiResult<Json<Interaction>> {
    resolve(&app, &caller, &id, &card, Resolve::Reject(input.reason)).await
}

#[utoipa::path(post, path = "/api/issues/{id}/interactions/{interactionId}/respond", tag = "interactions",
    params(("id" = String, Path), ("interactionId" = String, Path)), request_body = RespondInteraction,
    responses((status = 200, body = Interaction)))]
#[paperclip_macros::handler]
async fn respond(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, card)): Path<(String, String)>,
    JsonBody(input): JsonBody<RespondInteraction>,
) -> ApiResult<Json<Interaction>> {
    let input = Resolve::Respond {
        answers: input.answers,
        summary_markdown: input.summary_markdown,
    };
    resolve(&app, &caller, &id, &card, input).await
}

#[utoipa::path(post, path = "/api/issues/{id}/interactions/{interactionId}/verdicts", tag = "interactions",
    params(("id" = String, Path), ("interactionId" = String, Path)), request_body = VerdictsInteraction,
    responses((status = 200, body = Interaction)))]
#[paperclip_macros::handler]
async fn verdicts(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, card)): Path<(String, String)>,
    JsonBody(input): JsonBody<VerdictsInteraction>,
) -> ApiResult<Json<Interaction>> {
    resolve(&app, &caller, &id, &card, Resolve::Verdicts(input.verdicts)).await
}

#[utoipa::path(post, path = "/api/issues/{id}/interactions/{interactionId}/withdraw", tag = "interactions",
    params(("id" = String, Path), ("interactionId" = String, Path)), request_body = InteractionReason,
    responses((status = 200, body = Interaction)))]
#[paperclip_macros::handler]
async fn withdraw(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, card)): Path<(String, String)>,
    JsonBody(input): JsonBody<InteractionReason>,
) -> ApiResult<Json<Interaction>> {
    resolve(&app, &caller, &id, &card, Resolve::Withdraw(input.reason)).await
}

#[utoipa::path(post, path = "/api/issues/{id}/interactions/{interactionId}/skip", tag = "interactions",
    params(("id" = String, Path), ("interactionId" = String, Path)), request_body = InteractionReason,
    responses((status = 200, body = Interaction)))]
#[paperclip_macros::handler]
async fn skip(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, card)): Path<(String, String)>,
    JsonBody(input): JsonBody<InteractionReason>,
) -> ApiResult<Json<Interaction>> {
    resolve(&app, &caller, &id, &card, Resolve::Skip(input.reason)).await
}

#[utoipa::path(post, path = "/api/issues/{id}/interactions/{interactionId}/cancel", tag = "interactions",
    params(("id" = String, Path), ("interactionId" = String, Path)), request_body = InteractionReason,
    responses((status = 200, body = Interaction)))]
#[paperclip_macros::handler]
async fn cancel(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, card)): Path<(String, String)>,
    JsonBody(input): JsonBody<InteractionReason>,
) -> ApiResult<Json<Interaction>> {
    resolve(&app, &caller, &id, &card, Resolve::Cancel(input.reason)).await
}
