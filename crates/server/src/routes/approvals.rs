use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::approval::ApprovalAction;
use paperclip_core::input::{ApprovalDecision, NewAgent, NewApproval, NewComment};
use paperclip_core::model::{Agent, Approval, ApprovalComment, Issue};
use paperclip_store::approvals;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{JsonBody, QueryParams};
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_approvals, create_approval))
        .routes(routes!(get_approval))
        .routes(routes!(approve))
        .routes(routes!(reject))
        .routes(routes!(request_revision))
        .routes(routes!(resubmit))
        .routes(routes!(cancel))
        .routes(routes!(list_comments, add_comment))
        .routes(routes!(approval_issues))
        .routes(routes!(issue_approvals, link_issue))
        .routes(routes!(unlink_issue))
        .routes(routes!(hire))
}

async fn approval_for(app: &AppState, caller: &Caller, id: &str) -> ApiResult<Approval> {
    let approval = approvals::get(&app.store, id).await?;
    caller.ensure_company(&approval.company_id)?;
    Ok(approval)
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// `pending`, `approved`, `rejected`, `revision_requested` or `cancelled`.
    status: Option<String>,
}

#[utoipa::path(get, path = "/api/companies/{companyId}/approvals", tag = "approvals",
    params(("companyId" = String, Path), ListQuery), responses((status = 200, body = [Approval])))]
#[paperclip_macros::handler]
async fn list_approvals(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    QueryParams(q): QueryParams<ListQuery>,
) -> ApiResult<Json<Vec<Approval>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    Ok(Json(
        approvals::list(&app.store, &company_id, q.status.as_deref()).await?,
    ))
}

/// Asks the board to decide something; agents and the board may ask.
#[utoipa::path(post, path = "/api/companies/{companyId}/approvals", tag = "approvals",
    params(("companyId" = String, Path)), request_body = NewApproval, responses((status = 201, body = Approval)))]
#[paperclip_macros::handler]
async fn create_approval(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(input): ValidJson<NewApproval>,
) -> ApiResult<(StatusCode, Json<Approval>)> {
    caller.ensure_company(&company_id)?;
    Ok((
        StatusCode::CREATED,
        Json(approvals::create(&app.store, caller.actor(), &company_id, input).await?),
    ))
}

#[utoipa::path(get, path = "/api/approvals/{id}", tag = "approvals",
    params(("id" = String, Path)), responses((status = 200, body = Approval), (status = 404, description = "Approval not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_approval(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Approval>> {
    Ok(Json(approval_for(&app, &caller, &id).await?))
}

async fn decide(
    app: &AppState,
    caller: &Caller,
    id: &str,
    action: ApprovalAction,
    input: ApprovalDecision,
) -> ApiResult<Json<Approval>> {
    let approval = approval_for(app, caller, id).await?;
    let actor = match action {
        ApprovalAction::Approve | ApprovalAction::Reject | ApprovalAction::RequestRevision => {
            caller.require_board()?
        }
        // The requester may revise or withdraw its own request.
        ApprovalAction::Resubmit | ApprovalAction::Cancel => {
            let own = caller.agent_id().is_some()
                && caller.agent_id() == approval.requested_by_agent_id.as_deref();
            if !own {
                caller.require_board()?;
            }
            caller.actor()
        }
    };
    let decided = approvals::decide(&app.store, actor, id, action, input).await?;
    Ok(Json(decided))
}

#[utoipa::path(post, path = "/api/approvals/{id}/approve", tag = "approvals",
    params(("id" = String, Path)), request_body = ApprovalDecision,
    responses((status = 200, body = Approval), (status = 403, description = "Board access required", body = crate::error::ErrorBody), (status = 409, description = "Already decided", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn approve(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<ApprovalDecision>,
) -> ApiResult<Json<Approval>> {
    decide(&app, &caller, &id, ApprovalAction::Approve, input).await
}

#[utoipa::path(post, path = "/api/approvals/{id}/reject", tag = "approvals",
    params(("id" = String, Path)), request_body = ApprovalDecision, responses((status = 200, body = Approval)))]
#[paperclip_macros::handler]
async fn reject(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<ApprovalDecision>,
) -> ApiResult<Json<Approval>> {
    decide(&app, &caller, &id, ApprovalAction::Reject, input).await
}

#[utoipa::path(post, path = "/api/approvals/{id}/request-revision", tag = "approvals",
    params(("id" = String, Path)), request_body = ApprovalDecision, responses((status = 200, body = Approval)))]
#[paperclip_macros::handler]
async fn request_revision(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<ApprovalDecision>,
) -> ApiResult<Json<Approval>> {
    decide(&app, &caller, &id, ApprovalAction::RequestRevision, input).await
}

#[utoipa::path(post, path = "/api/approvals/{id}/resubmit", tag = "approvals",
    params(("id" = String, Path)), request_body = ApprovalDecision, responses((status = 200, body = Approval)))]
#[paperclip_macros::handler]
async fn resubmit(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<ApprovalDecision>,
) -> ApiResult<Json<Approval>> {
    decide(&app, &caller, &id, ApprovalAction::Resubmit, input).await
}

#[utoipa::path(post, path = "/api/approvals/{id}/cancel", tag = "approvals",
    params(("id" = String, Path)), request_body = ApprovalDecision, responses((status = 200, body = Approval)))]
#[paperclip_macros::handler]
async fn cancel(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<ApprovalDecision>,
) -> ApiResult<Json<Approval>> {
    decide(&app, &caller, &id, ApprovalAction::Cancel, input).await
}

#[utoipa::path(get, path = "/api/approvals/{id}/comments", tag = "approvals",
    params(("id" = String, Path)), responses((status = 200, body = [ApprovalComment])))]
#[paperclip_macros::handler]
async fn list_comments(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<ApprovalComment>>> {
    approval_for(&app, &caller, &id).await?;
    Ok(Json(approvals::comments(&app.store, &id).await?))
}

#[utoipa::path(post, path = "/api/approvals/{id}/comments", tag = "approvals",
    params(("id" = String, Path)), request_body = NewComment, responses((status = 201, body = ApprovalComment)))]
#[paperclip_macros::handler]
async fn add_comment(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<NewComment>,
) -> ApiResult<(StatusCode, Json<ApprovalComment>)> {
    approval_for(&app, &caller, &id).await?;
    Ok((
        StatusCode::CREATED,
        Json(approvals::add_comment(&app.store, caller.actor(), &id, &input.body).await?),
    ))
}

#[utoipa::path(get, path = "/api/approvals/{id}/issues", tag = "approvals",
    params(("id" = String, Path)), responses((status = 200, body = [Issue])))]
#[paperclip_macros::handler]
async fn approval_issues(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Issue>>> {
    approval_for(&app, &caller, &id).await?;
    Ok(Json(approvals::issues_of(&app.store, &id).await?))
}

#[utoipa::path(get, path = "/api/issues/{id}/approvals", tag = "approvals",
    params(("id" = String, Path)), responses((status = 200, body = [Approval])))]
#[paperclip_macros::handler]
async fn issue_approvals(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Approval>>> {
    let issue = access::issue(&app, &caller, &id).await?;
    Ok(Json(approvals::of_issue(&app.store, &issue.id).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkBody {
    approval_id: String,
}

#[utoipa::path(post, path = "/api/issues/{id}/approvals", tag = "approvals",
    params(("id" = String, Path)), request_body = LinkBody, responses((status = 200, body = [Approval])))]
#[paperclip_macros::handler]
async fn link_issue(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<LinkBody>,
) -> ApiResult<Json<Vec<Approval>>> {
    let issue = access::issue(&app, &caller, &id).await?;
    approval_for(&app, &caller, &body.approval_id).await?;
    approvals::link(&app.store, caller.actor(), &issue.id, &body.approval_id).await?;
    Ok(Json(approvals::of_issue(&app.store, &issue.id).await?))
}

#[utoipa::path(delete, path = "/api/issues/{id}/approvals/{approvalId}", tag = "approvals",
    params(("id" = String, Path), ("approvalId" = String, Path)), responses((status = 200, body = [Approval])))]
#[paperclip_macros::handler]
async fn unlink_issue(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, approval_id)): Path<(String, String)>,
) -> ApiResult<Json<Vec<Approval>>> {
    let issue = access::issue(&app, &caller, &id).await?;
    approval_for(&app, &caller, &approval_id).await?;
    approvals::unlink(&app.store, caller.actor(), &issue.id, &approval_id).await?;
    Ok(Json(approvals::of_issue(&app.store, &issue.id).await?))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Hire {
    agent: Agent,
    /// The pending `hire_agent` approval, when the hire needs the board.
    approval: Option<Approval>,
}

/// Hires an agent. When the company requires board approval for new agents,
/// or an agent is hiring, the agent waits in `pending_approval` behind a
/// `hire_agent` approval; otherwise it is created directly.
#[utoipa::path(post, path = "/api/companies/{companyId}/agent-hires", tag = "approvals",
    params(("companyId" = String, Path)), request_body = NewAgent,
    responses((status = 201, body = Hire), (status = 403, description = "The hiring agent lacks canCreateAgents", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn hire(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(spec): ValidJson<NewAgent>,
) -> ApiResult<(StatusCode, Json<Hire>)> {
    let company = access::company(&app, &caller, &company_id).await?;
    if let Some(me) = caller.agent_id() {
        let hirer = paperclip_store::org::agents::get(&app.store, me).await?;
        if !paperclip_core::agent_access::may_create_agents(&hirer) {
            return Err(ApiError::forbidden(
                "Agent lacks the canCreateAgents permission",
            ));
        }
    }
    if let Some(config) = &spec.adapter_config {
        super::agents::check_adapter_config(
            &app,
            spec.adapter_type.as_deref().unwrap_or("process"),
            &Value::Object(config.clone()),
            config.keys(),
        )?;
    }
    let hire = if company.require_board_approval_for_new_agents || caller.agent_id().is_some() {
        let (agent, approval) =
            approvals::request_hire(&app.store, caller.actor(), &company_id, spec).await?;
        Hire {
            agent,
            approval: Some(approval),
        }
    } else {
        Hire {
            agent: paperclip_store::org::agents::create(
                &app.store,
                caller.actor(),
                &company_id,
                spec,
            )
            .await?,
            approval: None,
        }
    };
    Ok((StatusCode::CREATED, Json(hire)))
}
