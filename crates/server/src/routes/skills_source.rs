//! Where an imported skill comes from (upstream's `POST skills/import`): a
//! folder on the server's machine, a git repository (cloned with the `git`
//! binary, bounded in time, `ext::` refused), or a github / skills.sh
//! reference, which is a git clone of github.com. A folder with SKILL.md is
//! one skill; a folder without is searched (a few levels, not inside a
//! skill) for the skills it holds.

use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::http::StatusCode;
use paperclip_core::skill::{SourceType, MAX_FILES, MAX_IMPORTED, MAX_SKILL_BYTES};

use crate::error::{ApiError, ApiResult};

/// How long a clone may take before the import is refused.
const CLONE_TIMEOUT: Duration = Duration::from_secs(90);
/// How deep a folder is searched for skills.
const SEARCH_DEPTH: usize = 4;

/// A source string, understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An absolute path on the server's machine.
    Folder(PathBuf),
    /// A repository to clone, an optional ref, a folder inside it and, for a
    /// `owner/repo/skill` reference, the one skill wanted.
    Git {
        url: String,
        reference: Option<String>,
        subdir: Option<String>,
        wanted: Option<String>,
        github: Option<(String, String)>,
    },
}

impl Source {
    /// Reads the server's own disk (a path or a `file://` URL): the board's
    /// alone, as an agent's run may be confined away from it.
    pub fn is_local(&self) -> bool {
        match self {
            Source::Folder(_) => true,
            Source::Git { url, .. } => url.starts_with("file://") || url.starts_with('/'),
        }
    }

    pub fn source_type(&self) -> SourceType {
        match self {
            Source::Folder(_) => SourceType::LocalPath,
            Source::Git {
                github: Some(_), ..
            } => SourceType::Github,
            Source::Git { .. } => SourceType::Url,
        }
    }
}

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::validation(serde_json::json!([{ "path": ["source"], "message": message.into() }]))
}

/// Parses a source as upstream's import takes it.
pub fn parse(source: &str) -> ApiResult<Source> {
    let mut s = source.trim();
    // `npx skills add <url> --skill <name>`, as skills.sh prints it.
    let mut wanted_flag = None;
    let owned;
    if let Some(rest) = s.strip_prefix("npx skills add ") {
        let mut words = rest.split_whitespace();
        let url = words.next().unwrap_or("");
        while let Some(w) = words.next() {
            if w == "--skill" {
                wanted_flag = words.next().map(String::from);
            }
        }
        owned = url.to_string();
        s = &owned;
    }
    if s.is_empty() {
        return Err(bad("source is required"));
    }
    if s.contains('\0') {
        return Err(bad("source must not contain NUL"));
    }
    if s.starts_with('/') {
        return Ok(Source::Folder(PathBuf::from(s)));
    }
    if s.starts_with("./") || s.starts_with("../") || s.starts_with('~') {
        return Err(bad(
            "a local source must be an absolute path on the server's machine",
        ));
    }
    if let Some(rest) = s.strip_prefix("https://skills.sh/") {
        return github_key(rest.trim_end_matches('/'), wanted_flag);
    }
    if let Some(rest) = s.strip_prefix("https://github.com/") {
        let rest = rest.trim_end_matches('/');
        let parts: Vec<&str> = rest.split('/').collect();
        if parts.len() < 2 {
            return Err(bad("a GitHub URL names an owner and a repository"));
        }
        let (owner, repo) = (
            parts[0].to_string(),
            parts[1].trim_end_matches(".git").to_string(),
        );
        let (reference, subdir) = match parts.get(2) {
            Some(&"tree") | Some(&"blob") if parts.len() >= 4 => {
                let sub = parts[4..].join("/");
                (Some(parts[3].to_string()), (!sub.is_empty()).then_some(sub))
            }
            _ => (None, None),
        };
        let subdir = subdir.map(|d| d.trim_end_matches("/SKILL.md").to_string());
        return Ok(Source::Git {
            url: format!("https://github.com/{owner}/{repo}.git"),
            reference,
            subdir,
            wanted: wanted_flag,
            github: Some((owner, repo)),
        });
    }
    let gitish = ["file://", "http://", "https://", "ssh://", "git://"]
        .iter()
        .any(|p| s.starts_with(p))
        || s.starts_with("git@");
    if gitish {
        return Ok(Source::Git {
            url: s.to_string(),
            reference: None,
            subdir: None,
            wanted: wanted_flag,
            github: None,
        });
    }
    github_key(s, wanted_flag)
}

/// `owner/repo` or `owner/repo/skill`: a skill of a GitHub repository.
fn github_key(key: &str, wanted: Option<String>) -> ApiResult<Source> {
    let parts: Vec<&str> = key.split('/').collect();
    let word = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    if !(2..=3).contains(&parts.len()) || !parts.iter().all(|p| word(p)) {
        return Err(bad(
            "source must be an absolute path, a git URL, a GitHub or skills.sh URL, or owner/repo/skill",
        ));
    }
    Ok(Source::Git {
        url: format!("https://github.com/{}/{}.git", parts[0], parts[1]),
        reference: None,
        subdir: None,
        wanted: parts.get(2).map(|s| s.to_string()).or(wanted),
        github: Some((parts[0].to_string(), parts[1].to_string())),
    })
}

/// One skill found in a source: its folder (relative to the source's root,
/// `""` for the root) and its files as text.
#[derive(Debug, Clone)]
pub struct Found {
    pub dir: String,
    pub files: Vec<(String, String)>,
}

/// What a source holds, with the commit when it was a repository.
pub struct Fetched {
    pub found: Vec<Found>,
    pub source_ref: Option<String>,
    pub warnings: Vec<String>,
}

/// Reads the source: a folder directly, a repository through a shallow
/// clone into a scratch folder removed afterwards.
pub async fn fetch(source: &Source) -> ApiResult<Fetched> {
    match source {
        Source::Folder(path) => {
            let path = path.clone();
            let (found, warnings) = blocking(move || scan(&path)).await?;
            Ok(Fetched {
                found,
                source_ref: None,
                warnings,
            })
        }
        Source::Git {
            url,
            reference,
            subdir,
            wanted,
            ..
        } => {
            let scratch =
                std::env::temp_dir().join(format!("paperclip-skill-{}", uuid::Uuid::new_v4()));
            let result =
                clone_and_scan(url, reference.as_deref(), subdir.as_deref(), &scratch).await;
            let _ = tokio::fs::remove_dir_all(&scratch).await;
            let mut fetched = result?;
            if let Some(wanted) = wanted {
                fetched.found.retain(|f| {
                    let name = f.dir.rsplit('/').next().unwrap_or("");
                    name == wanted
                        || paperclip_core::skill::frontmatter(&skill_md(f))
                            .0
                            .as_deref()
                            == Some(wanted.as_str())
                });
                if fetched.found.is_empty() {
                    return Err(ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        format!("The repository holds no skill named {wanted}"),
                    ));
                }
            }
            Ok(fetched)
        }
    }
}

pub fn skill_md(found: &Found) -> String {
    found
        .files
        .iter()
        .find(|(p, _)| p == "SKILL.md")
        .map(|(_, c)| c.clone())
        .unwrap_or_default()
}

/// The commit a repository's default branch is at now, or `None` when it
/// cannot be asked in time (`git ls-remote`, bounded like a clone).
pub async fn remote_head(url: &str) -> Option<String> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.args(["ls-remote", "--", url, "HEAD"])
        .env("GIT_ALLOW_PROTOCOL", "file:git:http:https:ssh")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(20), cmd.output())
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let sha = text.split_whitespace().next()?;
    (out.status.success() && sha.len() == 40).then(|| sha.to_string())
}

async fn clone_and_scan(
    url: &str,
    reference: Option<&str>,
    subdir: Option<&str>,
    scratch: &Path,
) -> ApiResult<Fetched> {
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("clone").arg("--depth").arg("1").arg("--quiet");
    if let Some(r) = reference {
        cmd.arg("--branch").arg(r);
    }
    cmd.arg("--").arg(url).arg(scratch);
    // No `ext::` (it runs a command), no prompt for a password.
    cmd.env("GIT_ALLOW_PROTOCOL", "file:git:http:https:ssh")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("git could not start: {e}"),
        )
    })?;
    let out = tokio::time::timeout(CLONE_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("Cloning took longer than {} s", CLONE_TIMEOUT.as_secs()),
            )
        })?
        .map_err(|e| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, format!("git failed: {e}")))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        let why = why.lines().last().unwrap_or("").trim().to_string();
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Could not clone the repository: {why}"),
        ));
    }
    let head = tokio::process::Command::new("git")
        .arg("-C")
        .arg(scratch)
        .args(["rev-parse", "HEAD"])
        .output()
        .await
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let root = match subdir {
        Some(sub) => {
            let sub = paperclip_core::skill::normalize_path(sub)
                .map_err(|why| bad(format!("the folder in the repository {why}")))?;
            scratch.join(sub)
        }
        None => scratch.to_path_buf(),
    };
    let (found, warnings) = blocking(move || scan(&root)).await?;
    Ok(Fetched {
        found,
        source_ref: head,
        warnings,
    })
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
}

/// The skills under `root`.
fn scan(root: &Path) -> ApiResult<(Vec<Found>, Vec<String>)> {
    let meta = std::fs::metadata(root).map_err(|_| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("{} is not a folder", root.display()),
        )
    })?;
    if !meta.is_dir() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("{} is not a folder", root.display()),
        ));
    }
    let mut dirs = Vec::new();
    find_skill_dirs(root, "", 0, &mut dirs);
    if dirs.is_empty() {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "No SKILL.md found in the source",
        ));
    }
    if dirs.len() > MAX_IMPORTED {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("The source holds more than {MAX_IMPORTED} skills"),
        ));
    }
    let mut warnings = Vec::new();
    let mut found = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let base = if dir.is_empty() {
            root.to_path_buf()
        } else {
            root.join(&dir)
        };
        let mut files = Vec::new();
        let mut total = 0usize;
        read_files(&base, "", &mut files, &mut total, &mut warnings, &dir)?;
        found.push(Found { dir, files });
    }
    Ok((found, warnings))
}

fn find_skill_dirs(dir: &Path, rel: &str, depth: usize, out: &mut Vec<String>) {
    if dir.join("SKILL.md").is_file() {
        out.push(rel.to_string());
        return;
    }
    if depth >= SEARCH_DEPTH || out.len() > MAX_IMPORTED {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') && n != "node_modules")
        .collect();
    names.sort();
    for name in names {
        let child_rel = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        find_skill_dirs(&dir.join(&name), &child_rel, depth + 1, out);
    }
}

/// A skill folder's files as text. Links are not followed (they could
/// leave the folder); files that are not UTF-8 are left out with a warning.
fn read_files(
    dir: &Path,
    rel: &str,
    out: &mut Vec<(String, String)>,
    total: &mut usize,
    warnings: &mut Vec<String>,
    skill_dir: &str,
) -> ApiResult<()> {
    let too_big = || {
        ApiError::validation(serde_json::json!([{ "path": ["source"],
            "message": format!("the skill in {skill_dir:?} exceeds {MAX_FILES} files or {MAX_SKILL_BYTES} bytes") }]))
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("cannot read {}: {e}", dir.display()),
            )
        })?
        .flatten()
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == ".git" || name == "node_modules" || name == ".DS_Store" {
            continue;
        }
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            warnings.push(format!("{skill_dir}/{path}: a link, left out"));
        } else if kind.is_dir() {
            read_files(&entry.path(), &path, out, total, warnings, skill_dir)?;
        } else if kind.is_file() {
            let size = entry.metadata().map(|m| m.len() as usize).unwrap_or(0);
            *total += size;
            if out.len() >= MAX_FILES || *total > MAX_SKILL_BYTES {
                return Err(too_big());
            }
            match std::fs::read(entry.path()).map(String::from_utf8) {
                Ok(Ok(text)) => out.push((path, text)),
                _ => warnings.push(format!("{skill_dir}/{path}: not text, left out")),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_parse_as_upstream_names_them() {
        assert_eq!(
            parse("/srv/skills").unwrap(),
            Source::Folder("/srv/skills".into())
        );
        assert!(parse("./skills").is_err() && parse("").is_err() && parse("a b c").is_err());
        let Source::Git {
            url,
            wanted,
            github,
            ..
        } = parse("https://skills.sh/acme/tools/notes").unwrap()
        else {
            panic!("git")
        };
        assert_eq!(url, "https://github.com/acme/tools.git");
        assert_eq!(wanted.as_deref(), Some("notes"));
        assert_eq!(github, Some(("acme".into(), "tools".into())));
        let Source::Git {
            reference, subdir, ..
        } = parse("https://github.com/acme/tools/tree/main/skills/notes").unwrap()
        else {
            panic!("git")
        };
        assert_eq!(
            (reference.as_deref(), subdir.as_deref()),
            (Some("main"), Some("skills/notes"))
        );
        let local = parse("file:///tmp/repo").unwrap();
        assert!(local.is_local() && local.source_type() == SourceType::Url);
        let Source::Git { wanted, .. } =
            parse("npx skills add https://github.com/acme/tools --skill notes").unwrap()
        else {
            panic!("git")
        };
        assert_eq!(wanted.as_deref(), Some("notes"));
    }
}
