//! Task branch names from a template, always valid git branch names.
//!
//! The template language is the original's: `{{issue.identifier}}`,
//! `{{issue.title}}` and `{{slug}}` (the title, lowercased ASCII words
//! joined by `-`). Whatever a template and a title produce is then made to
//! pass `git check-ref-format --branch`, so a board's template or an emoji
//! title can never make a run fail to start.

/// The original's default `branchTemplate`.
pub const DEFAULT_BRANCH_TEMPLATE: &str = "{{issue.identifier}}-{{slug}}";

/// The longest slug: long enough to recognise the task, short enough that
/// the branch fits a terminal prompt.
pub const MAX_SLUG_LEN: usize = 40;

/// The longest branch name; git has no limit, but file systems limit a
/// path component (refs are files) and people read these.
pub const MAX_BRANCH_LEN: usize = 100;

/// What a template that leaves nothing valid (empty identifier and title)
/// falls back to.
const FALLBACK_BRANCH: &str = "paperclip-task";

/// The branch for a task: `template` with its placeholders filled, made a
/// valid git branch name of at most [`MAX_BRANCH_LEN`] bytes.
pub fn branch_name(template: &str, identifier: &str, title: &str) -> String {
    let filled = template
        .replace("{{issue.identifier}}", &identifier_part(identifier))
        .replace("{{issue.title}}", title)
        .replace("{{slug}}", &slug(title));
    sanitize_branch(&filled)
}

/// The title as lowercase ASCII words joined by `-`, at most
/// [`MAX_SLUG_LEN`] bytes, cut between words where one ends near the limit.
pub fn slug(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    if out.len() > MAX_SLUG_LEN {
        out.truncate(MAX_SLUG_LEN);
        // Cut at the last word break unless that throws away most of it.
        if let Some(cut) = out.rfind('-').filter(|&at| at >= MAX_SLUG_LEN / 2) {
            out.truncate(cut);
        }
    }
    out.trim_matches('-').to_string()
}

/// An identifier keeps its case (`WORA-1`) but may not bring its own `/`
/// (a hierarchy the template did not ask for) or other punctuation.
fn identifier_part(identifier: &str) -> String {
    identifier
        .chars()
        .map(|c| if is_plain(c) { c } else { '-' })
        .collect()
}

fn is_plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// Any string made into a valid branch name. Only `[A-Za-z0-9._/-]` survive
/// (everything `check-ref-format` forbids, `~^:?*[\`, spaces, controls,
/// `@{`, is outside that set); then each `/`-separated component is cleaned
/// of what git forbids at its ends and inside.
pub fn sanitize_branch(raw: &str) -> String {
    let mapped: String = raw
        .chars()
        .map(|c| if is_plain(c) || c == '/' { c } else { '-' })
        .collect();
    let mut components: Vec<String> = mapped
        .split('/')
        .map(clean_component)
        .filter(|c| !c.is_empty())
        .collect();
    let mut name = components.join("/");
    if name.len() > MAX_BRANCH_LEN {
        name.truncate(MAX_BRANCH_LEN);
        // The cut can leave a `.`, `-` or `.lock` at the end: clean again.
        components = name
            .split('/')
            .map(clean_component)
            .filter(|c| !c.is_empty())
            .collect();
        name = components.join("/");
    }
    if name.is_empty() {
        return FALLBACK_BRANCH.to_string();
    }
    if name == "HEAD" {
        // git reserves `HEAD` as a branch name.
        return format!("{FALLBACK_BRANCH}-HEAD");
    }
    name
}

/// One path component: no `..`, no runs of `-`, not starting with `.` or
/// `-` (git: hidden component; an option), not ending with `.`, `-` or
/// `.lock` (git: lock files).
fn clean_component(component: &str) -> String {
    let mut out = String::with_capacity(component.len());
    for c in component.chars() {
        let repeat = matches!(c, '.' | '-') && out.ends_with(c);
        if !repeat {
            out.push(c);
        }
    }
    loop {
        let before = out.len();
        out = out
            .trim_start_matches(['.', '-'])
            .trim_end_matches(['.', '-'])
            .to_string();
        if let Some(stem) = out.strip_suffix(".lock") {
            out = stem.to_string();
        }
        if out.len() == before {
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_template_matches_the_original() {
        let name = branch_name(DEFAULT_BRANCH_TEMPLATE, "WORA-1", "Add the pricing page");
        assert_eq!(name, "WORA-1-add-the-pricing-page");
    }

    #[test]
    fn slugs() {
        assert_eq!(slug("  Fix: the **login** bug!  "), "fix-the-login-bug");
        assert_eq!(slug("Überprüfe die Größe"), "berpr-fe-die-gr-e");
        assert_eq!(slug("修复登录"), "");
        assert_eq!(slug(""), "");
        let long = slug(&"word ".repeat(40));
        assert!(long.len() <= MAX_SLUG_LEN, "{long}");
        assert!(long.ends_with("word"), "cut between words: {long}");
        let one_word = slug(&"x".repeat(100));
        assert_eq!(one_word.len(), MAX_SLUG_LEN);
    }

    #[test]
    fn edge_cases_become_readable_names() {
        let cases = [
            ("{{issue.identifier}}-{{slug}}", "PAP-7", "", "PAP-7"),
            (
                "{{issue.identifier}}-{{slug}}",
                "PAP-7",
                "修复登录",
                "PAP-7",
            ),
            ("{{issue.identifier}}-{{slug}}", "", "", FALLBACK_BRANCH),
            ("{{issue.identifier}}-{{slug}}", "a/b", "x", "a-b-x"),
            ("{{issue.identifier}}", "..PAP..7..", "", "PAP.7"),
            ("{{issue.identifier}}", "PAP-7.lock", "", "PAP-7"),
            ("{{issue.identifier}}", "PAP-7.lock.lock.", "", "PAP-7"),
            ("{{issue.identifier}}", "HEAD", "", "paperclip-task-HEAD"),
            ("{{issue.identifier}}", "-x", "", "x"),
            ("agents//{{issue.identifier}}/", "PAP-7", "", "agents/PAP-7"),
            ("agents/.{{issue.identifier}}", "PAP-7", "", "agents/PAP-7"),
            (
                "{{issue.title}}",
                "",
                "feat@{upstream}~1^2:x?*[y]\\z",
                "feat-upstream-1-2-x-y-z",
            ),
            ("{{issue.title}}", "", "a\tb\nc\u{7f}d e", "a-b-c-d-e"),
            ("{{issue.title}}", "", "@", FALLBACK_BRANCH),
        ];
        for (template, identifier, title, want) in cases {
            assert_eq!(
                branch_name(template, identifier, title),
                want,
                "{template} {identifier:?} {title:?}"
            );
        }
    }

    #[test]
    fn long_names_are_bounded_and_still_clean() {
        let name = branch_name("{{issue.title}}", "", &format!("{}.lock", "a.".repeat(80)));
        assert!(name.len() <= MAX_BRANCH_LEN);
        assert!(!name.ends_with('.') && !name.ends_with(".lock"), "{name}");
    }

    /// Every name, including the edge cases above, passes git's own check.
    #[tokio::test]
    async fn git_accepts_every_name() {
        let titles = [
            "",
            "Add the pricing page",
            "修复登录 🚀",
            "..",
            "a..b",
            "ends with dot.",
            "ends.lock",
            ".hidden",
            "x/.y/z.lock/",
            "@",
            "@{-1}",
            "a b~c^d:e?f*g[h\\i",
            "control\u{1}chars\u{7f}",
            &"very long ".repeat(30),
        ];
        let templates = [
            DEFAULT_BRANCH_TEMPLATE,
            "{{issue.title}}",
            "paperclip/{{issue.identifier}}/{{issue.title}}",
            "{{slug}}.lock",
        ];
        let cwd = std::env::temp_dir();
        for template in templates {
            for title in titles {
                for identifier in ["PAP-1", "", "..", "a/b.lock", "-"] {
                    let name = branch_name(template, identifier, title);
                    assert!(name.len() <= MAX_BRANCH_LEN, "{name}");
                    crate::workspace::git::check_branch(&cwd, &name)
                        .await
                        .unwrap_or_else(|e| panic!("{template} {identifier:?} {title:?}: {e}"));
                }
            }
        }
    }
}
