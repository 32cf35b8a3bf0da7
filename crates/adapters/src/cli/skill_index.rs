//! The company skills beside the Paperclip skill in a run's skills folder,
//! for CLIs that take instructions files rather than a skills folder
//! (Codex, OpenCode): each skill's SKILL.md, by name.

use std::path::{Path, PathBuf};

/// Every skill folder's SKILL.md but the Paperclip skill's, by folder name.
pub(crate) fn company_skill_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name() != "paperclip")
        .map(|e| e.path().join("SKILL.md"))
        .filter(|p| p.is_file())
        .collect();
    out.sort();
    out
}

/// A note naming each company skill and where its files are, for a CLI
/// that reads one instructions text.
pub(crate) fn company_skills_note(dir: &Path) -> Option<String> {
    let files = company_skill_files(dir);
    if files.is_empty() {
        return None;
    }
    let mut note = String::from(
        "\n\n# Company skills\n\nRead a skill's SKILL.md (and the files beside it) when the task calls for it:\n",
    );
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let (name, description) = paperclip_core::skill::frontmatter(&text);
        let folder = file
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        let name = name.or(folder).unwrap_or_default();
        let description = description.map(|d| format!(": {d}")).unwrap_or_default();
        note.push_str(&format!("- {name}{description} ({})\n", file.display()));
    }
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_each_company_skill() {
        let dir = std::env::temp_dir().join(format!("pc-index-{}", std::process::id()));
        for (folder, md) in [
            ("paperclip", "p"),
            (
                "notes--1",
                "---\nname: notes\ndescription: Writes notes\n---\n",
            ),
        ] {
            std::fs::create_dir_all(dir.join(folder)).unwrap();
            std::fs::write(dir.join(folder).join("SKILL.md"), md).unwrap();
        }
        let note = company_skills_note(&dir).unwrap();
        assert!(note.contains("- notes: Writes notes ("), "{note}");
        assert!(!note.contains("paperclip/SKILL.md"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(company_skills_note(&dir), None);
    }
}
