//! An agent's managed instructions bundle on disk: `AGENTS.md` and the files
//! beside it under `<data dir>/companies/<company>/agents/<agent>/instructions`,
//! upstream's layout. On disk rather than in the database because every
//! adapter takes its instructions as a file (`instructionsFilePath`, handed
//! to the CLI as `--append-system-prompt-file` and the like): the entry
//! file's path in the agent's config is all a run needs, and an edit shows
//! in the next run with nothing copied at run start.

use std::path::{Component, Path, PathBuf};

use serde::Serialize;
use utoipa::ToSchema;

pub const ENTRY_FILE: &str = "AGENTS.md";
pub const FILE_KEY: &str = "instructionsFilePath";
/// Bounds a bundle: a file's size and how many files a listing reads.
pub const MAX_FILE_BYTES: usize = 256 * 1024;
const MAX_FILES: usize = 200;
const IGNORED: &[&str] = &[
    ".DS_Store",
    "Thumbs.db",
    "Desktop.ini",
    ".git",
    "node_modules",
];

/// Why a path is refused: it leaves the bundle's folder or names nothing.
pub const OUTSIDE_ROOT: &str = "Instructions file path must stay within the bundle root";

/// A relative path inside a bundle, `/`-separated with `.` steps removed;
/// `None` when it is empty, absolute after trimming leading slashes only
/// (as upstream: `/x.md` is `x.md`), or climbs out with `..`.
pub fn normalize(candidate: &str) -> Option<String> {
    let unified = candidate.replace('\\', "/");
    let trimmed = unified.trim_start_matches('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in Path::new(trimmed).components() {
        match part {
            Component::Normal(p) => parts.push(p.to_str()?),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    if parts.is_empty() || parts.iter().any(|p| p.chars().any(char::is_control)) {
        return None;
    }
    Some(parts.join("/"))
}

pub fn language(path: &str) -> &'static str {
    let lower = path.to_ascii_lowercase();
    let ext = lower.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "md" => "markdown",
        "json" => "json",
        "yaml" | "yml" => "yaml",
        "ts" | "tsx" => "typescript",
        "js" | "jsx" | "mjs" | "cjs" => "javascript",
        "sh" => "bash",
        "py" => "python",
        "toml" => "toml",
        _ => "text",
    }
}

/// Upstream's file summary (and, read one at a time, its content).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileSummary {
    pub path: String,
    pub size: u64,
    pub language: &'static str,
    pub markdown: bool,
    pub is_entry_file: bool,
    pub editable: bool,
    pub deprecated: bool,
    #[serde(rename = "virtual")]
    pub is_virtual: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

impl FileSummary {
    pub fn new(path: &str, size: u64, entry: &str, content: Option<String>) -> FileSummary {
        FileSummary {
            path: path.to_string(),
            size,
            language: language(path),
            markdown: path.to_ascii_lowercase().ends_with(".md"),
            is_entry_file: path == entry,
            editable: true,
            deprecated: false,
            is_virtual: false,
            content,
        }
    }
}

pub fn managed_root(data_dir: &str, company_id: &str, agent_id: &str) -> PathBuf {
    Path::new(data_dir)
        .join("companies")
        .join(company_id)
        .join("agents")
        .join(agent_id)
        .join("instructions")
}

/// The bundle's files, relative paths in name order.
pub fn list(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    walk(root, "", &mut out);
    out.sort();
    out
}

fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if out.len() >= MAX_FILES {
            return;
        }
        let name = entry.file_name().to_string_lossy().to_string();
        if IGNORED.contains(&name.as_str()) {
            continue;
        }
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk(&entry.path(), &rel, out),
            Ok(t) if t.is_file() => out.push(rel),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_bundle() {
        assert_eq!(normalize("AGENTS.md").as_deref(), Some("AGENTS.md"));
        assert_eq!(normalize("/docs/./a.md").as_deref(), Some("docs/a.md"));
        assert_eq!(normalize("docs\\a.md").as_deref(), Some("docs/a.md"));
        assert_eq!(normalize("docs/../a.md").as_deref(), Some("a.md"));
        for bad in ["", ".", "..", "../x.md", "a/../../x.md", "..\\x.md", "a\nb"] {
            assert_eq!(normalize(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn languages_follow_the_extension() {
        assert_eq!(language("AGENTS.md"), "markdown");
        assert_eq!(language("x.YML"), "yaml");
        assert_eq!(language("Makefile"), "text");
    }
}
