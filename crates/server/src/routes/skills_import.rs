//! Bringing skills in (upstream's `skills/import`, `install-update`,
//! `update-status`, `reset`): from a folder or a repository
//! ([`super::source`]) or an uploaded bundle, keyed as upstream keys them.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::limits::{text, Validate, Violation};
use paperclip_core::skill::{self, SourceType, VersionFile};
use paperclip_store::org::skills::{self as library, short_hash, NewSkill};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{field, mutator, scope, source, view};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::limits::ValidJson;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(import))
        .routes(routes!(update_status))
        .routes(routes!(install_update))
        .routes(routes!(reset))
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct ImportRequest {
    /// An absolute folder path on the server's machine, a git URL, a GitHub
    /// or skills.sh URL, or `owner/repo/skill`.
    pub source: Option<String>,
    /// Ours: an uploaded bundle, path to text content, SKILL.md at its root.
    pub files: Option<BTreeMap<String, String>>,
}

impl Validate for ImportRequest {
    fn validate(&self) -> Result<(), Violation> {
        if let Some(s) = &self.source {
            text("source", s, 2000)?;
        }
        Ok(())
    }
}

/// Imports skills from a folder, a repository or an uploaded bundle. A skill
/// whose key is already in the library gets a new version when its files
/// changed; a slug another skill holds is a 409.
#[utoipa::path(post, path = "/api/companies/{companyId}/skills/import", tag = "skills",
    params(("companyId" = String, Path)), request_body = ImportRequest,
    responses((status = 201, body = Object), (status = 400, description = "Bad source or files"),
        (status = 403, description = "Local sources are the board's"),
        (status = 409, description = "A skill of that name exists"),
        (status = 422, description = "Nothing to import there")))]
#[paperclip_macros::handler]
async fn import(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    ValidJson(input): ValidJson<ImportRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let actor = mutator(&app, &caller, &company_id).await?;
    let (news, warnings, label) = match (input.files, input.source) {
        (Some(files), source) => {
            let label = source.unwrap_or_else(|| "upload".into());
            (
                vec![bundle(&company_id, files.into_iter().collect(), &label)?],
                Vec::new(),
                label,
            )
        }
        (None, Some(source)) => {
            let parsed = source::parse(&source)?;
            if parsed.is_local() && !caller.actor().is_board() {
                return Err(ApiError::forbidden(
                    "Only the board may import from the server's own disk",
                ));
            }
            let fetched = source::fetch(&parsed).await?;
            let mut news = Vec::with_capacity(fetched.found.len());
            for found in &fetched.found {
                news.push(from_source(
                    &parsed,
                    &source,
                    found,
                    fetched.source_ref.clone(),
                )?);
            }
            (news, fetched.warnings, source)
        }
        (None, None) => return Err(field("source", "source or files is required")),
    };
    let imported =
        library::upsert_many(&app.store, &actor, &company_id, news, &label, false).await?;
    let imported: Vec<Value> = imported
        .iter()
        .map(|s| view::skill_json(&s.skill))
        .collect();
    Ok((
        StatusCode::CREATED,
        Json(json!({ "imported": imported, "warnings": warnings })),
    ))
}

fn checked(files: Vec<(String, String)>, name: &str) -> ApiResult<Vec<VersionFile>> {
    skill::check_files(files).map_err(|why| field(name, why))
}

/// An uploaded bundle: a managed skill of the company.
fn bundle(company_id: &str, files: Vec<(String, String)>, label: &str) -> ApiResult<NewSkill> {
    let files = checked(files, "files")?;
    let (name, description) = skill::frontmatter(&files[0].content);
    let name = name.ok_or_else(|| field("files", "SKILL.md's frontmatter needs a name"))?;
    let slug =
        skill::slug(&name).ok_or_else(|| field("files", "the name needs a letter or digit"))?;
    Ok(NewSkill {
        key: format!("company/{company_id}/{slug}"),
        slug,
        name,
        description,
        source_type: SourceType::LocalPath,
        source_locator: None,
        source_ref: None,
        metadata: Some(json!({ "sourceKind": "managed_local", "uploadedAs": label })),
        files,
    })
}

/// A skill found in a folder or repository, keyed as upstream keys it.
fn from_source(
    parsed: &source::Source,
    source: &str,
    found: &source::Found,
    source_ref: Option<String>,
) -> ApiResult<NewSkill> {
    let files = checked(found.files.clone(), "source")?;
    let (name, description) = skill::frontmatter(&files[0].content);
    let folder_name = found.dir.rsplit('/').next().filter(|n| !n.is_empty());
    let name = name
        .or_else(|| folder_name.map(String::from))
        .ok_or_else(|| field("source", "SKILL.md's frontmatter needs a name"))?;
    let slug =
        skill::slug(&name).ok_or_else(|| field("source", "the name needs a letter or digit"))?;
    let (key, locator, metadata) = match parsed {
        source::Source::Folder(root) => {
            let dir = if found.dir.is_empty() {
                root.clone()
            } else {
                root.join(&found.dir)
            };
            let locator = dir.display().to_string();
            (
                format!("local/{}/{slug}", short_hash(&locator)),
                locator,
                json!({ "sourceKind": "local_path" }),
            )
        }
        source::Source::Git {
            url,
            github: Some((owner, repo)),
            ..
        } => (
            format!(
                "{}/{}/{slug}",
                skill::slug(owner).unwrap_or_default(),
                skill::slug(repo).unwrap_or_default()
            ),
            url.clone(),
            json!({ "sourceKind": "github", "owner": owner, "repo": repo, "path": found.dir }),
        ),
        source::Source::Git { url, .. } => (
            format!("url/{}/{slug}", short_hash(&format!("{url}#{}", found.dir))),
            url.clone(),
            json!({ "sourceKind": "git", "path": found.dir, "source": source }),
        ),
    };
    Ok(NewSkill {
        key,
        slug,
        name,
        description,
        source_type: parsed.source_type(),
        source_locator: Some(locator),
        source_ref,
        metadata: Some(metadata),
        files,
    })
}

/// Whether the skill's source has something newer (upstream's
/// `CompanySkillUpdateStatus`): a repository's HEAD against the imported
/// commit; other sources are not tracked.
#[utoipa::path(get, path = "/api/companies/{companyId}/skills/{skillId}/update-status", tag = "skills",
    params(("companyId" = String, Path), ("skillId" = String, Path)),
    responses((status = 200, body = Object), (status = 404, description = "Skill not found")))]
#[paperclip_macros::handler]
async fn update_status(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, skill_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    scope(&app, &caller, &company_id).await?;
    let found = library::get(&app.store, &company_id, &skill_id).await?;
    let tracked = matches!(
        found.skill.source_type,
        SourceType::Github | SourceType::Url
    );
    let latest = match (&found.skill.source_locator, tracked) {
        (Some(url), true) => source::remote_head(url).await,
        _ => None,
    };
    Ok(Json(view::update_status(&found.skill, latest)))
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct ForceBody {
    /// Installs an update over edits made here.
    pub force: Option<bool>,
    /// Ours, for reset: the version to go back to (default the first).
    #[serde(rename = "versionId")]
    pub version_id: Option<String>,
}

impl Validate for ForceBody {
    fn validate(&self) -> Result<(), Violation> {
        Ok(())
    }
}

/// Imports the skill again from where it came from: a new version when the
/// files changed there.
#[utoipa::path(post, path = "/api/companies/{companyId}/skills/{skillId}/install-update", tag = "skills",
    params(("companyId" = String, Path), ("skillId" = String, Path)), request_body = ForceBody,
    responses((status = 200, body = Object), (status = 404, description = "Skill not found"),
        (status = 422, description = "Its source is not tracked")))]
#[paperclip_macros::handler]
async fn install_update(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, skill_id)): Path<(String, String)>,
    ValidJson(body): ValidJson<ForceBody>,
) -> ApiResult<Json<Value>> {
    let actor = mutator(&app, &caller, &company_id).await?;
    let current = library::get(&app.store, &company_id, &skill_id).await?;
    if view::user_modified_at(&current.skill).is_some() && body.force != Some(true) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Skill update is held because local modifications were detected; rerun with --force to discard them.",
        )
        .with_details(json!({ "updateHoldReason": "local_modifications" })));
    }
    let locator = current
        .skill
        .source_locator
        .clone()
        .filter(|_| current.skill.source_type != SourceType::Catalog)
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "This skill was written here: it has no source to update from",
            )
        })?;
    let parsed = match current.skill.source_type {
        SourceType::LocalPath => source::Source::Folder(locator.clone().into()),
        // The whole repository again: a skill is known by its key there.
        _ => source::parse(&locator)?,
    };
    if parsed.is_local() && !caller.actor().is_board() {
        return Err(ApiError::forbidden(
            "Only the board may import from the server's own disk",
        ));
    }
    let fetched = source::fetch(&parsed).await?;
    let mut news = Vec::new();
    for found in &fetched.found {
        let mut new = from_source(&parsed, &locator, found, fetched.source_ref.clone())?;
        if matches!(parsed, source::Source::Folder(_)) {
            new.key = current.skill.key.clone();
        }
        if new.key == current.skill.key {
            new.slug = current.skill.slug.clone();
            news.push(new);
        }
    }
    if news.is_empty() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "The skill is no longer in its source",
        ));
    }
    let updated =
        library::upsert_many(&app.store, &actor, &company_id, news, &locator, true).await?;
    Ok(Json(view::skill_json(&updated[0].skill)))
}

/// Makes an earlier version's files current again (default: the first, as
/// installed), as a new version.
#[utoipa::path(post, path = "/api/companies/{companyId}/skills/{skillId}/reset", tag = "skills",
    params(("companyId" = String, Path), ("skillId" = String, Path)), request_body = ForceBody,
    responses((status = 200, body = Object), (status = 404, description = "Skill not found")))]
#[paperclip_macros::handler]
async fn reset(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, skill_id)): Path<(String, String)>,
    ValidJson(body): ValidJson<ForceBody>,
) -> ApiResult<Json<Value>> {
    let actor = mutator(&app, &caller, &company_id).await?;
    let skill = paperclip_store::org::skills_edit::reset_to(
        &app.store,
        &actor,
        &company_id,
        &skill_id,
        body.version_id.as_deref(),
    )
    .await?;
    Ok(Json(view::skill_json(&skill.skill)))
}
