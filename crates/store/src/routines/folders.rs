//! Routine folders (upstream's `folders` of kind `routine`): a company's
//! tree of folders, and filing a routine into one. Every change is checked
//! against the tree (the parent of the same kind and company, at most four
//! deep, no folder under itself, a slug unique among its siblings) and
//! written with its activity entry in one transaction. On Postgres a
//! company's folder changes take turns (SQLite's one writer already does),
//! so two moves cannot make a cycle between them.
//!
//! Upstream's `skill` folders are not implemented: a request for one is
//! refused as such rather than answered with an empty tree.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::folder::{
    self as rules, Folder, FolderKind, FolderList, FolderListItem, FolderMove, FolderPatch,
    FolderRow, ItemMove, ItemMoved, NewFolder, MAX_DEPTH,
};
use serde_json::json;

use crate::engine::db::{DbRow, Exec};
use crate::engine::row::RowExt;
use crate::routines::table::record;
use crate::{new_id, now, Error, Result, Store, Tx};

const COLUMNS: &str = "id, company_id, kind, parent_id, name, slug, system_key, color, position, \
     created_at, updated_at";

fn only_routines(kind: FolderKind) -> Result<()> {
    match kind {
        FolderKind::Routine => Ok(()),
        FolderKind::Skill => Err(Error::rule(
            "Skill folders are not implemented on this server: only routine folders are",
        )),
    }
}

fn uuid(field: &str, id: &str) -> Result<()> {
    uuid::Uuid::try_parse(id)
        .map(drop)
        .map_err(|_| Error::invalid(field, format!("{field} must be a UUID")))
}

fn field(name: &str, checked: std::result::Result<String, String>) -> Result<String> {
    checked.map_err(|why| Error::invalid(name, why))
}

fn position(p: i64) -> Result<i64> {
    if p < 0 {
        return Err(Error::invalid("position", "position must be 0 or more"));
    }
    Ok(p)
}

async fn serialise(tx: &mut Tx, company_id: &str) -> Result<()> {
    if tx.conn().backend() == crate::Backend::Postgres {
        crate::engine::db::query(
            "SELECT CAST(pg_advisory_xact_lock(hashtext('folders ' || $1)) AS TEXT)",
        )
        .bind(company_id)
        .fetch_all(tx.conn())
        .await?;
    }
    Ok(())
}

fn map(row: &DbRow) -> Result<Folder> {
    Ok(Folder {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        kind: row.stored("kind")?,
        parent_id: row.opt_text("parent_id")?,
        name: row.text("name")?,
        slug: row.text("slug")?,
        system_key: row.opt_text("system_key")?,
        path: String::new(),
        depth: 0,
        color: row.opt_text("color")?,
        position: row.int("position")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}

async fn all_in(tx: &mut Tx, company_id: &str, kind: FolderKind) -> Result<Vec<Folder>> {
    all(tx.conn(), company_id, kind).await
}

/// Every folder of the kind in the company, paths and depths filled in,
/// in the board's order (position, then name).
async fn all<'e>(exec: impl Exec<'e>, company_id: &str, kind: FolderKind) -> Result<Vec<Folder>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM folders WHERE company_id = $1 AND kind = $2 \
         ORDER BY position, name, id"
    ))
    .bind(company_id)
    .bind(kind.as_str())
    .fetch_all(exec)
    .await?;
    let mut folders = rows.iter().map(map).collect::<Result<Vec<_>>>()?;
    let shape: Vec<FolderRow> = folders
        .iter()
        .map(|f| FolderRow {
            id: f.id.clone(),
            parent_id: f.parent_id.clone(),
            slug: f.slug.clone(),
        })
        .collect();
    let paths = rules::tree(&shape).map_err(Error::rule)?;
    for (f, (path, depth)) in folders.iter_mut().zip(paths) {
        f.path = path;
        f.depth = depth;
    }
    Ok(folders)
}

fn rows_of(folders: &[Folder]) -> Vec<FolderRow> {
    folders
        .iter()
        .map(|f| FolderRow {
            id: f.id.clone(),
            parent_id: f.parent_id.clone(),
            slug: f.slug.clone(),
        })
        .collect()
}

/// The folder, if it is the company's (of any kind).
async fn one_in(tx: &mut Tx, company_id: &str, id: &str) -> Result<Option<Folder>> {
    if uuid::Uuid::try_parse(id).is_err() {
        return Ok(None);
    }
    let row =
        crate::engine::db::query("SELECT kind FROM folders WHERE id = $1 AND company_id = $2")
            .bind(id)
            .bind(company_id)
            .fetch_optional(tx.conn())
            .await?;
    let Some(row) = row else { return Ok(None) };
    let kind: FolderKind = row.stored("kind")?;
    Ok(all_in(tx, company_id, kind)
        .await?
        .into_iter()
        .find(|f| f.id == id))
}

/// 409 when a sibling under `parent` already has the slug.
async fn slug_free(
    tx: &mut Tx,
    company_id: &str,
    kind: FolderKind,
    parent: Option<&str>,
    slug: &str,
    except: Option<&str>,
) -> Result<()> {
    let siblings = all_in(tx, company_id, kind).await?;
    let taken = siblings.iter().any(|f| {
        f.parent_id.as_deref() == parent && f.slug == slug && Some(f.id.as_str()) != except
    });
    if taken {
        return Err(slug_taken());
    }
    Ok(())
}

fn slug_taken() -> Error {
    Error::conflict("Folder slug already exists under this parent", None)
}

/// The parent a folder goes under: one of the company's folders of the same
/// kind (404 otherwise).
async fn parent_in(
    tx: &mut Tx,
    company_id: &str,
    kind: FolderKind,
    parent: Option<&str>,
) -> Result<Option<Folder>> {
    let Some(parent) = parent else {
        return Ok(None);
    };
    uuid("parentId", parent)?;
    match one_in(tx, company_id, parent).await? {
        Some(p) if p.kind == kind => Ok(Some(p)),
        _ => Err(Error::not_found("Parent folder")),
    }
}

fn too_deep() -> Error {
    Error::rule(format!("Folder depth cannot exceed {MAX_DEPTH}"))
}

/// A unique index can still catch two writers on SQLite's savepoints or a
/// hand-made row: the same 409 as the check.
fn conflict_on_unique(err: Error) -> Error {
    if err.is_unique_violation() {
        slug_taken()
    } else {
        err
    }
}

pub async fn list(store: &Store, company_id: &str, kind: FolderKind) -> Result<FolderList> {
    only_routines(kind)?;
    let folders = all(store.pool(), company_id, kind).await?;
    let counts: Vec<(Option<String>, i64)> = crate::engine::db::query_as(
        "SELECT CAST(folder_id AS TEXT), COUNT(*) FROM routines WHERE company_id = $1 \
         GROUP BY folder_id",
    )
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    let count_of = |id: Option<&str>| {
        counts
            .iter()
            .find(|(f, _)| f.as_deref() == id)
            .map_or(0, |(_, n)| *n)
    };
    Ok(FolderList {
        kind,
        all_count: counts.iter().map(|(_, n)| n).sum(),
        unfiled_count: count_of(None),
        folders: folders
            .into_iter()
            .map(|folder| FolderListItem {
                item_count: count_of(Some(&folder.id)),
                folder,
            })
            .collect(),
    })
}

pub async fn create(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    input: &NewFolder,
) -> Result<Folder> {
    only_routines(input.kind)?;
    let name = field("name", rules::check_name(&input.name))?;
    let slug = match &input.slug {
        Some(slug) => {
            rules::check_slug(slug).map_err(|why| Error::invalid("slug", why))?;
            slug.clone()
        }
        None => rules::slug_of(&name),
    };
    let color =
        rules::check_color(input.color.as_deref()).map_err(|w| Error::invalid("color", w))?;
    let given_position = input.position.map(position).transpose()?;
    let mut tx = store.begin().await?;
    crate::org::companies::exists_in(&mut tx, company_id).await?;
    serialise(&mut tx, company_id).await?;
    let parent = parent_in(&mut tx, company_id, input.kind, input.parent_id.as_deref()).await?;
    if parent.as_ref().map_or(0, |p| p.depth) + 1 > MAX_DEPTH {
        return Err(too_deep());
    }
    let parent_id = parent.as_ref().map(|p| p.id.clone());
    slug_free(
        &mut tx,
        company_id,
        input.kind,
        parent_id.as_deref(),
        &slug,
        None,
    )
    .await?;
    let siblings = all_in(&mut tx, company_id, input.kind).await?;
    let position = given_position.unwrap_or_else(|| {
        siblings
            .iter()
            .filter(|f| f.parent_id == parent_id)
            .map(|f| f.position + 1)
            .max()
            .unwrap_or(0)
    });
    let id = new_id();
    let ts = now();
    crate::engine::db::query(&format!(
        "INSERT INTO folders ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8, $9, $9)"
    ))
    .bind(&id)
    .bind(company_id)
    .bind(input.kind.as_str())
    .bind(parent_id.as_deref())
    .bind(&name)
    .bind(&slug)
    .bind(color.as_deref())
    .bind(position)
    .bind(&ts)
    .execute(tx.conn())
    .await
    .map_err(|e| conflict_on_unique(e.into()))?;
    let folder = one_in(&mut tx, company_id, &id)
        .await?
        .ok_or_else(|| Error::not_found("Folder"))?;
    record(
        &mut tx,
        actor,
        company_id,
        Action::FolderCreated,
        EntityType::Folder,
        &id,
        json!({ "kind": folder.kind, "name": folder.name, "path": folder.path,
            "parentId": folder.parent_id, "position": folder.position }),
    )
    .await?;
    tx.commit().await?;
    Ok(folder)
}

/// The folder to change: the company's, of a kind implemented here.
async fn existing(tx: &mut Tx, company_id: &str, id: &str) -> Result<Folder> {
    let folder = one_in(tx, company_id, id)
        .await?
        .ok_or_else(|| Error::not_found("Folder"))?;
    only_routines(folder.kind)?;
    Ok(folder)
}

/// Renames (a new name gives a new slug unless one is given), recolours or
/// repositions a folder among its siblings.
pub async fn update(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    id: &str,
    patch: &FolderPatch,
) -> Result<Folder> {
    if patch.is_empty() {
        return Err(Error::Invalid {
            message: "At least one folder field is required".into(),
            path: Vec::new(),
        });
    }
    let name = patch
        .name
        .as_deref()
        .map(|n| field("name", rules::check_name(n)))
        .transpose()?;
    if let Some(slug) = &patch.slug {
        rules::check_slug(slug).map_err(|why| Error::invalid("slug", why))?;
    }
    let color = match &patch.color {
        Some(c) => {
            Some(rules::check_color(c.as_deref()).map_err(|why| Error::invalid("color", why))?)
        }
        None => None,
    };
    let new_position = patch.position.map(position).transpose()?;
    let mut tx = store.begin().await?;
    serialise(&mut tx, company_id).await?;
    let before = existing(&mut tx, company_id, id).await?;
    let name = name.unwrap_or_else(|| before.name.clone());
    let slug = match (&patch.slug, &patch.name) {
        (Some(slug), _) => slug.clone(),
        (None, Some(_)) => rules::slug_of(&name),
        (None, None) => before.slug.clone(),
    };
    slug_free(
        &mut tx,
        company_id,
        before.kind,
        before.parent_id.as_deref(),
        &slug,
        Some(id),
    )
    .await?;
    crate::engine::db::query(
        "UPDATE folders SET name = $2, slug = $3, color = $4, position = $5, updated_at = $6 \
         WHERE id = $1",
    )
    .bind(id)
    .bind(&name)
    .bind(&slug)
    .bind(color.unwrap_or(before.color.clone()).as_deref())
    .bind(new_position.unwrap_or(before.position))
    .bind(now())
    .execute(tx.conn())
    .await
    .map_err(|e| conflict_on_unique(e.into()))?;
    let folder = existing(&mut tx, company_id, id).await?;
    record(
        &mut tx,
        actor,
        company_id,
        Action::FolderUpdated,
        EntityType::Folder,
        id,
        json!({ "kind": folder.kind, "name": folder.name, "path": folder.path,
            "position": folder.position }),
    )
    .await?;
    tx.commit().await?;
    Ok(folder)
}

/// Moves a folder (and what is under it) under another parent, or to the
/// root, at a position.
pub async fn move_folder(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    id: &str,
    input: &FolderMove,
) -> Result<Folder> {
    let at = position(input.position)?;
    let mut tx = store.begin().await?;
    serialise(&mut tx, company_id).await?;
    let before = existing(&mut tx, company_id, id).await?;
    let parent_id = match &input.parent_id {
        None => before.parent_id.clone(),
        Some(p) => p.clone(),
    };
    if parent_id.as_deref() == Some(id) {
        return Err(Error::rule("A folder cannot be its own parent"));
    }
    let all = all_in(&mut tx, company_id, before.kind).await?;
    let under = rules::subtree(&rows_of(&all), id);
    if parent_id.as_ref().is_some_and(|p| under.contains(p)) {
        return Err(Error::rule("A folder cannot be moved into its own subtree"));
    }
    let parent = parent_in(&mut tx, company_id, before.kind, parent_id.as_deref()).await?;
    let deepest = all
        .iter()
        .filter(|f| under.contains(&f.id))
        .map(|f| f.depth - before.depth + 1)
        .max()
        .unwrap_or(1);
    if parent.as_ref().map_or(0, |p| p.depth) + deepest > MAX_DEPTH {
        return Err(too_deep());
    }
    slug_free(
        &mut tx,
        company_id,
        before.kind,
        parent_id.as_deref(),
        &before.slug,
        Some(id),
    )
    .await?;
    crate::engine::db::query(
        "UPDATE folders SET parent_id = $2, position = $3, updated_at = $4 WHERE id = $1",
    )
    .bind(id)
    .bind(parent_id.as_deref())
    .bind(at)
    .bind(now())
    .execute(tx.conn())
    .await
    .map_err(|e| conflict_on_unique(e.into()))?;
    let folder = existing(&mut tx, company_id, id).await?;
    record(
        &mut tx,
        actor,
        company_id,
        Action::FolderMoved,
        EntityType::Folder,
        id,
        json!({ "kind": folder.kind, "parentId": folder.parent_id, "path": folder.path,
            "position": folder.position }),
    )
    .await?;
    tx.commit().await?;
    Ok(folder)
}

/// Deletes an empty-of-folders folder; the routines filed in it become
/// unfiled. Returns it as it was.
pub async fn delete(store: &Store, actor: &Actor, company_id: &str, id: &str) -> Result<Folder> {
    let mut tx = store.begin().await?;
    serialise(&mut tx, company_id).await?;
    let folder = existing(&mut tx, company_id, id).await?;
    let child = crate::engine::db::query("SELECT 1 FROM folders WHERE parent_id = $1 LIMIT 1")
        .bind(id)
        .fetch_optional(tx.conn())
        .await?;
    if child.is_some() {
        return Err(Error::conflict("Move or delete nested folders first", None));
    }
    crate::engine::db::query("UPDATE routines SET folder_id = NULL WHERE folder_id = $1")
        .bind(id)
        .execute(tx.conn())
        .await?;
    crate::engine::db::query("DELETE FROM folders WHERE id = $1")
        .bind(id)
        .execute(tx.conn())
        .await?;
    record(
        &mut tx,
        actor,
        company_id,
        Action::FolderDeleted,
        EntityType::Folder,
        id,
        json!({ "kind": folder.kind, "name": folder.name }),
    )
    .await?;
    tx.commit().await?;
    Ok(folder)
}

/// Files a routine into a routine folder, or (none) back among the unfiled.
pub async fn move_item(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    input: &ItemMove,
) -> Result<ItemMoved> {
    only_routines(input.kind)?;
    uuid("itemId", &input.item_id)?;
    if let Some(folder) = &input.folder_id {
        uuid("folderId", folder)?;
    }
    let mut tx = store.begin().await?;
    serialise(&mut tx, company_id).await?;
    if let Some(folder) = &input.folder_id {
        let target = one_in(&mut tx, company_id, folder)
            .await?
            .ok_or_else(|| Error::not_found("Folder"))?;
        if target.kind != input.kind {
            return Err(Error::rule("Folder kind must match item kind"));
        }
    }
    let moved = crate::engine::db::query(
        "UPDATE routines SET folder_id = $3, updated_at = $4 WHERE id = $1 AND company_id = $2 \
         RETURNING id",
    )
    .bind(&input.item_id)
    .bind(company_id)
    .bind(input.folder_id.as_deref())
    .bind(now())
    .fetch_optional(tx.conn())
    .await?;
    if moved.is_none() {
        return Err(Error::not_found("Routine"));
    }
    record(
        &mut tx,
        actor,
        company_id,
        Action::FolderItemMoved,
        EntityType::Routine,
        &input.item_id,
        json!({ "kind": input.kind, "folderId": input.folder_id }),
    )
    .await?;
    tx.commit().await?;
    Ok(ItemMoved {
        kind: input.kind,
        item_id: input.item_id.clone(),
        folder_id: input.folder_id.clone(),
    })
}

/// The company's routine folders, for the board.
pub async fn of_company(store: &Store, company_id: &str) -> Result<Vec<Folder>> {
    all(store.pool(), company_id, FolderKind::Routine).await
}
