//! Starter companies shipped in the binary, in the package format.

use std::collections::BTreeMap;

/// A template's files: (path in the package, contents).
pub type Files = &'static [(&'static str, &'static str)];

/// (name, label, files).
pub const TEMPLATES: &[(&str, &str, Files)] = &[
    (
        "solo-dev",
        "A solo dev shop: a builder and a reviewer",
        &[
            (
                ".paperclip.yaml",
                include_str!("../../templates/solo-dev/.paperclip.yaml"),
            ),
            (
                "COMPANY.md",
                include_str!("../../templates/solo-dev/COMPANY.md"),
            ),
            (
                "agents/builder/AGENTS.md",
                include_str!("../../templates/solo-dev/agents/builder/AGENTS.md"),
            ),
            (
                "agents/reviewer/AGENTS.md",
                include_str!("../../templates/solo-dev/agents/reviewer/AGENTS.md"),
            ),
            (
                "projects/product/PROJECT.md",
                include_str!("../../templates/solo-dev/projects/product/PROJECT.md"),
            ),
            (
                "tasks/first-release/TASK.md",
                include_str!("../../templates/solo-dev/tasks/first-release/TASK.md"),
            ),
            (
                "tasks/weekly-review/TASK.md",
                include_str!("../../templates/solo-dev/tasks/weekly-review/TASK.md"),
            ),
        ],
    ),
    (
        "content-studio",
        "A content studio: an editor and a writer",
        &[
            (
                ".paperclip.yaml",
                include_str!("../../templates/content-studio/.paperclip.yaml"),
            ),
            (
                "COMPANY.md",
                include_str!("../../templates/content-studio/COMPANY.md"),
            ),
            (
                "agents/editor/AGENTS.md",
                include_str!("../../templates/content-studio/agents/editor/AGENTS.md"),
            ),
            (
                "agents/writer/AGENTS.md",
                include_str!("../../templates/content-studio/agents/writer/AGENTS.md"),
            ),
            (
                "projects/blog/PROJECT.md",
                include_str!("../../templates/content-studio/projects/blog/PROJECT.md"),
            ),
            (
                "tasks/editorial-calendar/TASK.md",
                include_str!("../../templates/content-studio/tasks/editorial-calendar/TASK.md"),
            ),
            (
                "tasks/weekly-newsletter/TASK.md",
                include_str!("../../templates/content-studio/tasks/weekly-newsletter/TASK.md"),
            ),
        ],
    ),
];

/// The files of a starter template by name.
pub fn files(name: &str) -> Option<BTreeMap<String, String>> {
    TEMPLATES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, files)| {
            files
                .iter()
                .map(|(p, c)| (p.to_string(), c.to_string()))
                .collect()
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_template_reads_as_a_package() {
        for (name, _, _) in super::TEMPLATES {
            let pkg = crate::package::from_files(&super::files(name).unwrap()).unwrap();
            assert_eq!(pkg.agents.len(), 2, "{name}");
            assert_eq!(
                (pkg.tasks.len(), pkg.routines.len(), pkg.goals.len()),
                (1, 1, 1),
                "{name}"
            );
            assert!(pkg.warnings.is_empty(), "{name}: {:?}", pkg.warnings);
        }
    }
}
