//! `GET /api/issues/:id/heartbeat-context`: what an agent needs to resume work
//! on an issue in one compact answer, instead of walking the API.

use axum::extract::{Path, State};
use axum::Json;
use paperclip_core::issue::{IssuePriority, IssueStatus};
use paperclip_core::model::{Comment, Goal, Issue, Project};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::ApiResult;
use crate::extract::QueryParams;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(heartbeat_context))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactIssue {
    id: String,
    identifier: String,
    title: String,
    description: Option<String>,
    status: IssueStatus,
    work_mode: String,
    priority: IssuePriority,
    assignee_agent_id: Option<String>,
    origin_kind: String,
    parent_id: Option<String>,
    project_id: Option<String>,
    goal_id: Option<String>,
    checkout_run_id: Option<String>,
    blocked_by: Vec<paperclip_core::model::IssueRef>,
    blocks: Vec<paperclip_core::model::IssueRef>,
    blocker_attention: paperclip_core::issue_attention::BlockerAttention,
    review_attention: paperclip_core::issue_attention::ReviewAttention,
    updated_at: String,
}

impl From<Issue> for CompactIssue {
    fn from(i: Issue) -> CompactIssue {
        CompactIssue {
            id: i.id,
            identifier: i.identifier,
            title: i.title,
            description: i.description,
            status: i.status,
            work_mode: i.work_mode,
            priority: i.priority,
            assignee_agent_id: i.assignee_agent_id,
            origin_kind: i.origin_kind,
            parent_id: i.parent_id,
            project_id: i.project_id,
            goal_id: i.goal_id,
            checkout_run_id: i.checkout_run_id,
            blocked_by: i.blocked_by,
            blocks: i.blocks,
            blocker_attention: i.blocker_attention,
            review_attention: i.review_attention,
            updated_at: i.updated_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommentCursor {
    total_comments: usize,
    latest_comment_id: Option<String>,
    latest_comment_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatContext {
    issue: CompactIssue,
    /// Parent first, then its parent, up to the root.
    ancestors: Vec<CompactIssue>,
    project: Option<Project>,
    goal: Option<Goal>,
    comment_cursor: CommentCursor,
    /// The comment that caused this wake, when asked for with `wakeCommentId`.
    wake_comment: Option<Comment>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct ContextQuery {
    /// Usually `$PAPERCLIP_WAKE_COMMENT_ID`.
    wake_comment_id: Option<String>,
}

#[utoipa::path(get, path = "/api/issues/{id}/heartbeat-context", tag = "issues",
    params(("id" = String, Path), ContextQuery), responses((status = 200, body = HeartbeatContext)))]
#[paperclip_macros::handler]
async fn heartbeat_context(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(q): QueryParams<ContextQuery>,
) -> ApiResult<Json<HeartbeatContext>> {
    let store = &app.store;
    let issue = access::issue(&app, &caller, &id).await?;
    let mut ancestors = Vec::new();
    let mut parent = issue.parent_id.clone();
    while let Some(pid) = parent {
        if ancestors.len() >= 32 {
            break;
        }
        let p = paperclip_store::issues::get(store, &pid).await?;
        parent = p.parent_id.clone();
        ancestors.push(CompactIssue::from(p));
    }
    let project = match &issue.project_id {
        Some(p) => paperclip_store::org::projects::get(store, p).await.ok(),
        None => None,
    };
    let goal = match &issue.goal_id {
        Some(g) => paperclip_store::org::goals::get(store, g).await.ok(),
        None => None,
    };
    let comments = paperclip_store::thread::comments::list(
        store,
        &issue.id,
        None,
        paperclip_store::thread::comments::Order::Asc,
        10_000,
    )
    .await?;
    let latest = comments.last();
    let comment_cursor = CommentCursor {
        total_comments: comments.len(),
        latest_comment_id: latest.map(|c| c.id.clone()),
        latest_comment_at: latest.map(|c| c.created_at.clone()),
    };
    let wake_comment = q
        .wake_comment_id
        .and_then(|wanted| comments.iter().find(|c| c.id == wanted).cloned());
    Ok(Json(HeartbeatContext {
        issue: issue.into(),
        ancestors,
        project,
        goal,
        comment_cursor,
        wake_comment,
    }))
}
