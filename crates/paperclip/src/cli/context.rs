//! The saved context: which company (and which server) commands talk to
//! when no `--company` / `--api-base` is given. `paperclip company use ACM`
//! writes it; a small TOML file under the user's config dir, or wherever
//! `PAPERCLIP_CONTEXT_FILE` points (tests isolate themselves with it).

use std::path::PathBuf;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Context {
    /// The server the company lives on.
    pub api_base: Option<String>,
    pub company_id: Option<String>,
    /// Shown back to the person; the id is what requests use.
    pub company_prefix: Option<String>,
}

/// `$PAPERCLIP_CONTEXT_FILE`, else `$XDG_CONFIG_HOME/paperclip/context.toml`,
/// else `~/.config/paperclip/context.toml`.
pub fn path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PAPERCLIP_CONTEXT_FILE").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(config.join("paperclip").join("context.toml"))
}

impl Context {
    /// The saved context; empty when there is none. A file that does not
    /// parse is an error (silently ignoring it would send commands to the
    /// wrong company).
    pub fn load() -> anyhow::Result<Context> {
        let Some(path) = path() else {
            return Ok(Context::default());
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text)
                .with_context(|| format!("reading the saved context {}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Context::default()),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    pub fn save(&self) -> anyhow::Result<PathBuf> {
        let path = path().context("HOME is not set: set PAPERCLIP_CONTEXT_FILE")?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let text = format!(
            "# Written by `paperclip company use`; the company and server commands use by default.\n{}",
            toml::to_string(self)?
        );
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }
}
