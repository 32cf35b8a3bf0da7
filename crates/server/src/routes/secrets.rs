//! Company secrets (upstream's `/api/companies/:id/secrets`, `/api/secrets/:id`).
//! Values go in through create and rotate, sealed with the instance's master
//! key before they reach the database, and never come back out: every
//! answer is the secret's metadata. Who may manage them is decided in
//! `access::secrets_admin` alone.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::company_secret::{
    CompanySecret, NewSecret, SecretCatalogEntry, SecretPatch, SecretRotation,
};
use paperclip_runtime::vault::Vault;
use paperclip_store::org::secrets;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_secrets, create_secret))
        .routes(routes!(secret_catalog))
        .routes(routes!(secret_providers))
        .routes(routes!(update_secret, delete_secret))
        .routes(routes!(rotate_secret))
}

/// Upstream's provider descriptor, for the one provider offered.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ProviderDescriptor {
    id: &'static str,
    label: &'static str,
    requires_external_ref: bool,
    supports_managed_values: bool,
    supports_external_references: bool,
    configured: bool,
}

#[utoipa::path(get, path = "/api/companies/{companyId}/secrets", tag = "secrets",
    params(("companyId" = String, Path)), responses((status = 200, body = [CompanySecret])))]
#[paperclip_macros::handler]
async fn list_secrets(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<CompanySecret>>> {
    access::secrets_admin(&caller, &company_id)?;
    paperclip_store::org::companies::exists(&app.store, &company_id).await?;
    Ok(Json(secrets::list(&app.store, &company_id).await?))
}

/// Names and ids only, so an agent can wire a reference without a value
/// or the board's list.
#[utoipa::path(get, path = "/api/companies/{companyId}/secrets/catalog", tag = "secrets",
    params(("companyId" = String, Path)), responses((status = 200, body = [SecretCatalogEntry])))]
#[paperclip_macros::handler]
async fn secret_catalog(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<SecretCatalogEntry>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let list = secrets::list(&app.store, &company_id).await?;
    Ok(Json(
        list.into_iter()
            .map(|s| SecretCatalogEntry {
                id: s.id,
                name: s.name,
                key: s.key,
                status: s.status,
            })
            .collect(),
    ))
}

#[utoipa::path(get, path = "/api/companies/{companyId}/secret-providers", tag = "secrets",
    params(("companyId" = String, Path)), responses((status = 200, body = [ProviderDescriptor])))]
#[paperclip_macros::handler]
async fn secret_providers(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Vec<ProviderDescriptor>>> {
    access::secrets_admin(&caller, &company_id)?;
    paperclip_store::org::companies::exists(&app.store, &company_id).await?;
    Ok(Json(vec![ProviderDescriptor {
        id: "local_encrypted",
        label: "Local encrypted (default)",
        requires_external_ref: false,
        supports_managed_values: true,
        supports_external_references: false,
        configured: true,
    }]))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/secrets", tag = "secrets",
    params(("companyId" = String, Path)), request_body = NewSecret,
    responses((status = 201, body = CompanySecret), (status = 400, description = "Invalid input"),
        (status = 409, description = "A secret of that name or key exists")))]
#[paperclip_macros::handler]
async fn create_secret(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(input): ValidJson<NewSecret>,
) -> ApiResult<(StatusCode, Json<CompanySecret>)> {
    let actor = access::secrets_admin(&caller, &company_id)?;
    let seal = Vault::sealer(master_key(&app)?);
    let created = secrets::create(&app.store, actor, &company_id, &input, &seal).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

#[utoipa::path(patch, path = "/api/secrets/{id}", tag = "secrets",
    params(("id" = String, Path)), request_body = SecretPatch,
    responses((status = 200, body = CompanySecret), (status = 404, description = "Secret not found"),
        (status = 409, description = "A secret of that name or key exists")))]
#[paperclip_macros::handler]
async fn update_secret(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(patch): ValidJson<SecretPatch>,
) -> ApiResult<Json<CompanySecret>> {
    access::secret(&app, &caller, &id).await?;
    let actor = caller.actor();
    Ok(Json(secrets::update(&app.store, actor, &id, &patch).await?))
}

#[utoipa::path(post, path = "/api/secrets/{id}/rotate", tag = "secrets",
    params(("id" = String, Path)), request_body = SecretRotation,
    responses((status = 200, body = CompanySecret), (status = 404, description = "Secret not found")))]
#[paperclip_macros::handler]
async fn rotate_secret(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<SecretRotation>,
) -> ApiResult<Json<CompanySecret>> {
    access::secret(&app, &caller, &id).await?;
    let seal = Vault::sealer(master_key(&app)?);
    Ok(Json(
        secrets::rotate(&app.store, caller.actor(), &id, &input, &seal).await?,
    ))
}

#[utoipa::path(delete, path = "/api/secrets/{id}", tag = "secrets",
    params(("id" = String, Path)), responses((status = 200, body = super::Acknowledged),
        (status = 404, description = "Secret not found")))]
#[paperclip_macros::handler]
async fn delete_secret(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<super::Acknowledged>> {
    access::secret(&app, &caller, &id).await?;
    secrets::delete(&app.store, caller.actor(), &id).await?;
    Ok(super::acknowledged())
}

/// The key to seal with; made on first need. Failing to make it is the
/// server's fault (its data dir), so it is a 500 that says where.
fn master_key(app: &AppState) -> ApiResult<paperclip_core::secret_box::MasterKey> {
    app.runtime.vault().key().map_err(|err| {
        tracing::error!(error = %format!("{err:#}"), "the secrets master key is unavailable");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("The secrets master key is unavailable: {err:#}"),
        )
    })
}
