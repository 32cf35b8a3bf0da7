//! The company skills library (issue 40): a skill row and its immutable
//! versions, each with every file's content. The row's markdown and file
//! list are its current version's; editing a file, deleting one or
//! importing the skill again writes a new version and moves the row to it.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::{Actor, ActorKind};
use paperclip_core::skill::{
    self, is_uuid, CompanySkill, InventoryEntry, SkillVersion, SourceType, VersionFile,
};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::audit::activity::{self, Entry};
use crate::engine::db::{DbRow, Exec};
use crate::engine::row::RowExt;
use crate::{new_id, now, Error, Result, Store, Tx};

const COLUMNS: &str = "s.id, s.company_id, s.key, s.slug, s.name, s.description, s.source_type, \
     s.source_locator, s.source_ref, s.categories, s.metadata, s.current_version_id, s.created_at, \
     s.updated_at, v.files";
const FROM: &str =
    "FROM company_skills s LEFT JOIN company_skill_versions v ON v.id = s.current_version_id";
pub(crate) const VERSION_COLUMNS: &str =
    "id, company_id, company_skill_id, revision_number, label, files, \
     author_agent_id, author_user_id, created_at";

/// A skill and its current files.
#[derive(Debug, Clone)]
pub struct Skill {
    pub skill: CompanySkill,
    pub files: Vec<VersionFile>,
}

/// A skill to add, or to bring up to date when its key is already there.
#[derive(Debug, Clone)]
pub struct NewSkill {
    pub key: String,
    pub slug: String,
    pub name: String,
    pub description: Option<String>,
    pub source_type: SourceType,
    pub source_locator: Option<String>,
    pub source_ref: Option<String>,
    pub metadata: Option<Value>,
    pub files: Vec<VersionFile>,
}

/// The first 10 hex digits of SHA-256 (upstream's short hash of a key or path).
pub fn short_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().take(5).map(|b| format!("{b:02x}")).collect()
}

/// Adds each skill, or gives an existing one of the same key a new version
/// when its files changed; one transaction with its activity (an import, or
/// each skill's installed update). A slug another key holds is a 409 naming it.
pub async fn upsert_many(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    skills: Vec<NewSkill>,
    source: &str,
    installed_update: bool,
) -> Result<Vec<Skill>> {
    let mut tx = store.begin().await?;
    let out = upsert_many_in(&mut tx, actor, company_id, skills, source, installed_update).await?;
    tx.commit().await?;
    Ok(out)
}

/// [`upsert_many`] inside the caller's transaction (a company import writes
/// its skills with everything else, or nothing).
pub(crate) async fn upsert_many_in(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    skills: Vec<NewSkill>,
    source: &str,
    installed_update: bool,
) -> Result<Vec<Skill>> {
    crate::org::companies::exists_in(tx, company_id).await?;
    let mut ids = Vec::with_capacity(skills.len());
    for new in &skills {
        ids.push(upsert_one(tx, actor, company_id, new).await?);
    }
    let slugs: Vec<&str> = skills.iter().map(|s| s.slug.as_str()).collect();
    if installed_update {
        for (new, id) in skills.iter().zip(&ids) {
            let details =
                json!({ "slug": new.slug, "newOriginHash": new.source_ref, "force": false });
            record(
                tx,
                actor,
                company_id,
                Action::CompanySkillUpdateInstalled,
                id,
                details,
            )
            .await?;
        }
        let mut out = Vec::with_capacity(ids.len());
        for id in &ids {
            out.push(get_in(tx, company_id, id).await?);
        }
        return Ok(out);
    }
    let entry = Entry {
        company_id,
        action: Action::CompanySkillsImported,
        entity_type: EntityType::Company,
        entity_id: company_id,
        details: json!({ "source": source, "importedCount": ids.len(), "importedSlugs": slugs,
            "warningCount": 0 }),
    };
    activity::record(tx, actor, entry).await?;
    let mut out = Vec::with_capacity(ids.len());
    for id in &ids {
        out.push(get_in(tx, company_id, id).await?);
    }
    Ok(out)
}

/// Makes one skill (the board's or an agent's `POST /skills`): a clash of
/// key or slug is a 409.
pub async fn create(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    new: NewSkill,
) -> Result<Skill> {
    let mut tx = store.begin().await?;
    crate::org::companies::exists_in(&mut tx, company_id).await?;
    if find_in(&mut tx, company_id, &new.key).await?.is_some() {
        return Err(clash(&new.slug));
    }
    let id = upsert_one(&mut tx, actor, company_id, &new).await?;
    let details = json!({ "slug": new.slug, "name": new.name });
    record(
        &mut tx,
        actor,
        company_id,
        Action::CompanySkillCreated,
        &id,
        details,
    )
    .await?;
    let skill = get_in(&mut tx, company_id, &id).await?;
    tx.commit().await?;
    Ok(skill)
}

async fn upsert_one(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    new: &NewSkill,
) -> Result<String> {
    let ts = now();
    let slug_holder = crate::engine::db::query(
        "SELECT id, key FROM company_skills WHERE company_id = $1 AND slug = $2",
    )
    .bind(company_id)
    .bind(&new.slug)
    .fetch_optional(tx.conn())
    .await?;
    if let Some(row) = &slug_holder {
        if row.text("key")? != new.key {
            return Err(clash(&new.slug));
        }
    }
    if let Some(found) = find_in(tx, company_id, &new.key).await? {
        let existing = locked(tx, company_id, &found.skill.id).await?;
        let id = existing.skill.id.clone();
        if existing.files != new.files {
            add_version(tx, actor, company_id, &id, &new.files, None).await?;
        }
        crate::engine::db::query(
            "UPDATE company_skills SET name = $2, description = $3, source_ref = $4, updated_at = $5, \
             metadata = $6 WHERE id = $1",
        )
        .bind(&id)
        .bind(&new.name)
        .bind(new.description.as_deref())
        .bind(new.source_ref.as_deref())
        .bind(&ts)
        // The source's metadata again: edits made here are gone with it.
        .bind(new.metadata.as_ref().map(Value::to_string))
        .execute(tx.conn())
        .await?;
        return Ok(id);
    }
    let id = new_id();
    crate::engine::db::query(
        "INSERT INTO company_skills (id, company_id, key, slug, name, description, source_type, \
         source_locator, source_ref, categories, metadata, current_version_id, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, NULL, $12, $12)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(&new.key)
    .bind(&new.slug)
    .bind(&new.name)
    .bind(new.description.as_deref())
    .bind(new.source_type.as_str())
    .bind(new.source_locator.as_deref())
    .bind(new.source_ref.as_deref())
    .bind("[]")
    .bind(new.metadata.as_ref().map(Value::to_string))
    .bind(&ts)
    .execute(tx.conn())
    .await
    .map_err(|e| taken(e, &new.slug))?;
    add_version(tx, actor, company_id, &id, &new.files, None).await?;
    Ok(id)
}

/// Writes the next revision of a skill with `files` and makes it current.
pub(crate) async fn add_version(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    skill_id: &str,
    files: &[VersionFile],
    label: Option<&str>,
) -> Result<SkillVersion> {
    // Callers hold the skill row's lock (a new row is the inserter's).
    let (next,): (i64,) = crate::engine::db::query_as(
        "SELECT COALESCE(MAX(revision_number), 0) + 1 FROM company_skill_versions WHERE company_skill_id = $1",
    )
    .bind(skill_id)
    .fetch_one(tx.conn())
    .await?;
    let id = new_id();
    let (agent_id, user_id) = match actor.kind {
        ActorKind::Agent => (Some(actor.id.as_str()), None),
        ActorKind::User => (None, Some(actor.id.as_str())),
        ActorKind::System => (None, None),
    };
    let ts = now();
    let files_json = serde_json::to_string(files).map_err(|e| Error::rule(e.to_string()))?;
    crate::engine::db::query(&format!(
        "INSERT INTO company_skill_versions ({VERSION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
    ))
    .bind(&id)
    .bind(company_id)
    .bind(skill_id)
    .bind(next)
    .bind(label)
    .bind(&files_json)
    .bind(agent_id)
    .bind(user_id)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    crate::engine::db::query(
        "UPDATE company_skills SET current_version_id = $2, updated_at = $3 WHERE id = $1",
    )
    .bind(skill_id)
    .bind(&id)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    version_in(tx, company_id, skill_id, &id).await
}

/// The company's skills, by name.
pub async fn list(store: &Store, company_id: &str) -> Result<Vec<Skill>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} {FROM} WHERE s.company_id = $1 ORDER BY s.name, s.id"
    ))
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

/// A skill of the company by id, key or slug; else 404.
pub async fn get(store: &Store, company_id: &str, reference: &str) -> Result<Skill> {
    find(store.pool(), company_id, reference)
        .await?
        .ok_or_else(|| Error::not_found("Skill"))
}

pub(crate) async fn get_in(tx: &mut Tx, company_id: &str, reference: &str) -> Result<Skill> {
    find_in(tx, company_id, reference)
        .await?
        .ok_or_else(|| Error::not_found("Skill"))
}

pub(crate) async fn find_in(
    tx: &mut Tx,
    company_id: &str,
    reference: &str,
) -> Result<Option<Skill>> {
    find(tx.conn(), company_id, reference).await
}

async fn find<'e>(exec: impl Exec<'e>, company_id: &str, reference: &str) -> Result<Option<Skill>> {
    let row = if is_uuid(reference) {
        crate::engine::db::query(&format!(
            "SELECT {COLUMNS} {FROM} WHERE s.company_id = $1 AND s.id = $2"
        ))
        .bind(company_id)
        .bind(reference)
        .fetch_optional(exec)
        .await?
    } else {
        crate::engine::db::query(&format!(
            "SELECT {COLUMNS} {FROM} WHERE s.company_id = $1 AND (s.key = $2 OR s.slug = $2) \
             ORDER BY CASE WHEN s.key = $2 THEN 0 ELSE 1 END"
        ))
        .bind(company_id)
        .bind(reference)
        .fetch_optional(exec)
        .await?
    };
    row.as_ref().map(map).transpose()
}

/// The skill's versions, newest first.
pub async fn versions(
    store: &Store,
    company_id: &str,
    reference: &str,
) -> Result<Vec<SkillVersion>> {
    let skill = get(store, company_id, reference).await?;
    let rows = crate::engine::db::query(&format!(
        "SELECT {VERSION_COLUMNS} FROM company_skill_versions WHERE company_skill_id = $1 \
         ORDER BY revision_number DESC"
    ))
    .bind(&skill.skill.id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map_version).collect()
}

pub async fn version(
    store: &Store,
    company_id: &str,
    reference: &str,
    version_id: &str,
) -> Result<SkillVersion> {
    let skill = get(store, company_id, reference).await?;
    version_by(store.pool(), company_id, &skill.skill.id, version_id).await
}

pub(crate) async fn version_in(
    tx: &mut Tx,
    company_id: &str,
    skill_id: &str,
    version_id: &str,
) -> Result<SkillVersion> {
    version_by(tx.conn(), company_id, skill_id, version_id).await
}

async fn version_by<'e>(
    exec: impl Exec<'e>,
    company_id: &str,
    skill_id: &str,
    version_id: &str,
) -> Result<SkillVersion> {
    if !is_uuid(version_id) {
        return Err(Error::not_found("Skill version"));
    }
    let row = crate::engine::db::query(&format!(
        "SELECT {VERSION_COLUMNS} FROM company_skill_versions WHERE id = $1 AND company_skill_id = $2 \
         AND company_id = $3"
    ))
    .bind(version_id)
    .bind(skill_id)
    .bind(company_id)
    .fetch_optional(exec)
    .await?;
    row.as_ref()
        .map(map_version)
        .transpose()?
        .ok_or_else(|| Error::not_found("Skill version"))
}

pub(crate) async fn record(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    action: Action,
    id: &str,
    details: Value,
) -> Result<()> {
    let entry = Entry {
        company_id,
        action,
        entity_type: EntityType::CompanySkill,
        entity_id: id,
        details,
    };
    activity::record(tx, actor, entry).await
}

/// The skill, read under its row's lock: an edit builds on the files no
/// other edit is changing.
pub(crate) async fn locked(tx: &mut Tx, company_id: &str, reference: &str) -> Result<Skill> {
    let id = get_in(tx, company_id, reference).await?.skill.id;
    lock(tx, &id).await?;
    get_in(tx, company_id, &id).await
}

/// On Postgres the row's lock (SQLite's one writer serialises writers).
async fn lock(tx: &mut Tx, id: &str) -> Result<()> {
    if tx.conn().backend() == crate::Backend::Postgres {
        crate::engine::db::query("SELECT id FROM company_skills WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_all(tx.conn())
            .await?;
    }
    Ok(())
}

fn clash(slug: &str) -> Error {
    Error::conflict(
        format!("A skill named {slug:?} already exists in this company"),
        Some(json!({ "slug": slug })),
    )
}

fn taken(err: sqlx::Error, slug: &str) -> Error {
    match Error::from(err) {
        e if e.is_unique_violation() => clash(slug),
        e => e,
    }
}

fn files_of(value: Option<Value>) -> Result<Vec<VersionFile>> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(v) => {
            serde_json::from_value(v).map_err(|e| Error::rule(format!("stored skill files: {e}")))
        }
    }
}

fn map(row: &DbRow) -> Result<Skill> {
    let files = files_of(row.opt_json("files")?)?;
    let source = row.text("source_type")?;
    let source_type = SourceType::parse(&source)
        .ok_or_else(|| Error::rule(format!("unknown skill source {source:?} in the database")))?;
    let inventory: Vec<InventoryEntry> = files
        .iter()
        .map(|f| InventoryEntry {
            path: f.path.clone(),
            kind: f.kind.clone(),
        })
        .collect();
    let markdown = files
        .iter()
        .find(|f| f.path == "SKILL.md")
        .map(|f| f.content.clone())
        .unwrap_or_default();
    let categories = row
        .json("categories")?
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let skill = CompanySkill {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        key: row.text("key")?,
        slug: row.text("slug")?,
        name: row.text("name")?,
        description: row.opt_text("description")?,
        markdown,
        source_type,
        source_locator: row.opt_text("source_locator")?,
        source_ref: row.opt_text("source_ref")?,
        trust_level: skill::trust_level(inventory.iter().map(|e| e.kind.as_str())).into(),
        compatibility: "compatible".into(),
        file_inventory: inventory,
        icon_url: None,
        color: None,
        tagline: None,
        author_name: None,
        homepage_url: None,
        categories,
        sharing_scope: "company".into(),
        public_share_token: None,
        forked_from_skill_id: None,
        forked_from_company_id: None,
        star_count: 0,
        install_count: 0,
        fork_count: 0,
        current_version_id: row.opt_text("current_version_id")?,
        metadata: row.opt_json("metadata")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    };
    Ok(Skill { skill, files })
}

pub(crate) fn map_version(row: &DbRow) -> Result<SkillVersion> {
    Ok(SkillVersion {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        company_skill_id: row.text("company_skill_id")?,
        revision_number: row.int("revision_number")?,
        label: row.opt_text("label")?,
        release_id: None,
        release_name: None,
        released_at: None,
        file_inventory: files_of(row.opt_json("files")?)?,
        author_agent_id: row.opt_text("author_agent_id")?,
        author_user_id: row.opt_text("author_user_id")?,
        created_at: row.text("created_at")?,
    })
}
