//! Agent instructions on upstream's routes: the path of the file an agent's
//! runs take as instructions (`instructions-path`) and the managed bundle
//! behind it (`instructions-bundle`, its files). Reads are the company's;
//! changes are the board's (an agent may not rewrite its own instructions).

pub(crate) mod files;

use std::path::{Path as FsPath, PathBuf};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::input::AgentPatch;
use paperclip_core::model::Agent;
use paperclip_store::audit::activity::{self, Entry};
use paperclip_store::org::agents;
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
use files::{FileSummary, ENTRY_FILE, FILE_KEY};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_path, patch_path))
        .routes(routes!(get_bundle))
        .routes(routes!(get_file, put_file, delete_file))
}

fn unprocessable(message: &str) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
}

fn board_only(caller: &Caller) -> ApiResult<&paperclip_core::actor::Actor> {
    caller.require_board().map_err(|_| {
        ApiError::forbidden(
            "Only board-authenticated callers can manage instructions path or bundle configuration",
        )
    })
}

/// Where an agent's instructions live, from its config: the configured
/// file, or a managed bundle left on disk without one.
struct Located {
    mode: Option<&'static str>,
    root: Option<PathBuf>,
    entry: String,
    managed: PathBuf,
    warnings: Vec<String>,
}

fn derive(app: &AppState, agent: &Agent) -> Located {
    let managed = files::managed_root(&app.info.data_dir, &agent.company_id, &agent.id);
    let configured = agent
        .adapter_config
        .get(FILE_KEY)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty());
    let mut warnings = Vec::new();
    if let Some(file) = configured {
        let file = FsPath::new(file);
        if file.is_absolute() {
            if let (Some(root), Some(name)) = (file.parent(), file.file_name()) {
                let mode = if root == managed {
                    "managed"
                } else {
                    "external"
                };
                return Located {
                    mode: Some(mode),
                    root: Some(root.to_path_buf()),
                    entry: name.to_string_lossy().to_string(),
                    managed,
                    warnings,
                };
            }
        }
        warnings.push(format!(
            "Ignored instructionsFilePath {:?}: not an absolute file path",
            file.display()
        ));
    }
    let found = files::list(&managed);
    if found.is_empty() {
        return Located {
            mode: None,
            root: None,
            entry: ENTRY_FILE.into(),
            managed,
            warnings,
        };
    }
    let entry = if found.iter().any(|f| f == ENTRY_FILE) {
        ENTRY_FILE.to_string()
    } else {
        found[0].clone()
    };
    Located {
        mode: Some("managed"),
        root: Some(managed.clone()),
        entry,
        managed,
        warnings,
    }
}

/// Upstream's bundle.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Bundle {
    agent_id: String,
    company_id: String,
    mode: Option<&'static str>,
    root_path: Option<String>,
    managed_root_path: String,
    entry_file: String,
    resolved_entry_path: Option<String>,
    editable: bool,
    warnings: Vec<String>,
    legacy_prompt_template_active: bool,
    legacy_bootstrap_prompt_template_active: bool,
    files: Vec<FileSummary>,
}

fn bundle(app: &AppState, agent: &Agent) -> Bundle {
    let s = derive(app, agent);
    let mut warnings = s.warnings;
    let files = match &s.root {
        Some(root) if root.is_dir() => files::list(root)
            .into_iter()
            .map(|rel| {
                let size = std::fs::metadata(root.join(&rel)).map_or(0, |m| m.len());
                FileSummary::new(&rel, size, &s.entry, None)
            })
            .collect(),
        Some(root) => {
            warnings.push(format!(
                "Instructions root does not exist: {}",
                root.display()
            ));
            Vec::new()
        }
        None => Vec::new(),
    };
    let legacy = |k: &str| {
        agent
            .adapter_config
            .get(k)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.trim().is_empty())
    };
    Bundle {
        agent_id: agent.id.clone(),
        company_id: agent.company_id.clone(),
        mode: s.mode,
        root_path: s.root.as_ref().map(|r| r.display().to_string()),
        managed_root_path: s.managed.display().to_string(),
        resolved_entry_path: s
            .root
            .as_ref()
            .map(|r| r.join(&s.entry).display().to_string()),
        entry_file: s.entry,
        editable: s.root.is_some(),
        warnings,
        legacy_prompt_template_active: legacy("promptTemplate"),
        legacy_bootstrap_prompt_template_active: legacy("bootstrapPromptTemplate"),
        files,
    }
}

/// Upstream's answer to an instructions-path change.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PathView {
    agent_id: String,
    adapter_type: String,
    adapter_config_key: String,
    path: Option<String>,
}

fn path_view(agent: &Agent) -> PathView {
    PathView {
        agent_id: agent.id.clone(),
        adapter_type: agent.adapter_type.clone(),
        adapter_config_key: FILE_KEY.into(),
        path: agent
            .adapter_config
            .get(FILE_KEY)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string),
    }
}

/// The file the agent's runs take as instructions.
#[utoipa::path(get, path = "/api/agents/{id}/instructions-path", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = PathView),
        (status = 403, description = "Another company's agent", body = crate::error::ErrorBody),
        (status = 404, description = "Agent not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_path(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<PathView>> {
    let agent = access::agent(&app, &caller, &id).await?;
    Ok(Json(path_view(&agent)))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PathBody {
    /// An absolute path, one relative to the agent's `cwd`, or null to clear.
    #[schema(value_type = Option<String>)]
    path: Option<String>,
    adapter_config_key: Option<String>,
}

/// Sets or clears the file the agent's runs take as instructions.
#[utoipa::path(patch, path = "/api/agents/{id}/instructions-path", tag = "agents",
    params(("id" = String, Path)), request_body = PathBody, responses((status = 200, body = PathView),
        (status = 403, description = "Board only", body = crate::error::ErrorBody),
        (status = 404, description = "Agent not found", body = crate::error::ErrorBody),
        (status = 422, description = "A relative path without an absolute cwd, or another config key", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn patch_path(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<PathBody>,
) -> ApiResult<Json<PathView>> {
    let actor = board_only(&caller)?;
    let agent = access::agent(&app, &caller, &id).await?;
    if body
        .adapter_config_key
        .as_deref()
        .is_some_and(|k| k != FILE_KEY)
    {
        return Err(unprocessable(
            "Only instructionsFilePath holds an instructions path here",
        ));
    }
    let mut config = agent
        .adapter_config
        .as_object()
        .cloned()
        .unwrap_or_default();
    let cleared = body.path.is_none();
    match body.path.as_deref().map(str::trim) {
        None => {
            config.remove(FILE_KEY);
        }
        Some("") => return Err(unprocessable("path must not be empty; send null to clear")),
        Some(p) => {
            let resolved = resolve_path(p, &config)?;
            config.insert(FILE_KEY.into(), Value::String(resolved));
        }
    }
    let patch = AgentPatch {
        adapter_config: Some(config),
        replace_adapter_config: Some(true),
        ..Default::default()
    };
    let agent = agents::update(&app.store, actor, &id, patch).await?;
    let view = path_view(&agent);
    log(
        &app,
        actor,
        &agent,
        Action::AgentInstructionsPathUpdated,
        json!({ "adapterConfigKey": FILE_KEY, "path": view.path, "cleared": cleared }),
    )
    .await?;
    Ok(Json(view))
}

/// A relative path is the agent's `cwd`'s, as upstream resolves it.
fn resolve_path(p: &str, config: &Map<String, Value>) -> ApiResult<String> {
    let path = FsPath::new(p);
    if path.is_absolute() {
        return Ok(p.to_string());
    }
    match config.get("cwd").and_then(Value::as_str).map(FsPath::new) {
        Some(cwd) if cwd.is_absolute() => Ok(cwd.join(path).display().to_string()),
        _ => Err(unprocessable(
            "A relative instructions path requires adapterConfig.cwd to be set to an absolute path",
        )),
    }
}

async fn log(
    app: &AppState,
    actor: &paperclip_core::actor::Actor,
    agent: &Agent,
    action: Action,
    details: Value,
) -> ApiResult<()> {
    let mut tx = app.store.begin().await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &agent.company_id,
            action,
            entity_type: EntityType::Agent,
            entity_id: &agent.id,
            details,
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The agent's instructions bundle: where it lives and its files.
#[utoipa::path(get, path = "/api/agents/{id}/instructions-bundle", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = Bundle),
        (status = 403, description = "Another company's agent", body = crate::error::ErrorBody),
        (status = 404, description = "Agent not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_bundle(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Bundle>> {
    let agent = access::agent(&app, &caller, &id).await?;
    Ok(Json(bundle(&app, &agent)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct FileQuery {
    /// The file's path inside the bundle.
    path: Option<String>,
}

fn required_path(q: &FileQuery) -> ApiResult<String> {
    let raw = q.path.as_deref().unwrap_or("");
    if raw.trim().is_empty() {
        return Err(unprocessable("Query parameter 'path' is required"));
    }
    files::normalize(raw).ok_or_else(|| unprocessable(files::OUTSIDE_ROOT))
}

/// One file of the bundle, with its content.
#[utoipa::path(get, path = "/api/agents/{id}/instructions-bundle/file", tag = "agents",
    params(("id" = String, Path), FileQuery), responses((status = 200, body = FileSummary),
        (status = 403, description = "Another company's agent", body = crate::error::ErrorBody),
        (status = 404, description = "Agent or file not found", body = crate::error::ErrorBody),
        (status = 422, description = "Path missing or outside the bundle", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_file(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<FileQuery>,
) -> ApiResult<Json<FileSummary>> {
    let agent = access::agent(&app, &caller, &id).await?;
    let rel = required_path(&q)?;
    let s = derive(&app, &agent);
    let root = s
        .root
        .ok_or_else(|| ApiError::not_found("Agent instructions bundle is not configured"))?;
    let content = std::fs::read_to_string(root.join(&rel))
        .map_err(|_| ApiError::not_found("Instructions file not found"))?;
    let size = content.len() as u64;
    Ok(Json(FileSummary::new(&rel, size, &s.entry, Some(content))))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FileBody {
    path: String,
    content: String,
    #[serde(default)]
    clear_legacy_prompt_template: bool,
}

/// Writes one file of the bundle, making the managed bundle (and pointing
/// the agent's runs at its `AGENTS.md`) when the agent has none yet.
#[utoipa::path(put, path = "/api/agents/{id}/instructions-bundle/file", tag = "agents",
    params(("id" = String, Path)), request_body = FileBody, responses((status = 200, body = FileSummary),
        (status = 400, description = "Malformed body", body = crate::error::ErrorBody),
        (status = 403, description = "Board only", body = crate::error::ErrorBody),
        (status = 404, description = "Agent not found", body = crate::error::ErrorBody),
        (status = 422, description = "Path outside the bundle or file too large", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn put_file(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<FileBody>,
) -> ApiResult<Json<FileSummary>> {
    let actor = board_only(&caller)?;
    let agent = access::agent(&app, &caller, &id).await?;
    if body.path.trim().is_empty() {
        return Err(ApiError::validation(
            json!([{ "code": "too_small", "path": ["path"], "message": "path is required" }]),
        ));
    }
    let rel = files::normalize(&body.path).ok_or_else(|| unprocessable(files::OUTSIDE_ROOT))?;
    if body.content.len() > files::MAX_FILE_BYTES {
        return Err(unprocessable(
            "Instructions file is too large (256 KiB at most)",
        ));
    }
    let s = derive(&app, &agent);
    // An external bundle is a folder anywhere on the host: only an instance
    // administrator writes there.
    if s.mode == Some("external") {
        caller.require_instance_admin()?;
    }
    let root = s.root.clone().unwrap_or_else(|| s.managed.clone());
    let target = root.join(&rel);
    let io = |e: std::io::Error| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Could not write the instructions: {e}"),
        )
    };
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(&target, &body.content).map_err(io)?;
    let entry_path = root.join(&s.entry).display().to_string();
    let configured = agent.adapter_config.get(FILE_KEY).and_then(Value::as_str);
    if configured != Some(entry_path.as_str()) || body.clear_legacy_prompt_template {
        // A merge, not a replace: another key edited meanwhile stays.
        let mut config = Map::new();
        config.insert(FILE_KEY.into(), Value::String(entry_path));
        if body.clear_legacy_prompt_template {
            config.insert("promptTemplate".into(), Value::String(String::new()));
            config.insert(
                "bootstrapPromptTemplate".into(),
                Value::String(String::new()),
            );
        }
        let patch = AgentPatch {
            adapter_config: Some(config),
            ..Default::default()
        };
        agents::update(&app.store, actor, &id, patch).await?;
    }
    log(
        &app,
        actor,
        &agent,
        Action::AgentInstructionsFileUpdated,
        json!({ "path": rel, "size": body.content.len() }),
    )
    .await?;
    let size = body.content.len() as u64;
    Ok(Json(FileSummary::new(
        &rel,
        size,
        &s.entry,
        Some(body.content),
    )))
}

/// Deletes one file of the bundle (never its entry file).
#[utoipa::path(delete, path = "/api/agents/{id}/instructions-bundle/file", tag = "agents",
    params(("id" = String, Path), FileQuery), responses((status = 200, body = Bundle),
        (status = 403, description = "Board only", body = crate::error::ErrorBody),
        (status = 404, description = "Agent not found or no bundle", body = crate::error::ErrorBody),
        (status = 422, description = "Path missing, outside the bundle, or the entry file", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn delete_file(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<FileQuery>,
) -> ApiResult<Json<Bundle>> {
    let actor = board_only(&caller)?;
    let agent = access::agent(&app, &caller, &id).await?;
    let rel = required_path(&q)?;
    let s = derive(&app, &agent);
    let root = s
        .root
        .clone()
        .ok_or_else(|| ApiError::not_found("Agent instructions bundle is not configured"))?;
    if rel == s.entry {
        return Err(unprocessable("Cannot delete the bundle entry file"));
    }
    if s.mode == Some("external") {
        caller.require_instance_admin()?;
    }
    match std::fs::remove_file(root.join(&rel)) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("Could not delete the file: {e}"),
            ))
        }
    }
    log(
        &app,
        actor,
        &agent,
        Action::AgentInstructionsFileDeleted,
        json!({ "path": rel }),
    )
    .await?;
    Ok(Json(bundle(&app, &agent)))
}
