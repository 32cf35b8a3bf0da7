//! Project workspaces (upstream's `project_workspaces`): where a project's
//! code lives. A project's primary workspace is the one its tasks' worktrees
//! are made from; the first workspace of a project is primary, and making
//! another primary demotes the rest. That the path is a git repository is
//! checked by the caller (the store runs no process); here only its shape.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::workspace::{
    NewProjectWorkspace, ProjectWorkspace, ProjectWorkspacePatch, WorkspaceSourceType,
};
use serde_json::json;

use crate::audit::mutate::{mutate, Audited};
use crate::engine::row::one_by_id;
use crate::org::workspace_rows::{self, map, Of, COLUMNS};
use crate::{new_id, now, Error, Result, Store, Tx};

/// A project's workspaces, primary first, then oldest first.
pub async fn list(store: &Store, project_id: &str) -> Result<Vec<ProjectWorkspace>> {
    workspace_rows::of(store.pool(), Of::Project, project_id).await
}

/// The workspace a project's tasks run from, if it declares one.
pub async fn primary(store: &Store, project_id: &str) -> Result<Option<ProjectWorkspace>> {
    Ok(list(store, project_id).await?.into_iter().next())
}

pub async fn get(store: &Store, id: &str) -> Result<ProjectWorkspace> {
    one_by_id(
        store.pool(),
        &format!("SELECT {COLUMNS} FROM project_workspaces WHERE id = $1"),
        id,
        map,
        "Project workspace",
    )
    .await
}

async fn get_in(tx: &mut Tx, id: &str) -> Result<ProjectWorkspace> {
    one_by_id(
        tx.conn(),
        &format!("SELECT {COLUMNS} FROM project_workspaces WHERE id = $1"),
        id,
        map,
        "Project workspace",
    )
    .await
}

/// Adds a workspace to `project_id` (of `company_id`). `cwd` is the path
/// the caller checked is a git repository.
pub async fn create(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    project_id: &str,
    input: &NewProjectWorkspace,
) -> Result<ProjectWorkspace> {
    let repo_url = trimmed(input.repo_url.as_deref()).map(str::to_string);
    let source_type = input.source_type.unwrap_or(if repo_url.is_some() {
        WorkspaceSourceType::GitRepo
    } else {
        WorkspaceSourceType::LocalPath
    });
    let served = match source_type {
        WorkspaceSourceType::LocalPath => repo_url.is_none(),
        WorkspaceSourceType::GitRepo => repo_url.is_some(),
        _ => false,
    };
    if !served {
        return Err(Error::rule(
            "A project workspace is a local git repository (sourceType local_path and cwd) \
             or a git URL to clone (sourceType git_repo and repoUrl)",
        ));
    }
    let cwd = check_cwd(input.cwd.as_deref())?;
    let name = match input.name.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() => name.to_string(),
        _ => default_name(&cwd),
    };
    mutate(store, actor, async |tx: &mut Tx| {
        let project = crate::org::projects::get_in_company(tx, company_id, project_id).await?;
        let (existing,): (i64,) = crate::engine::db::query_as(
            "SELECT COUNT(*) FROM project_workspaces WHERE project_id = $1",
        )
        .bind(&project.id)
        .fetch_one(tx.conn())
        .await?;
        let is_primary = existing == 0 || input.is_primary.unwrap_or(false);
        if is_primary {
            clear_primary(tx, &project.id).await?;
        }
        let id = new_id();
        crate::engine::db::query(&format!(
            "INSERT INTO project_workspaces ({COLUMNS}) VALUES \
             ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10, $11, $12, $13)"
        ))
        .bind(&id)
        .bind(company_id)
        .bind(&project.id)
        .bind(&name)
        .bind(source_type.as_str())
        .bind(&cwd)
        .bind(trimmed(input.repo_ref.as_deref()))
        .bind(trimmed(input.default_ref.as_deref()))
        .bind(is_primary)
        .bind(now())
        .bind(trimmed(input.setup_command.as_deref()))
        .bind(trimmed(input.cleanup_command.as_deref()))
        .bind(repo_url.as_deref())
        .execute(tx.conn())
        .await?;
        let workspace = get_in(tx, &id).await?;
        Ok(audited(workspace, Action::ProjectWorkspaceCreated))
    })
    .await
}

pub async fn update(
    store: &Store,
    actor: &Actor,
    id: &str,
    patch: &ProjectWorkspacePatch,
) -> Result<ProjectWorkspace> {
    let cwd = match &patch.cwd {
        Some(cwd) => Some(check_cwd(Some(cwd))?),
        None => None,
    };
    mutate(store, actor, async |tx: &mut Tx| {
        let before = get_in(tx, id).await?;
        let pick = |p: &Option<Option<String>>, c: &Option<String>| match p {
            Some(v) => trimmed(v.as_deref()).map(str::to_string),
            None => c.clone(),
        };
        let name = match patch.name.as_deref().map(str::trim) {
            Some("") => return Err(Error::invalid("name", "Name must not be empty")),
            Some(name) => name.to_string(),
            None => before.name.clone(),
        };
        // A primary workspace stays primary until another is made primary:
        // a project always has one to run from.
        let is_primary = before.is_primary || patch.is_primary == Some(true);
        if is_primary && !before.is_primary {
            clear_primary(tx, &before.project_id).await?;
        }
        crate::engine::db::query(
            "UPDATE project_workspaces SET name = $2, cwd = $3, repo_ref = $4, default_ref = $5, \
             is_primary = $6, updated_at = $7, setup_command = $8, cleanup_command = $9 \
             WHERE id = $1",
        )
        .bind(id)
        .bind(&name)
        .bind(cwd.clone().or(before.cwd.clone()))
        .bind(pick(&patch.repo_ref, &before.repo_ref))
        .bind(pick(&patch.default_ref, &before.default_ref))
        .bind(is_primary)
        .bind(now())
        .bind(pick(&patch.setup_command, &before.setup_command))
        .bind(pick(&patch.cleanup_command, &before.cleanup_command))
        .execute(tx.conn())
        .await?;
        let after = get_in(tx, id).await?;
        Ok(audited(after, Action::ProjectWorkspaceUpdated))
    })
    .await
}

/// Removes the declaration only: worktrees made from it stay, with their
/// execution workspaces, until they are closed.
pub async fn delete(store: &Store, actor: &Actor, id: &str) -> Result<ProjectWorkspace> {
    mutate(store, actor, async |tx: &mut Tx| {
        let workspace = get_in(tx, id).await?;
        crate::engine::db::query("DELETE FROM project_workspaces WHERE id = $1")
            .bind(id)
            .execute(tx.conn())
            .await?;
        if workspace.is_primary {
            // The oldest remaining one, if any, becomes primary.
            crate::engine::db::query(
                "UPDATE project_workspaces SET is_primary = $2 WHERE id = \
                 (SELECT id FROM project_workspaces WHERE project_id = $1 \
                  ORDER BY created_at, id LIMIT 1)",
            )
            .bind(&workspace.project_id)
            .bind(true)
            .execute(tx.conn())
            .await?;
        }
        Ok(audited(workspace, Action::ProjectWorkspaceDeleted))
    })
    .await
}

fn audited(workspace: ProjectWorkspace, action: Action) -> Audited<ProjectWorkspace> {
    Audited {
        company_id: workspace.company_id.clone(),
        action,
        entity_type: EntityType::Project,
        entity_id: workspace.project_id.clone(),
        details: json!({
            "workspaceId": workspace.id, "name": workspace.name, "cwd": workspace.cwd,
        }),
        value: workspace,
    }
}

async fn clear_primary(tx: &mut Tx, project_id: &str) -> Result<()> {
    crate::engine::db::query(
        "UPDATE project_workspaces SET is_primary = $2 WHERE project_id = $1 AND is_primary = $3",
    )
    .bind(project_id)
    .bind(false)
    .bind(true)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// The path's shape: present and absolute (whether it is a repository is
/// the caller's check).
fn check_cwd(cwd: Option<&str>) -> Result<String> {
    let cwd = cwd.map(str::trim).unwrap_or_default();
    if cwd.is_empty() {
        return Err(Error::rule(
            "cwd is required: the absolute path of a local git repository",
        ));
    }
    if !std::path::Path::new(cwd).is_absolute() {
        return Err(Error::rule(format!(
            "cwd must be an absolute path of a local git repository, not {cwd:?}"
        )));
    }
    Ok(cwd.to_string())
}

fn default_name(cwd: &str) -> String {
    std::path::Path::new(cwd)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "workspace".to_string())
}

fn trimmed(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}
