//! A project workspace's row: its columns and how it reads, shared by the
//! workspaces themselves and by the projects that list theirs (so neither
//! module imports the other).

use paperclip_core::workspace::ProjectWorkspace;

use crate::engine::db::{DbRow, Exec};
use crate::engine::row::RowExt;
use crate::Result;

pub(crate) const COLUMNS: &str = "id, company_id, project_id, name, source_type, cwd, repo_ref, \
     default_ref, is_primary, created_at, updated_at, setup_command, cleanup_command, repo_url";

/// Whose workspaces: one project's, or all of a company's projects'.
#[derive(Clone, Copy)]
pub(crate) enum Of {
    Project,
    Company,
}

/// The workspaces, primary first, then oldest first.
pub(crate) async fn of<'e>(
    executor: impl Exec<'e>,
    of: Of,
    id: &str,
) -> Result<Vec<ProjectWorkspace>> {
    let column = match of {
        Of::Project => "project_id",
        Of::Company => "company_id",
    };
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM project_workspaces WHERE {column} = $1 \
         ORDER BY is_primary DESC, created_at, id"
    ))
    .bind(id)
    .fetch_all(executor)
    .await?;
    rows.iter().map(map).collect()
}

pub(crate) fn map(row: &DbRow) -> Result<ProjectWorkspace> {
    Ok(ProjectWorkspace {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        project_id: row.text("project_id")?,
        name: row.text("name")?,
        source_type: row.stored("source_type")?,
        cwd: row.opt_text("cwd")?,
        repo_url: row.opt_text("repo_url")?,
        repo_ref: row.opt_text("repo_ref")?,
        default_ref: row.opt_text("default_ref")?,
        is_primary: row.flag("is_primary")?,
        setup_command: row.opt_text("setup_command")?,
        cleanup_command: row.opt_text("cleanup_command")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}
