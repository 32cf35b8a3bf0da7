//! The company skills library (issue 40): upstream's shapes for a skill, its
//! versions and files, and the pure rules every way in shares (a file's path
//! and kind, a skill's bounds, SKILL.md's frontmatter, slugs and keys).
//!
//! A skill is a folder: `SKILL.md` (frontmatter `name`, `description`) and
//! any files next to it. Its content lives in immutable versions; editing a
//! file makes a new version, so a run that started on one keeps seeing it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// A file larger than this is refused: skills are instructions and small
/// scripts, and every run copies them.
pub const MAX_FILE_BYTES: usize = 256 * 1024;
/// Files per skill.
pub const MAX_FILES: usize = 200;
/// All files of one skill together.
pub const MAX_SKILL_BYTES: usize = 2 * 1024 * 1024;
/// Path length of one file inside a skill.
pub const MAX_PATH_CHARS: usize = 300;
/// Skills one import may bring (a repository of many skills).
pub const MAX_IMPORTED: usize = 50;

/// Where a skill came from (upstream's `CompanySkillSourceType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceType {
    LocalPath,
    Github,
    Url,
    Catalog,
    SkillsSh,
}

impl SourceType {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceType::LocalPath => "local_path",
            SourceType::Github => "github",
            SourceType::Url => "url",
            SourceType::Catalog => "catalog",
            SourceType::SkillsSh => "skills_sh",
        }
    }

    pub fn parse(text: &str) -> Option<SourceType> {
        [
            SourceType::LocalPath,
            SourceType::Github,
            SourceType::Url,
            SourceType::Catalog,
            SourceType::SkillsSh,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }

    /// The badge upstream's board shows for it.
    pub fn badge(self, managed: bool) -> &'static str {
        match self {
            SourceType::LocalPath if managed => "paperclip",
            SourceType::LocalPath => "local",
            SourceType::Github => "github",
            SourceType::Url => "url",
            SourceType::Catalog => "catalog",
            SourceType::SkillsSh => "skills_sh",
        }
    }
}

/// One file of a skill as listed (upstream's `CompanySkillFileInventoryEntry`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InventoryEntry {
    pub path: String,
    pub kind: String,
}

/// One file of a version, with its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct VersionFile {
    pub path: String,
    pub kind: String,
    pub content: String,
}

/// A company skill (upstream's `CompanySkill`), plus the list and detail
/// keys its list items carry.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompanySkill {
    pub id: String,
    pub company_id: String,
    pub key: String,
    pub slug: String,
    pub name: String,
    pub description: Option<String>,
    pub markdown: String,
    pub source_type: SourceType,
    pub source_locator: Option<String>,
    pub source_ref: Option<String>,
    pub trust_level: String,
    pub compatibility: String,
    pub file_inventory: Vec<InventoryEntry>,
    pub icon_url: Option<String>,
    pub color: Option<String>,
    pub tagline: Option<String>,
    pub author_name: Option<String>,
    pub homepage_url: Option<String>,
    pub categories: Vec<String>,
    pub sharing_scope: String,
    pub public_share_token: Option<String>,
    pub forked_from_skill_id: Option<String>,
    pub forked_from_company_id: Option<String>,
    pub star_count: i64,
    pub install_count: i64,
    pub fork_count: i64,
    pub current_version_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    pub created_at: String,
    pub updated_at: String,
}

/// A version (upstream's `CompanySkillVersion`): immutable.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillVersion {
    pub id: String,
    pub company_id: String,
    pub company_skill_id: String,
    pub revision_number: i64,
    pub label: Option<String>,
    pub release_id: Option<String>,
    pub release_name: Option<String>,
    pub released_at: Option<String>,
    pub file_inventory: Vec<VersionFile>,
    pub author_agent_id: Option<String>,
    pub author_user_id: Option<String>,
    pub created_at: String,
}

/// Why a path inside a skill is refused, or its normal form: relative,
/// forward slashes, no `.`/`..` segment, no NUL, no backslash.
pub fn normalize_path(path: &str) -> Result<String, &'static str> {
    if path.contains('\0') {
        return Err("must not contain NUL");
    }
    if path.contains('\\') {
        return Err("must use forward slashes");
    }
    if path.starts_with('/') || path.starts_with('~') {
        return Err("must be relative to the skill's folder");
    }
    if path.chars().count() > MAX_PATH_CHARS {
        return Err("is too long");
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => continue,
            ".." => return Err("must not leave the skill's folder"),
            p if p.chars().any(char::is_control) => {
                return Err("must not contain control characters")
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Err("must name a file");
    }
    Ok(parts.join("/"))
}

/// Upstream's classification of a file by its path.
pub fn file_kind(path: &str) -> &'static str {
    let lower = path.to_ascii_lowercase();
    if lower == "skill.md" || lower.ends_with("/skill.md") {
        return "skill";
    }
    if lower.starts_with("references/") {
        return "reference";
    }
    if lower.starts_with("scripts/") {
        return "script";
    }
    if lower.starts_with("assets/") {
        return "asset";
    }
    if lower.ends_with(".md") {
        return "markdown";
    }
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let ext = name.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    match ext {
        "sh" | "js" | "mjs" | "cjs" | "ts" | "py" | "rb" | "bash" => "script",
        "png" | "jpg" | "jpeg" | "gif" | "svg" | "webp" | "pdf" => "asset",
        _ => "other",
    }
}

/// Upstream's trust level of a set of files.
pub fn trust_level<'a>(kinds: impl IntoIterator<Item = &'a str>) -> &'static str {
    let kinds: Vec<&str> = kinds.into_iter().collect();
    if kinds.contains(&"script") {
        "scripts_executables"
    } else if kinds.iter().any(|k| *k == "asset" || *k == "other") {
        "assets"
    } else {
        "markdown_only"
    }
}

/// A slug: lower-case words joined by dashes (upstream's url key), `None`
/// when nothing of the text is left.
pub fn slug(text: &str) -> Option<String> {
    let key = crate::naming::url_key(text);
    let has_word = text.chars().any(|c| c.is_ascii_alphanumeric());
    has_word.then_some(key)
}

/// The folder name a skill takes in a CLI's skills folder: the slug, with a
/// short hash of the key when the slug alone could collide.
pub fn runtime_name(slug: &str, key_hash: &str) -> String {
    format!("{slug}--{key_hash}")
}

/// `name` and `description` of SKILL.md's YAML frontmatter (the flat
/// `key: value` lines every skill uses; quotes dropped).
pub fn frontmatter(markdown: &str) -> (Option<String>, Option<String>) {
    let mut lines = markdown.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return (None, None);
    }
    let (mut name, mut description) = (None, None);
    for line in lines {
        if line.trim_end() == "---" {
            break;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        if line.starts_with(char::is_whitespace) {
            continue;
        }
        let v = v.trim().trim_matches(|c| c == '"' || c == '\'').trim();
        let v = (!v.is_empty() && v != "|" && v != ">").then(|| v.to_string());
        match k.trim() {
            "name" => name = v,
            "description" => description = v,
            _ => {}
        }
    }
    (name, description)
}

/// The checks every new set of files passes: a `SKILL.md`, normal paths,
/// bounded sizes and counts. Returns the files with normal paths, SKILL.md
/// first, or the field-less reason.
pub fn check_files(files: Vec<(String, String)>) -> Result<Vec<VersionFile>, String> {
    if files.len() > MAX_FILES {
        return Err(format!("a skill has at most {MAX_FILES} files"));
    }
    let mut out: Vec<VersionFile> = Vec::with_capacity(files.len());
    let mut total = 0usize;
    for (path, content) in files {
        let path = normalize_path(&path).map_err(|why| format!("path {path:?} {why}"))?;
        if content.len() > MAX_FILE_BYTES {
            return Err(format!("{path} is larger than {MAX_FILE_BYTES} bytes"));
        }
        total += content.len();
        if out.iter().any(|f| f.path == path) {
            return Err(format!("{path} is given twice"));
        }
        let kind = file_kind(&path).to_string();
        out.push(VersionFile {
            path,
            kind,
            content,
        });
    }
    if total > MAX_SKILL_BYTES {
        return Err(format!(
            "a skill's files total at most {MAX_SKILL_BYTES} bytes"
        ));
    }
    if !out.iter().any(|f| f.path == "SKILL.md") {
        return Err("a skill needs a SKILL.md at its root".into());
    }
    out.sort_by(|a, b| (a.path != "SKILL.md", &a.path).cmp(&(b.path != "SKILL.md", &b.path)));
    Ok(out)
}

/// 8-4-4-4-12 hex digits: an id rather than a key or slug.
pub fn is_uuid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// How a sync changes an agent's chosen skills (upstream's
/// `AgentSkillAssignmentMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AssignmentMode {
    Add,
    Remove,
    Replace,
}

/// The skill keys an agent's adapter config chooses, where upstream keeps
/// them: `paperclipSkillSync.desiredSkills`, each a key or `{key, versionId}`.
pub fn desired_keys(adapter_config: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let list = adapter_config
        .get("paperclipSkillSync")
        .and_then(|s| s.get("desiredSkills"))
        .and_then(Value::as_array);
    for entry in list.into_iter().flatten() {
        let key = match entry {
            Value::String(k) => k.trim(),
            Value::Object(o) => o.get("key").and_then(Value::as_str).unwrap_or("").trim(),
            _ => "",
        };
        if !key.is_empty() && !out.iter().any(|k| k == key) {
            out.push(key.to_string());
        }
    }
    out
}

/// The next chosen keys after a sync of `requested` (already resolved keys).
pub fn merge_desired(
    current: &[String],
    requested: &[String],
    mode: AssignmentMode,
) -> Vec<String> {
    let mut out: Vec<String> = match mode {
        AssignmentMode::Replace => Vec::new(),
        AssignmentMode::Add => current.to_vec(),
        AssignmentMode::Remove => {
            return current
                .iter()
                .filter(|k| !requested.contains(k))
                .cloned()
                .collect()
        }
    };
    for key in requested {
        if !out.contains(key) {
            out.push(key.clone());
        }
    }
    out
}

/// The adapter config with `paperclipSkillSync.desiredSkills` set, its other
/// keys (and the sync object's) kept.
pub fn with_desired(adapter_config: &Value, keys: &[String]) -> Value {
    let mut config = match adapter_config {
        Value::Object(o) => o.clone(),
        _ => serde_json::Map::new(),
    };
    let mut sync = match config.get("paperclipSkillSync") {
        Some(Value::Object(o)) => o.clone(),
        _ => serde_json::Map::new(),
    };
    sync.insert("desiredSkills".into(), Value::from(keys.to_vec()));
    config.insert("paperclipSkillSync".into(), Value::Object(sync));
    Value::Object(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_skill() {
        assert_eq!(
            normalize_path("./references//a.md"),
            Ok("references/a.md".into())
        );
        for bad in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            "a\0b",
            "a\\b",
            "~/x",
            "",
            "./",
        ] {
            assert!(normalize_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn kinds_and_trust_follow_the_paths() {
        assert_eq!(file_kind("SKILL.md"), "skill");
        assert_eq!(file_kind("scripts/run"), "script");
        assert_eq!(file_kind("tool.py"), "script");
        assert_eq!(file_kind("notes.md"), "markdown");
        assert_eq!(file_kind("logo.PNG"), "asset");
        assert_eq!(trust_level(["skill", "markdown"]), "markdown_only");
        assert_eq!(trust_level(["skill", "other"]), "assets");
        assert_eq!(
            trust_level(["skill", "asset", "script"]),
            "scripts_executables"
        );
    }

    #[test]
    fn frontmatter_names_the_skill() {
        let md = "---\nname: \"Release Notes\"\ndescription: Writes them\nmetadata:\n  name: x\n---\n# body";
        assert_eq!(
            frontmatter(md),
            (Some("Release Notes".into()), Some("Writes them".into()))
        );
        assert_eq!(frontmatter("# no frontmatter"), (None, None));
        assert_eq!(slug("Release Notes!").as_deref(), Some("release-notes"));
        assert_eq!(slug("!!"), None);
    }

    #[test]
    fn file_sets_are_bounded() {
        let ok = check_files(vec![
            ("b.md".into(), "b".into()),
            ("SKILL.md".into(), "s".into()),
        ])
        .unwrap();
        assert_eq!(ok[0].path, "SKILL.md");
        assert!(check_files(vec![("a.md".into(), "a".into())]).is_err());
        let big = "x".repeat(MAX_FILE_BYTES + 1);
        assert!(check_files(vec![("SKILL.md".into(), big)]).is_err());
        let many = (0..=MAX_FILES)
            .map(|i| (format!("f{i}"), String::new()))
            .collect();
        assert!(check_files(many).is_err());
        assert!(check_files(vec![
            ("SKILL.md".into(), "s".into()),
            ("./SKILL.md".into(), "t".into())
        ])
        .is_err());
    }

    #[test]
    fn desired_skills_live_in_the_adapter_config() {
        let config = serde_json::json!({ "model": "m", "paperclipSkillSync":
            { "desiredSkills": ["a", { "key": "b", "versionId": null }, "a", 3], "x": 1 } });
        let keys = desired_keys(&config);
        assert_eq!(keys, ["a", "b"]);
        let add = merge_desired(&keys, &["c".into(), "a".into()], AssignmentMode::Add);
        assert_eq!(add, ["a", "b", "c"]);
        assert_eq!(
            merge_desired(&add, &["a".into()], AssignmentMode::Remove),
            ["b", "c"]
        );
        assert_eq!(
            merge_desired(&add, &["z".into()], AssignmentMode::Replace),
            ["z"]
        );
        let next = with_desired(&config, &["z".into()]);
        assert_eq!(next["model"], "m");
        assert_eq!(next["paperclipSkillSync"]["x"], 1);
        assert_eq!(desired_keys(&next), ["z"]);
        assert!(is_uuid("0b4f6a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b") && !is_uuid("release-notes"));
    }
}
