//! `GET /api/companies/{companyId}/adapters/detect`: what the hire form can
//! offer on this server. Upstream has no such route (its `GET /api/adapters`
//! lists adapter registrations, `.../adapters/{type}/detect-model` one
//! CLI's model), so this one is ours: the coding CLIs on the server's
//! `PATH` with their versions and whether a run would find credentials
//! (never a key's value), and the bundled example agent with its real path.
//! Agents run on the server, so it is the server's machine that counts.

use axum::extract::{Path, State};
use axum::Json;
use paperclip_adapters::detect::{self, Detected};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(detect_adapters))
}

/// The example agent as a `process` config: `sh <its path>`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExampleAgent {
    pub adapter_type: &'static str,
    pub command: &'static str,
    pub args: Vec<String>,
    pub path: String,
    /// Written at every start; false only if the data dir lost it since.
    pub exists: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Detection {
    /// `claude`, `codex` and `opencode`, found or not, in that order.
    #[schema(value_type = Vec<Object>)]
    pub clis: Vec<Detected>,
    pub example_agent: ExampleAgent,
    /// Where agents without a working directory get their own folder.
    pub workspace_root: String,
}

/// The coding CLIs installed on the server (path, `--version`, logged in
/// or keyed) and the bundled example agent. Board only.
#[utoipa::path(get, path = "/api/companies/{companyId}/adapters/detect", tag = "agents",
    params(("companyId" = String, Path)),
    responses((status = 200, body = Detection), (status = 403, description = "Board access required")))]
#[paperclip_macros::handler]
async fn detect_adapters(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Detection>> {
    caller.require_board()?;
    access::company_scope(&app, &caller, &company_id).await?;
    let data_dir = std::path::PathBuf::from(&app.info.data_dir);
    let script = crate::sample::example_agent_path(&data_dir);
    // Runs start in their own workspace, so the path must not be relative.
    let script = std::fs::canonicalize(&script).unwrap_or(script);
    let clis = detect::detect().await;
    Ok(Json(Detection {
        clis,
        example_agent: ExampleAgent {
            adapter_type: "process",
            command: "sh",
            args: vec![script.display().to_string()],
            exists: script.is_file(),
            path: script.display().to_string(),
        },
        workspace_root: data_dir.join("workspaces").display().to_string(),
    }))
}
