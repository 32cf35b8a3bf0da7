//! Company packages in the original's format: markdown files with YAML
//! frontmatter (`COMPANY.md`, `agents/<slug>/AGENTS.md`,
//! `projects/<slug>/PROJECT.md`, `tasks/<slug>/TASK.md`) and the
//! `.paperclip.yaml` extension that carries what markdown does not (adapter
//! configs, task threads, routine triggers). Pure: files in, [`Package`] out,
//! and back. Secret values never enter a package: an agent's env becomes
//! named inputs the importer supplies or leaves unset.

pub mod model;
mod read;
pub mod templates;
mod write;
pub mod yaml;

pub use model::*;
pub use read::from_files;
pub use write::{manifest, to_files};

/// A file or field of a package that cannot be read: a 400 naming both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageError {
    pub file: String,
    pub field: Option<String>,
    pub message: String,
}

impl PackageError {
    pub fn new(file: &str, field: Option<&str>, message: impl Into<String>) -> PackageError {
        PackageError {
            file: file.to_string(),
            field: field.map(str::to_string),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for PackageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{} ({field}): {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// Largest package accepted: files and bytes (the JSON body bound is 1 MiB).
pub const MAX_FILES: usize = 2_000;

/// A slug unique among `used` (`base`, `base-2`, ...), recorded in `used`.
pub fn unique_slug(base: &str, used: &mut std::collections::BTreeSet<String>) -> String {
    let base = match crate::naming::url_key(base) {
        k if k.is_empty() => "item".to_string(),
        k => k,
    };
    let slug = (1..)
        .map(|n| match n {
            1 => base.clone(),
            n => format!("{base}-{n}"),
        })
        .find(|s| !used.contains(s))
        .expect("an unbounded sequence has a free slug");
    used.insert(slug.clone());
    slug
}

/// Whether an env key names a credential (the original's rule): its default
/// never travels.
pub fn is_sensitive_env_key(key: &str) -> bool {
    let k = key.trim().to_lowercase();
    k == "key"
        || k.ends_with("_key")
        || k.ends_with("-key")
        || k == "token"
        || k.ends_with("_token")
        || k.ends_with("-token")
        || k.contains("secret")
        || k.contains("password")
        || k.contains("passwd")
        || k.contains("credential")
        || crate::secrets::is_secret_name(key)
}
