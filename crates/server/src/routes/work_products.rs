//! Work products (upstream's `/api/issues/:id/work-products` and
//! `/api/work-products/:id`): pull requests, branches, commits, previews and
//! artifacts a task produced. An agent records them for its own run only.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::actor::Actor;
use paperclip_core::work_product::{NewWorkProduct, WorkProduct, WorkProductPatch};
use paperclip_store::thread::work_products;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_work_products, create_work_product))
        .routes(routes!(update_work_product, delete_work_product))
}

/// An agent's products are its current run's: naming another run is a 403.
fn own_run(actor: &Actor, named: Option<&str>) -> ApiResult<()> {
    if actor.agent_id().is_some() {
        if let Some(run) = named {
            if actor.run_id.as_deref() != Some(run) {
                return Err(ApiError::forbidden(
                    "An agent may record work products only for its own run",
                ));
            }
        }
    }
    Ok(())
}

#[utoipa::path(get, path = "/api/issues/{id}/work-products", tag = "issues",
    params(("id" = String, Path)), responses((status = 200, body = [WorkProduct])))]
#[paperclip_macros::handler]
async fn list_work_products(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<WorkProduct>>> {
    let issue = access::issue(&app, &caller, &id).await?;
    Ok(Json(work_products::list(&app.store, &issue.id).await?))
}

#[utoipa::path(post, path = "/api/issues/{id}/work-products", tag = "issues",
    params(("id" = String, Path)), request_body = NewWorkProduct,
    responses((status = 201, body = WorkProduct), (status = 400, description = "Invalid input"),
        (status = 403, description = "An agent named a run not its own"),
        (status = 422, description = "A paperclip artifact without its attachment, or a foreign run or project")))]
#[paperclip_macros::handler]
async fn create_work_product(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(mut input): ValidJson<NewWorkProduct>,
) -> ApiResult<(StatusCode, Json<WorkProduct>)> {
    let issue = access::issue(&app, &caller, &id).await?;
    let actor = caller.require_run()?;
    own_run(actor, input.created_by_run_id.as_deref())?;
    if actor.agent_id().is_some() {
        input.created_by_run_id = actor.run_id.clone();
    }
    let created = work_products::create(&app.store, actor, &issue, &input).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

#[utoipa::path(patch, path = "/api/work-products/{id}", tag = "issues",
    params(("id" = String, Path)), request_body = WorkProductPatch,
    responses((status = 200, body = WorkProduct), (status = 404, description = "Work product not found")))]
#[paperclip_macros::handler]
async fn update_work_product(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(patch): ValidJson<WorkProductPatch>,
) -> ApiResult<Json<WorkProduct>> {
    let current = work_products::get(&app.store, &id).await?;
    caller.ensure_company(&current.company_id)?;
    let actor = caller.require_run()?;
    if let Some(named) = &patch.created_by_run_id {
        if actor.agent_id().is_some() && named.as_deref() != actor.run_id.as_deref() {
            return Err(ApiError::forbidden(
                "An agent may record work products only for its own run",
            ));
        }
    }
    Ok(Json(
        work_products::update(&app.store, actor, &id, &patch).await?,
    ))
}

#[utoipa::path(delete, path = "/api/work-products/{id}", tag = "issues",
    params(("id" = String, Path)),
    responses((status = 200, body = WorkProduct), (status = 404, description = "Work product not found")))]
#[paperclip_macros::handler]
async fn delete_work_product(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<WorkProduct>> {
    let current = work_products::get(&app.store, &id).await?;
    caller.ensure_company(&current.company_id)?;
    let actor = caller.require_run()?;
    Ok(Json(work_products::delete(&app.store, actor, &id).await?))
}
