//! `/api/agents/{id}/skills`: the company skills an agent has, and a sync
//! that adds, removes or replaces them (upstream's `AgentSkillSnapshot`).
//! The board may sync any agent; an agent may sync itself, and one that
//! may hire (`canCreateAgents`, or the CEO) its colleagues.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::limits::{text, Validate, Violation};
use paperclip_core::model::Agent;
use paperclip_core::skill::{self, AssignmentMode};
use paperclip_store::org::skills::{self as library, short_hash};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(agent_skills))
        .routes(routes!(sync_skills))
}

/// Adapters whose CLI loads every folder of the skills dir it is given.
fn loads_skills(adapter_type: &str) -> bool {
    matches!(
        adapter_type,
        "claude_local" | "codex_local" | "opencode_local" | "gemini_local" | "pi_local" | "process"
    )
}

async fn snapshot(app: &AppState, agent: &Agent) -> ApiResult<Value> {
    let desired = skill::desired_keys(&agent.adapter_config);
    let library = library::list(&app.store, &agent.company_id).await?;
    let mut entries = Vec::new();
    for s in &library {
        let chosen = desired.contains(&s.skill.key);
        entries.push(json!({
            "key": s.skill.key,
            "runtimeName": skill::runtime_name(&s.skill.slug, &short_hash(&s.skill.key)),
            "versionId": null,
            "currentVersionId": s.skill.current_version_id,
            "desired": chosen,
            "managed": true,
            "state": if chosen { "configured" } else { "available" },
            "origin": "company_managed",
            "originLabel": "Company library",
            "readOnly": false,
            "sourcePath": null,
            "targetPath": null,
            "detail": if chosen { Some("Written into the agent's skills folder at each run start") } else { None },
        }));
    }
    for key in desired
        .iter()
        .filter(|k| !library.iter().any(|s| &s.skill.key == *k))
    {
        entries.push(json!({
            "key": key, "runtimeName": null, "desired": true, "managed": true, "state": "missing",
            "origin": "company_managed", "detail": "No skill of the company library has this key",
        }));
    }
    let mut warnings = Vec::new();
    if !loads_skills(&agent.adapter_type) && !desired.is_empty() {
        warnings.push(format!(
            "{} is not given a skills folder: the chosen skills are not delivered to it",
            agent.adapter_type
        ));
    }
    Ok(json!({
        "adapterType": agent.adapter_type,
        "supported": true,
        "mode": "ephemeral",
        "desiredSkills": desired,
        "desiredSkillEntries": desired.iter().map(|k| json!({ "key": k, "versionId": null })).collect::<Vec<_>>(),
        "entries": entries,
        "warnings": warnings,
    }))
}

/// The agent's chosen skills and the library's others.
#[utoipa::path(get, path = "/api/agents/{id}/skills", tag = "skills",
    params(("id" = String, Path)), responses((status = 200, body = Object),
        (status = 404, description = "Agent not found")))]
#[paperclip_macros::handler]
async fn agent_skills(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let agent = crate::access::agent(&app, &caller, &id).await?;
    Ok(Json(snapshot(&app, &agent).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncRequest {
    /// `add`, `remove` or `replace`.
    pub mode: Option<String>,
    /// Company skill ids, keys or slugs (or `{key, versionId}`).
    #[schema(value_type = Vec<Object>)]
    pub desired_skills: Option<Vec<Value>>,
}

impl Validate for SyncRequest {
    fn validate(&self) -> Result<(), Violation> {
        for s in self.desired_skills.iter().flatten() {
            if let Some(t) = s.as_str() {
                text("desiredSkills", t, 500)?;
            }
        }
        Ok(())
    }
}

/// May the caller change this agent's skills?
async fn may_sync(app: &AppState, caller: &Caller, agent: &Agent) -> ApiResult<()> {
    if caller.actor().is_board() {
        return Ok(());
    }
    let Some(me) = caller.agent_id() else {
        return Err(ApiError::forbidden("Board or agent access required"));
    };
    if me == agent.id {
        return Ok(());
    }
    let acting = paperclip_store::org::agents::get(&app.store, me).await?;
    let hires = paperclip_core::agent_access::may_create_agents(&acting)
        || acting.role == paperclip_core::agent::AgentRole::Ceo;
    if hires && acting.company_id == agent.company_id {
        return Ok(());
    }
    Err(ApiError::forbidden(
        "An agent may change its own skills, or others' only if it may hire",
    ))
}

/// Adds, removes or replaces the agent's skills; answers the new snapshot.
#[utoipa::path(post, path = "/api/agents/{id}/skills/sync", tag = "skills",
    params(("id" = String, Path)), request_body = SyncRequest,
    responses((status = 200, body = Object), (status = 403, description = "Not this caller's to change"),
        (status = 404, description = "Agent not found"),
        (status = 422, description = "Missing mode, or an unknown skill")))]
#[paperclip_macros::handler]
async fn sync_skills(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    ValidJson(input): ValidJson<SyncRequest>,
) -> ApiResult<Json<Value>> {
    let agent = crate::access::agent(&app, &caller, &id).await?;
    let mode = match input.mode.as_deref() {
        Some("add") => AssignmentMode::Add,
        Some("remove") => AssignmentMode::Remove,
        Some("replace") => AssignmentMode::Replace,
        _ => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Skill sync requires mode: \"add\", \"remove\", or \"replace\". Use \"replace\" only to overwrite the complete desired skill set.",
            ))
        }
    };
    let Some(requested) = input.desired_skills else {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Skill sync requires desiredSkills.",
        ));
    };
    let mut references = Vec::with_capacity(requested.len());
    for r in requested {
        match r {
            Value::String(s) => references.push(s),
            Value::Object(o) => match o.get("key").and_then(Value::as_str) {
                Some(k) => references.push(k.to_string()),
                None => return Err(bad_entry()),
            },
            _ => return Err(bad_entry()),
        }
    }
    may_sync(&app, &caller, &agent).await?;
    let actor = caller.actor().clone();
    let synced =
        paperclip_store::org::skills_sync::sync(&app.store, &actor, &agent.id, mode, &references)
            .await?;
    Ok(Json(snapshot(&app, &synced.agent).await?))
}

fn bad_entry() -> ApiError {
    ApiError::validation(json!([{ "path": ["desiredSkills"],
        "message": "each desired skill is a key, id or slug, or { key, versionId }" }]))
}
