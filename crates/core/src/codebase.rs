//! A project's codebase as upstream answers it on the project: where its
//! code is, read from its primary workspace (else its first). A `local_path`
//! workspace is a folder someone declared (upstream's local folder); a
//! `git_repo` one is the clone we keep in the data dir (upstream's managed
//! checkout). A project with no workspace has no folder at all here (we
//! make none until a workspace is declared), so every field is null.

use serde::Serialize;
use utoipa::ToSchema;

use crate::workspace::{ProjectWorkspace, WorkspaceSourceType};

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Codebase {
    pub workspace_id: Option<String>,
    pub repo_url: Option<String>,
    pub repo_ref: Option<String>,
    pub default_ref: Option<String>,
    /// The repository's name, from the last segment of `repoUrl`.
    pub repo_name: Option<String>,
    pub local_folder: Option<String>,
    pub managed_folder: Option<String>,
    /// Where the code is: the local folder, else the managed one.
    pub effective_local_folder: Option<String>,
    pub origin: Option<CodebaseOrigin>,
}

#[derive(Debug, Clone, Copy, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CodebaseOrigin {
    LocalFolder,
    ManagedCheckout,
}

/// The workspace a project's code is read from: the primary, else the first.
pub fn primary(workspaces: &[ProjectWorkspace]) -> Option<&ProjectWorkspace> {
    workspaces
        .iter()
        .find(|w| w.is_primary)
        .or_else(|| workspaces.first())
}

impl Codebase {
    pub fn of(primary: Option<&ProjectWorkspace>) -> Codebase {
        let Some(w) = primary else {
            return Codebase {
                workspace_id: None,
                repo_url: None,
                repo_ref: None,
                default_ref: None,
                repo_name: None,
                local_folder: None,
                managed_folder: None,
                effective_local_folder: None,
                origin: None,
            };
        };
        let managed = w.source_type == WorkspaceSourceType::GitRepo;
        let (local_folder, managed_folder) = match managed {
            true => (None, w.cwd.clone()),
            false => (w.cwd.clone(), None),
        };
        let effective = local_folder.clone().or_else(|| managed_folder.clone());
        Codebase {
            workspace_id: Some(w.id.clone()),
            repo_url: w.repo_url.clone(),
            repo_ref: w.repo_ref.clone(),
            default_ref: w.default_ref.clone(),
            repo_name: w.repo_url.as_deref().and_then(repo_name),
            origin: effective.as_ref().map(|_| match managed {
                true => CodebaseOrigin::ManagedCheckout,
                false => CodebaseOrigin::LocalFolder,
            }),
            local_folder,
            managed_folder,
            effective_local_folder: effective,
        }
    }
}

/// `https://host/org/app.git/` is `app`; a URL with no path has none.
fn repo_name(url: &str) -> Option<String> {
    let path = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let (_, path) = path.split_once('/')?;
    let last = path.trim_end_matches('/').rsplit('/').next()?;
    let name = last.strip_suffix(".git").unwrap_or(last);
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace(
        source: WorkspaceSourceType,
        primary: bool,
        url: Option<&str>,
    ) -> ProjectWorkspace {
        ProjectWorkspace {
            id: format!("w-{primary}"),
            company_id: "c".into(),
            project_id: "p".into(),
            name: "code".into(),
            source_type: source,
            cwd: Some("/src/app".into()),
            repo_url: url.map(str::to_string),
            repo_ref: None,
            default_ref: Some("main".into()),
            is_primary: primary,
            setup_command: None,
            cleanup_command: None,
            created_at: "t".into(),
            updated_at: "t".into(),
        }
    }

    #[test]
    fn a_declared_folder_is_local_and_a_clone_is_managed() {
        let local = Codebase::of(Some(&workspace(WorkspaceSourceType::LocalPath, true, None)));
        assert_eq!(local.local_folder.as_deref(), Some("/src/app"));
        assert_eq!(local.managed_folder, None);
        assert_eq!(local.origin, Some(CodebaseOrigin::LocalFolder));
        let url = Some("https://git.example/acme/app.git/");
        let clone = Codebase::of(Some(&workspace(WorkspaceSourceType::GitRepo, true, url)));
        assert_eq!(clone.local_folder, None);
        assert_eq!(clone.effective_local_folder.as_deref(), Some("/src/app"));
        assert_eq!(clone.origin, Some(CodebaseOrigin::ManagedCheckout));
        assert_eq!(clone.repo_name.as_deref(), Some("app"));
    }

    #[test]
    fn no_workspace_is_no_folder_and_the_primary_wins() {
        let none = Codebase::of(None);
        assert_eq!((none.origin, none.effective_local_folder), (None, None));
        let list = [
            workspace(WorkspaceSourceType::LocalPath, false, None),
            workspace(WorkspaceSourceType::GitRepo, true, None),
        ];
        assert_eq!(primary(&list).map(|w| w.id.as_str()), Some("w-true"));
        assert_eq!(primary(&list[..1]).map(|w| w.id.as_str()), Some("w-false"));
        assert_eq!(repo_name("https://host"), None);
        assert_eq!(repo_name("git@host:acme/tool"), Some("tool".into()));
    }
}
