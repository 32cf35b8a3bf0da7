//! Upstream's adapter routes: the registry (`GET /api/adapters`, one type,
//! its config schema), per company the models a type offers and the model
//! its CLI would pick, and the plain-text configuration notes for agents
//! that hire agents (`/api/llms/agent-configuration/...`). Every adapter
//! here is built in: the routes that install, reload, reinstall or remove
//! external adapters answer as upstream does for a built-in one.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::Json;
use paperclip_adapters::models::{DetectedModel, Model};
use paperclip_adapters::Adapter;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams};
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_adapters))
        .routes(routes!(get_adapter, remove_adapter))
        .routes(routes!(config_schema))
        .routes(routes!(pause_override))
        .routes(routes!(reload_adapter))
        .routes(routes!(reinstall_adapter))
        .routes(routes!(company_models))
        .routes(routes!(detect_model))
        .routes(routes!(configuration_index))
        .routes(routes!(configuration_doc))
}

/// The adapter types this build runs, by name.
fn types() -> Vec<&'static str> {
    paperclip_adapters::registry().into_keys().collect()
}

fn registered(app: &AppState, kind: &str) -> ApiResult<Arc<dyn Adapter>> {
    app.runtime
        .adapter(kind)
        .ok_or_else(|| ApiError::not_found(format!("Adapter \"{kind}\" is not registered.")))
}

/// The company routes name an unknown type as a rule broken (upstream's 422).
fn known_type(app: &AppState, kind: &str) -> ApiResult<Arc<dyn Adapter>> {
    app.runtime.adapter(kind).ok_or_else(|| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Unknown adapter type: {kind}"),
        )
    })
}

/// What upstream tells a client about one adapter's abilities.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdapterCapabilities {
    /// Upstream's server-managed instructions bundle; here an agent names
    /// its own file (`instructionsFilePath`).
    pub supports_instructions_bundle: bool,
    /// Upstream's per-agent skill sync; here every run gets the Paperclip skill.
    pub supports_skills: bool,
    /// Runs get a run token (`PAPERCLIP_API_KEY`) to call the API as the agent.
    pub supports_local_agent_jwt: bool,
    pub requires_materialized_runtime_skills: bool,
    /// The type takes `engine: "acp"`.
    pub supports_acp: bool,
}

/// One adapter in the registry (upstream's fields; external-adapter fields
/// are absent, as every adapter here is built in).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdapterInfo {
    #[serde(rename = "type")]
    pub kind: String,
    pub label: String,
    /// Always `builtin`.
    pub source: &'static str,
    /// The models known without asking the CLI or provider.
    pub models_count: usize,
    pub loaded: bool,
    pub disabled: bool,
    pub capabilities: AdapterCapabilities,
    pub override_paused: bool,
}

fn info(kind: &str, adapter: &dyn Adapter) -> AdapterInfo {
    let keys = adapter.known_keys();
    AdapterInfo {
        kind: kind.to_string(),
        label: kind.to_string(),
        source: "builtin",
        models_count: adapter.known_models().len(),
        loaded: true,
        disabled: false,
        capabilities: AdapterCapabilities {
            supports_instructions_bundle: false,
            supports_skills: false,
            supports_local_agent_jwt: kind != "http",
            requires_materialized_runtime_skills: false,
            supports_acp: keys.read.contains(&"engine"),
        },
        override_paused: false,
    }
}

/// Every adapter type this server runs, sorted by type. Board only.
#[utoipa::path(get, path = "/api/adapters", tag = "adapters",
    responses((status = 200, body = [AdapterInfo]), (status = 403, description = "Board access required")))]
#[paperclip_macros::handler]
async fn list_adapters(
    State(app): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<AdapterInfo>>> {
    caller.require_board()?;
    let list = types()
        .into_iter()
        .filter_map(|kind| app.runtime.adapter(kind).map(|a| info(kind, &*a)))
        .collect();
    Ok(Json(list))
}

/// One adapter type. Board only; an unknown type is 404.
#[utoipa::path(get, path = "/api/adapters/{type}", tag = "adapters",
    params(("type" = String, Path)),
    responses((status = 200, body = AdapterInfo), (status = 404, description = "Not registered")))]
#[paperclip_macros::handler]
async fn get_adapter(
    State(app): State<AppState>,
    caller: Caller,
    Path(kind): Path<String>,
) -> ApiResult<Json<AdapterInfo>> {
    caller.require_board()?;
    let adapter = registered(&app, &kind)?;
    Ok(Json(info(&kind, &*adapter)))
}

/// Removes an external adapter; a built-in one cannot be (403), and an
/// unknown type is 404. Instance admins only.
#[utoipa::path(delete, path = "/api/adapters/{type}", tag = "adapters",
    params(("type" = String, Path)),
    responses((status = 403, description = "A built-in adapter cannot be removed"), (status = 404, description = "Not registered")))]
#[paperclip_macros::handler]
async fn remove_adapter(
    State(app): State<AppState>,
    caller: Caller,
    Path(kind): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require_instance_admin()?;
    registered(&app, &kind)?;
    Err(ApiError::forbidden(format!(
        "Cannot remove built-in adapter \"{kind}\"."
    )))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct OverridePause {
    #[schema(value_type = bool)]
    pub paused: Option<Value>,
}

/// Pauses an external adapter's override of a built-in type. Nothing here
/// overrides a built-in, so a built-in type answers `changed: false` and
/// any other type is 400. Instance admins only.
#[utoipa::path(patch, path = "/api/adapters/{type}/override", tag = "adapters",
    params(("type" = String, Path)), request_body = OverridePause,
    responses((status = 200, description = "`{type, paused, changed}`"), (status = 400, description = "Not a built-in type, or paused not a boolean")))]
#[paperclip_macros::handler]
async fn pause_override(
    State(app): State<AppState>,
    caller: Caller,
    Path(kind): Path<String>,
    JsonBody(input): JsonBody<OverridePause>,
) -> ApiResult<Json<Value>> {
    caller.require_instance_admin()?;
    let Some(paused) = input.paused.as_ref().and_then(Value::as_bool) else {
        return Err(ApiError::validation(json!([
            { "code": "invalid_type", "path": ["paused"], "message": "\"paused\" (boolean) is required" }
        ])));
    };
    if app.runtime.adapter(&kind).is_none() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("Type \"{kind}\" is not a builtin adapter."),
        ));
    }
    Ok(Json(
        json!({ "type": kind, "paused": paused, "changed": false }),
    ))
}

/// Reloads an external adapter: a built-in one cannot be (400), an unknown
/// type is 404. Instance admins only.
#[utoipa::path(post, path = "/api/adapters/{type}/reload", tag = "adapters",
    params(("type" = String, Path)),
    responses((status = 400, description = "A built-in adapter cannot be reloaded"), (status = 404, description = "Not an external adapter")))]
#[paperclip_macros::handler]
async fn reload_adapter(
    State(app): State<AppState>,
    caller: Caller,
    Path(kind): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require_instance_admin()?;
    builtin_refusal(&app, &kind, "reload")
}

/// Reinstalls an external adapter from npm: a built-in one cannot be (400),
/// an unknown type is 404. Instance admins only.
#[utoipa::path(post, path = "/api/adapters/{type}/reinstall", tag = "adapters",
    params(("type" = String, Path)),
    responses((status = 400, description = "A built-in adapter cannot be reinstalled"), (status = 404, description = "Not an external adapter")))]
#[paperclip_macros::handler]
async fn reinstall_adapter(
    State(app): State<AppState>,
    caller: Caller,
    Path(kind): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require_instance_admin()?;
    builtin_refusal(&app, &kind, "reinstall")
}

fn builtin_refusal(app: &AppState, kind: &str, verb: &str) -> ApiResult<Json<Value>> {
    if app.runtime.adapter(kind).is_some() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("Cannot {verb} built-in adapter."),
        ));
    }
    Err(ApiError::not_found(format!(
        "Adapter \"{kind}\" is not an externally installed adapter."
    )))
}

/// The form fields of a type's config, in upstream's `{fields: [...]}`:
/// `key`, `label`, `type` (`text`, `select`, `toggle`, `number`,
/// `textarea`, `combobox`), `options`, `hint`, `required`. Board only.
#[utoipa::path(get, path = "/api/adapters/{type}/config-schema", tag = "adapters",
    params(("type" = String, Path)),
    responses((status = 200, description = "`{fields: [...]}`"), (status = 404, description = "Not registered")))]
#[paperclip_macros::handler]
async fn config_schema(
    State(app): State<AppState>,
    caller: Caller,
    Path(kind): Path<String>,
) -> ApiResult<Json<Value>> {
    caller.require_board()?;
    let adapter = registered(&app, &kind)?;
    Ok(Json(adapter.config_schema(&adapter.known_models())))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ModelsQuery {
    /// Upstream's execution environment; this server has none, so any id
    /// is not found (404).
    pub environment_id: Option<String>,
    /// `1`, `true` or `yes`: ask the CLI again rather than answer from
    /// the list it gave in the last minute.
    pub refresh: Option<String>,
    /// Upstream's provider choice for its runner types (accepted so its
    /// clients are not refused; no type here reads it).
    #[allow(dead_code)]
    pub provider: Option<String>,
}

/// The models a type offers: its CLI's own list (`opencode models`), its
/// provider's when a key is set, else a known list; `[]` for a type without
/// a model. Board, or an agent of the company; an unknown type is 422.
#[utoipa::path(get, path = "/api/companies/{companyId}/adapters/{type}/models", tag = "adapters",
    params(("companyId" = String, Path), ("type" = String, Path), ModelsQuery),
    responses((status = 200, description = "`[{id, label}]`"), (status = 422, description = "Unknown adapter type")))]
#[paperclip_macros::handler]
async fn company_models(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, kind)): Path<(String, String)>,
    QueryParams(query): QueryParams<ModelsQuery>,
) -> ApiResult<Json<Vec<Model>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let adapter = known_type(&app, &kind)?;
    if query
        .environment_id
        .as_deref()
        .is_some_and(|e| !e.trim().is_empty())
    {
        return Err(ApiError::not_found("Environment not found"));
    }
    let refresh = query.refresh.as_deref().map(str::to_ascii_lowercase);
    if matches!(refresh.as_deref(), Some("1" | "true" | "yes")) {
        paperclip_adapters::cli::catalog::forget_cached();
    }
    let empty = Value::Object(Map::new());
    Ok(Json(adapter.models(&empty).await))
}

/// The model the type's CLI uses when an agent names none, from the CLI's
/// settings or environment on this server: `{model, provider, source}`, or
/// `null`. Board, or an agent of the company; an unknown type is 422.
#[utoipa::path(get, path = "/api/companies/{companyId}/adapters/{type}/detect-model", tag = "adapters",
    params(("companyId" = String, Path), ("type" = String, Path)),
    responses((status = 200, description = "`{model, provider, source, candidates?}` or null"), (status = 422, description = "Unknown adapter type")))]
#[paperclip_macros::handler]
async fn detect_model(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, kind)): Path<(String, String)>,
) -> ApiResult<Json<Option<DetectedModel>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let adapter = known_type(&app, &kind)?;
    let empty = Value::Object(Map::new());
    Ok(Json(adapter.detect_model(&empty).await))
}

/// The board, or an agent allowed to hire (`canCreateAgents`): who may read
/// the configuration notes and test an environment, as upstream.
pub(crate) async fn may_hire(app: &AppState, caller: &Caller) -> ApiResult<()> {
    if caller.require_board().is_ok() {
        return Ok(());
    }
    let Some(me) = caller.agent_id() else {
        return Err(ApiError::forbidden(
            "Board or permitted agent authentication required",
        ));
    };
    let agent = paperclip_store::org::agents::get(&app.store, me).await?;
    if paperclip_core::agent_access::may_create_agents(&agent) {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "Missing permission to read agent configuration reflection",
        ))
    }
}

fn text(body: String) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body)
}

/// Where each adapter type's configuration notes are, for agents that hire
/// agents. The board, or an agent with `canCreateAgents`.
#[utoipa::path(get, path = "/api/llms/agent-configuration.txt", tag = "adapters",
    responses((status = 200, description = "Plain text", content_type = "text/plain"), (status = 403, description = "Not permitted")))]
#[paperclip_macros::handler]
async fn configuration_index(
    State(app): State<AppState>,
    caller: Caller,
) -> ApiResult<impl IntoResponse> {
    may_hire(&app, &caller).await?;
    let mut lines = vec![
        "# Paperclip agent configuration".to_string(),
        String::new(),
        "Adapter types on this server:".into(),
    ];
    lines.extend(
        types()
            .iter()
            .map(|t| format!("- {t}: /api/llms/agent-configuration/{t}.txt")),
    );
    lines.extend([
        String::new(),
        "To hire: POST /api/companies/:companyId/agent-hires with adapterType and adapterConfig."
            .into(),
        "Check a config first: POST /api/companies/:companyId/adapters/:type/test-environment."
            .into(),
        "Models a type offers: GET /api/companies/:companyId/adapters/:type/models.".into(),
        String::new(),
    ]);
    Ok(text(lines.join("\n")))
}

/// One adapter type's configuration notes (`{type}.txt`): its keys with
/// what each does, and the models it offers. The board, or an agent with
/// `canCreateAgents`; an unknown type is 404.
#[utoipa::path(get, path = "/api/llms/agent-configuration/{file}", tag = "adapters",
    params(("file" = String, Path, description = "`<adapterType>.txt`")),
    responses((status = 200, description = "Plain text", content_type = "text/plain"), (status = 404, description = "Unknown adapter type")))]
#[paperclip_macros::handler]
async fn configuration_doc(
    State(app): State<AppState>,
    caller: Caller,
    Path(file): Path<String>,
) -> ApiResult<axum::response::Response> {
    may_hire(&app, &caller).await?;
    let kind = file.strip_suffix(".txt").unwrap_or(&file);
    let Some(adapter) = app.runtime.adapter(kind) else {
        return Ok((
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("Unknown adapter type: {kind}"),
        )
            .into_response());
    };
    Ok(text(configuration_text(kind, &*adapter)).into_response())
}

fn configuration_text(kind: &str, adapter: &dyn Adapter) -> String {
    let models = adapter.known_models();
    let schema = adapter.config_schema(&models);
    let mut out = vec![
        format!("# {kind} agent configuration"),
        String::new(),
        format!("Adapter: {kind}"),
        String::new(),
        "Fields (adapterConfig):".to_string(),
    ];
    for f in schema["fields"].as_array().into_iter().flatten() {
        let need = if f["required"] == true {
            "required"
        } else {
            "optional"
        };
        let mut line = format!(
            "- {} ({}, {need}): {}",
            f["key"].as_str().unwrap_or(""),
            f["type"].as_str().unwrap_or("text"),
            f["hint"]
                .as_str()
                .unwrap_or(f["label"].as_str().unwrap_or(""))
        );
        let options: Vec<&str> = f["options"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o["value"].as_str())
            .collect();
        if !options.is_empty() && f["key"] != "model" {
            line.push_str(&format!(" One of: {}.", options.join(", ")));
        }
        out.push(line);
    }
    let unused = adapter.known_keys().unused;
    if !unused.is_empty() {
        out.push(String::new());
        out.push(format!(
            "Accepted from the original's configs without effect here: {}.",
            unused.join(", ")
        ));
    }
    if !models.is_empty() {
        out.push(String::new());
        out.push("Known models (any id the CLI accepts also works):".into());
        out.extend(models.iter().map(|m| format!("- {} ({})", m.id, m.label)));
    }
    out.push(String::new());
    out.join("\n")
}
