//! Routines (upstream's `/api/companies/:id/routines`, `/api/routines/:id`):
//! the template, its revisions and its runs, and a run on demand. Triggers
//! and the public webhook are [`super::routine_triggers`]'.
//!
//! Who may do what: reading needs the company; creating and editing need
//! `tasks:mutate` (the route table), and activating, reassigning, changing
//! triggers, restoring and running need `tasks:assign`. An agent manages
//! only routines assigned to itself.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::routine::{
    AssigneeRef, NewRoutine, Routine, RoutineDetail, RoutineListItem, RoutinePatch,
    RoutineRevision, RoutineRun, RoutineRunSummary, RoutineStatus, RunRequest, RunSource,
    SecretMaterial, IDEMPOTENCY_KEY_MAX,
};
use paperclip_core::team::Permission;
use paperclip_runtime::vault::Vault;
use paperclip_store::{
    routines, routines::revisions as routine_revisions, routines::runs as routine_runs,
    routines::triggers as routine_triggers,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::routine_triggers::{master_key, random_hex, webhook_url};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_routines, create_routine))
        .routes(routes!(get_routine, update_routine))
        .routes(routes!(list_revisions))
        .routes(routes!(restore_revision))
        .routes(routes!(list_runs))
        .routes(routes!(run_routine))
}

/// The routine, if the caller may see its company.
pub(crate) async fn load(app: &AppState, caller: &Caller, id: &str) -> ApiResult<Routine> {
    if uuid::Uuid::try_parse(id).is_err() {
        return Err(paperclip_store::Error::not_found("Routine").into());
    }
    let routine = routines::get(&app.store, id).await?;
    caller.ensure_company(&routine.company_id)?;
    Ok(routine)
}

/// An agent acts only on routines assigned to itself.
pub(crate) fn agent_owns(caller: &Caller, routine: &Routine) -> ApiResult<()> {
    match caller.agent_id() {
        Some(agent) if routine.assignee_agent_id.as_deref() != Some(agent) => Err(
            ApiError::forbidden("Agents can only manage routines assigned to themselves"),
        ),
        _ => Ok(()),
    }
}

pub(crate) fn needs_assign(caller: &Caller, company_id: &str) -> ApiResult<()> {
    caller.ensure_permission(company_id, Permission::TasksAssign)
}

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    project_id: Option<String>,
}

#[utoipa::path(get, path = "/api/companies/{companyId}/routines", tag = "routines",
    params(("companyId" = String, Path), ListQuery),
    responses((status = 200, body = [RoutineListItem])))]
#[paperclip_macros::handler]
async fn list_routines(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    Query(q): Query<ListQuery>,
) -> ApiResult<Json<Vec<RoutineListItem>>> {
    crate::access::company_scope(&app, &caller, &company_id).await?;
    let list = paperclip_store::routines::run_list::list_items(
        &app.store,
        &company_id,
        q.project_id.as_deref(),
    )
    .await?;
    Ok(Json(list))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/routines", tag = "routines",
    params(("companyId" = String, Path)), request_body = NewRoutine,
    responses((status = 201, body = Routine), (status = 403, description = "Not allowed")))]
#[paperclip_macros::handler]
async fn create_routine(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(input): JsonBody<NewRoutine>,
) -> ApiResult<(StatusCode, Json<Routine>)> {
    crate::access::company_scope(&app, &caller, &company_id).await?;
    if let Some(agent) = caller.agent_id() {
        if input.assignee_agent_id.as_deref() != Some(agent) {
            return Err(ApiError::forbidden(
                "Agents can only create routines assigned to themselves",
            ));
        }
    }
    if input.assignee_agent_id.is_some() {
        needs_assign(&caller, &company_id)?;
    }
    let routine = routines::create(&app.store, caller.actor(), &company_id, &input).await?;
    Ok((StatusCode::CREATED, Json(routine)))
}

#[utoipa::path(get, path = "/api/routines/{id}", tag = "routines",
    params(("id" = String, Path)),
    responses((status = 200, body = RoutineDetail), (status = 404, description = "Not found")))]
#[paperclip_macros::handler]
async fn get_routine(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<RoutineDetail>> {
    let routine = load(&app, &caller, &id).await?;
    Ok(Json(detail(&app, routine).await?))
}

pub(crate) async fn detail(app: &AppState, routine: Routine) -> ApiResult<RoutineDetail> {
    let assignee = match &routine.assignee_agent_id {
        Some(agent) => paperclip_store::org::agents::get(&app.store, agent)
            .await
            .ok()
            .map(|a| AssigneeRef {
                id: a.id,
                name: a.name,
                role: a.role.as_str().to_string(),
                title: a.title,
                url_key: a.url_key,
            }),
        None => None,
    };
    let project = match &routine.project_id {
        Some(id) => Some(paperclip_store::org::projects::get(&app.store, id).await?),
        None => None,
    };
    let parent_issue = match &routine.parent_issue_id {
        Some(id) => Some(paperclip_store::issues::get(&app.store, id).await?),
        None => None,
    };
    let routine_id = routine.id.clone();
    let triggers = routine_triggers::list(&app.store, &routine.id).await?;
    let recent_runs = routine_runs::list(&app.store, &routine.id, 25).await?;
    let active_issue = routines::active_issue(&app.store, &routine.id).await?;
    Ok(RoutineDetail {
        routine,
        managed_by_plugin: None,
        project,
        parent_issue,
        description_document: routines::description::get(&app.store, &routine_id).await?,
        assignee,
        triggers,
        recent_runs,
        active_issue,
    })
}

#[utoipa::path(patch, path = "/api/routines/{id}", tag = "routines",
    params(("id" = String, Path)), request_body = RoutinePatch,
    responses((status = 200, body = Routine), (status = 409, description = "Stale or archived")))]
#[paperclip_macros::handler]
async fn update_routine(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(patch): JsonBody<RoutinePatch>,
) -> ApiResult<Json<Routine>> {
    let routine = load(&app, &caller, &id).await?;
    agent_owns(&caller, &routine)?;
    let reassigns = patch
        .assignee_agent_id
        .as_ref()
        .is_some_and(|a| *a != routine.assignee_agent_id);
    if let (Some(agent), true) = (caller.agent_id(), reassigns) {
        if patch.assignee_agent_id != Some(Some(agent.to_string())) {
            return Err(ApiError::forbidden(
                "Agents can only assign routines to themselves",
            ));
        }
    }
    let activates =
        patch.status == Some(RoutineStatus::Active) && routine.status != RoutineStatus::Active;
    if reassigns || activates {
        needs_assign(&caller, &routine.company_id)?;
    }
    let now = app.runtime.routine_clock().now();
    let updated = routines::update(&app.store, caller.actor(), &id, &patch, now).await?;
    Ok(Json(updated))
}

#[utoipa::path(get, path = "/api/routines/{id}/revisions", tag = "routines",
    params(("id" = String, Path)), responses((status = 200, body = [RoutineRevision])))]
#[paperclip_macros::handler]
async fn list_revisions(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<RoutineRevision>>> {
    let routine = load(&app, &caller, &id).await?;
    Ok(Json(
        routine_revisions::revisions(&app.store, &routine.id).await?,
    ))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Restored {
    routine: Routine,
    revision: RoutineRevision,
    restored_from_revision_id: String,
    restored_from_revision_number: i64,
    secret_materials: Vec<SecretMaterial>,
}

#[utoipa::path(post, path = "/api/routines/{id}/revisions/{revisionId}/restore", tag = "routines",
    params(("id" = String, Path), ("revisionId" = String, Path)),
    responses((status = 200, body = Restored), (status = 404, description = "Not found")))]
#[paperclip_macros::handler]
async fn restore_revision(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, revision_id)): Path<(String, String)>,
) -> ApiResult<Json<Restored>> {
    let routine = load(&app, &caller, &id).await?;
    agent_owns(&caller, &routine)?;
    needs_assign(&caller, &routine.company_id)?;
    if uuid::Uuid::try_parse(&revision_id).is_err() {
        return Err(paperclip_store::Error::not_found("Routine revision").into());
    }
    let now = app.runtime.routine_clock().now();
    let seal = Vault::sealer(master_key(&app)?);
    let secret = || (random_hex(24), random_hex(12));
    let fresh = routine_triggers::Fresh {
        secret: &secret,
        seal: &seal,
    };
    let done =
        routine_revisions::restore(&app.store, caller.actor(), &id, &revision_id, &fresh, now)
            .await?;
    let secret_materials = done
        .remade
        .into_iter()
        .filter_map(|r| match (r.secret, r.trigger.public_id) {
            (Some(webhook_secret), Some(public_id)) => Some(SecretMaterial {
                webhook_url: webhook_url(&app, &public_id),
                webhook_secret,
            }),
            _ => None,
        })
        .collect();
    Ok(Json(Restored {
        routine: done.routine,
        revision: done.revision,
        restored_from_revision_id: revision_id,
        restored_from_revision_number: done.from_number,
        secret_materials,
    }))
}

#[derive(Deserialize, utoipa::IntoParams)]
struct RunsQuery {
    limit: Option<i64>,
}

#[utoipa::path(get, path = "/api/routines/{id}/runs", tag = "routines",
    params(("id" = String, Path), RunsQuery),
    responses((status = 200, body = [RoutineRunSummary])))]
#[paperclip_macros::handler]
async fn list_runs(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(q): Query<RunsQuery>,
) -> ApiResult<Json<Vec<RoutineRunSummary>>> {
    let routine = load(&app, &caller, &id).await?;
    let limit = q.limit.unwrap_or(50);
    Ok(Json(
        routine_runs::list(&app.store, &routine.id, limit).await?,
    ))
}

#[utoipa::path(post, path = "/api/routines/{id}/run", tag = "routines",
    params(("id" = String, Path)), request_body = RunRequest,
    responses((status = 202, body = RoutineRun), (status = 409, description = "Archived routine or disabled trigger")))]
#[paperclip_macros::handler]
async fn run_routine(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<RunRequest>,
) -> ApiResult<(StatusCode, Json<RoutineRun>)> {
    let routine = load(&app, &caller, &id).await?;
    agent_owns(&caller, &routine)?;
    needs_assign(&caller, &routine.company_id)?;
    let source = input.source.unwrap_or(RunSource::Manual);
    if !matches!(source, RunSource::Manual | RunSource::Api) {
        return Err(ApiError::validation(serde_json::json!([{
            "code": "invalid_enum_value", "path": ["source"],
            "message": "source must be manual or api",
        }])));
    }
    if input
        .idempotency_key
        .as_ref()
        .is_some_and(|k| k.len() > IDEMPOTENCY_KEY_MAX)
    {
        return Err(ApiError::validation(serde_json::json!([{
            "code": "too_big", "path": ["idempotencyKey"],
            "message": format!("idempotencyKey must be at most {IDEMPOTENCY_KEY_MAX} characters"),
        }])));
    }
    if routine.status == RoutineStatus::Archived {
        return Err(ApiError::new(StatusCode::CONFLICT, "Routine is archived"));
    }
    let trigger = match &input.trigger_id {
        Some(tid) => {
            let t = crate::routes::routine_triggers::load(&app, &caller, tid).await?;
            if t.routine_id != routine.id {
                return Err(ApiError::forbidden("Trigger belongs to another routine"));
            }
            if !t.enabled {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "Routine trigger is disabled",
                ));
            }
            Some(t)
        }
        None => None,
    };
    if let Some(agent) = &input.assignee_agent_id {
        if caller.agent_id().is_some_and(|me| me != agent) {
            return Err(ApiError::forbidden(
                "Agents can only assign routines to themselves",
            ));
        }
    }
    let run = routine_runs::dispatch(
        &app.store,
        caller.actor(),
        routine_runs::Dispatch {
            routine_id: &routine.id,
            trigger: trigger.as_ref(),
            source,
            triggered_at: app.runtime.routine_clock().now(),
            payload: input.payload.clone(),
            variables: input.variables.clone().unwrap_or_default(),
            idempotency_key: input.idempotency_key.as_deref(),
            assignee_agent_id: input.assignee_agent_id.as_deref(),
        },
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(run)))
}
