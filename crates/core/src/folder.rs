//! Folders (upstream's `folders`): a company's routines grouped in a tree of
//! named folders, at most [`MAX_DEPTH`] deep, each with a slug unique among
//! its siblings. The records, request bodies and the pure rules (slugs,
//! paths, depth, cycles); the store keeps the rows.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::input::double_option;

/// How deep a folder may sit: a root folder is depth 1.
pub const MAX_DEPTH: i64 = 4;
pub const NAME_MAX: usize = 120;
pub const SLUG_MAX: usize = 120;
pub const COLOR_MAX: usize = 80;

/// What a folder holds. Upstream also has `skill` folders (for company
/// skills, with system folders of their own); only routine folders are
/// implemented here, and a `skill` request is refused as such.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FolderKind {
    Routine,
    Skill,
}

impl FolderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FolderKind::Routine => "routine",
            FolderKind::Skill => "skill",
        }
    }
}

impl crate::stored::Stored for FolderKind {
    const WHAT: &'static str = "folder kind";
    const ALL: &'static [FolderKind] = &[FolderKind::Routine, FolderKind::Skill];
    fn as_str(self) -> &'static str {
        FolderKind::as_str(self)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Folder {
    pub id: String,
    pub company_id: String,
    pub kind: FolderKind,
    pub parent_id: Option<String>,
    pub name: String,
    pub slug: String,
    /// Upstream's system-managed folders (its skill containers); none here.
    pub system_key: Option<String>,
    /// The slugs from the root down, joined by `/`.
    pub path: String,
    pub depth: i64,
    pub color: Option<String>,
    pub position: i64,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FolderListItem {
    #[serde(flatten)]
    pub folder: Folder,
    /// The routines filed directly in it.
    pub item_count: i64,
}

/// `GET /api/companies/{id}/folders?kind=routine`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FolderList {
    pub kind: FolderKind,
    pub folders: Vec<FolderListItem>,
    pub all_count: i64,
    pub unfiled_count: i64,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewFolder {
    pub kind: FolderKind,
    pub parent_id: Option<String>,
    pub name: String,
    pub slug: Option<String>,
    pub color: Option<String>,
    pub position: Option<i64>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FolderPatch {
    pub name: Option<String>,
    pub slug: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub color: Option<Option<String>>,
    pub position: Option<i64>,
}

impl FolderPatch {
    pub fn is_empty(&self) -> bool {
        self.name.is_none()
            && self.slug.is_none()
            && self.color.is_none()
            && self.position.is_none()
    }
}

/// `POST /api/companies/{id}/folders/{folderId}/move`: a new parent (null:
/// the root; absent: the same parent) and position.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FolderMove {
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub parent_id: Option<Option<String>>,
    pub position: i64,
}

/// `POST /api/companies/{id}/folders/items/move`: files an item into a
/// folder of its kind, or (null) back among the unfiled.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemMove {
    pub kind: FolderKind,
    pub item_id: String,
    pub folder_id: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ItemMoved {
    pub kind: FolderKind,
    pub item_id: String,
    pub folder_id: Option<String>,
}

/// A slug from a name: lowercase ASCII letters and digits, runs of anything
/// else one hyphen, none at the ends; `folder` when nothing is left.
pub fn slug_of(name: &str) -> String {
    let mut out = String::new();
    let mut gap = false;
    for c in name.chars().flat_map(fold_accent) {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if gap && !out.is_empty() {
                out.push('-');
            }
            gap = false;
            out.push(c);
        } else {
            gap = true;
        }
    }
    out.truncate(SLUG_MAX);
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() {
        "folder".into()
    } else {
        out
    }
}

/// The common Latin letters with a mark, as their base letter (upstream
/// decomposes and drops the marks); any other character stays as it is
/// and so becomes a separator.
fn fold_accent(c: char) -> Vec<char> {
    const FROM: &str = "àáâãäåèéêëìíîïòóôõöùúûüýÿñçÀÁÂÃÄÅÈÉÊËÌÍÎÏÒÓÔÕÖÙÚÛÜÝÑÇ";
    const TO: &str = "aaaaaaeeeeiiiiooooouuuuyyncAAAAAAEEEEIIIIOOOOOUUUUYNC";
    match FROM.chars().position(|f| f == c) {
        Some(i) => TO.chars().nth(i).into_iter().collect(),
        None => vec![c],
    }
}

/// A slug as given: 1 to 120 lowercase letters and digits in words joined
/// by single hyphens.
pub fn check_slug(slug: &str) -> Result<(), String> {
    let slug_ok = !slug.is_empty()
        && slug.len() <= SLUG_MAX
        && slug.split('-').all(|w| {
            !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        });
    if slug_ok {
        Ok(())
    } else {
        Err("Folder slug must contain only lowercase letters, numbers, and single hyphens".into())
    }
}

/// A folder name trimmed, 1 to 120 characters.
pub fn check_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > NAME_MAX {
        return Err(format!("Folder name must be 1 to {NAME_MAX} characters"));
    }
    Ok(name.to_string())
}

/// A color trimmed (empty: none), at most 80 characters.
pub fn check_color(color: Option<&str>) -> Result<Option<String>, String> {
    let Some(color) = color.map(str::trim).filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    if color.chars().count() > COLOR_MAX {
        return Err(format!(
            "Folder color must be at most {COLOR_MAX} characters"
        ));
    }
    Ok(Some(color.to_string()))
}

/// The stored part of a folder: what [`tree`] builds paths and depths from.
#[derive(Debug, Clone)]
pub struct FolderRow {
    pub id: String,
    pub parent_id: Option<String>,
    pub slug: String,
}

/// Each folder's path and depth from its ancestors' slugs, in the rows'
/// order. Fails on a parent that is not among the rows or on a cycle (a
/// tree the routes never make, but a row edited by hand could).
pub fn tree(rows: &[FolderRow]) -> Result<Vec<(String, i64)>, String> {
    use std::collections::HashMap;
    let by_id: HashMap<&str, &FolderRow> = rows.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut slugs = vec![row.slug.as_str()];
        let mut at = row;
        while let Some(parent) = &at.parent_id {
            let Some(p) = by_id.get(parent.as_str()) else {
                return Err("Folder hierarchy contains an invalid parent".into());
            };
            if slugs.len() > rows.len() {
                return Err("Folder hierarchy contains a cycle".into());
            }
            slugs.push(p.slug.as_str());
            at = p;
        }
        slugs.reverse();
        out.push((slugs.join("/"), slugs.len() as i64));
    }
    Ok(out)
}

/// The folder and everything under it.
pub fn subtree(rows: &[FolderRow], root: &str) -> Vec<String> {
    let mut out = vec![root.to_string()];
    let mut i = 0;
    while i < out.len() {
        let at = out[i].clone();
        for r in rows {
            if r.parent_id.as_deref() == Some(at.as_str()) && !out.contains(&r.id) {
                out.push(r.id.clone());
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, parent: Option<&str>, slug: &str) -> FolderRow {
        FolderRow {
            id: id.into(),
            parent_id: parent.map(str::to_string),
            slug: slug.into(),
        }
    }

    #[test]
    fn slugs_come_from_names_and_are_checked() {
        assert_eq!(slug_of("Weekly Reports"), "weekly-reports");
        assert_eq!(slug_of("  Café -- Ops!! "), "cafe-ops");
        assert_eq!(slug_of("???"), "folder");
        assert!(check_slug("weekly-reports").is_ok());
        for bad in ["", "Weekly", "a--b", "-a", "a-", "a b", "é"] {
            assert!(check_slug(bad).is_err(), "{bad:?}");
        }
        assert!(check_slug(&"a".repeat(121)).is_err());
    }

    #[test]
    fn names_and_colors_are_trimmed_and_bounded() {
        assert_eq!(check_name("  Ops ").unwrap(), "Ops");
        assert!(check_name("   ").is_err());
        assert!(check_name(&"x".repeat(121)).is_err());
        assert_eq!(check_color(Some("  ")).unwrap(), None);
        assert_eq!(
            check_color(Some(" #fff ")).unwrap().as_deref(),
            Some("#fff")
        );
        assert!(check_color(Some(&"c".repeat(81))).is_err());
    }

    #[test]
    fn paths_and_depths_follow_the_parents() {
        let rows = [
            row("c", Some("b"), "leaf"),
            row("a", None, "top"),
            row("b", Some("a"), "mid"),
        ];
        let t = tree(&rows).unwrap();
        assert_eq!(t[0], ("top/mid/leaf".to_string(), 3));
        assert_eq!(t[1], ("top".to_string(), 1));
        assert_eq!(t[2], ("top/mid".to_string(), 2));
        let mut under = subtree(&rows, "a");
        under.sort();
        assert_eq!(under, ["a", "b", "c"]);
        assert_eq!(subtree(&rows, "c"), ["c"]);
    }

    #[test]
    fn a_cycle_or_a_missing_parent_is_an_error() {
        let cycle = [row("a", Some("b"), "a"), row("b", Some("a"), "b")];
        assert!(tree(&cycle).unwrap_err().contains("cycle"));
        let orphan = [row("a", Some("gone"), "a")];
        assert!(tree(&orphan).unwrap_err().contains("invalid parent"));
    }
}
