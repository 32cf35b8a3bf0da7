//! An execution workspace's life on upstream's routes: its operations and
//! their logs, close-readiness, closing (`PATCH {status: "archived"}`), the
//! company's overview; and what the whole task changed (ours). Reads are
//! for anyone in the company; closing and renaming are the board's.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::workspace::{ExecutionWorkspace, ExecutionWorkspaceStatus};
use paperclip_core::workspace_ops::{
    CloseReadiness, ExecutionWorkspacePatch, TaskWorkspaceChanges, WorkspaceOperation,
    WorkspaceOperationLog, WorkspaceOverview,
};
use paperclip_runtime::workspace_life::{self as life, CloseError};
use paperclip_store::runs::workspace_life as store_life;
use paperclip_store::runs::workspace_ops as ops;
use paperclip_store::runs::workspaces as exec_ws;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::limits::ValidJson;
use crate::AppState;

/// The most operations one list answers with (a workspace's last ones).
const OPERATIONS_MAX: i64 = 500;
/// The most workspaces the overview lists.
const OVERVIEW_MAX: i64 = 200;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(workspace_operations))
        .routes(routes!(run_workspace_operations))
        .routes(routes!(operation_log))
        .routes(routes!(close_readiness))
        .routes(routes!(update_execution_workspace))
        .routes(routes!(task_changes))
        .routes(routes!(workspace_overview))
}

async fn workspace(app: &AppState, caller: &Caller, id: &str) -> ApiResult<ExecutionWorkspace> {
    let ws = exec_ws::get(&app.store, id).await?;
    caller.ensure_company(&ws.company_id)?;
    Ok(ws)
}

#[utoipa::path(get, path = "/api/execution-workspaces/{id}/workspace-operations", tag = "workspaces",
    params(("id" = String, Path)), responses((status = 200, body = [WorkspaceOperation])))]
#[paperclip_macros::handler]
async fn workspace_operations(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<WorkspaceOperation>>> {
    let ws = workspace(&app, &caller, &id).await?;
    Ok(Json(
        ops::of_workspace(&app.store, &ws.id, OPERATIONS_MAX).await?,
    ))
}

#[utoipa::path(get, path = "/api/heartbeat-runs/{runId}/workspace-operations", tag = "workspaces",
    params(("runId" = String, Path)), responses((status = 200, body = [WorkspaceOperation])))]
#[paperclip_macros::handler]
async fn run_workspace_operations(
    State(app): State<AppState>,
    caller: Caller,
    Path(run_id): Path<String>,
) -> ApiResult<Json<Vec<WorkspaceOperation>>> {
    let run = access::run(&app, &caller, &run_id).await?;
    Ok(Json(ops::of_run(&app.store, &run.id).await?))
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
struct LogQuery {
    /// Byte offset to read from (`nextOffset` of the previous read).
    offset: Option<u64>,
}

#[utoipa::path(get, path = "/api/workspace-operations/{operationId}/log", tag = "workspaces",
    params(("operationId" = String, Path), LogQuery),
    responses((status = 200, body = WorkspaceOperationLog)))]
#[paperclip_macros::handler]
async fn operation_log(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<LogQuery>,
) -> ApiResult<Json<WorkspaceOperationLog>> {
    let op = ops::get(&app.store, &id).await?;
    caller.ensure_company(&op.company_id)?;
    Ok(Json(
        ops::read_log(&app.store, &op.id, q.offset.unwrap_or(0)).await?,
    ))
}

#[utoipa::path(get, path = "/api/execution-workspaces/{id}/close-readiness", tag = "workspaces",
    params(("id" = String, Path)), responses((status = 200, body = CloseReadiness)))]
#[paperclip_macros::handler]
async fn close_readiness(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<CloseReadiness>> {
    let ws = workspace(&app, &caller, &id).await?;
    let workspaces = app.runtime.workspaces();
    Ok(Json(life::readiness(&app.store, workspaces, &ws).await?))
}

/// Renames the workspace, or closes it with `status: "archived"`: its
/// uncommitted work is committed on the branch, the worktree removed, the
/// branch deleted only if its base has all of it. 409 while a run of its
/// task is queued or running, or when it is already closed.
#[utoipa::path(patch, path = "/api/execution-workspaces/{id}", tag = "workspaces",
    params(("id" = String, Path)), request_body = ExecutionWorkspacePatch,
    responses((status = 200, body = ExecutionWorkspace),
        (status = 409, description = "A run of its task is live, or it is closed", body = crate::error::ErrorBody),
        (status = 422, description = "A status that cannot be set by hand", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn update_execution_workspace(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(patch): ValidJson<ExecutionWorkspacePatch>,
) -> ApiResult<Json<ExecutionWorkspace>> {
    let mut ws = workspace(&app, &caller, &id).await?;
    let actor = caller.require_board()?;
    if let Some(name) = patch.name.as_deref().map(str::trim) {
        if name.is_empty() {
            return Err(ApiError::validation(
                serde_json::json!([{ "code": "too_small",
                "path": ["name"], "message": "name must not be empty" }]),
            ));
        }
        ws = store_life::rename(&app.store, actor, &ws.id, name).await?;
    }
    match patch.status {
        None => Ok(Json(ws)),
        Some(ExecutionWorkspaceStatus::Archived) => {
            let reason = patch
                .cleanup_reason
                .as_deref()
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .unwrap_or("Closed by the board");
            let workspaces = app.runtime.workspaces();
            match life::close(&app.store, workspaces, actor, &ws, reason).await {
                Ok(closed) => Ok(Json(closed)),
                Err(CloseError::Busy) => Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "A run of the workspace's task is queued or running: close it after the run ends",
                )),
                Err(CloseError::Closed) => Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "The workspace is already closed",
                )),
                Err(CloseError::Failed(why)) => Err(ApiError::new(
                    StatusCode::CONFLICT,
                    format!("The worktree could not be removed ({why}); the workspace is marked cleanup_failed and can be closed again"),
                )),
                Err(CloseError::Store(e)) => Err(e.into()),
            }
        }
        Some(other) if other == ws.status => Ok(Json(ws)),
        Some(other) => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "status {:?} is set by the runtime; only \"archived\" (close) can be asked for",
                other.as_str()
            ),
        )),
    }
}

/// Ours: what the whole task changed on its branch against its base, as of
/// its last run's end; 404 before a run has ended in it.
#[utoipa::path(get, path = "/api/execution-workspaces/{id}/task-changes", tag = "workspaces",
    params(("id" = String, Path)), responses((status = 200, body = TaskWorkspaceChanges),
        (status = 404, description = "No run has ended in the workspace", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn task_changes(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<TaskWorkspaceChanges>> {
    let ws = workspace(&app, &caller, &id).await?;
    store_life::task_changes(&app.store, &ws.id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("No run has ended in the workspace yet"))
}

#[utoipa::path(get, path = "/api/companies/{companyId}/workspace-overview", tag = "workspaces",
    params(("companyId" = String, Path)), responses((status = 200, body = WorkspaceOverview)))]
#[paperclip_macros::handler]
async fn workspace_overview(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<WorkspaceOverview>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let usage = store_life::usage(&app.store, &company_id).await?;
    let (retention_days, disk_budget_bytes) = store_life::bounds(&app.store, &company_id).await?;
    let filter = exec_ws::Filter::default();
    let mut workspaces =
        exec_ws::list_company(&app.store, &company_id, &filter, OVERVIEW_MAX).await?;
    workspaces.retain(|w| w.closed_at.is_none());
    Ok(Json(WorkspaceOverview {
        company_id,
        open_count: usage.open,
        active_count: usage.active,
        disk_bytes: usage.disk_bytes,
        disk_budget_bytes,
        retention_days,
        workspaces,
    }))
}
