//! Editing a company skill (issue 40): its description and categories, its
//! files (each edit a new version, under the skill row's lock), a labelled
//! version, going back to an earlier one, deleting it.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::skill::{self, SkillVersion, VersionFile};
use serde_json::{json, Value};

use crate::audit::activity::{self, Entry};

use crate::org::skills::{
    add_version, get_in, locked, map_version, record, version_in, Skill, VERSION_COLUMNS,
};
use crate::{now, Error, Result, Store, Tx};

/// What the board may change of a skill without a new version.
#[derive(Debug, Clone, Default)]
pub struct SkillPatch {
    pub description: Option<Option<String>>,
    pub categories: Option<Vec<String>>,
}

/// Sets the description or categories (no new version: the files stay).
pub async fn update(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    reference: &str,
    patch: SkillPatch,
) -> Result<Skill> {
    let mut tx = store.begin().await?;
    let current = locked(&mut tx, company_id, reference).await?;
    let id = current.skill.id.clone();
    let description = patch
        .description
        .unwrap_or(current.skill.description.clone());
    let categories = patch.categories.unwrap_or(current.skill.categories.clone());
    crate::engine::db::query(
        "UPDATE company_skills SET description = $2, categories = $3, updated_at = $4 WHERE id = $1",
    )
    .bind(&id)
    .bind(description.as_deref())
    .bind(Value::from(categories.clone()).to_string())
    .bind(now())
    .execute(tx.conn())
    .await?;
    let details = json!({ "slug": current.skill.slug, "categories": categories,
        "sharingScope": "company" });
    let skill = commit_recorded(
        tx,
        actor,
        company_id,
        Action::CompanySkillUpdated,
        &id,
        details,
    )
    .await?;
    Ok(skill)
}

/// Writes one file (a new version with it added or replaced).
pub async fn write_file(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    reference: &str,
    path: &str,
    content: String,
) -> Result<(Skill, VersionFile)> {
    let path =
        skill::normalize_path(path).map_err(|why| Error::invalid("path", format!("Path {why}")))?;
    let mut tx = store.begin().await?;
    let current = locked(&mut tx, company_id, reference).await?;
    let id = current.skill.id.clone();
    let mut files: Vec<(String, String)> = current
        .files
        .into_iter()
        .filter(|f| f.path != path)
        .map(|f| (f.path, f.content))
        .collect();
    files.push((path.clone(), content));
    let files = skill::check_files(files).map_err(|why| Error::invalid("content", why))?;
    add_version(&mut tx, actor, company_id, &id, &files, None).await?;
    modified(&mut tx, &current.skill, true).await?;
    if path == "SKILL.md" {
        rename_from_markdown(&mut tx, &id, &files[0].content).await?;
    }
    let written = files
        .iter()
        .find(|f| f.path == path)
        .cloned()
        .expect("written");
    let details = json!({ "path": path, "markdown": written.path.ends_with(".md") });
    let skill = commit_recorded(
        tx,
        actor,
        company_id,
        Action::CompanySkillFileUpdated,
        &id,
        details,
    )
    .await?;
    Ok((skill, written))
}

/// Deletes a file, or a folder's files (a new version without them).
/// SKILL.md stays: a skill without one is no skill.
pub async fn delete_file(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    reference: &str,
    path: &str,
    folder: bool,
) -> Result<(Skill, Vec<String>)> {
    let path =
        skill::normalize_path(path).map_err(|why| Error::invalid("path", format!("Path {why}")))?;
    let mut tx = store.begin().await?;
    let current = locked(&mut tx, company_id, reference).await?;
    let id = current.skill.id.clone();
    let prefix = format!("{path}/");
    let (gone, kept): (Vec<VersionFile>, Vec<VersionFile>) =
        current.files.into_iter().partition(|f| {
            if folder {
                f.path.starts_with(&prefix)
            } else {
                f.path == path
            }
        });
    if gone.is_empty() {
        return Err(Error::not_found("Skill file"));
    }
    if gone.iter().any(|f| f.path == "SKILL.md") {
        return Err(Error::rule("SKILL.md cannot be deleted: a skill needs it"));
    }
    add_version(&mut tx, actor, company_id, &id, &kept, None).await?;
    modified(&mut tx, &current.skill, true).await?;
    let deleted: Vec<String> = gone.into_iter().map(|f| f.path).collect();
    let target = if folder { "folder" } else { "file" };
    let details = json!({ "path": path, "target": target, "deletedPaths": deleted });
    let skill = commit_recorded(
        tx,
        actor,
        company_id,
        Action::CompanySkillFileDeleted,
        &id,
        details,
    )
    .await?;
    Ok((skill, deleted))
}

/// A labelled new version with the current files (upstream's `POST versions`).
pub async fn create_version(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    reference: &str,
    label: Option<&str>,
) -> Result<SkillVersion> {
    let mut tx = store.begin().await?;
    let current = locked(&mut tx, company_id, reference).await?;
    let id = current.skill.id.clone();
    let version = add_version(&mut tx, actor, company_id, &id, &current.files, label).await?;
    let details = json!({ "skillId": id, "revisionNumber": version.revision_number,
        "label": version.label });
    let entry = Entry {
        company_id,
        action: Action::CompanySkillVersionCreated,
        entity_type: EntityType::CompanySkillVersion,
        entity_id: &version.id,
        details,
    };
    activity::record(&mut tx, actor, entry).await?;
    tx.commit().await?;
    Ok(version)
}

/// Makes an earlier version's files current again, as a new version.
pub async fn reset_to(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    reference: &str,
    version_id: Option<&str>,
) -> Result<Skill> {
    let mut tx = store.begin().await?;
    let current = locked(&mut tx, company_id, reference).await?;
    let id = current.skill.id.clone();
    let target = match version_id {
        Some(v) => version_in(&mut tx, company_id, &id, v).await?,
        None => first_version(&mut tx, &id).await?,
    };
    if target.file_inventory != current.files {
        add_version(
            &mut tx,
            actor,
            company_id,
            &id,
            &target.file_inventory,
            None,
        )
        .await?;
        if let Some(md) = target.file_inventory.iter().find(|f| f.path == "SKILL.md") {
            rename_from_markdown(&mut tx, &id, &md.content).await?;
        }
        if target.revision_number == 1 {
            modified(&mut tx, &current.skill, false).await?;
        }
    }
    let details = json!({ "slug": current.skill.slug, "toRevision": target.revision_number });
    let skill = commit_recorded(
        tx,
        actor,
        company_id,
        Action::CompanySkillReset,
        &id,
        details,
    )
    .await?;
    Ok(skill)
}

/// Deletes the skill and its versions. Agents that chose it keep its key
/// (upstream keeps stale keys visible so they can be removed); runs skip it.
pub async fn delete(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    reference: &str,
) -> Result<Skill> {
    let mut tx = store.begin().await?;
    let current = locked(&mut tx, company_id, reference).await?;
    let id = current.skill.id.clone();
    crate::engine::db::query("DELETE FROM company_skills WHERE id = $1")
        .bind(&id)
        .execute(tx.conn())
        .await?;
    let details = json!({ "slug": current.skill.slug, "name": current.skill.name });
    record(
        &mut tx,
        actor,
        company_id,
        Action::CompanySkillDeleted,
        &id,
        details,
    )
    .await?;
    tx.commit().await?;
    Ok(current)
}

async fn first_version(tx: &mut Tx, skill_id: &str) -> Result<SkillVersion> {
    let row = crate::engine::db::query(&format!(
        "SELECT {VERSION_COLUMNS} FROM company_skill_versions WHERE company_skill_id = $1 \
         ORDER BY revision_number LIMIT 1"
    ))
    .bind(skill_id)
    .fetch_optional(tx.conn())
    .await?;
    row.as_ref()
        .map(map_version)
        .transpose()?
        .ok_or_else(|| Error::not_found("Skill version"))
}

/// SKILL.md names the skill: a new frontmatter name or description follows.
async fn rename_from_markdown(tx: &mut Tx, id: &str, markdown: &str) -> Result<()> {
    let (name, description) = skill::frontmatter(markdown);
    crate::engine::db::query(
        "UPDATE company_skills SET name = COALESCE($2, name), description = COALESCE($3, description) \
         WHERE id = $1",
    )
    .bind(id)
    .bind(name)
    .bind(description)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Marks the skill edited here since it was installed (upstream's
/// `metadata.userModifiedAt`, which holds an update from its source back),
/// or clears the mark.
async fn modified(
    tx: &mut Tx,
    skill: &paperclip_core::skill::CompanySkill,
    edited: bool,
) -> Result<()> {
    let mut metadata = match &skill.metadata {
        Some(Value::Object(m)) => m.clone(),
        _ => serde_json::Map::new(),
    };
    if edited {
        metadata.insert("userModifiedAt".into(), Value::String(now()));
    } else {
        metadata.remove("userModifiedAt");
    }
    crate::engine::db::query("UPDATE company_skills SET metadata = $2 WHERE id = $1")
        .bind(&skill.id)
        .bind(Value::Object(metadata).to_string())
        .execute(tx.conn())
        .await?;
    Ok(())
}

/// Ends an edit: its activity row, the skill as it now reads, the commit.
async fn commit_recorded(
    mut tx: Tx,
    actor: &Actor,
    company_id: &str,
    action: Action,
    id: &str,
    details: Value,
) -> Result<Skill> {
    record(&mut tx, actor, company_id, action, id, details).await?;
    let skill = get_in(&mut tx, company_id, id).await?;
    tx.commit().await?;
    Ok(skill)
}
