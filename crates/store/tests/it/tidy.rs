//! The house rules the compiler does not check, checked as tests (as
//! rust-analyzer does): no import circle between the store's modules or the
//! runtime's, and no source file longer than one sitting's reading.
//!
//! A module here is a file; `crate::a::b::f` names the longest module path
//! that is a file. A folder's `mod.rs` that only declares and re-exports its
//! children is a facade for other crates: modules inside the crate name the
//! file they use, so an arrow into a facade is an arrow into all of it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, by module path (`issues::list::query`; the
/// crate root is "").
fn modules(dir: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(dir).unwrap().with_extension("");
                let mut parts: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if parts.last().is_some_and(|p| p == "mod") {
                    parts.pop();
                }
                if parts == ["lib"] || parts == ["main"] {
                    parts.clear();
                }
                out.insert(parts.join("::"), path);
            }
        }
    }
    out
}

/// The source without comments and without its unit tests (a test module
/// may use anything).
fn code(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => &text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Every path the code names from `crate::`, with `use crate::a::{b, c::{d}}`
/// groups expanded.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        expand("", rest, &mut out);
    }
    out
}

/// Reads one path (or group) at the start of `text`, after `prefix`.
fn expand(prefix: &str, text: &str, out: &mut Vec<String>) {
    let mut path = prefix.to_string();
    let mut end = 0;
    for (i, c) in text.char_indices() {
        if is_ident(c) || c == ':' {
            end = i + c.len_utf8();
            continue;
        }
        if c == '{' {
            let segment = text[..i].trim_end_matches(':');
            path.push_str(segment);
            let inner = group(&text[i + 1..]);
            for part in split_top(inner) {
                let part = part.trim();
                if part.is_empty() || part == "self" || part.starts_with("self ") {
                    out.push(path.trim_end_matches(':').to_string());
                    continue;
                }
                expand(&format!("{path}::"), part, out);
            }
            return;
        }
        break;
    }
    path.push_str(text[..end].trim_end_matches(':'));
    out.push(path);
}

/// The text up to the brace that closes the group `text` is inside.
fn group(text: &str) -> &str {
    let mut depth = 1;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return &text[..i];
                }
            }
            _ => {}
        }
    }
    text
}

fn split_top(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// The module arrows of the crate whose sources are in `dir`.
fn graph(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(dir);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, path) in &mods {
        let targets = edges.entry(name.clone()).or_default();
        let code = code(path);
        // A facade's `pub use child::*` is an arrow to its child.
        for line in code.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("pub use ").or(line.strip_prefix("use ")) {
                let child = rest.split("::").next().unwrap_or("");
                let child = if name.is_empty() {
                    child.to_string()
                } else {
                    format!("{name}::{child}")
                };
                if mods.contains_key(&child) && !rest.starts_with("crate::") {
                    targets.insert(child);
                }
            }
        }
        for used in crate_paths(&code) {
            let segments: Vec<&str> = used.split("::").collect();
            let target = (1..=segments.len())
                .rev()
                .map(|n| segments[..n].join("::"))
                .find(|candidate| mods.contains_key(candidate));
            if let Some(target) = target {
                if &target != name && !target.is_empty() {
                    targets.insert(target);
                }
            }
        }
    }
    edges
}

/// One circle in `edges`, as the modules it passes through, if any.
fn a_circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        marks.insert(node.to_string(), Mark::Open);
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            match marks.get(next).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let from = path.iter().position(|p| p == next).unwrap();
                    let mut circle = path[from..].to_vec();
                    circle.push(next.clone());
                    return Some(circle);
                }
                Mark::New => {
                    if let Some(circle) = visit(next, edges, marks, path) {
                        return Some(circle);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks.insert(node.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in edges.keys() {
        if marks.get(node).copied().unwrap_or(Mark::New) == Mark::New {
            if let Some(circle) = visit(node, edges, &mut marks, &mut Vec::new()) {
                return Some(circle);
            }
        }
    }
    None
}

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn the_store_and_the_runtime_have_no_import_circle() {
    for krate in ["store", "runtime"] {
        let edges = graph(&crates_dir().join(krate).join("src"));
        assert!(edges.len() > 20, "{krate}: too few modules found");
        if let Some(circle) = a_circle(&edges) {
            panic!("{krate} has an import circle: {}", circle.join(" -> "));
        }
    }
}

#[test]
fn the_circle_finder_finds_a_circle_through_a_group_import() {
    let mut edges = BTreeMap::new();
    for (from, to) in [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")] {
        edges
            .entry(from.to_string())
            .or_insert_with(BTreeSet::new)
            .insert(to.to_string());
    }
    let circle = a_circle(&edges).unwrap();
    assert_eq!(circle.first(), circle.last());
    assert_eq!(circle.len(), 4);
    let paths = crate_paths(
        "use crate::issues::{self, list::{query::f, filter::G}};\nx(crate::runs::table::get);",
    );
    assert_eq!(
        paths,
        [
            "issues",
            "issues::list::query::f",
            "issues::list::filter::G",
            "runs::table::get"
        ]
    );
}

#[test]
fn no_source_file_is_longer_than_a_sitting() {
    const MOST: usize = 600;
    let mut long = Vec::new();
    let mut stack = vec![crates_dir()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && name != "node_modules" {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                let lines = std::fs::read_to_string(&path).unwrap().lines().count();
                if lines > MOST {
                    long.push(format!("{} ({lines} lines)", path.display()));
                }
            }
        }
    }
    long.sort();
    assert!(long.is_empty(), "files over {MOST} lines: {long:#?}");
}
