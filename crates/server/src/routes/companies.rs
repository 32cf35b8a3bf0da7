use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::activity::Action;
use paperclip_core::input::{BrandingPatch, CompanyPatch, NewCompany};
use paperclip_core::limits::Validate;
use paperclip_core::model::Company;
use paperclip_store::org::companies;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::company_branding::{branding_patch, ceo_or_board, forget};
use crate::access;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::parse_json;
use crate::limits::{violation, ValidJson};
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_companies, create_company))
        .routes(routes!(company_stats))
        .routes(routes!(get_company, update_company, delete_company))
        .routes(routes!(archive_company))
}

/// The board sees every company; an agent sees its own.
#[utoipa::path(get, path = "/api/companies", tag = "companies",
    responses((status = 200, body = [Company])))]
#[paperclip_macros::handler]
async fn list_companies(
    State(app): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<Company>>> {
    let mut list = companies::list(&app.store).await?;
    list.retain(|c| caller.sees_company(&c.id));
    Ok(Json(list))
}

/// Agents and tasks per company, keyed by company id (board only); a
/// company with neither is left out, as upstream does.
#[utoipa::path(get, path = "/api/companies/stats", tag = "companies",
    responses((status = 200, body = BTreeMap<String, companies::Stats>),
        (status = 403, description = "Board access required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn company_stats(
    State(app): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<BTreeMap<String, companies::Stats>>> {
    caller.require_board()?;
    let mut stats = companies::stats(&app.store).await?;
    stats.retain(|id, _| caller.sees_company(id));
    Ok(Json(stats))
}

#[utoipa::path(post, path = "/api/companies", tag = "companies", request_body = NewCompany,
    responses((status = 201, body = Company), (status = 400, description = "Validation error", body = crate::error::ErrorBody),
        (status = 403, description = "Board access required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn create_company(
    State(app): State<AppState>,
    caller: Caller,
    ValidJson(input): ValidJson<NewCompany>,
) -> ApiResult<(StatusCode, Json<Company>)> {
    // On an authenticated instance only administrators found companies; the
    // founder becomes the company's owner.
    let actor = caller.require_instance_admin()?;
    Ok((
        StatusCode::CREATED,
        Json(companies::create(&app.store, actor, input).await?),
    ))
}

#[utoipa::path(get, path = "/api/companies/{companyId}", tag = "companies",
    params(("companyId" = String, Path)),
    responses((status = 200, body = Company), (status = 404, description = "Company not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_company(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Company>> {
    Ok(Json(access::company(&app, &caller, &id).await?))
}

/// The board changes any setting; the company's CEO agent only its
/// branding (name, description, logo), as upstream's schema for agents.
#[utoipa::path(patch, path = "/api/companies/{companyId}", tag = "companies",
    params(("companyId" = String, Path)), request_body = CompanyPatch,
    responses((status = 200, body = Company), (status = 400, description = "Validation error", body = crate::error::ErrorBody),
        (status = 403, description = "Neither the board nor the company's CEO agent", body = crate::error::ErrorBody),
        (status = 404, description = "Company not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn update_company(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> ApiResult<Json<Company>> {
    let (actor, patch) = if caller.agent_id().is_some() {
        let actor = ceo_or_board(&app, &caller, &id, "company settings").await?;
        let patch: BrandingPatch = parse_json(&body)?;
        patch.validate().map_err(violation)?;
        (actor, branding_patch(patch)?)
    } else {
        let actor = caller.require_board()?;
        let patch: CompanyPatch = parse_json(&body)?;
        patch.validate().map_err(violation)?;
        (actor, patch)
    };
    let (company, released) =
        companies::update_as(&app.store, actor, &id, patch, Action::CompanyUpdated).await?;
    forget(&app, released).await;
    Ok(Json(company))
}

#[utoipa::path(delete, path = "/api/companies/{companyId}", tag = "companies",
    params(("companyId" = String, Path)),
    responses((status = 200, body = super::Acknowledged, description = "Deleted with everything it owned"), (status = 404, description = "Company not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn delete_company(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<super::Acknowledged>> {
    caller.require_board()?;
    let mut objects = super::attachments::objects_before_delete(&app, &id, false).await;
    if app.security.limits.s3.is_some() {
        objects.extend(
            paperclip_store::org::company_assets::s3_objects(&app.store, &id)
                .await
                .unwrap_or_default(),
        );
    }
    companies::delete(&app.store, &id).await?;
    super::attachments::forget_files(&app, &id, None, objects).await;
    Ok(super::acknowledged())
}

#[utoipa::path(post, path = "/api/companies/{companyId}/archive", tag = "companies",
    params(("companyId" = String, Path)),
    responses((status = 200, body = Company), (status = 404, description = "Company not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn archive_company(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Company>> {
    let actor = caller.require_board()?;
    Ok(Json(companies::archive(&app.store, actor, &id).await?))
}
