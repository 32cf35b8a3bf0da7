//! Company export and import on the original's routes and package format
//! (`paperclip_core::package`). Board only. An import is one transaction;
//! its preview reads and writes nothing. A body is bounded by the API's
//! 1 MiB (413 past it); a package by its file count and readable files (400
//! naming the file and field).

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::package::{self, Package, PackageError};
use paperclip_store::port::{self, Collision, Imported, Options, Plan, Target};
use serde::Deserialize;
use serde_json::{json, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::company_port_export::{to_package, Include};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(export_company))
        .routes(routes!(export_company_files))
        .routes(routes!(preview_export))
        .routes(routes!(preview_import_into))
        .routes(routes!(apply_import_into))
        .routes(routes!(preview_import))
        .routes(routes!(apply_import))
        .routes(routes!(list_templates))
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IncludeBody {
    agents: Option<bool>,
    projects: Option<bool>,
    issues: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExportBody {
    include: Option<IncludeBody>,
    issues: Option<Vec<String>>,
    project_issues: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub(crate) enum Source {
    #[serde(rename = "inline")]
    Inline {
        files: BTreeMap<String, Value>,
        #[serde(rename = "expectedFileCount")]
        expected_file_count: Option<usize>,
    },
    #[serde(rename = "github")]
    Github { url: String },
    /// Ours: a starter template shipped in the binary, by name.
    #[serde(rename = "template")]
    Template { name: String },
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", tag = "mode")]
pub(crate) enum TargetBody {
    #[serde(rename = "new_company", rename_all = "camelCase")]
    New { new_company_name: Option<String> },
    #[serde(rename = "existing_company", rename_all = "camelCase")]
    Existing { company_id: String },
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ImportBody {
    source: Source,
    include: Option<IncludeBody>,
    target: TargetBody,
    agents: Option<Value>,
    collision_strategy: Option<String>,
    secret_values: Option<BTreeMap<String, String>>,
}

fn bad(path: Value, message: impl Into<String>) -> ApiError {
    let message = message.into();
    ApiError::validation(json!([{ "code": "invalid_package", "path": path, "message": message }]))
}

fn package_error(e: PackageError) -> ApiError {
    let mut path = vec![json!(e.file)];
    path.extend(e.field.iter().map(|f| json!(f)));
    bad(Value::Array(path), e.to_string())
}

/// The package an import names, read and checked.
fn read_source(source: &Source) -> ApiResult<Package> {
    let files = match source {
        Source::Github { url } => {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("Importing from {url} is not supported here: export the package to a folder and import that"),
            ))
        }
        Source::Template { name } => package::templates::files(name)
            .ok_or_else(|| bad(json!(["source", "name"]), format!("No template named '{name}'")))?,
        Source::Inline { files, expected_file_count } => {
            if files.len() > package::MAX_FILES {
                return Err(bad(json!(["source", "files"]), format!("At most {} files", package::MAX_FILES)));
            }
            if expected_file_count.is_some_and(|n| n > files.len()) {
                return Err(bad(json!(["source", "expectedFileCount"]), "The body holds fewer files than it declares"));
            }
            let mut text = BTreeMap::new();
            for (path, entry) in files {
                if path.split('/').any(|seg| seg == ".." || seg.is_empty()) {
                    return Err(bad(json!(["source", "files", path]), "A file path must be relative"));
                }
                match entry {
                    Value::String(s) => {
                        text.insert(path.clone(), s.clone());
                    }
                    Value::Object(o) if o.get("encoding").and_then(Value::as_str) == Some("base64") => {}
                    _ => return Err(bad(json!(["source", "files", path]), "A file is a string or a base64 object")),
                }
            }
            text
        }
    };
    package::from_files(&files).map_err(package_error)
}

fn include_of(body: Option<&IncludeBody>, default: Include) -> Include {
    Include {
        agents: body.and_then(|b| b.agents).unwrap_or(default.agents),
        projects: body.and_then(|b| b.projects).unwrap_or(default.projects),
        issues: body.and_then(|b| b.issues).unwrap_or(default.issues),
    }
}

async fn export_body(
    app: &AppState,
    caller: &Caller,
    company_id: &str,
    body: ExportBody,
) -> ApiResult<Value> {
    caller.require_board()?;
    caller.ensure_company(company_id)?;
    let asks_issues = body.issues.as_ref().is_some_and(|i| !i.is_empty())
        || body.project_issues.as_ref().is_some_and(|i| !i.is_empty());
    let inc = include_of(
        body.include.as_ref(),
        Include {
            agents: true,
            projects: asks_issues,
            issues: asks_issues,
        },
    );
    let snap = port::snapshot(&app.store, company_id, inc.issues).await?;
    let (pkg, mut warnings) = to_package(&snap, inc, &app.info.data_dir);
    let files = package::to_files(&pkg);
    let now = paperclip_store::now();
    let manifest = package::manifest(&pkg, Some((&snap.company.id, &snap.company.name)), &now);
    warnings.extend(pkg.warnings.iter().cloned());
    Ok(json!({
        "rootPath": pkg.slug,
        "manifest": manifest,
        "files": files,
        "warnings": warnings,
        "paperclipExtensionPath": ".paperclip.yaml",
    }))
}

/// The package as files (the original's CLI `company export` route).
#[utoipa::path(post, path = "/api/companies/{companyId}/export", tag = "company-portability",
    params(("companyId" = String, Path)), request_body = Object, responses((status = 200, body = Object),
        (status = 403, description = "Board access required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn export_company(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(body): JsonBody<ExportBody>,
) -> ApiResult<Json<Value>> {
    Ok(Json(export_body(&app, &caller, &company_id, body).await?))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/exports", tag = "company-portability",
    params(("companyId" = String, Path)), request_body = Object, responses((status = 200, body = Object),
        (status = 403, description = "Board access required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn export_company_files(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(body): JsonBody<ExportBody>,
) -> ApiResult<Json<Value>> {
    Ok(Json(export_body(&app, &caller, &company_id, body).await?))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/exports/preview", tag = "company-portability",
    params(("companyId" = String, Path)), request_body = Object, responses((status = 200, body = Object)))]
#[paperclip_macros::handler]
async fn preview_export(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(body): JsonBody<ExportBody>,
) -> ApiResult<Json<Value>> {
    let mut out = export_body(&app, &caller, &company_id, body).await?;
    let files: Vec<String> = out["files"]
        .as_object()
        .map(|f| f.keys().cloned().collect())
        .unwrap_or_default();
    let kind = |p: &str| match p {
        "COMPANY.md" => "company",
        "README.md" => "readme",
        ".paperclip.yaml" => "extension",
        p if p.starts_with("agents/") => "agent",
        p if p.starts_with("projects/") => "project",
        p if p.starts_with("tasks/") => "issue",
        p if p.starts_with("skills/") => "skill",
        _ => "other",
    };
    out["fileInventory"] = files
        .iter()
        .map(|p| json!({ "path": p, "kind": kind(p) }))
        .collect();
    let count = |k: &str| out["manifest"][k].as_array().map_or(0, Vec::len);
    out["counts"] = json!({
        "files": files.len(), "agents": count("agents"), "skills": 0,
        "projects": count("projects"), "issues": count("issues"),
    });
    Ok(Json(out))
}

/// The package trimmed to what the request includes and selects.
fn select(mut pkg: Package, body: &ImportBody) -> ApiResult<(Package, Options)> {
    let inc = include_of(
        body.include.as_ref(),
        Include {
            agents: true,
            projects: true,
            issues: true,
        },
    );
    if !inc.agents {
        pkg.agents.clear();
    }
    if !inc.projects {
        pkg.projects.clear();
    }
    if !inc.issues {
        pkg.tasks.clear();
        pkg.routines.clear();
    }
    let agents = match &body.agents {
        None => None,
        Some(Value::String(s)) if s == "all" => None,
        Some(Value::Array(list)) => Some(
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect::<BTreeSet<_>>(),
        ),
        Some(_) => {
            return Err(bad(
                json!(["agents"]),
                "`agents` is \"all\" or a list of slugs",
            ))
        }
    };
    let collision = match body.collision_strategy.as_deref() {
        None | Some("rename") | Some("replace") => Collision::Rename,
        Some("skip") => Collision::Skip,
        Some(other) => {
            return Err(bad(
                json!(["collisionStrategy"]),
                format!("Unknown value '{other}'"),
            ))
        }
    };
    let target = match &body.target {
        TargetBody::New { new_company_name } => Target::New {
            name: new_company_name.clone().filter(|n| !n.trim().is_empty()),
        },
        TargetBody::Existing { company_id } => Target::Existing(company_id.clone()),
    };
    let env_values = body.secret_values.clone().unwrap_or_default();
    Ok((
        pkg,
        Options {
            target,
            collision,
            agents,
            env_values,
        },
    ))
}

fn check_target(caller: &Caller, route_company: Option<&str>, body: &ImportBody) -> ApiResult<()> {
    caller.require_board()?;
    if route_company.is_some() && body.collision_strategy.as_deref() == Some("replace") {
        return Err(ApiError::forbidden(
            "Safe import route does not allow replace collision strategy",
        ));
    }
    match (&body.target, route_company) {
        (TargetBody::Existing { company_id }, Some(route)) if company_id != route => Err(
            ApiError::forbidden("Safe import route can only target the route company"),
        ),
        (TargetBody::Existing { company_id }, _) => caller.ensure_company(company_id),
        (TargetBody::New { .. }, route) => {
            if let Some(route) = route {
                caller.ensure_company(route)?;
            }
            caller.require_instance_admin().map(|_| ())
        }
    }
}

fn preview_json(pkg: &Package, plan: &Plan, collision: &str) -> Value {
    let items = |list: &[port::ItemPlan], id_key: &str, name_key: &str| -> Vec<Value> {
        list.iter()
            .map(|p| {
                let mut v = json!({ "slug": p.slug, "action": p.action, "reason": p.reason });
                v[name_key] = json!(p.planned_name);
                if !id_key.is_empty() {
                    v[id_key] = json!(p.existing_id);
                }
                v
            })
            .collect()
    };
    json!({
        "include": { "company": true, "agents": !pkg.agents.is_empty(), "projects": !pkg.projects.is_empty(),
            "issues": !(pkg.tasks.is_empty() && pkg.routines.is_empty()), "skills": false },
        "targetCompanyId": plan.target_company_id,
        "targetCompanyName": plan.target_company_name,
        "collisionStrategy": collision,
        "selectedAgentSlugs": plan.agents.iter().filter(|a| a.action != "skip" || a.existing_id.is_some()).map(|a| &a.slug).collect::<Vec<_>>(),
        "plan": {
            "companyAction": plan.company_action,
            "agentPlans": items(&plan.agents, "existingAgentId", "plannedName"),
            "projectPlans": items(&plan.projects, "existingProjectId", "plannedName"),
            "issuePlans": items(&plan.issues, "", "plannedTitle"),
            "goalPlans": items(&plan.goals, "existingGoalId", "plannedTitle"),
        },
        "manifest": package::manifest(pkg, None, &paperclip_store::now()),
        "files": package::to_files(pkg),
        "envInputs": pkg.env_inputs(),
        "warnings": plan.warnings,
        "errors": [],
    })
}

async fn preview(
    app: &AppState,
    caller: &Caller,
    route: Option<&str>,
    body: ImportBody,
) -> ApiResult<Value> {
    check_target(caller, route, &body)?;
    let (pkg, opts) = select(read_source(&body.source)?, &body)?;
    let plan = port::plan(&app.store, &pkg, &opts).await?;
    Ok(preview_json(
        &pkg,
        &plan,
        body.collision_strategy.as_deref().unwrap_or("rename"),
    ))
}

fn result_json(pkg: &Package, r: &Imported) -> Value {
    let done = |list: &[port::Done]| serde_json::to_value(list).unwrap_or_default();
    json!({
        "company": { "id": r.company.id, "name": r.company.name, "action": r.company_action },
        "agents": done(&r.agents),
        "skills": pkg.skills.iter().map(|sk| json!({
            "originalKey": sk.key, "originalSlug": sk.slug, "key": sk.key, "slug": sk.slug,
            "id": null, "action": if r.skills.contains(&sk.key) { "created" } else { "skipped" }, "reason": null,
        })).collect::<Vec<_>>(),
        "projects": done(&r.projects),
        "routines": r.routines.iter().map(|d| json!({
            "slug": d.slug, "id": d.id, "action": d.action, "title": d.name,
            "status": pkg.routines.iter().find(|x| x.slug == d.slug).and_then(|x| x.status.clone()).unwrap_or_else(|| "active".into()),
        })).collect::<Vec<_>>(),
        "goals": done(&r.goals),
        "tasks": done(&r.tasks),
        "commentCount": r.comments,
        "envInputs": pkg.env_inputs(),
        "warnings": r.warnings,
    })
}

async fn apply(
    app: &AppState,
    caller: &Caller,
    route: Option<&str>,
    body: ImportBody,
) -> ApiResult<Value> {
    check_target(caller, route, &body)?;
    let (pkg, opts) = select(read_source(&body.source)?, &body)?;
    let mut imported = port::apply(&app.store, caller.actor(), &pkg, &opts).await?;
    // Instructions are files beside the database: written once the rows are
    // committed, into each new agent's managed bundle.
    for (a, done) in pkg.agents.iter().zip(&imported.agents) {
        let (Some(id), "created", false) =
            (&done.id, done.action, a.instructions.trim().is_empty())
        else {
            continue;
        };
        let root = super::company_port_export::managed_instructions(
            &app.info.data_dir,
            &imported.company.id,
            id,
        );
        let written = std::fs::create_dir_all(&root).and_then(|_| {
            std::fs::write(
                root.join("AGENTS.md"),
                format!("{}\n", a.instructions.trim_end()),
            )
        });
        if let Err(e) = written {
            imported.warnings.push(format!(
                "Agent {}: its instructions were not written ({e})",
                a.slug
            ));
        }
    }
    Ok(result_json(&pkg, &imported))
}

/// Dry run into this company: what would be created, renamed or skipped.
#[utoipa::path(post, path = "/api/companies/{companyId}/imports/preview", tag = "company-portability",
    params(("companyId" = String, Path)), request_body = Object, responses((status = 200, body = Object),
        (status = 400, description = "A file or field of the package", body = crate::error::ErrorBody),
        (status = 413, description = "Package too large", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn preview_import_into(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(body): JsonBody<ImportBody>,
) -> ApiResult<Json<Value>> {
    Ok(Json(preview(&app, &caller, Some(&company_id), body).await?))
}

#[utoipa::path(post, path = "/api/companies/{companyId}/imports/apply", tag = "company-portability",
    params(("companyId" = String, Path)), request_body = Object, responses((status = 200, body = Object),
        (status = 400, description = "A file or field of the package", body = crate::error::ErrorBody),
        (status = 413, description = "Package too large", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn apply_import_into(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    JsonBody(body): JsonBody<ImportBody>,
) -> ApiResult<Json<Value>> {
    Ok(Json(apply(&app, &caller, Some(&company_id), body).await?))
}

#[utoipa::path(post, path = "/api/companies/import/preview", tag = "company-portability",
    request_body = Object, responses((status = 200, body = Object),
        (status = 400, description = "A file or field of the package", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn preview_import(
    State(app): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ImportBody>,
) -> ApiResult<Json<Value>> {
    Ok(Json(preview(&app, &caller, None, body).await?))
}

#[utoipa::path(post, path = "/api/companies/import", tag = "company-portability",
    request_body = Object, responses((status = 200, body = Object),
        (status = 400, description = "A file or field of the package", body = crate::error::ErrorBody),
        (status = 403, description = "Instance admin required", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn apply_import(
    State(app): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ImportBody>,
) -> ApiResult<Json<Value>> {
    Ok(Json(apply(&app, &caller, None, body).await?))
}

/// The starter templates shipped in the binary (import one with source
/// `{ "type": "template", "name": ... }`).
#[utoipa::path(get, path = "/api/company-templates", tag = "company-portability",
    responses((status = 200, body = Object)))]
#[paperclip_macros::handler]
async fn list_templates(caller: Caller) -> ApiResult<Json<Value>> {
    caller.require_board()?;
    Ok(Json(
        package::templates::TEMPLATES
            .iter()
            .map(|(name, label, _)| json!({ "name": name, "label": label }))
            .collect(),
    ))
}
