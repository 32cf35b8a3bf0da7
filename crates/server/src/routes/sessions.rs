//! Coding-agent support routes: task sessions, runtime state, the adapter
//! environment test, and the Paperclip skill document.

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use paperclip_core::model::{RuntimeState, TaskSession};
use paperclip_store::runs::sessions;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(task_sessions))
        .routes(routes!(runtime_state))
        .routes(routes!(reset_session))
        .routes(routes!(test_environment))
        .routes(routes!(paperclip_skill))
}

/// The agent's resumable CLI sessions, one per task. Board only.
#[utoipa::path(get, path = "/api/agents/{id}/task-sessions", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = [TaskSession])))]
#[paperclip_macros::handler]
async fn task_sessions(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<TaskSession>>> {
    caller.require_board()?;
    let agent = access::agent(&app, &caller, &id).await?;
    Ok(Json(sessions::list(&app.store, &agent.id).await?))
}

/// Token and cost totals, the latest run and its error, the newest session.
/// Board only. The first read keeps when the state began (upstream's row).
#[utoipa::path(get, path = "/api/agents/{id}/runtime-state", tag = "agents",
    params(("id" = String, Path)), responses((status = 200, body = RuntimeState)))]
#[paperclip_macros::handler]
async fn runtime_state(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<RuntimeState>> {
    caller.require_board()?;
    let agent = access::agent(&app, &caller, &id).await?;
    sessions::keep_began(&app.store, &agent.id).await?;
    Ok(Json(sessions::runtime_state(&app.store, &agent).await?))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResetSession {
    /// Only this task's session; all of them when absent.
    pub task_key: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResetResult {
    pub cleared: u64,
    #[serde(flatten)]
    pub state: RuntimeState,
}

/// Forgets the agent's sessions, so the next run starts a fresh conversation.
#[utoipa::path(post, path = "/api/agents/{id}/runtime-state/reset-session", tag = "agents",
    params(("id" = String, Path)), request_body = ResetSession,
    responses((status = 200, body = ResetResult)))]
#[paperclip_macros::handler]
async fn reset_session(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<ResetSession>,
) -> ApiResult<Json<ResetResult>> {
    let actor = caller.require_board()?.clone();
    let agent = access::agent(&app, &caller, &id).await?;
    if input.task_key.as_deref().is_some_and(|k| k.is_empty()) {
        return Err(ApiError::validation(serde_json::json!([
            { "code": "too_small", "path": ["taskKey"], "message": "taskKey must not be empty" }
        ])));
    }
    let cleared = sessions::reset(
        &app.store,
        &actor,
        &agent.company_id,
        &agent.id,
        input.task_key.as_deref(),
    )
    .await?;
    sessions::keep_began(&app.store, &agent.id).await?;
    let state = sessions::runtime_state(&app.store, &agent).await?;
    Ok(Json(ResetResult { cleared, state }))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestEnvironment {
    /// The config to test; defaults to the agent's when `agentId` is given.
    #[schema(value_type = Option<Object>)]
    pub adapter_config: Option<Map<String, Value>>,
    pub agent_id: Option<String>,
    /// The name typed for a hire not made yet (ours, not upstream's): the
    /// report says whose workspace a run without a cwd would use.
    pub agent_name: Option<String>,
    /// Upstream's provider keys for this test only (never stored): they
    /// are added to the config's `env` for the probe.
    #[schema(value_type = Option<Object>)]
    pub test_credentials: Option<Map<String, Value>>,
}

/// The provider keys upstream lets a test carry (its schema's names).
const TEST_CREDENTIALS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
    "XAI_API_KEY",
    "GROQ_API_KEY",
    "OPENCODE_API_KEY",
    "CURSOR_API_KEY",
    "KIMI_MODEL_API_KEY",
    "API_SERVER_KEY",
    "ZAI_API_KEY",
    "KIMI_API_KEY",
    "MINIMAX_API_KEY",
];

fn test_credentials(given: &Map<String, Value>) -> ApiResult<Map<String, Value>> {
    let mut bad = Vec::new();
    for (key, value) in given {
        let message = if !TEST_CREDENTIALS.contains(&key.as_str()) {
            format!("not a provider key; one of {}", TEST_CREDENTIALS.join(", "))
        } else if !value.as_str().is_some_and(|v| v.len() <= 16384) {
            "must be a string of at most 16384 characters".to_string()
        } else {
            continue;
        };
        bad.push(serde_json::json!({
            "code": "invalid_value", "path": ["testCredentials", key], "message": message,
        }));
    }
    if bad.is_empty() {
        Ok(given.clone())
    } else {
        Err(ApiError::validation(Value::Array(bad)))
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentReport {
    pub adapter_type: String,
    /// `pass`, `warn` or `fail`.
    pub status: String,
    #[schema(value_type = Vec<Object>)]
    pub checks: Value,
    pub tested_at: String,
}

/// Can a run of this adapter start on this machine: is the CLI installed
/// (and which version), is the working directory valid, is auth configured.
#[utoipa::path(post, path = "/api/companies/{companyId}/adapters/{type}/test-environment", tag = "agents",
    params(("companyId" = String, Path), ("type" = String, Path)), request_body = TestEnvironment,
    responses((status = 200, body = EnvironmentReport), (status = 403, description = "Neither the board nor an agent with canCreateAgents"), (status = 422, description = "Unknown adapter type")))]
#[paperclip_macros::handler]
async fn test_environment(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, kind)): Path<(String, String)>,
    JsonBody(input): JsonBody<TestEnvironment>,
) -> ApiResult<Json<EnvironmentReport>> {
    access::company_scope(&app, &caller, &company_id).await?;
    super::adapters::may_hire(&app, &caller).await?;
    let Some(adapter) = app.runtime.adapter(&kind) else {
        return Err(ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            format!("Unknown adapter type: {kind}"),
        ));
    };
    let credentials = match &input.test_credentials {
        Some(given) => test_credentials(given)?,
        None => Map::new(),
    };
    let (config, workspace) = match (&input.adapter_config, &input.agent_id) {
        (Some(config), agent) => {
            let ws = agent.as_deref().map(|a| app.runtime.workspace_dir(a));
            let mut config = Value::Object(config.clone());
            // The agent page sends back the config it shows, secrets redacted.
            if let Some(agent_id) = agent {
                if let Ok(stored) = paperclip_store::org::agents::get(&app.store, agent_id).await {
                    if stored.company_id == company_id {
                        let _ = paperclip_core::secrets::keep_secrets(
                            &mut config,
                            &stored.adapter_config,
                        );
                    }
                }
            }
            (config, ws)
        }
        (None, Some(agent_id)) => {
            let agent = access::agent(&app, &caller, agent_id).await?;
            if agent.company_id != company_id {
                return Err(ApiError::new(
                    axum::http::StatusCode::NOT_FOUND,
                    "Agent not found",
                ));
            }
            (
                agent.adapter_config.clone(),
                Some(app.runtime.workspace_dir(&agent.id)),
            )
        }
        (None, None) => (Value::Object(Map::new()), None),
    };
    let workspace = workspace.unwrap_or_else(|| app.runtime.workspace_dir("new-agent"));
    let mut config = config;
    if !credentials.is_empty() {
        if let Some(obj) = config.as_object_mut() {
            let env = obj
                .entry("env")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(env) = env.as_object_mut() {
                env.extend(credentials);
            }
        }
    }
    let mut report = adapter.test_environment(&config, &workspace).await;
    report = super::model_servers::with_checks(&app, &company_id, &kind, &config, report).await;
    // A key a save would refuse is not "ready" (an older config may hold one).
    let keys = config.as_object().into_iter().flat_map(|o| o.keys());
    if let Err(unknown) = adapter.known_keys().check(&kind, keys.map(String::as_str)) {
        use paperclip_adapters::environment::{Check, Level, Report};
        let mut checks = std::mem::take(&mut report.checks);
        checks.extend(unknown.iter().map(|u| {
            Check::new("config_unknown_key", Level::Error, format!("adapterConfig.{}: {}", u.path[0], u.message))
                .hint("Remove it in Advanced (JSON): saving the configuration is refused while it is there")
        }));
        report = Report::new(&report.adapter_type, checks);
    }
    if input.agent_id.is_none() {
        // A hire has no id yet, so no workspace path to show: say where it will be.
        let root = workspace
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let who = input
            .agent_name
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or("The new agent");
        for check in report.checks.iter_mut().filter(|c| c.code == "cwd_default") {
            check.message = format!(
                "No working directory set: {who} gets its own workspace, a new folder under {root} made at its first run"
            );
        }
    }
    Ok(Json(EnvironmentReport {
        adapter_type: report.adapter_type,
        status: report.status.to_string(),
        checks: serde_json::to_value(&report.checks).unwrap_or_default(),
        tested_at: paperclip_store::now(),
    }))
}

/// The Paperclip skill (Markdown): the heartbeat procedure for any agent.
#[utoipa::path(get, path = "/api/skills/paperclip", tag = "agents",
    responses((status = 200, description = "The skill document", content_type = "text/markdown")))]
#[paperclip_macros::handler]
async fn paperclip_skill(_caller: Caller) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/markdown; charset=utf-8")],
        paperclip_runtime::skills::PAPERCLIP_SKILL,
    )
}
