//! A run's company skills (issue 40): the skills its agent chose are written
//! next to the Paperclip skill in a skills folder of their own, which the
//! adapter is given instead of the shared one (Claude Code, Gemini CLI and
//! Pi load every folder in it; a process sees it as `PAPERCLIP_SKILLS_DIR`).
//!
//! Versions never change, so a folder is named by the versions it holds and
//! written once (into a scratch folder, then renamed): runs of the same
//! skills share it, a run already going keeps reading its own, and an edit
//! makes the next run a new folder.

use std::path::{Path, PathBuf};

use paperclip_adapters::{Invocation, RunSink, Stream};
use paperclip_core::model::Agent;
use paperclip_store::org::skills_sync::{self, RunSkill};
use paperclip_store::Store;

/// Gives the invocation the agent's skills folder; with no chosen skill it
/// keeps the shared one. A skill that cannot be written is said in the run's
/// log and left out: the run goes on with the others.
pub(crate) async fn apply(
    store: &Store,
    agent: &Agent,
    invocation: &mut Invocation,
    sink: &dyn RunSink,
) {
    let Some(shared) = invocation.skills_dir.clone() else {
        return;
    };
    let (skills, fingerprint) = match skills_sync::for_run(store, agent).await {
        Ok(found) => found,
        Err(e) => {
            sink.log(
                Stream::System,
                &format!("[paperclip] could not read the agent's skills: {e}\n"),
            );
            return;
        }
    };
    if skills.is_empty() {
        return;
    }
    let name = format!(
        "{fingerprint}-{:016x}",
        fnv(crate::skills::PAPERCLIP_SKILL.as_bytes())
    );
    let root = shared
        .parent()
        .unwrap_or(&shared)
        .join("skill-sets")
        .join(name);
    let built = {
        let (shared, root, skills) = (shared.clone(), root.clone(), skills.clone());
        tokio::task::spawn_blocking(move || materialise(&shared, &root, &skills)).await
    };
    match built {
        Ok(Ok(())) => {
            let names: Vec<&str> = skills.iter().map(|s| s.folder.as_str()).collect();
            sink.log(
                Stream::System,
                &format!("[paperclip] company skills for this run: {}\n", names.join(", ")),
            );
            invocation
                .env
                .insert("PAPERCLIP_SKILLS_DIR".into(), root.display().to_string());
            invocation.skills_dir = Some(root);
        }
        Ok(Err(e)) => sink.log(
            Stream::System,
            &format!("[paperclip] could not write the agent's skills ({e}); running with the Paperclip skill only\n"),
        ),
        Err(e) => sink.log(Stream::System, &format!("[paperclip] skills: {e}\n")),
    }
}

/// Writes the set once: the shared skills and each chosen one.
fn materialise(shared: &Path, root: &Path, skills: &[RunSkill]) -> std::io::Result<()> {
    if root.is_dir() {
        return Ok(());
    }
    let parent = root.parent().unwrap_or(root);
    std::fs::create_dir_all(parent)?;
    let scratch: PathBuf = parent.join(format!(".tmp-{}", uuid::Uuid::new_v4()));
    let result = (|| {
        copy_dir(shared, &scratch)?;
        for skill in skills {
            let dir = scratch.join(&skill.folder);
            for file in &skill.files {
                // Stored paths are checked on the way in; checked again so a
                // row written by other means cannot leave the folder.
                let Ok(rel) = paperclip_core::skill::normalize_path(&file.path) else {
                    continue;
                };
                let path = dir.join(rel);
                if let Some(p) = path.parent() {
                    std::fs::create_dir_all(p)?;
                }
                std::fs::write(&path, &file.content)?;
            }
        }
        Ok(())
    })();
    let result = result.and_then(|()| match std::fs::rename(&scratch, root) {
        // Another run wrote the same set first: theirs is the same.
        Err(_) if root.is_dir() => Ok(()),
        other => other,
    });
    if scratch.exists() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    result
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// FNV-1a: names the shipped Paperclip skill's text in the folder name, so a
/// new binary's skill makes new folders.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_core::skill::VersionFile;

    #[test]
    fn a_set_is_written_once_beside_the_paperclip_skill() {
        let base = std::env::temp_dir().join(format!("pc-skills-{}", uuid::Uuid::new_v4()));
        let shared = base.join("skills");
        std::fs::create_dir_all(shared.join("paperclip")).unwrap();
        std::fs::write(shared.join("paperclip/SKILL.md"), "p").unwrap();
        let skill = RunSkill {
            key: "company/c/notes".into(),
            folder: "notes--abc".into(),
            version_id: "v".into(),
            files: vec![
                VersionFile {
                    path: "SKILL.md".into(),
                    kind: "skill".into(),
                    content: "n".into(),
                },
                VersionFile {
                    path: "../escape".into(),
                    kind: "other".into(),
                    content: "x".into(),
                },
                VersionFile {
                    path: "scripts/run.sh".into(),
                    kind: "script".into(),
                    content: "s".into(),
                },
            ],
        };
        let root = base.join("skill-sets/f1");
        materialise(&shared, &root, &[skill.clone()]).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("paperclip/SKILL.md")).unwrap(),
            "p"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("notes--abc/SKILL.md")).unwrap(),
            "n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("notes--abc/scripts/run.sh")).unwrap(),
            "s"
        );
        assert!(!root.join("escape").exists() && !root.join("notes--abc/../escape").exists());
        // Written once: a second call leaves it as it is.
        std::fs::write(root.join("notes--abc/SKILL.md"), "kept").unwrap();
        materialise(&shared, &root, &[skill]).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("notes--abc/SKILL.md")).unwrap(),
            "kept"
        );
        let left: Vec<_> = std::fs::read_dir(base.join("skill-sets"))
            .unwrap()
            .collect();
        assert_eq!(left.len(), 1, "no scratch folder left");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
