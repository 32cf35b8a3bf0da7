//! A tool call in one line a person reads: a verb and its object
//! ("Read `src/main.rs`", "Ran `cargo test`", "Searched `TODO` in `src`").
//! Every coding CLI names the same few actions differently (Claude Code's
//! `Read`, Codex's `shell`, Gemini's `read_file`, an ACP agent's kind
//! `read`), so the names are mapped here once, for every page that shows a
//! transcript. Unknown tools keep their own name.

use serde_json::Value;

/// What a tool call did, whatever the CLI called it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolAction {
    Read,
    Edit,
    Write,
    Run,
    Search,
    List,
    Fetch,
    Plan,
    Ask,
    Delegate,
    Think,
    Other,
}

impl ToolAction {
    /// The tool's action from its name (a CLI's tool name or an ACP kind).
    pub fn of(name: &str) -> ToolAction {
        let n: String = name
            .chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect();
        match n.as_str() {
            "read" | "readfile" | "readmanyfiles" | "view" | "notebookread" => ToolAction::Read,
            "edit" | "multiedit" | "replace" | "applypatch" | "patch" | "filechange"
            | "strreplace" | "notebookedit" => ToolAction::Edit,
            "write" | "writefile" | "create" => ToolAction::Write,
            "bash" | "shell" | "execcommand" | "runshellcommand" | "execute" | "localshell"
            | "exec" | "terminal" | "bashoutput" => ToolAction::Run,
            "grep" | "glob" | "searchfilecontent" | "search" | "websearch" | "googlewebsearch"
            | "codesearch" | "find" => ToolAction::Search,
            "ls" | "list" | "listdirectory" => ToolAction::List,
            "webfetch" | "fetch" => ToolAction::Fetch,
            "todowrite" | "updateplan" | "writetodos" | "todoread" | "exitplanmode" => {
                ToolAction::Plan
            }
            "askuserquestion" | "askuser" | "question" => ToolAction::Ask,
            "task" | "agent" | "delegate" | "subagent" => ToolAction::Delegate,
            "think" => ToolAction::Think,
            _ => ToolAction::Other,
        }
    }

    pub fn verb(self) -> &'static str {
        match self {
            ToolAction::Read => "Read",
            ToolAction::Edit => "Edited",
            ToolAction::Write => "Wrote",
            ToolAction::Run => "Ran",
            ToolAction::Search => "Searched",
            ToolAction::List => "Listed",
            ToolAction::Fetch => "Fetched",
            ToolAction::Plan => "Planned",
            ToolAction::Ask => "Asked",
            ToolAction::Delegate => "Delegated",
            ToolAction::Think => "Thought",
            ToolAction::Other => "",
        }
    }
}

/// One tool call as a line: `verb object where (+n −m)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolLine {
    pub action: ToolAction,
    /// "Read", "Ran" …, or the tool's own name when it is none of those.
    pub verb: String,
    /// A path, command, pattern or URL (shown as code), if the input has one.
    pub object: Option<String>,
    /// Words around the object: "in `src`", "to a subagent: …".
    pub place: Option<String>,
    /// Lines added and removed, when the input says.
    pub lines: Option<(usize, usize)>,
}

/// Longest object shown on the line; the opened call has all of it.
const OBJECT_CHARS: usize = 100;

/// The line of a call of `name` with `input`.
pub fn describe(name: &str, input: &Value) -> ToolLine {
    let action = ToolAction::of(name);
    let s = |keys: &[&str]| first_str(input, keys);
    let path = || {
        s(&[
            "file_path",
            "filePath",
            "absolute_path",
            "path",
            "notebook_path",
        ])
    };
    let (object, place, lines) = match action {
        ToolAction::Read => (path(), None, None),
        ToolAction::Edit => edit(input),
        ToolAction::Write => {
            let added = s(&["content"]).map(|c| (c.lines().count(), 0));
            (path(), None, added)
        }
        ToolAction::Run => (s(&["command", "cmd"]).map(|c| command(&c)), None, None),
        ToolAction::Search => (
            s(&["pattern", "query", "regex", "q"]),
            s(&["path", "dir_path", "include", "glob"]).map(|p| format!("in {p}")),
            None,
        ),
        ToolAction::List => (
            s(&["path", "dir_path", "directory"]).or(Some(".".into())),
            None,
            None,
        ),
        ToolAction::Fetch => (s(&["url"]), None, None),
        ToolAction::Plan => {
            let n = ["todos", "plan"]
                .iter()
                .find_map(|k| input.get(*k)?.as_array().map(Vec::len));
            (None, n.map(|n| plural(n, "item")), None)
        }
        ToolAction::Ask => {
            let q = input
                .pointer("/questions/0/question")
                .and_then(Value::as_str)
                .map(String::from)
                .or_else(|| s(&["question", "prompt"]));
            (None, q.map(|q| one_line(&q)), None)
        }
        ToolAction::Delegate => {
            let what = s(&["description", "prompt", "task"]).map(|d| one_line(&d));
            let who = s(&["subagent_type", "subagentType", "agent"]);
            let place = match (who, what) {
                (Some(w), Some(d)) => Some(format!("to {w}: {d}")),
                (Some(w), None) => Some(format!("to {w}")),
                (None, Some(d)) => Some(format!("to a subagent: {d}")),
                (None, None) => Some("to a subagent".into()),
            };
            (None, place, None)
        }
        ToolAction::Think | ToolAction::Other => (
            // An ACP agent without a tool name gives a title.
            s(&["title"])
                .or_else(|| s(&["command", "file_path", "path", "url", "pattern", "query"])),
            None,
            None,
        ),
    };
    // An ACP agent's call may carry only a title ("Read src/a.rs").
    let object = object.or_else(|| match action {
        ToolAction::Plan | ToolAction::Ask | ToolAction::Delegate => None,
        _ => s(&["title"]),
    });
    let verb = match action {
        ToolAction::Other => {
            if name.is_empty() {
                "tool".to_string()
            } else {
                name.to_string()
            }
        }
        a => a.verb().to_string(),
    };
    ToolLine {
        action,
        verb,
        object: object.map(|o| clip(&one_line(&o), OBJECT_CHARS)),
        place: place.map(|p| clip(&p, OBJECT_CHARS)),
        lines,
    }
}

/// The first line of an error, for a failed call's row.
pub fn error_line(output: &str) -> String {
    clip(&one_line(output), OBJECT_CHARS)
}

fn edit(input: &Value) -> (Option<String>, Option<String>, Option<(usize, usize)>) {
    let path = first_str(input, &["file_path", "filePath", "path"]);
    let count = |v: &Value, new: &[&str], old: &[&str]| {
        let n = |keys: &[&str]| first_str(v, keys).map(|t| t.lines().count());
        match (n(new), n(old)) {
            (None, None) => None,
            (a, r) => Some((a.unwrap_or(0), r.unwrap_or(0))),
        }
    };
    let new = ["new_string", "newString", "new_str"];
    let old = ["old_string", "oldString", "old_str"];
    if let Some(edits) = input.get("edits").and_then(Value::as_array) {
        let sum = edits
            .iter()
            .filter_map(|e| count(e, &new, &old))
            .fold((0, 0), |(a, r), (x, y)| (a + x, r + y));
        return (path, None, Some(sum));
    }
    if let Some(patch) = first_str(input, &["patch", "input"]).filter(|p| p.contains("*** ")) {
        return patch_lines(&patch);
    }
    (path, None, count(input, &new, &old))
}

/// Codex's `apply_patch`: the files it names and the lines it adds and removes.
fn patch_lines(patch: &str) -> (Option<String>, Option<String>, Option<(usize, usize)>) {
    let mut files = Vec::new();
    let (mut added, mut removed) = (0, 0);
    for line in patch.lines() {
        if let Some(f) = ["*** Update File: ", "*** Add File: ", "*** Delete File: "]
            .iter()
            .find_map(|p| line.strip_prefix(p))
        {
            files.push(f.trim().to_string());
        } else if line.starts_with('+') && !line.starts_with("+++") {
            added += 1;
        } else if line.starts_with('-') && !line.starts_with("---") {
            removed += 1;
        }
    }
    let more = files.len().saturating_sub(1);
    let place = (more > 0).then(|| {
        format!(
            "and {more} more {}",
            if more == 1 { "file" } else { "files" }
        )
    });
    (files.into_iter().next(), place, Some((added, removed)))
}

/// A shell command without the `bash -lc '…'` wrapper Codex puts around it.
fn command(c: &str) -> String {
    let t = c.trim();
    for wrap in [
        "/bin/bash -lc ",
        "bash -lc ",
        "/bin/sh -c ",
        "sh -c ",
        "/bin/zsh -lc ",
    ] {
        if let Some(inner) = t.strip_prefix(wrap) {
            let inner = inner.trim();
            for q in ['\'', '"'] {
                if inner.len() > 1 && inner.starts_with(q) && inner.ends_with(q) {
                    return inner[1..inner.len() - 1].to_string();
                }
            }
            return inner.to_string();
        }
    }
    t.to_string()
}

fn first_str(v: &Value, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|k| match v.get(*k)? {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Array(parts) if !parts.is_empty() => {
            let words: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
            (!words.is_empty()).then(|| command(&words.join(" ")))
        }
        _ => None,
    })
}

fn one_line(s: &str) -> String {
    let t = s.trim();
    let first = t.lines().next().unwrap_or("").trim_end();
    if t.lines().nth(1).is_some() {
        format!("{first} …")
    } else {
        first.to_string()
    }
}

fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(name: &str, input: Value) -> (String, Option<String>, Option<String>) {
        let l = describe(name, &input);
        (l.verb, l.object, l.place)
    }

    fn said(verb: &str, object: &str) -> (String, Option<String>, Option<String>) {
        (verb.to_string(), Some(object.to_string()), None)
    }

    #[test]
    fn every_clis_read_run_and_write_read_the_same() {
        // Claude Code, OpenCode, Gemini CLI, an ACP kind.
        for (name, input) in [
            ("Read", json!({ "file_path": "src/a.rs" })),
            ("read", json!({ "filePath": "src/a.rs" })),
            ("read_file", json!({ "absolute_path": "src/a.rs" })),
            ("read", json!({ "title": "src/a.rs" })),
        ] {
            assert_eq!(line(name, input), said("Read", "src/a.rs"), "{name}");
        }
        for (name, input) in [
            ("Bash", json!({ "command": "cargo test\n--all" })),
            (
                "shell",
                json!({ "command": "/bin/bash -lc 'cargo test\n--all'" }),
            ),
            (
                "exec_command",
                json!({ "cmd": ["bash", "-lc", "cargo test\n--all"] }),
            ),
            (
                "run_shell_command",
                json!({ "command": "cargo test\n--all" }),
            ),
        ] {
            assert_eq!(line(name, input), said("Ran", "cargo test …"), "{name}");
        }
        assert_eq!(
            line(
                "write_file",
                json!({ "file_path": "N.md", "content": "a\nb" })
            ),
            said("Wrote", "N.md")
        );
        assert_eq!(
            line("list_directory", json!({ "dir_path": "src" })),
            said("Listed", "src")
        );
        assert_eq!(line("LS", json!({})), said("Listed", "."));
        assert_eq!(
            line("WebFetch", json!({ "url": "https://x.dev" })),
            said("Fetched", "https://x.dev")
        );
        assert_eq!(
            line("mcp__paperclip__list_tasks", json!({})),
            ("mcp__paperclip__list_tasks".into(), None, None)
        );
    }

    #[test]
    fn edits_count_their_lines_and_searches_say_where() {
        let l = describe(
            "Edit",
            &json!({ "file_path": "a.rs", "old_string": "x", "new_string": "y\nz" }),
        );
        assert_eq!(
            (l.verb.as_str(), l.object.as_deref(), l.lines),
            ("Edited", Some("a.rs"), Some((2, 1)))
        );
        let l = describe(
            "MultiEdit",
            &json!({ "file_path": "a.rs", "edits": [
                { "old_string": "a", "new_string": "b" },
                { "old_string": "c\nd", "new_string": "" } ] }),
        );
        assert_eq!(l.lines, Some((1, 3)));
        let patch = "*** Begin Patch\n*** Update File: src/x.rs\n@@\n-old\n+new\n+more\n*** Add File: b.rs\n+b\n*** End Patch";
        let l = describe("apply_patch", &json!({ "input": patch }));
        assert_eq!(
            (l.object.as_deref(), l.place.as_deref(), l.lines),
            (Some("src/x.rs"), Some("and 1 more file"), Some((3, 1)))
        );
        // No counts when the input does not say.
        assert_eq!(describe("edit", &json!({ "path": "a" })).lines, None);
        assert_eq!(
            line("Grep", json!({ "pattern": "TODO", "path": "src" })),
            (
                "Searched".into(),
                Some("TODO".into()),
                Some("in src".into())
            )
        );
        assert_eq!(
            line("glob", json!({ "pattern": "**/*.rs" })),
            said("Searched", "**/*.rs")
        );
    }

    #[test]
    fn plans_questions_and_subagents_are_words() {
        assert_eq!(
            line("TodoWrite", json!({ "todos": [{}, {}, {}] })),
            ("Planned".into(), None, Some("3 items".into()))
        );
        assert_eq!(
            line(
                "AskUserQuestion",
                json!({ "questions": [{ "question": "Which DB?" }] })
            ),
            ("Asked".into(), None, Some("Which DB?".into()))
        );
        assert_eq!(
            line(
                "Task",
                json!({ "description": "Find the bug", "subagent_type": "general-purpose" })
            ),
            (
                "Delegated".into(),
                None,
                Some("to general-purpose: Find the bug".into())
            )
        );
        assert_eq!(
            line("task", json!({ "prompt": "Look" })),
            ("Delegated".into(), None, Some("to a subagent: Look".into()))
        );
        assert_eq!(ToolAction::of("think"), ToolAction::Think);
        assert_eq!(ToolAction::of("execute"), ToolAction::Run);
        assert_eq!(ToolAction::of("search"), ToolAction::Search);
        assert_eq!(ToolAction::of("fetch"), ToolAction::Fetch);
        assert_eq!(ToolAction::of("edit"), ToolAction::Edit);
        assert_eq!(
            error_line("Error: no such file\nat line 2"),
            "Error: no such file …"
        );
        let long = "x".repeat(300);
        assert_eq!(
            describe("Bash", &json!({ "command": long }))
                .object
                .unwrap()
                .chars()
                .count(),
            101
        );
    }
}
