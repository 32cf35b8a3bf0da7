//! `/api/companies/{companyId}/model-servers`: the local model servers a
//! company's agents can run on (issue 39). Ours: upstream has no such
//! route (its only path to a local model is a hand-written
//! `PAPERCLIP_PI_PROVIDERS`). The list has Ollama as detected on the
//! server's machine (`--ollama-url`, default `http://127.0.0.1:11434`) and
//! the servers the board added by URL, each with the models it serves now;
//! `agent-config` builds the config of an agent hired on one of them. Board
//! only. A server's API key goes in and is never answered: it is kept as a
//! company secret the hired agents reference.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_adapters::local_models::{self, Flavour, HireOn, Listing, LocalModel};
use paperclip_core::model_server::{
    ModelServer, ModelServerKind, ModelServerPatch, NewModelServer, Price,
};
use paperclip_runtime::vault::Vault;
use paperclip_store::money::local_spend::LocalSplit;
use paperclip_store::org::model_servers as servers;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::QueryParams;
use crate::limits::ValidJson;
use crate::AppState;

/// The id of the detected Ollama, which is not stored.
pub const DETECTED_ID: &str = "detected-ollama";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_servers, create_server))
        .routes(routes!(update_server, delete_server))
        .routes(routes!(agent_config))
        .routes(routes!(local_spend))
}

/// Spend on local models apart from paid spend in the window (default:
/// this month), and each provider's side. Ours: upstream has no local side.
#[utoipa::path(get, path = "/api/companies/{companyId}/costs/local-models", tag = "costs",
    params(("companyId" = String, Path), super::costs::WindowQuery),
    responses((status = 200, body = LocalSplit)))]
#[paperclip_macros::handler]
async fn local_spend(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    QueryParams(q): QueryParams<super::costs::WindowQuery>,
) -> ApiResult<Json<LocalSplit>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let window = super::costs::window(&q)?;
    Ok(Json(
        paperclip_store::money::local_spend::split(&app.store, &company_id, &window).await?,
    ))
}

/// A server with what it serves now.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerView {
    pub id: String,
    pub name: String,
    pub kind: ModelServerKind,
    pub base_url: String,
    pub provider_key: String,
    /// Found on the server's machine rather than added by the board.
    pub detected: bool,
    pub has_api_key: bool,
    pub price: Price,
    pub reachable: bool,
    #[schema(value_type = Vec<Object>)]
    pub models: Vec<LocalModel>,
    /// Why it could not be listed.
    pub error: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerList {
    /// Where Ollama is looked for on this server's machine.
    pub ollama_url: String,
    pub servers: Vec<ServerView>,
}

fn flavour(kind: ModelServerKind) -> Flavour {
    match kind {
        ModelServerKind::Ollama => Flavour::Ollama,
        ModelServerKind::OpenaiCompatible => Flavour::OpenAiCompatible,
    }
}

fn view(s: &ModelServer, detected: bool, listing: Listing) -> ServerView {
    ServerView {
        id: s.id.clone(),
        name: s.name.clone(),
        kind: s.kind,
        base_url: s.base_url.clone(),
        provider_key: s.provider_key.clone(),
        detected,
        has_api_key: s.has_api_key,
        price: s.price,
        reachable: listing.reachable,
        models: listing.models,
        error: listing.error,
    }
}

/// The detected Ollama as a server (never stored).
fn detected(company_id: &str, url: &str) -> ModelServer {
    ModelServer {
        id: DETECTED_ID.into(),
        company_id: company_id.into(),
        name: "Ollama".into(),
        kind: ModelServerKind::Ollama,
        base_url: url.into(),
        provider_key: "ollama".into(),
        has_api_key: false,
        api_key_secret_id: None,
        price: Price::default(),
        created_at: String::new(),
        updated_at: String::new(),
    }
}

/// The key of a server, opened for a request to it; `None` without one or
/// when it cannot be opened (the request then says the server refused).
async fn key_of(app: &AppState, s: &ModelServer) -> Option<String> {
    let id = s.api_key_secret_id.as_deref()?;
    let sealed = paperclip_store::org::secrets::sealed_version(&app.store, id, None)
        .await
        .ok()??;
    (sealed.company_id == s.company_id)
        .then(|| app.runtime.vault().reveal(&sealed).ok())
        .flatten()
}

/// Ollama on this machine and the company's servers, with their models.
#[utoipa::path(get, path = "/api/companies/{companyId}/model-servers", tag = "agents",
    params(("companyId" = String, Path)),
    responses((status = 200, body = ServerList), (status = 403, description = "Board access required")))]
#[paperclip_macros::handler]
async fn list_servers(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<ServerList>> {
    caller.require_board()?;
    access::company_scope(&app, &caller, &company_id).await?;
    let added = servers::list(&app.store, &company_id).await?;
    let mut keys = Vec::with_capacity(added.len());
    for s in &added {
        keys.push(key_of(&app, s).await);
    }
    // Asked all at once: the slowest server bounds the wait.
    let listings = futures::future::join_all(
        added
            .iter()
            .zip(&keys)
            .map(|(s, k)| local_models::list_models(flavour(s.kind), &s.base_url, k.as_deref())),
    );
    let ((ollama_url, found), listings) =
        futures::future::join(local_models::detect_ollama(), listings).await;
    let mut out = Vec::with_capacity(added.len() + 1);
    // The detected one, unless the board added the same server itself.
    if !added.iter().any(|s| s.base_url == ollama_url) {
        out.push(view(&detected(&company_id, &ollama_url), true, found));
    }
    out.extend(added.iter().zip(listings).map(|(s, l)| view(s, false, l)));
    Ok(Json(ServerList {
        ollama_url,
        servers: out,
    }))
}

/// Adds a server by URL (default kind `openai_compatible`). Its `apiKey`
/// becomes a company secret and is never answered.
#[utoipa::path(post, path = "/api/companies/{companyId}/model-servers", tag = "agents",
    params(("companyId" = String, Path)), request_body = NewModelServer,
    responses((status = 201, body = ModelServer), (status = 400, description = "Invalid input"),
        (status = 409, description = "A server of that name exists")))]
#[paperclip_macros::handler]
async fn create_server(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(input): ValidJson<NewModelServer>,
) -> ApiResult<(StatusCode, Json<ModelServer>)> {
    let actor = caller.require_board()?.clone();
    access::company_scope(&app, &caller, &company_id).await?;
    let seal = Vault::sealer(master_key(&app)?);
    let created = servers::create(&app.store, &actor, &company_id, &input, &seal).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

async fn server_in(app: &AppState, company_id: &str, id: &str) -> ApiResult<ModelServer> {
    let s = servers::get(&app.store, id).await?;
    if s.company_id != company_id {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "Model server not found",
        ));
    }
    Ok(s)
}

fn not_stored(id: &str) -> ApiResult<()> {
    if id == DETECTED_ID {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "The detected Ollama is not stored: add it by URL to name, key or price it",
        ));
    }
    Ok(())
}

/// Renames a server, moves its URL, replaces (or with null removes) its key
/// or sets its price.
#[utoipa::path(patch, path = "/api/companies/{companyId}/model-servers/{serverId}", tag = "agents",
    params(("companyId" = String, Path), ("serverId" = String, Path)), request_body = ModelServerPatch,
    responses((status = 200, body = ModelServer), (status = 404, description = "Model server not found")))]
#[paperclip_macros::handler]
async fn update_server(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, id)): Path<(String, String)>,
    ValidJson(patch): ValidJson<ModelServerPatch>,
) -> ApiResult<Json<ModelServer>> {
    let actor = caller.require_board()?.clone();
    access::company_scope(&app, &caller, &company_id).await?;
    not_stored(&id)?;
    server_in(&app, &company_id, &id).await?;
    let seal = Vault::sealer(master_key(&app)?);
    Ok(Json(
        servers::update(&app.store, &actor, &id, &patch, &seal).await?,
    ))
}

/// Forgets a server; agents hired on it keep their config and its key.
#[utoipa::path(delete, path = "/api/companies/{companyId}/model-servers/{serverId}", tag = "agents",
    params(("companyId" = String, Path), ("serverId" = String, Path)),
    responses((status = 200, body = super::Acknowledged), (status = 404, description = "Model server not found")))]
#[paperclip_macros::handler]
async fn delete_server(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, id)): Path<(String, String)>,
) -> ApiResult<Json<super::Acknowledged>> {
    let actor = caller.require_board()?.clone();
    access::company_scope(&app, &caller, &company_id).await?;
    not_stored(&id)?;
    server_in(&app, &company_id, &id).await?;
    servers::delete(&app.store, &actor, &id).await?;
    Ok(super::acknowledged())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigQuery {
    adapter_type: Option<String>,
    model: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HireConfig {
    pub adapter_type: String,
    #[schema(value_type = Object)]
    pub adapter_config: Value,
}

/// The `adapterConfig` of an agent hired on `model` of this server:
/// `pi_local` (default) or `opencode_local` with the provider written in.
#[utoipa::path(get, path = "/api/companies/{companyId}/model-servers/{serverId}/agent-config", tag = "agents",
    params(("companyId" = String, Path), ("serverId" = String, Path),
        ("adapterType" = Option<String>, Query), ("model" = String, Query)),
    responses((status = 200, body = HireConfig), (status = 400, description = "No model named"),
        (status = 404, description = "Model server not found"),
        (status = 422, description = "The adapter type takes no custom provider")))]
#[paperclip_macros::handler]
async fn agent_config(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, id)): Path<(String, String)>,
    QueryParams(q): QueryParams<ConfigQuery>,
) -> ApiResult<Json<HireConfig>> {
    caller.require_board()?;
    access::company_scope(&app, &caller, &company_id).await?;
    let model = q.model.as_deref().map(str::trim).unwrap_or_default();
    if model.is_empty() || model.chars().count() > 200 {
        return Err(ApiError::validation(
            json!([{ "code": "invalid_value", "path": ["model"],
            "message": "model is required: a model the server lists (at most 200 characters)" }]),
        ));
    }
    let adapter_type = q.adapter_type.unwrap_or_else(|| "pi_local".into());
    let server = if id == DETECTED_ID {
        detected(&company_id, &local_models::ollama_url())
    } else {
        server_in(&app, &company_id, &id).await?
    };
    let on = HireOn {
        provider_key: &server.provider_key,
        server_name: &server.name,
        flavour: flavour(server.kind),
        base_url: &server.base_url,
        model,
        api_key_secret_id: server.api_key_secret_id.as_deref(),
        price: (
            server.price.input_per_million_usd,
            server.price.output_per_million_usd,
        ),
    };
    let Some(adapter_config) = local_models::agent_config(&adapter_type, &on) else {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "{adapter_type} takes no custom model provider: use one of {}",
                local_models::ADAPTER_TYPES.join(", ")
            ),
        ));
    };
    Ok(Json(HireConfig {
        adapter_type,
        adapter_config,
    }))
}

/// `report` with the checks of an agent on a local model added (the
/// environment-test route's hook; nothing for other configs).
pub async fn with_checks(
    app: &AppState,
    company_id: &str,
    adapter_type: &str,
    config: &Value,
    report: paperclip_adapters::environment::Report,
) -> paperclip_adapters::environment::Report {
    let extra = environment_checks(app, company_id, adapter_type, config).await;
    if extra.is_empty() {
        return report;
    }
    let mut checks = report.checks;
    checks.extend(extra);
    paperclip_adapters::environment::Report::new(&report.adapter_type, checks)
}

/// The environment checks of an agent on a local model, for the
/// environment-test route: a key bound to a company secret is opened for
/// the requests (never shown), the rest is `local_models::check`.
pub async fn environment_checks(
    app: &AppState,
    company_id: &str,
    adapter_type: &str,
    config: &Value,
) -> Vec<paperclip_adapters::environment::Check> {
    let mut config = config.clone();
    let var = local_models::KEY_VAR;
    let secret = config
        .pointer(&format!("/env/{var}/secretId"))
        .and_then(Value::as_str)
        .map(str::to_string);
    if let Some(id) = secret {
        let opened =
            match paperclip_store::org::secrets::sealed_version(&app.store, &id, None).await {
                Ok(Some(sealed)) if sealed.company_id == company_id => {
                    app.runtime.vault().reveal(&sealed).ok()
                }
                _ => None,
            };
        if let Some(value) = opened {
            config["env"][var] = Value::String(value);
        }
    }
    local_models::check::checks(adapter_type, &config).await
}

fn master_key(app: &AppState) -> ApiResult<paperclip_core::secret_box::MasterKey> {
    app.runtime.vault().key().map_err(|err| {
        tracing::error!(error = %format!("{err:#}"), "the secrets master key is unavailable");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("The secrets master key is unavailable: {err:#}"),
        )
    })
}
