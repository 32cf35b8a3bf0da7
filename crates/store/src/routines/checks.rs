//! What a routine's newer fields need before they are kept: its folder
//! (one of the company's routine folders), its env (bindings in an agent's
//! shape, secrets of the same company), and the person responsible for it.

use paperclip_core::actor::Actor;
use paperclip_core::company_secret::parse_secret_ref;
use paperclip_core::folder::FolderKind;
use serde_json::{Map, Value};

use crate::engine::row::RowExt;
use crate::{Error, Result, Tx};

/// `folder_id` names a routine folder of the company.
pub(crate) async fn folder(tx: &mut Tx, company_id: &str, folder_id: Option<&str>) -> Result<()> {
    let Some(id) = folder_id else {
        return Ok(());
    };
    if uuid::Uuid::try_parse(id).is_err() {
        return Err(Error::invalid("folderId", "Folder id must be a UUID"));
    }
    let row =
        crate::engine::db::query("SELECT kind FROM folders WHERE id = $1 AND company_id = $2")
            .bind(id)
            .bind(company_id)
            .fetch_optional(tx.conn())
            .await?
            .ok_or_else(|| Error::not_found("Folder"))?;
    if row.stored::<FolderKind, _>("kind")? != FolderKind::Routine {
        return Err(Error::rule("Folder kind must match routine"));
    }
    Ok(())
}

/// The env's shape (as a project's: names, plain strings, `secret_ref`s)
/// and each referenced secret one of the company's. The error names the
/// variable, never a value.
pub(crate) async fn env(tx: &mut Tx, company_id: &str, env: &Value) -> Result<()> {
    paperclip_core::project::check_env(env).map_err(|why| Error::invalid("env", why))?;
    for (var, binding) in env.as_object().into_iter().flatten() {
        let Some(Ok(reference)) = parse_secret_ref(binding) else {
            continue;
        };
        let found = crate::engine::db::query(
            "SELECT 1 FROM company_secrets WHERE id = $1 AND company_id = $2",
        )
        .bind(&reference.secret_id)
        .bind(company_id)
        .fetch_optional(tx.conn())
        .await?;
        if found.is_none() {
            return Err(Error::invalid(
                "env",
                format!("env {var}: secret not found in this company"),
            ));
        }
    }
    Ok(())
}

/// The variables added, removed or rebound between two envs, sorted: what
/// the activity names (never a value: a plain binding may hold something
/// sensitive all the same).
pub(crate) fn env_changes(before: Option<&Value>, after: Option<&Value>) -> Vec<String> {
    let empty = Map::new();
    let vars = |env: Option<&Value>| env.and_then(Value::as_object).unwrap_or(&empty).clone();
    let (before, after) = (vars(before), vars(after));
    let mut names: Vec<String> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The original's responsible person for a routine someone makes or edits:
/// the person acting, else the parent task's responsible person or
/// creator, else the company's default responsible person, else its
/// earliest active owner. None when the company has none of them (the
/// local board with no members), where the original would refuse.
pub(crate) async fn responsible_user(
    tx: &mut Tx,
    company_id: &str,
    actor: &Actor,
    parent_issue_id: Option<&str>,
) -> Result<Option<String>> {
    if let Some(user) = actor.user_id() {
        return Ok(Some(user.to_string()));
    }
    if let Some(parent) = parent_issue_id {
        let row = crate::engine::db::query(
            "SELECT COALESCE(responsible_user_id, created_by_user_id) AS user_id FROM issues \
             WHERE id = $1 AND company_id = $2",
        )
        .bind(parent)
        .bind(company_id)
        .fetch_optional(tx.conn())
        .await?;
        if let Some(user) = row.map(|r| r.opt_text("user_id")).transpose()?.flatten() {
            return Ok(Some(user));
        }
    }
    let row = crate::engine::db::query(
        "SELECT COALESCE(c.default_responsible_user_id, (SELECT m.user_id FROM company_memberships m \
         WHERE m.company_id = c.id AND m.role = 'owner' AND m.status = 'active' \
         ORDER BY m.created_at, m.id LIMIT 1)) AS user_id FROM companies c WHERE c.id = $1",
    )
    .bind(company_id)
    .fetch_optional(tx.conn())
    .await?;
    Ok(row.map(|r| r.opt_text("user_id")).transpose()?.flatten())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn env_changes_name_what_moved_and_nothing_else() {
        let before = json!({ "A": "1", "B": "2", "C": { "type": "plain", "value": "x" } });
        let after = json!({ "A": "1", "B": "3", "D": "4" });
        assert_eq!(env_changes(Some(&before), Some(&after)), ["B", "C", "D"]);
        assert_eq!(env_changes(None, Some(&json!({ "A": "1" }))), ["A"]);
        assert!(env_changes(Some(&before), Some(&before)).is_empty());
    }
}
