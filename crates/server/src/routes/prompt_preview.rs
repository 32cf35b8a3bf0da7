//! The prompt preview (ours: upstream has no such route): an agent's prompt
//! template rendered for a sample wake, next to the editor, with every
//! sensitive value (`credentials.*`) masked.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::template;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(prompt_preview))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewRequest {
    /// The template being edited; the agent's saved one when absent. Blank
    /// previews the default prompt.
    pub prompt_template: Option<String>,
    /// A task of the agent's company to fill `task.*` from; a sample otherwise.
    pub issue_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewVariable {
    pub name: String,
    /// A credential: masked here, resolved only at run time.
    pub sensitive: bool,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptPreview {
    /// The rendered prompt, sensitive values masked.
    pub prompt: String,
    /// `request`, `agent` (its saved template) or `default` (no template).
    pub source: String,
    /// The variables the template uses, in order, each once.
    pub variables: Vec<PreviewVariable>,
    /// Sensitive variables the template uses: the editor warns about them.
    pub sensitive: Vec<String>,
}

/// Renders the agent's prompt template (or the one being edited) for a
/// sample wake. Board only; writes nothing.
#[utoipa::path(post, path = "/api/agents/{id}/prompt-preview", tag = "agents",
    params(("id" = String, Path)), request_body = PreviewRequest,
    responses((status = 200, body = PromptPreview),
        (status = 422, description = "Unknown or unclosed template variable", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn prompt_preview(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<PreviewRequest>,
) -> ApiResult<Json<PromptPreview>> {
    caller.require_board()?;
    let agent = access::agent(&app, &caller, &id).await?;
    let max = paperclip_core::limits::LONG_TEXT_MAX_CHARS;
    if input
        .prompt_template
        .as_deref()
        .is_some_and(|t| t.chars().count() > max)
    {
        return Err(ApiError::validation(json!([{
            "code": "too_big", "path": ["promptTemplate"], "maximum": max,
            "message": format!("promptTemplate must be at most {max} characters"),
        }])));
    }
    let company = access::company(&app, &caller, &agent.company_id).await?;
    let issue = match &input.issue_id {
        Some(issue_id) => {
            let issue = access::issue(&app, &caller, issue_id).await?;
            if issue.company_id != agent.company_id {
                return Err(ApiError::not_found("Issue not found"));
            }
            Some(issue)
        }
        None => None,
    };
    let saved = agent
        .adapter_config
        .get("promptTemplate")
        .and_then(Value::as_str)
        .map(str::to_string);
    let (template, source) = match (input.prompt_template, saved) {
        (Some(t), _) => (Some(t), "request"),
        (None, Some(t)) => (Some(t), "agent"),
        (None, None) => (None, "default"),
    };
    let template = template.filter(|t| !t.trim().is_empty());
    let source = if template.is_none() {
        "default"
    } else {
        source
    };
    let mut names = match template.as_deref().map(template::variables) {
        Some(Ok(names)) => names,
        Some(Err(err)) => {
            return Err(
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, err.to_string()).with_details(
                    json!([{
                        "path": ["promptTemplate"],
                        "message": err.to_string(),
                        "allowed": template::CATALOG,
                    }]),
                ),
            )
        }
        None => Vec::new(),
    };
    let mut seen = std::collections::HashSet::new();
    names.retain(|n| seen.insert(n.clone()));
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let prompt = paperclip_runtime::prompt_preview::render(
        app.runtime.api_url(),
        &company,
        &agent,
        template.as_deref(),
        issue.as_ref(),
        &now,
    )
    .map_err(|err| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, err.to_string()))?;
    let sensitive: Vec<String> = names
        .iter()
        .filter(|n| template::is_sensitive(n))
        .cloned()
        .collect();
    Ok(Json(PromptPreview {
        prompt,
        source: source.to_string(),
        variables: names
            .into_iter()
            .map(|name| PreviewVariable {
                sensitive: template::is_sensitive(&name),
                name,
            })
            .collect(),
        sensitive,
    }))
}
