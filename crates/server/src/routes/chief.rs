//! The onboarding chief (issue 41): on an empty company the person starts
//! with a chief of staff, an agent whose job is to turn the person's goal
//! into a plan, the agents to hire and the first tasks, in the person's
//! chat with it, through the ordinary cards (plan approval, suggested
//! tasks) and the ordinary hire route. `POST /api/companies/{id}/chief` is
//! ours (the original onboards in its own wizard): it hires the chief with
//! the adapter the person chose, or the bundled example chief (a shell
//! script, no model), and opens the chat. Asking again finds the same
//! chief and chat.
//!
//! Also here: the answer to a task an agent created, which says when the
//! task was placed elsewhere than asked (`parentAdjusted`, the original's
//! agent task-tree depth rule, `core::task_tree`).

use std::path::{Path as FsPath, PathBuf};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::agent::AgentRole;
use paperclip_core::input::NewAgent;
use paperclip_core::model::{Agent, Issue};
use paperclip_store::issues::chat;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::AppState;

/// The example chief, shipped in the binary.
pub const EXAMPLE_CHIEF: &str = include_str!("../../../../examples/example-chief.sh");

/// What a model chief is told; the example chief does the same by script.
pub const CHIEF_INSTRUCTIONS: &str = include_str!("chief_instructions.md");

/// The chief's url key: how asking again finds the same chief.
const CHIEF_KEY: &str = "chief";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(start_chief))
}

/// Which chief: an adapter and its config as the hire form sends them, or
/// nothing (or `adapterType: "example"`) for the example chief.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChiefRequest {
    adapter_type: Option<String>,
    #[schema(value_type = Option<Object>)]
    adapter_config: Option<Map<String, Value>>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Chief {
    agent: Agent,
    /// The person's chat with the chief.
    chat: Issue,
}

fn examples_dir(data_dir: &FsPath) -> PathBuf {
    data_dir.join("examples")
}

/// Writes the example chief (and the example agent its hires run) and the
/// chief's instructions into the data dir unless they are there as is.
pub fn install_example_chief(data_dir: &FsPath) -> std::io::Result<PathBuf> {
    crate::sample::install_example_agent(data_dir)?;
    let dir = examples_dir(data_dir);
    for (name, text) in [
        ("example-chief.sh", EXAMPLE_CHIEF),
        ("chief-instructions.md", CHIEF_INSTRUCTIONS),
    ] {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
            std::fs::create_dir_all(&dir)?;
            std::fs::write(&path, text)?;
        }
    }
    // Runs start in their own workspace, so the path must not be relative.
    let script = dir.join("example-chief.sh");
    Ok(std::fs::canonicalize(&script).unwrap_or(script))
}

/// Hires the chief (the board's own hire, so it is not held for approval)
/// and opens the person's chat with it: 201, or 200 with the existing ones.
#[utoipa::path(post, path = "/api/companies/{companyId}/chief", tag = "chats",
    params(("companyId" = String, Path)), request_body = ChiefRequest,
    responses((status = 201, body = Chief, description = "The chief was hired and the chat opened"),
        (status = 200, body = Chief, description = "The company's chief and the person's chat with it"),
        (status = 400, description = "Bad adapter config", body = crate::error::ErrorBody),
        (status = 403, description = "Not a board person", body = crate::error::ErrorBody),
        (status = 404, description = "Company not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn start_chief(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(request): JsonBody<ChiefRequest>,
) -> ApiResult<(StatusCode, Json<Chief>)> {
    access::company_scope(&app, &caller, &company_id).await?;
    let actor = caller.require_board()?;
    if actor.user_id().is_none() {
        return Err(ApiError::forbidden("Board user access required"));
    }
    let data_dir = PathBuf::from(&app.info.data_dir);
    let script = install_example_chief(&data_dir).map_err(|e| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot write the example chief into the data dir: {e}"),
        )
    })?;
    if let Some(agent) =
        paperclip_store::org::agents::by_key(&app.store, &company_id, CHIEF_KEY).await?
    {
        let chat = chat::open(&app.store, actor, &company_id, &agent.id).await?;
        return Ok((StatusCode::OK, Json(Chief { agent, chat })));
    }
    let (adapter_type, config) = match request.adapter_type.as_deref() {
        None | Some("example") => (
            "process".to_string(),
            object(
                json!({ "command": "sh", "args": [script.display().to_string()],
                "timeoutSec": 120, "graceSec": 5 }),
            ),
        ),
        Some(kind) => {
            let mut config = request.adapter_config.unwrap_or_default();
            let instructions = examples_dir(&data_dir).join("chief-instructions.md");
            config
                .entry("instructionsFilePath")
                .or_insert_with(|| json!(instructions.display().to_string()));
            super::agents::check_adapter_config(
                &app,
                kind,
                &Value::Object(config.clone()),
                config.keys(),
            )?;
            (kind.to_string(), config)
        }
    };
    let agent = paperclip_store::org::agents::create(
        &app.store,
        actor,
        &company_id,
        NewAgent {
            name: "Chief".to_string(),
            role: Some(AgentRole::General),
            title: Some("Chief of Staff".to_string()),
            icon: None,
            reports_to: None,
            capabilities: Some(
                "Turns the person's goal into a plan: a goal, a project, the agents to hire \
                 and the first tasks."
                    .to_string(),
            ),
            adapter_type: Some(adapter_type),
            adapter_config: Some(config),
            runtime_config: None,
            budget_monthly_cents: None,
            // The chief hires; each hire still goes through the approval gate.
            permissions: Some(object(json!({ "canCreateAgents": true }))),
            metadata: Some(object(json!({ "onboardingChief": true }))),
        },
    )
    .await?;
    let chat = chat::open(&app.store, actor, &company_id, &agent.id).await?;
    Ok((StatusCode::CREATED, Json(Chief { agent, chat })))
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A created task as answered: the task, and when an agent's task was
/// placed beside the parent it asked for, `parentAdjusted` with the notice
/// the agent reads (tasks named by identifier).
pub(crate) async fn created_answer(
    app: &AppState,
    requested_parent: Option<&str>,
    issue: Issue,
) -> ApiResult<Json<Value>> {
    let adjusted = requested_parent.is_some_and(|p| issue.parent_id.as_deref() != Some(p));
    let mut answer = serde_json::to_value(&issue)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    if let (true, Some(requested)) = (adjusted, requested_parent) {
        let name = |id: String| async move {
            paperclip_store::issues::get(&app.store, &id)
                .await
                .map(|i| i.identifier)
                .unwrap_or(id)
        };
        let requested_name = name(requested.to_string()).await;
        let placed_name = match issue.parent_id.clone() {
            Some(p) => Some(name(p).await),
            None => None,
        };
        answer["parentAdjusted"] = json!(true);
        answer["parentAdjustment"] = json!({
            "requestedParentId": requested,
            "requestedParentIdentifier": requested_name,
            "parentId": issue.parent_id,
            "parentIdentifier": placed_name,
            "maxDepth": paperclip_core::task_tree::MAX_AGENT_TASK_HIERARCHY_DEPTH,
            "message": paperclip_core::task_tree::adjustment_message(&requested_name, placed_name.as_deref()),
        });
    }
    Ok(Json(answer))
}
