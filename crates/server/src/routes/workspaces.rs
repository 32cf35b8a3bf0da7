//! Project workspaces and execution workspaces on upstream's routes and in
//! its shapes, plus what a run changed (ours: upstream has no per-run diff).
//! Declaring a repository decides where agents' processes run, so only the
//! board changes project workspaces; reads are for anyone in the company.

use std::path::Path as FsPath;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::workspace::{
    ExecutionWorkspace, ExecutionWorkspaceStatus, NewProjectWorkspace, ProjectWorkspace,
    ProjectWorkspacePatch, RunWorkspaceChanges, WorkspaceSourceType,
};
use paperclip_store::org::workspaces as project_ws;
use paperclip_store::runs::workspaces as exec_ws;
use serde::Deserialize;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::limits::ValidJson;
use crate::AppState;

/// The most workspaces one list answers with.
const LIST_MAX: i64 = 500;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_project_workspaces, create_project_workspace))
        .routes(routes!(update_project_workspace, delete_project_workspace))
        .routes(routes!(list_execution_workspaces))
        .routes(routes!(get_execution_workspace))
        .routes(routes!(execution_workspace_changes))
        .routes(routes!(run_workspace_changes))
}

#[utoipa::path(get, path = "/api/projects/{id}/workspaces", tag = "workspaces",
    params(("id" = String, Path)), responses((status = 200, body = [ProjectWorkspace])))]
#[paperclip_macros::handler]
async fn list_project_workspaces(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<ProjectWorkspace>>> {
    let project = access::project(&app, &caller, &id).await?;
    Ok(Json(project_ws::list(&app.store, &project.id).await?))
}

#[utoipa::path(post, path = "/api/projects/{id}/workspaces", tag = "workspaces",
    params(("id" = String, Path)), request_body = NewProjectWorkspace,
    responses((status = 201, body = ProjectWorkspace),
        (status = 422, description = "Not an absolute path of a git repository", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn create_project_workspace(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(mut input): ValidJson<NewProjectWorkspace>,
) -> ApiResult<(StatusCode, Json<ProjectWorkspace>)> {
    let project = access::project(&app, &caller, &id).await?;
    let actor = caller.require_board()?;
    let by_url = input
        .repo_url
        .as_deref()
        .is_some_and(|u| !u.trim().is_empty())
        && input.cwd.is_none()
        && matches!(input.source_type, None | Some(WorkspaceSourceType::GitRepo));
    if by_url {
        let url = input.repo_url.clone().unwrap_or_default();
        let dest = FsPath::new(&app.info.data_dir)
            .join("repos")
            .join(uuid::Uuid::new_v4().simple().to_string());
        input.cwd = Some(crate::clone::clone(url.trim(), &dest).await?);
        input.repo_url = Some(crate::clone::without_credentials(url.trim()));
        input.source_type = Some(WorkspaceSourceType::GitRepo);
    } else if let Some(cwd) = &input.cwd {
        input.cwd = Some(repository(cwd).await?);
    }
    let created =
        project_ws::create(&app.store, actor, &project.company_id, &project.id, &input).await;
    if created.is_err() && by_url {
        if let Some(clone) = &input.cwd {
            let _ = std::fs::remove_dir_all(clone);
        }
    }
    Ok((StatusCode::CREATED, Json(created?)))
}

#[utoipa::path(patch, path = "/api/projects/{id}/workspaces/{workspaceId}", tag = "workspaces",
    params(("id" = String, Path), ("workspaceId" = String, Path)),
    request_body = ProjectWorkspacePatch, responses((status = 200, body = ProjectWorkspace)))]
#[paperclip_macros::handler]
async fn update_project_workspace(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, workspace_id)): Path<(String, String)>,
    ValidJson(mut patch): ValidJson<ProjectWorkspacePatch>,
) -> ApiResult<Json<ProjectWorkspace>> {
    let project = access::project(&app, &caller, &id).await?;
    let actor = caller.require_board()?;
    of_project(&app, &project.id, &workspace_id).await?;
    let local = (patch.source_type).is_none_or(|t| t == WorkspaceSourceType::LocalPath);
    let url = (patch.repo_url.as_deref()).is_some_and(|u| !u.trim().is_empty());
    if url || !local {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Only a local git repository is supported as a project workspace so far: \
             sourceType can only be local_path, and repoUrl cannot be set",
        ));
    }
    if let Some(cwd) = &patch.cwd {
        patch.cwd = Some(repository(cwd).await?);
    }
    Ok(Json(
        project_ws::update(&app.store, actor, &workspace_id, &patch).await?,
    ))
}

#[utoipa::path(delete, path = "/api/projects/{id}/workspaces/{workspaceId}", tag = "workspaces",
    params(("id" = String, Path), ("workspaceId" = String, Path)),
    responses((status = 200, body = ProjectWorkspace)))]
#[paperclip_macros::handler]
async fn delete_project_workspace(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, workspace_id)): Path<(String, String)>,
) -> ApiResult<Json<ProjectWorkspace>> {
    let project = access::project(&app, &caller, &id).await?;
    let actor = caller.require_board()?;
    of_project(&app, &project.id, &workspace_id).await?;
    Ok(Json(
        project_ws::delete(&app.store, actor, &workspace_id).await?,
    ))
}

/// A workspace of another project is not found here, as upstream answers.
async fn of_project(app: &AppState, project_id: &str, workspace_id: &str) -> ApiResult<()> {
    match project_ws::get(&app.store, workspace_id).await {
        Ok(ws) if ws.project_id == project_id => Ok(()),
        Ok(_) | Err(paperclip_store::Error::NotFound(_)) => {
            Err(ApiError::not_found("Project workspace not found"))
        }
        Err(e) => Err(e.into()),
    }
}

/// The repository a declared path names: absolute, an existing directory,
/// inside a git work tree; its top level is what is stored, so every
/// worktree is made from the repository and not a subfolder of it.
async fn repository(cwd: &str) -> ApiResult<String> {
    let unprocessable = |m: String| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, m);
    let path = FsPath::new(cwd.trim());
    if !path.is_absolute() {
        return Err(unprocessable(format!(
            "cwd must be an absolute path of a local git repository, not {cwd:?}"
        )));
    }
    match tokio::fs::metadata(path).await {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(unprocessable(format!("cwd {cwd:?} is not a directory"))),
        Err(e) => return Err(unprocessable(format!("cwd {cwd:?} cannot be read: {e}"))),
    }
    match paperclip_runtime::workspace::repository_root(path).await {
        Ok(root) => Ok(root.display().to_string()),
        Err(_) => Err(unprocessable(format!(
            "cwd {cwd:?} is not inside a git repository (git rev-parse found no work tree)"
        ))),
    }
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    project_id: Option<String>,
    issue_id: Option<String>,
    status: Option<ExecutionWorkspaceStatus>,
}

#[utoipa::path(get, path = "/api/companies/{companyId}/execution-workspaces", tag = "workspaces",
    params(("companyId" = String, Path), ListQuery),
    responses((status = 200, body = [ExecutionWorkspace])))]
#[paperclip_macros::handler]
async fn list_execution_workspaces(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<Vec<ExecutionWorkspace>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let filter = exec_ws::Filter {
        project_id: q.project_id,
        issue_id: q.issue_id,
        status: q.status,
    };
    let list = exec_ws::list_company(&app.store, &company_id, &filter, LIST_MAX).await?;
    Ok(Json(list))
}

async fn execution_workspace(
    app: &AppState,
    caller: &Caller,
    id: &str,
) -> ApiResult<ExecutionWorkspace> {
    let ws = exec_ws::get(&app.store, id).await?;
    caller.ensure_company(&ws.company_id)?;
    Ok(ws)
}

#[utoipa::path(get, path = "/api/execution-workspaces/{id}", tag = "workspaces",
    params(("id" = String, Path)), responses((status = 200, body = ExecutionWorkspace),
        (status = 404, description = "Execution workspace not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_execution_workspace(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<ExecutionWorkspace>> {
    Ok(Json(execution_workspace(&app, &caller, &id).await?))
}

/// Ours: what each run changed in the workspace, newest first.
#[utoipa::path(get, path = "/api/execution-workspaces/{id}/changes", tag = "workspaces",
    params(("id" = String, Path)), responses((status = 200, body = [RunWorkspaceChanges])))]
#[paperclip_macros::handler]
async fn execution_workspace_changes(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<RunWorkspaceChanges>>> {
    let ws = execution_workspace(&app, &caller, &id).await?;
    let list = exec_ws::changes_of_workspace(&app.store, &ws.id, LIST_MAX).await?;
    Ok(Json(list))
}

/// Ours: what one run changed in its task's workspace; 404 when it ran in
/// none (or has not ended).
#[utoipa::path(get, path = "/api/heartbeat-runs/{runId}/workspace-changes", tag = "workspaces",
    params(("runId" = String, Path)), responses((status = 200, body = RunWorkspaceChanges),
        (status = 404, description = "The run recorded no workspace changes", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn run_workspace_changes(
    State(app): State<AppState>,
    caller: Caller,
    Path(run_id): Path<String>,
) -> ApiResult<Json<RunWorkspaceChanges>> {
    let run = access::run(&app, &caller, &run_id).await?;
    exec_ws::changes_of_run(&app.store, &run.id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("The run recorded no workspace changes"))
}
