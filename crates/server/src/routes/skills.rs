//! `/api/companies/{companyId}/skills`: the company skills library on
//! upstream's routes and shapes (issue 40). Reads: anyone in the company.
//! Changes: the board and the company's agents, as upstream opens them;
//! importing from the server's own disk (a path or `file://`) is the
//! board's alone. Every change is one transaction with its activity entry.

#[path = "skills_agents.rs"]
mod agents;
#[path = "skills_import.rs"]
mod import;
#[path = "skills_source.rs"]
pub(crate) mod source;
#[path = "skills_view.rs"]
mod view;

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::limits::{text, Validate, Violation};
use paperclip_core::skill::{self, SourceType};
use paperclip_store::org::skills::{self as library, NewSkill};
use paperclip_store::org::skills_edit::{self as edit, SkillPatch};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::QueryParams;
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_skills, create_skill))
        .routes(routes!(categories))
        .routes(routes!(get_skill, update_skill, delete_skill))
        .routes(routes!(read_file, write_file, delete_file))
        .routes(routes!(list_versions, create_version))
        .routes(routes!(get_version))
        .merge(import::router())
        .merge(agents::router())
}

/// The caller may change the company's skills: the board, or an agent of
/// it; the company exists.
pub(super) async fn mutator(
    app: &AppState,
    caller: &Caller,
    company_id: &str,
) -> ApiResult<paperclip_core::actor::Actor> {
    scope(app, caller, company_id).await?;
    Ok(caller.actor().clone())
}

pub(super) async fn scope(app: &AppState, caller: &Caller, company_id: &str) -> ApiResult<()> {
    crate::access::company_scope(app, caller, company_id).await
}

/// The company's skills (upstream's `CompanySkillListItem`s), by name.
#[utoipa::path(get, path = "/api/companies/{companyId}/skills", tag = "skills",
    params(("companyId" = String, Path)), responses((status = 200, body = Object)))]
#[paperclip_macros::handler]
async fn list_skills(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Value>> {
    scope(&app, &caller, &company_id).await?;
    let skills = library::list(&app.store, &company_id).await?;
    let agents = paperclip_store::org::agents::list(&app.store, &company_id).await?;
    Ok(Json(Value::Array(
        skills
            .iter()
            .map(|s| view::list_item(&s.skill, &agents))
            .collect(),
    )))
}

/// Each category with how many skills carry it.
#[utoipa::path(get, path = "/api/companies/{companyId}/skills/categories", tag = "skills",
    params(("companyId" = String, Path)), responses((status = 200, body = Object)))]
#[paperclip_macros::handler]
async fn categories(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
) -> ApiResult<Json<Value>> {
    scope(&app, &caller, &company_id).await?;
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    for s in library::list(&app.store, &company_id).await? {
        for c in s.skill.categories {
            *counts.entry(c).or_default() += 1;
        }
    }
    Ok(Json(Value::Array(
        counts
            .into_iter()
            .map(|(slug, count)| json!({ "slug": slug, "count": count }))
            .collect(),
    )))
}

/// A skill with its agents and current version (upstream's `CompanySkillDetail`).
#[utoipa::path(get, path = "/api/companies/{companyId}/skills/{skillId}", tag = "skills",
    params(("companyId" = String, Path), ("skillId" = String, Path)),
    responses((status = 200, body = Object), (status = 404, description = "Skill not found")))]
#[paperclip_macros::handler]
async fn get_skill(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, skill_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    scope(&app, &caller, &company_id).await?;
    Ok(Json(view::detail_of(&app, &company_id, &skill_id).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateSkill {
    pub name: String,
    pub slug: Option<String>,
    pub description: Option<String>,
    pub markdown: Option<String>,
    pub categories: Option<Vec<String>>,
}

impl Validate for CreateSkill {
    fn validate(&self) -> Result<(), Violation> {
        text("name", &self.name, 200)?;
        if let Some(d) = &self.description {
            text("description", d, 2000)?;
        }
        if let Some(m) = &self.markdown {
            text("markdown", m, skill::MAX_FILE_BYTES)?;
        }
        Ok(())
    }
}

/// A skill written here (upstream's managed local skill): SKILL.md is the
/// `markdown` given, or one made from the name and description.
#[utoipa::path(post, path = "/api/companies/{companyId}/skills", tag = "skills",
    params(("companyId" = String, Path)), request_body = CreateSkill,
    responses((status = 201, body = Object), (status = 409, description = "A skill of that name exists")))]
#[paperclip_macros::handler]
async fn create_skill(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(input): ValidJson<CreateSkill>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let actor = mutator(&app, &caller, &company_id).await?;
    let name = input.name.trim().to_string();
    let slug = skill::slug(input.slug.as_deref().unwrap_or(&name))
        .ok_or_else(|| field("name", "Name must contain a letter or digit"))?;
    let markdown = input.markdown.clone().unwrap_or_else(|| {
        let description = input.description.clone().unwrap_or_default();
        format!("---\nname: {name}\ndescription: {description}\n---\n\n# {name}\n")
    });
    let files = skill::check_files(vec![("SKILL.md".into(), markdown)])
        .map_err(|why| field("markdown", why))?;
    let new = NewSkill {
        key: format!("company/{company_id}/{slug}"),
        slug,
        name,
        description: input.description.clone(),
        source_type: SourceType::LocalPath,
        source_locator: None,
        source_ref: None,
        metadata: Some(json!({ "sourceKind": "managed_local" })),
        files,
    };
    let created = library::create(&app.store, &actor, &company_id, new).await?;
    if let Some(categories) = input.categories {
        let patch = SkillPatch {
            categories: Some(categories),
            ..Default::default()
        };
        edit::update(&app.store, &actor, &company_id, &created.skill.id, patch).await?;
    }
    let skill = library::get(&app.store, &company_id, &created.skill.id).await?;
    Ok((StatusCode::CREATED, Json(view::skill_json(&skill.skill))))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateSkill {
    #[serde(default, deserialize_with = "paperclip_core::input::double_option")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    pub categories: Option<Vec<String>>,
}

impl Validate for UpdateSkill {
    fn validate(&self) -> Result<(), Violation> {
        if let Some(Some(d)) = &self.description {
            text("description", d, 2000)?;
        }
        for c in self.categories.iter().flatten() {
            text("categories", c, 60)?;
        }
        Ok(())
    }
}

/// Sets a skill's description or categories (its files change through `files`).
#[utoipa::path(patch, path = "/api/companies/{companyId}/skills/{skillId}", tag = "skills",
    params(("companyId" = String, Path), ("skillId" = String, Path)), request_body = UpdateSkill,
    responses((status = 200, body = Object), (status = 404, description = "Skill not found")))]
#[paperclip_macros::handler]
async fn update_skill(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, skill_id)): Path<(String, String)>,
    ValidJson(patch): ValidJson<UpdateSkill>,
) -> ApiResult<Json<Value>> {
    let actor = mutator(&app, &caller, &company_id).await?;
    let patch = SkillPatch {
        description: patch.description,
        categories: patch.categories,
    };
    let skill = edit::update(&app.store, &actor, &company_id, &skill_id, patch).await?;
    Ok(Json(view::skill_json(&skill.skill)))
}

/// Deletes a skill and its versions; agents keep its key until removed.
#[utoipa::path(delete, path = "/api/companies/{companyId}/skills/{skillId}", tag = "skills",
    params(("companyId" = String, Path), ("skillId" = String, Path)),
    responses((status = 200, body = Object), (status = 404, description = "Skill not found")))]
#[paperclip_macros::handler]
async fn delete_skill(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, skill_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let actor = mutator(&app, &caller, &company_id).await?;
    let gone = edit::delete(&app.store, &actor, &company_id, &skill_id).await?;
    Ok(Json(view::skill_json(&gone.skill)))
}

#[derive(Debug, Deserialize, IntoParams)]
pub struct FileQuery {
    /// The file inside the skill (default `SKILL.md`).
    pub path: Option<String>,
}

/// One file of the skill's current version (upstream's `CompanySkillFileDetail`).
#[utoipa::path(get, path = "/api/companies/{companyId}/skills/{skillId}/files", tag = "skills",
    params(("companyId" = String, Path), ("skillId" = String, Path), FileQuery),
    responses((status = 200, body = Object), (status = 400, description = "Bad path"),
        (status = 404, description = "Skill or file not found")))]
#[paperclip_macros::handler]
async fn read_file(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, skill_id)): Path<(String, String)>,
    QueryParams(q): QueryParams<FileQuery>,
) -> ApiResult<Json<Value>> {
    scope(&app, &caller, &company_id).await?;
    let path = skill::normalize_path(q.path.as_deref().unwrap_or("SKILL.md"))
        .map_err(|why| field("path", format!("Path {why}")))?;
    let found = library::get(&app.store, &company_id, &skill_id).await?;
    let file = found
        .files
        .iter()
        .find(|f| f.path == path)
        .ok_or_else(|| ApiError::not_found("Skill file not found"))?;
    Ok(Json(view::file_json(&found.skill.id, file)))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct FileWrite {
    pub path: String,
    pub content: String,
}

impl Validate for FileWrite {
    fn validate(&self) -> Result<(), Violation> {
        text("path", &self.path, skill::MAX_PATH_CHARS)?;
        text("content", &self.content, skill::MAX_FILE_BYTES)
    }
}

/// Writes a file: a new version of the skill with it.
#[utoipa::path(patch, path = "/api/companies/{companyId}/skills/{skillId}/files", tag = "skills",
    params(("companyId" = String, Path), ("skillId" = String, Path)), request_body = FileWrite,
    responses((status = 200, body = Object), (status = 400, description = "Bad path or too large"),
        (status = 404, description = "Skill not found")))]
#[paperclip_macros::handler]
async fn write_file(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, skill_id)): Path<(String, String)>,
    ValidJson(input): ValidJson<FileWrite>,
) -> ApiResult<Json<Value>> {
    let actor = mutator(&app, &caller, &company_id).await?;
    let (skill, file) = edit::write_file(
        &app.store,
        &actor,
        &company_id,
        &skill_id,
        &input.path,
        input.content,
    )
    .await?;
    Ok(Json(view::file_json(&skill.skill.id, &file)))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct FileDelete {
    pub path: String,
    /// `file` or `folder`.
    pub target: String,
}

impl Validate for FileDelete {
    fn validate(&self) -> Result<(), Violation> {
        text("path", &self.path, skill::MAX_PATH_CHARS)
    }
}

/// Deletes a file or a folder's files: a new version without them.
#[utoipa::path(delete, path = "/api/companies/{companyId}/skills/{skillId}/files", tag = "skills",
    params(("companyId" = String, Path), ("skillId" = String, Path)), request_body = FileDelete,
    responses((status = 200, body = Object), (status = 404, description = "Skill or file not found")))]
#[paperclip_macros::handler]
async fn delete_file(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, skill_id)): Path<(String, String)>,
    ValidJson(input): ValidJson<FileDelete>,
) -> ApiResult<Json<Value>> {
    let actor = mutator(&app, &caller, &company_id).await?;
    let folder = match input.target.as_str() {
        "file" => false,
        "folder" => true,
        _ => return Err(field("target", "target must be file or folder")),
    };
    let (skill, deleted) = edit::delete_file(
        &app.store,
        &actor,
        &company_id,
        &skill_id,
        &input.path,
        folder,
    )
    .await?;
    Ok(Json(
        json!({ "skillId": skill.skill.id, "path": input.path, "target": input.target,
        "deletedPaths": deleted }),
    ))
}

/// The skill's versions, newest first, each with its files.
#[utoipa::path(get, path = "/api/companies/{companyId}/skills/{skillId}/versions", tag = "skills",
    params(("companyId" = String, Path), ("skillId" = String, Path)),
    responses((status = 200, body = Object), (status = 404, description = "Skill not found")))]
#[paperclip_macros::handler]
async fn list_versions(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, skill_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    scope(&app, &caller, &company_id).await?;
    let versions = library::versions(&app.store, &company_id, &skill_id).await?;
    Ok(Json(json!(versions)))
}

#[utoipa::path(get, path = "/api/companies/{companyId}/skills/{skillId}/versions/{versionId}", tag = "skills",
    params(("companyId" = String, Path), ("skillId" = String, Path), ("versionId" = String, Path)),
    responses((status = 200, body = Object), (status = 404, description = "Skill version not found")))]
#[paperclip_macros::handler]
async fn get_version(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, skill_id, version_id)): Path<(String, String, String)>,
) -> ApiResult<Json<Value>> {
    scope(&app, &caller, &company_id).await?;
    let version = library::version(&app.store, &company_id, &skill_id, &version_id).await?;
    Ok(Json(json!(version)))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct VersionCreate {
    pub label: Option<String>,
}

impl Validate for VersionCreate {
    fn validate(&self) -> Result<(), Violation> {
        self.label
            .as_deref()
            .map_or(Ok(()), |l| text("label", l, 200))
    }
}

/// Marks the current files as a labelled version.
#[utoipa::path(post, path = "/api/companies/{companyId}/skills/{skillId}/versions", tag = "skills",
    params(("companyId" = String, Path), ("skillId" = String, Path)), request_body = VersionCreate,
    responses((status = 201, body = Object), (status = 404, description = "Skill not found")))]
#[paperclip_macros::handler]
async fn create_version(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, skill_id)): Path<(String, String)>,
    ValidJson(input): ValidJson<VersionCreate>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let actor = mutator(&app, &caller, &company_id).await?;
    let label = input
        .label
        .as_deref()
        .map(str::trim)
        .filter(|l| !l.is_empty());
    let version = edit::create_version(&app.store, &actor, &company_id, &skill_id, label).await?;
    Ok((StatusCode::CREATED, Json(json!(version))))
}

pub(super) fn field(name: &str, message: impl Into<String>) -> ApiError {
    ApiError::validation(json!([{ "path": [name], "message": message.into() }]))
}
