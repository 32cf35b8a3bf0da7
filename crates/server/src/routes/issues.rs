use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use paperclip_core::input::{Checkout, IssuePatch, NewIssue};
use paperclip_core::issue::IssueStatus;
use paperclip_core::limits::{ISSUE_PAGE_DEFAULT, ISSUE_PAGE_MAX};
use paperclip_core::model::{Comment, Document, DocumentSummary, Goal, Issue, Project};
use paperclip_store::issues;
use paperclip_store::views::task_pages;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{parse_limit, QueryParams};
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_issues, create_issue))
        .routes(routes!(create_child))
        .routes(routes!(get_issue, update_issue, delete_issue))
        .routes(routes!(checkout_issue))
        .routes(routes!(release_issue))
        .routes(routes!(force_release_issue))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct ListQuery {
    /// Comma-separated statuses, e.g. `todo,in_progress`.
    status: Option<String>,
    assignee_agent_id: Option<String>,
    assignee_user_id: Option<String>,
    project_id: Option<String>,
    goal_id: Option<String>,
    parent_id: Option<String>,
    label_id: Option<String>,
    /// Case-insensitive text search in title, description and identifier.
    q: Option<String>,
    limit: Option<String>,
    /// The `X-Next-Cursor` of the previous page.
    cursor: Option<String>,
}

/// Newest first, 500 per page unless `limit` says otherwise (at most 5,000);
/// a search (`q`) lists the tasks whose identifier or title hold every word
/// first, then the other matches, newest first within each.
/// A page also ends early once its titles and descriptions pass 1 MiB.
/// When more issues match, the response carries
/// `X-Next-Cursor`; pass it back as `cursor` for the next page.
/// Every page carries a weak `ETag` of its bytes: sent back in
/// `If-None-Match`, an unchanged page is a 304 with no body.
/// A task as the list answers it (written by the store's list, so this
/// only declares it): the task and upstream's list rollups.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListedIssue {
    #[serde(flatten)]
    issue: Issue,
    /// The run holding the task's execution lock while it is queued or
    /// running: id, status, agentId, invocationSource, triggerDetail, times.
    #[schema(value_type = Option<Object>)]
    active_run: Option<Value>,
    /// The later of the task's last update and its last comment.
    last_activity_at: String,
    /// Always false: the list sends descriptions whole.
    description_truncated: bool,
}

#[utoipa::path(get, path = "/api/companies/{companyId}/issues", tag = "issues",
    params(("companyId" = String, Path), ListQuery),
    responses((status = 200, body = [ListedIssue]), (status = 304, description = "Unchanged since the `If-None-Match` ETag"), (status = 400, description = "Invalid filter", body = crate::error::ErrorBody),
        (status = 403, description = "Another company's (an agent key) or not a member's", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn list_issues(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    QueryParams(query): QueryParams<ListQuery>,
    request: HeaderMap,
) -> ApiResult<Response> {
    access::company_scope(&app, &caller, &company_id).await?;
    let statuses = match &query.status {
        Some(csv) => csv
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| IssueStatus::parse(s).ok_or_else(|| invalid_status(s)))
            .collect::<Result<Vec<_>, _>>()?,
        None => Vec::new(),
    };
    let cursor = match query.cursor.as_deref() {
        None | Some("") => None,
        // A number, or for a search in rank order `title~N` / `rest~N`.
        Some(c) => Some(issues::Position::parse(issues::Sort::Relevance, c).ok_or_else(|| {
            ApiError::validation(json!([{ "code": "invalid_value", "path": ["cursor"], "message": "Unknown cursor" }]))
        })?),
    };
    let filter = issues::Filter {
        statuses,
        assignee_agent_id: query.assignee_agent_id,
        assignee_user_id: query.assignee_user_id,
        project_id: query.project_id,
        goal_id: query.goal_id,
        parent_id: query.parent_id,
        label_id: query.label_id,
        q: query.q,
        band: None,
        cursor,
        limit: parse_limit(query.limit.as_deref(), ISSUE_PAGE_DEFAULT, ISSUE_PAGE_MAX)?,
    };
    let page = task_pages::list_json_kept(&app.store, &company_id, &filter).await?;
    let mut headers = HeaderMap::new();
    // Hex in quotes: always a valid header value.
    if let Ok(tag) = HeaderValue::try_from(page.etag.as_str()) {
        headers.insert(ETAG, tag);
    }
    // As upstream's lists: a client may keep the page but asks again first.
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("private, must-revalidate"),
    );
    // Digits, letters and `~` only: always a valid header value.
    if let Some(Ok(next)) = page
        .next_cursor
        .as_ref()
        .map(|n| HeaderValue::try_from(n.to_string()))
    {
        headers.insert("x-next-cursor", next);
    }
    let revalidated = request
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| task_pages::none_match(v, &page.etag));
    if revalidated {
        return Ok((StatusCode::NOT_MODIFIED, headers).into_response());
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    // The kept bytes go out as they are, not copied per request.
    Ok((headers, Body::from(Bytes::from_owner(Shared(page)))).into_response())
}

/// A kept page as a response body.
struct Shared(std::sync::Arc<task_pages::KeptPage>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        &self.0.body
    }
}

fn invalid_status(value: &str) -> ApiError {
    let values: Vec<&str> = IssueStatus::ALL.iter().map(|s| s.as_str()).collect();
    ApiError::validation(json!([{
        "code": "invalid_value",
        "values": values,
        "path": ["status"],
        "message": format!("Invalid status {value:?}: expected one of {}", values.join("|")),
    }]))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/issues", tag = "issues",
    params(("companyId" = String, Path)), request_body = NewIssue,
    responses((status = 201, body = Issue), (status = 400, description = "Validation error", body = crate::error::ErrorBody),
        (status = 404, description = "Company or a referenced entity not found", body = crate::error::ErrorBody),
        (status = 422, description = "Rule violation", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn create_issue(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(input): ValidJson<NewIssue>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    caller.ensure_company(&company_id)?;
    check_can_assign(&app, &caller, input.assignee_agent_id.as_deref()).await?;
    let requested = input.parent_id.clone();
    let issue = issues::create(&app.store, caller.actor(), &company_id, input).await?;
    let answer = super::chief::created_answer(&app, requested.as_deref(), issue).await?;
    Ok((StatusCode::CREATED, answer))
}

/// A child task of `id` (upstream's route): in the parent's company, and in
/// its project and goal unless the body names others.
#[utoipa::path(post, path = "/api/issues/{id}/children", tag = "issues",
    params(("id" = String, Path, description = "Parent issue UUID or identifier")), request_body = NewIssue,
    responses((status = 201, body = Issue), (status = 400, description = "Validation error", body = crate::error::ErrorBody),
        (status = 404, description = "Parent issue or a referenced entity not found", body = crate::error::ErrorBody),
        (status = 422, description = "Rule violation", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn create_child(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(mut input): ValidJson<NewIssue>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    let parent = access::issue(&app, &caller, &id).await?;
    check_can_assign(&app, &caller, input.assignee_agent_id.as_deref()).await?;
    input.parent_id = Some(parent.id.clone());
    input.project_id = input.project_id.or(parent.project_id);
    input.goal_id = input.goal_id.or(parent.goal_id);
    let child = issues::create(&app.store, caller.actor(), &parent.company_id, input).await?;
    let answer = super::chief::created_answer(&app, Some(&parent.id), child).await?;
    Ok((StatusCode::CREATED, answer))
}

/// One issue as upstream answers it: the row with its project and goal,
/// its `plan` document (with body) and all its documents (without).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssueDetail {
    #[serde(flatten)]
    issue: Issue,
    project: Option<Project>,
    goal: Option<Goal>,
    plan_document: Option<Document>,
    document_summaries: Vec<DocumentSummary>,
}

#[utoipa::path(get, path = "/api/issues/{id}", tag = "issues",
    params(("id" = String, Path, description = "Issue UUID or identifier such as ACM-12")),
    responses((status = 200, body = IssueDetail), (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn get_issue(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<IssueDetail>> {
    let (issue, has_documents) = issues::get_with_documents_flag(&app.store, &id).await?;
    caller.ensure_company(&issue.company_id)?;
    // Both belong to the issue's company (the store checks that on write).
    let project = match &issue.project_id {
        Some(id) => Some(paperclip_store::org::projects::get(&app.store, id).await?),
        None => None,
    };
    let goal = match &issue.goal_id {
        Some(id) => Some(paperclip_store::org::goals::get(&app.store, id).await?),
        None => None,
    };
    let documents = match has_documents {
        true => paperclip_store::thread::documents::of_issue(&app.store, &issue.id).await?,
        false => Vec::new(),
    };
    let plan_document = documents.iter().find(|d| d.key == "plan").cloned();
    Ok(Json(IssueDetail {
        issue,
        project,
        goal,
        plan_document,
        document_summaries: documents.into_iter().map(DocumentSummary::from).collect(),
    }))
}

/// A task after an update, with what changed and the comment added with it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdatedIssue {
    #[serde(flatten)]
    issue: Issue,
    /// The fields that changed, each as `{ "from": ..., "to": ... }`.
    #[schema(value_type = Object)]
    changes: serde_json::Map<String, Value>,
    /// The comment the patch carried, when it carried one.
    #[serde(skip_serializing_if = "Option::is_none")]
    comment: Option<Comment>,
    /// Agents the comment would have woken, had the task not stayed closed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    not_woken: Vec<super::comments::NotWoken>,
}

/// Updates fields and status (following the transition table). A `comment`
/// in the body is added in the same transaction and returned as `comment`.
/// A done or cancelled task is reopened by moving it to backlog, todo or
/// in_progress, by `reopen: true`, or by a person's comment when an agent
/// owns it (upstream's rule; `reopen: false` keeps it closed): its assignee
/// is woken once. Agents reopen only their own done tasks.
#[utoipa::path(patch, path = "/api/issues/{id}", tag = "issues",
    params(("id" = String, Path)), request_body = IssuePatch,
    responses((status = 200, body = UpdatedIssue), (status = 400, description = "Validation error", body = crate::error::ErrorBody),
        (status = 401, description = "Agent run id required", body = crate::error::ErrorBody),
        (status = 403, description = "An agent asked to reopen another agent's task", body = crate::error::ErrorBody),
        (status = 409, description = "Issue run ownership conflict, or an agent asked to reopen its cancelled task", body = crate::error::ErrorBody),
        (status = 422, description = "Transition not allowed", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn update_issue(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(patch): ValidJson<IssuePatch>,
) -> ApiResult<Json<UpdatedIssue>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let actor = caller.require_run()?;
    check_run_ownership(&app, &caller, &issue).await?;
    let assignee = patch.assignee_agent_id.as_ref().and_then(|a| a.as_deref());
    check_can_assign(&app, &caller, assignee).await?;
    if patch.execution_policy.is_some() {
        super::tree_control::can_manage_monitor(&caller, &issue)?;
    }
    let updated = issues::update(&app.store, actor, &issue.id, patch).await?;
    Ok(Json(UpdatedIssue {
        issue: updated.issue,
        changes: updated.changes,
        comment: updated.comment,
        not_woken: updated.not_woken.into_iter().map(Into::into).collect(),
    }))
}

#[utoipa::path(delete, path = "/api/issues/{id}", tag = "issues",
    params(("id" = String, Path)), responses((status = 200, body = Issue), (status = 404, description = "Issue not found", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn delete_issue(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Issue>> {
    let actor = caller.require_board()?;
    let objects = super::attachments::objects_before_delete(&app, &id, true).await;
    let deleted = issues::delete(&app.store, actor, &id).await?;
    super::attachments::forget_files(&app, &deleted.company_id, Some(&deleted.id), objects).await;
    Ok(Json(deleted))
}

/// Atomically assigns the issue to `agentId` and moves it to `in_progress`,
/// if its status is one of `expectedStatuses` and nobody else holds it.
/// Never retry a 409: someone else owns the work.
#[utoipa::path(post, path = "/api/issues/{id}/checkout", tag = "issues",
    params(("id" = String, Path)), request_body = Checkout,
    responses((status = 200, body = Issue), (status = 409, description = "Issue checkout conflict", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn checkout_issue(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<Checkout>,
) -> ApiResult<Json<Issue>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let actor = caller.require_run()?;
    if let Some(me) = caller.agent_id() {
        if input.agent_id != me {
            return Err(ApiError::forbidden(
                "Agents can only check out work for themselves",
            ));
        }
    }
    Ok(Json(
        issues::checkout(&app.store, actor, &issue.id, input).await?,
    ))
}

#[utoipa::path(post, path = "/api/issues/{id}/release", tag = "issues",
    params(("id" = String, Path)),
    responses((status = 200, body = Issue), (status = 409, description = "Not checked out, or not by the caller", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn release_issue(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Issue>> {
    let issue = access::issue(&app, &caller, &id).await?;
    let actor = caller.require_run()?;
    check_run_ownership(&app, &caller, &issue).await?;
    Ok(Json(issues::release(&app.store, actor, &issue.id).await?))
}

#[utoipa::path(post, path = "/api/issues/{id}/admin/force-release", tag = "issues",
    params(("id" = String, Path)),
    responses((status = 200, body = Issue), (status = 403, description = "Board access required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn force_release_issue(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Issue>> {
    let actor = caller.require_board()?;
    Ok(Json(issues::force_release(&app.store, actor, &id).await?))
}

/// An agent whose permissions say `canAssignTasks: false` may not hand work
/// to another agent (upstream's permission). Without the key it may, as before.
async fn check_can_assign(
    app: &AppState,
    caller: &Caller,
    assignee: Option<&str>,
) -> ApiResult<()> {
    let (Some(me), Some(assignee)) = (caller.agent_id(), assignee) else {
        return Ok(());
    };
    if me == assignee {
        return Ok(());
    }
    let agent = paperclip_store::org::agents::get(&app.store, me).await?;
    // The same rule `access` reports on the agent's read.
    if !paperclip_core::agent_access::may_assign_tasks(&agent) {
        return Err(ApiError::forbidden(
            "Agent lacks the canAssignTasks permission",
        ));
    }
    Ok(())
}

/// An agent may not write to work that another live run of it has checked
/// out; a checkout left by a finished run is no obstacle.
async fn check_run_ownership(app: &AppState, caller: &Caller, issue: &Issue) -> ApiResult<()> {
    let (Some(agent), Some(held_by)) = (caller.agent_id(), issue.checkout_run_id.as_deref()) else {
        return Ok(());
    };
    if caller.actor().run_id.as_deref() == Some(held_by) {
        return Ok(());
    }
    let live = match paperclip_store::runs::get(&app.store, held_by).await {
        Ok(run) => matches!(run.status.as_str(), "queued" | "running"),
        Err(_) => false,
    };
    if live {
        return Err(
            ApiError::new(StatusCode::CONFLICT, "Issue run ownership conflict").with_details(
                json!({
                    "issueId": issue.id,
                    "status": issue.status,
                    "assigneeAgentId": issue.assignee_agent_id,
                    "checkoutRunId": issue.checkout_run_id,
                    "executionRunId": issue.execution_run_id,
                    "actorAgentId": agent,
                    "actorRunId": caller.actor().run_id,
                }),
            ),
        );
    }
    Ok(())
}
