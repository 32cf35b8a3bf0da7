//! A company's branding (upstream's routes): its logo uploaded as an asset
//! (`POST /api/companies/{companyId}/logo`), its name, description and logo
//! set by the board or the company's CEO agent
//! (`PATCH /api/companies/{companyId}/branding`), and an asset's bytes
//! (`GET /api/assets/{assetId}/content`, a company's `logoUrl`).

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use paperclip_core::activity::Action;
use paperclip_core::actor::Actor;
use paperclip_core::agent::AgentRole;
use paperclip_core::asset::{is_logo_type, Asset, LOGO_NAMESPACE};
use paperclip_core::attachment::{check_content, key_tail, normalize_content_type, serves_inline};
use paperclip_core::input::{BrandingPatch, CompanyPatch};
use paperclip_core::model::Company;
use paperclip_store::org::companies;
use paperclip_store::org::company_assets::{self, NewAsset, Released};
use serde_json::json;
use sha2::{Digest, Sha256};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::attachments::{clean_filename, file_headers, for_provider, for_writes, human_size, set};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(upload_logo))
        .routes(routes!(update_branding))
        .routes(routes!(asset_content))
}

/// Upstream's rule for a company's branding and settings: the board, or
/// the company's own CEO agent.
pub(super) async fn ceo_or_board<'c>(
    app: &AppState,
    caller: &'c Caller,
    company_id: &str,
    capability: &str,
) -> ApiResult<&'c Actor> {
    caller.ensure_company(company_id)?;
    let Some(agent_id) = caller.agent_id() else {
        return Ok(caller.actor());
    };
    let agent = paperclip_store::org::agents::get(&app.store, agent_id).await?;
    if agent.company_id != company_id {
        return Err(ApiError::forbidden(
            "Agent key cannot access another company",
        ));
    }
    if agent.role != AgentRole::Ceo {
        return Err(ApiError::forbidden(format!(
            "Only CEO agents can manage {capability}"
        )));
    }
    Ok(caller.actor())
}

/// Upstream's branding body must name something to change.
pub(super) fn branding_patch(patch: BrandingPatch) -> ApiResult<CompanyPatch> {
    if patch.name.is_none() && patch.description.is_none() && patch.logo_asset_id.is_none() {
        return Err(ApiError::validation(json!([{
            "code": "custom",
            "path": [],
            "message": "At least one branding field must be provided",
        }])));
    }
    Ok(patch.into())
}

/// Deletes the file of a logo a committed change let go (best effort: the
/// row is gone, so the file is never served again).
pub(super) async fn forget(app: &AppState, released: Option<Released>) {
    let Some(r) = released else { return };
    match for_provider(app, &r.provider) {
        Some(store) => {
            if let Err(e) = store.delete(&r.company_id, &r.object_key).await {
                tracing::warn!(error = %e, "could not delete a replaced logo");
            }
        }
        None => tracing::warn!("a replaced logo in a bucket this instance does not use"),
    }
}

fn unprocessable(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
}

/// Uploads an image to become the company's logo: a `multipart/form-data`
/// body with the image in field `file` (PNG, JPEG, WebP, GIF or SVG, within
/// the attachment limit). It becomes the logo once the branding names it.
#[utoipa::path(post, path = "/api/companies/{companyId}/logo", tag = "companies",
    params(("companyId" = String, Path)),
    responses((status = 201, body = Asset), (status = 400, description = "Missing file field 'file' or a malformed body"),
        (status = 404, description = "Company not found"),
        (status = 413, description = "The body is far past the limit"),
        (status = 422, description = "Empty, too large, not an image type a logo may be, or not what its type says")))]
#[paperclip_macros::handler]
async fn upload_logo(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<(StatusCode, Json<Asset>)> {
    crate::access::company_scope(&app, &caller, &company_id).await?;
    let actor = caller.actor().clone();
    let max = app.security.limits.attachment_max_bytes;
    let (_, file) = crate::multipart::with_one_file(&headers, body).await?;
    if file.data.len() as u64 > max {
        return Err(unprocessable(format!(
            "Image is larger than the {} limit",
            human_size(max)
        ))
        .with_details(json!({ "maxBytes": max })));
    }
    let filename = file.filename.as_deref().map(clean_filename);
    let content_type = normalize_content_type(file.content_type.as_deref(), filename.as_deref());
    if !is_logo_type(&content_type) {
        let shown = if content_type.is_empty() {
            "unknown"
        } else {
            &content_type
        };
        return Err(unprocessable(format!("Unsupported image type: {shown}")));
    }
    if file.data.is_empty() {
        return Err(unprocessable("Image is empty"));
    }
    check_content(&content_type, &file.data).map_err(|reason| {
        unprocessable(reason).with_details(
            json!({ "code": "attachment_type_mismatch", "contentType": content_type }),
        )
    })?;
    let now = chrono::Utc::now();
    let object_key = format!(
        "{company_id}/{LOGO_NAMESPACE}/{}/{}-{}",
        now.format("%Y/%m/%d"),
        uuid::Uuid::new_v4(),
        key_tail(filename.as_deref())
    );
    let disk = for_writes(&app);
    disk.put(&company_id, &object_key, &file.data)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "could not store a logo");
            ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "Could not store the image",
            )
        })?;
    let new = NewAsset {
        id: paperclip_store::new_id(),
        company_id: company_id.clone(),
        provider: disk.provider().to_string(),
        object_key: object_key.clone(),
        content_type,
        byte_size: file.data.len() as i64,
        sha256: hex::encode(Sha256::digest(&file.data)),
        original_filename: filename,
        namespace: LOGO_NAMESPACE,
    };
    match company_assets::create(&app.store, &actor, new).await {
        Ok(asset) => Ok((StatusCode::CREATED, Json(asset))),
        Err(err) => {
            let _ = disk.delete(&company_id, &object_key).await;
            Err(err.into())
        }
    }
}

/// Sets the company's name, description or logo (`logoAssetId`: an asset
/// uploaded to `.../logo`, or null to remove the logo). Only these fields;
/// the board or the company's CEO agent.
#[utoipa::path(patch, path = "/api/companies/{companyId}/branding", tag = "companies",
    params(("companyId" = String, Path)), request_body = BrandingPatch,
    responses((status = 200, body = Company), (status = 400, description = "Another field, or none"),
        (status = 403, description = "Neither the board nor the company's CEO agent"),
        (status = 404, description = "Company or logo asset not found"),
        (status = 422, description = "The logo asset is another company's")))]
#[paperclip_macros::handler]
async fn update_branding(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(patch): ValidJson<BrandingPatch>,
) -> ApiResult<Json<Company>> {
    let actor = ceo_or_board(&app, &caller, &id, "company branding").await?;
    let patch = branding_patch(patch)?;
    let (company, released) = companies::update_as(
        &app.store,
        actor,
        &id,
        patch,
        Action::CompanyBrandingUpdated,
    )
    .await?;
    forget(&app, released).await;
    Ok(Json(company))
}

/// An asset's bytes: images inline, with a policy that keeps an SVG's
/// scripts from running; anything else as a download.
#[utoipa::path(get, path = "/api/assets/{assetId}/content", tag = "companies",
    params(("assetId" = String, Path)),
    responses((status = 200, description = "The file"), (status = 404, description = "Asset not found")))]
#[paperclip_macros::handler]
async fn asset_content(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let asset = company_assets::get(&app.store, &id).await?;
    caller.ensure_company(&asset.company_id)?;
    let store = for_provider(&app, &asset.provider)
        .ok_or_else(|| ApiError::not_found("Asset content not found"))?;
    let size = u64::try_from(asset.byte_size).unwrap_or(0);
    let chunks = store
        .read(&asset.company_id, &asset.object_key, size, 0, size)
        .await
        .map_err(|e| {
            tracing::warn!(asset = %asset.asset_id, error = %e, "asset content unreadable");
            ApiError::not_found("Asset content not found")
        })?;
    let inline = serves_inline(&asset.content_type);
    let mut out = file_headers(
        &asset.content_type,
        inline,
        asset.original_filename.as_deref(),
    );
    set(&mut out, header::CONTENT_LENGTH, &size.to_string());
    Ok((StatusCode::OK, out, Body::from_stream(chunks)).into_response())
}
