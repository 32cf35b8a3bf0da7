//! The YAML subset the original writes in company packages (frontmatter and
//! `.paperclip.yaml`): two-space blocks, strings as JSON literals, keys in the
//! original's priority order. Reading accepts what the original reads (bare
//! strings, `null`/`~`, numbers, JSON literals), so a package from either side
//! reads the same on both.

use serde_json::{Map, Number, Value};

/// Keys written first, in this order (the original's order, so a package
/// exported here diffs cleanly against one exported there); the rest follow
/// alphabetically.
const KEY_PRIORITY: &[&str] = &[
    "name",
    "description",
    "title",
    "schema",
    "kind",
    "slug",
    "reportsTo",
    "reportsToExistingAgentId",
    "reportsToExistingAgentSlug",
    "skills",
    "owner",
    "assignee",
    "project",
    "schedule",
    "version",
    "license",
    "authors",
    "homepage",
    "tags",
    "includes",
    "requirements",
    "role",
    "icon",
    "capabilities",
    "logoPath",
    "adapter",
    "runtime",
    "permissions",
    "permissionGrants",
    "budgetMonthlyCents",
    "metadata",
];

fn key_order(a: &str, b: &str) -> std::cmp::Ordering {
    let rank = |k: &str| KEY_PRIORITY.iter().position(|p| *p == k);
    match (rank(a), rank(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a
            .to_lowercase()
            .cmp(&b.to_lowercase())
            .then_with(|| a.cmp(b)),
    }
}

fn ordered(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|(a, _), (b, _)| key_order(a, b));
    entries
}

fn is_scalar(v: &Value) -> bool {
    match v {
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => true,
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

/// Lines of `value` as a block at `level` (two spaces a level).
pub fn render_block(value: &Value, level: usize, out: &mut Vec<String>) {
    let indent = "  ".repeat(level);
    match value {
        Value::Array(items) if items.is_empty() => out.push(format!("{indent}[]")),
        Value::Array(items) => {
            for item in items {
                if is_scalar(item) {
                    out.push(format!("{indent}- {}", scalar(item)));
                } else {
                    out.push(format!("{indent}-"));
                    render_block(item, level + 1, out);
                }
            }
        }
        Value::Object(map) if map.is_empty() => out.push(format!("{indent}{{}}")),
        Value::Object(map) => {
            for (key, entry) in ordered(map) {
                if is_scalar(entry) {
                    out.push(format!("{indent}{key}: {}", scalar(entry)));
                } else {
                    out.push(format!("{indent}{key}:"));
                    render_block(entry, level + 1, out);
                }
            }
        }
        other => out.push(format!("{indent}{}", scalar(other))),
    }
}

/// A whole YAML file (`.paperclip.yaml`).
pub fn render_file(value: &Value) -> String {
    let mut lines = Vec::new();
    render_block(value, 0, &mut lines);
    lines.join("\n") + "\n"
}

/// `---` frontmatter `---`; null keys are left out, as the original does.
pub fn render_frontmatter(front: &Map<String, Value>) -> String {
    let mut lines = vec!["---".to_string()];
    for (key, value) in ordered(front) {
        if value.is_null() {
            continue;
        }
        if is_scalar(value) {
            lines.push(format!("{key}: {}", scalar(value)));
        } else {
            lines.push(format!("{key}:"));
            render_block(value, 1, &mut lines);
        }
    }
    lines.push("---".into());
    lines.join("\n") + "\n"
}

/// A markdown file with frontmatter and a body (trimmed; none is allowed).
pub fn build_markdown(front: &Map<String, Value>, body: &str) -> String {
    let body = body.replace("\r\n", "\n");
    let body = body.trim();
    match body.is_empty() {
        true => format!("{}\n", render_frontmatter(front)),
        false => format!("{}\n{body}\n", render_frontmatter(front)),
    }
}

/// Frontmatter and body of a markdown file; a file without a closed
/// frontmatter block is all body.
pub fn parse_markdown(raw: &str) -> (Map<String, Value>, String) {
    let text = raw.replace("\r\n", "\n");
    let Some(rest) = text.strip_prefix("---\n") else {
        return (Map::new(), text.trim().to_string());
    };
    // The closing fence may directly follow the opening one (empty frontmatter).
    let (front, body) = match rest.strip_prefix("---\n") {
        Some(body) => ("", body),
        None => match rest.find("\n---\n") {
            Some(at) => (&rest[..at], &rest[at + 5..]),
            None => match rest.strip_suffix("\n---") {
                Some(front) => (front, ""),
                None => return (Map::new(), text.trim().to_string()),
            },
        },
    };
    (parse_map(front), body.trim().to_string())
}

/// A YAML document as a map (anything else reads as an empty map, as the
/// original reads it).
pub fn parse_map(raw: &str) -> Map<String, Value> {
    let lines = prepare(raw);
    if lines.is_empty() {
        return Map::new();
    }
    match parse_block(&lines, 0, lines[0].indent).0 {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

struct Line<'a> {
    indent: usize,
    content: &'a str,
}

fn prepare(raw: &str) -> Vec<Line<'_>> {
    raw.lines()
        .map(|line| Line {
            indent: line.len() - line.trim_start_matches(' ').len(),
            content: line.trim(),
        })
        .filter(|l| !l.content.is_empty() && !l.content.starts_with('#'))
        .collect()
}

pub fn parse_scalar(raw: &str) -> Value {
    let t = raw.trim();
    match t {
        "" => return Value::String(String::new()),
        "null" | "~" => return Value::Null,
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        "[]" => return Value::Array(vec![]),
        "{}" => return Value::Object(Map::new()),
        _ => {}
    }
    if is_number(t) {
        if let Ok(n) = t.parse::<i64>() {
            return Value::Number(n.into());
        }
        if let Some(n) = t.parse::<f64>().ok().and_then(Number::from_f64) {
            return Value::Number(n);
        }
    }
    if t.starts_with('"') || t.starts_with('[') || t.starts_with('{') {
        if let Ok(v) = serde_json::from_str(t) {
            return v;
        }
    }
    Value::String(t.to_string())
}

fn is_number(t: &str) -> bool {
    let digits = t.strip_prefix('-').unwrap_or(t);
    let (int, frac) = match digits.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (digits, None),
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    all_digits(int) && frac.is_none_or(all_digits)
}

fn parse_block(lines: &[Line], start: usize, level: usize) -> (Value, usize) {
    let mut i = start;
    if i >= lines.len() || lines[i].indent < level {
        return (Value::Object(Map::new()), i);
    }
    if lines[i].indent == level && lines[i].content.starts_with('-') {
        let mut items = Vec::new();
        while i < lines.len() && lines[i].indent == level && lines[i].content.starts_with('-') {
            let rest = lines[i].content[1..].trim();
            i += 1;
            if rest.is_empty() {
                let (nested, next) = parse_block(lines, i, level + 2);
                items.push(nested);
                i = next;
                continue;
            }
            let inline_key = rest
                .find(':')
                .filter(|at| *at > 0 && !rest.starts_with(['"', '{', '[']));
            if let Some(at) = inline_key {
                let mut obj = Map::new();
                obj.insert(rest[..at].trim().to_string(), parse_scalar(&rest[at + 1..]));
                if i < lines.len() && lines[i].indent > level {
                    let (nested, next) = parse_block(lines, i, level + 2);
                    if let Value::Object(more) = nested {
                        obj.extend(more);
                    }
                    i = next;
                }
                items.push(Value::Object(obj));
                continue;
            }
            items.push(parse_scalar(rest));
        }
        return (Value::Array(items), i);
    }
    let mut map = Map::new();
    while i < lines.len() && lines[i].indent >= level {
        let line = &lines[i];
        if line.indent != level {
            i += 1;
            continue;
        }
        let Some(at) = line.content.find(':').filter(|at| *at > 0) else {
            i += 1;
            continue;
        };
        let key = line.content[..at].trim().to_string();
        let rest = line.content[at + 1..].trim();
        i += 1;
        if rest.is_empty() {
            let (nested, next) = parse_block(lines, i, level + 2);
            map.insert(key, nested);
            i = next;
        } else {
            map.insert(key, parse_scalar(rest));
        }
    }
    (Value::Object(map), i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn frontmatter_is_written_in_the_originals_order_and_quoting() {
        let front = obj(
            json!({ "reportsTo": "ceo", "title": "CTO", "name": "Ada", "zeta": null, "skills": ["a", "b"] }),
        );
        let md = build_markdown(&front, "  Body text\r\n");
        assert_eq!(
            md,
            "---\nname: \"Ada\"\ntitle: \"CTO\"\nreportsTo: \"ceo\"\nskills:\n  - \"a\"\n  - \"b\"\n---\n\nBody text\n"
        );
        let (back, body) = parse_markdown(&md);
        assert_eq!(body, "Body text");
        assert_eq!(
            Value::Object(back),
            json!({ "name": "Ada", "title": "CTO", "reportsTo": "ceo", "skills": ["a", "b"] })
        );
    }

    #[test]
    fn nested_maps_and_lists_of_maps_round_trip() {
        let doc = json!({
            "schema": "paperclip/v1",
            "schemaVersion": 6,
            "agents": { "ceo": { "adapter": { "type": "process", "config": { "args": ["-c", "echo: hi"], "timeoutSec": 30 } }, "budgetMonthlyCents": 500 } },
            "routines": { "daily": { "triggers": [ { "kind": "schedule", "cronExpression": "0 9 * * *", "enabled": false } ] } },
            "tasks": { "acm-1": { "comments": [ { "body": "line one\nline \"two\"", "authorType": "agent", "authorAgentSlug": null } ], "blockedBy": [] } },
            "ratio": 1.5,
            "empty": {}
        });
        let text = render_file(&doc);
        assert_eq!(Value::Object(parse_map(&text)), doc, "{text}");
    }

    #[test]
    fn hand_written_yaml_reads_like_the_original_reads_it() {
        let text = "# a comment\nname: Solo Shop\ncount: 3\nnothing: ~\nlist:\n  - plain words\n  - key: v\n    other: 2\n";
        assert_eq!(
            Value::Object(parse_map(text)),
            json!({ "name": "Solo Shop", "count": 3, "nothing": null, "list": ["plain words", { "key": "v", "other": 2 }] })
        );
    }

    #[test]
    fn a_file_without_frontmatter_is_all_body() {
        let (front, body) = parse_markdown("# Title\n\ntext\n");
        assert!(front.is_empty());
        assert_eq!(body, "# Title\n\ntext");
        let (front, body) = parse_markdown("---\nname: \"x\"\n---");
        assert_eq!(front["name"], "x");
        assert_eq!(body, "");
    }
}
