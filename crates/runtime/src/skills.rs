//! The skills Paperclip hands to coding CLIs. The Paperclip skill ships in
//! the binary and is written to the data dir at start, so each adapter can
//! point its CLI at a real file.

use std::path::Path;

/// The Paperclip skill: how an agent works a heartbeat through the API.
pub const PAPERCLIP_SKILL: &str = include_str!("../../../skills/paperclip/SKILL.md");

/// Writes every shipped skill under `dir` (`dir/paperclip/SKILL.md`),
/// replacing older copies.
pub fn install(dir: &Path) -> std::io::Result<()> {
    let skill_dir = dir.join("paperclip");
    std::fs::create_dir_all(&skill_dir)?;
    let path = skill_dir.join("SKILL.md");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(PAPERCLIP_SKILL) {
        std::fs::write(path, PAPERCLIP_SKILL)?;
    }
    Ok(())
}
