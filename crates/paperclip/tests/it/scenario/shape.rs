//! The recursive shape walk: upstream's response and ours side by side.
//!
//! What counts as a difference follows the compatibility rule (never rename,
//! omit what we do not support): a key upstream fills that we lack, or a JSON
//! type that differs where neither side is null. Keys only we have, and keys
//! upstream leaves null or empty, are fine.

use std::collections::HashMap;

use serde_json::Value;

/// One place where our answer's shape departs from upstream's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Difference {
    pub step: String,
    /// JSON path from the response root, `$.a.b[0].c`.
    pub path: String,
    pub what: String,
}

/// The walk's tally: every path looked at, and every difference found.
#[derive(Default)]
pub struct Walk {
    pub paths_compared: usize,
    pub differences: Vec<Difference>,
}

pub fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value that says nothing upstream could miss when we leave it out.
fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

impl Walk {
    /// Compares `ours` against `theirs` at `path`. `ids` maps upstream's ids
    /// to ours, so a list's first upstream item is compared with the same
    /// entity on our side rather than whatever we happen to list first.
    pub fn compare(
        &mut self,
        step: &str,
        path: &str,
        theirs: &Value,
        ours: &Value,
        ids: &HashMap<String, String>,
    ) {
        self.paths_compared += 1;
        let (t, o) = (kind(theirs), kind(ours));
        if t != o && t != "null" && o != "null" {
            let what = if t == "array" || o == "array" {
                format!("list vs object: {o} here, {t} upstream")
            } else {
                format!("type: {o} here, {t} upstream")
            };
            self.differ(step, path, what);
            return;
        }
        match (theirs, ours) {
            (Value::Object(their_map), Value::Object(our_map)) => {
                for (key, their_value) in their_map {
                    let at = format!("{path}.{key}");
                    match our_map.get(key) {
                        Some(our_value) => self.compare(step, &at, their_value, our_value, ids),
                        None if is_empty(their_value) => self.paths_compared += 1,
                        None => {
                            self.paths_compared += 1;
                            self.differ(step, &at, format!("missing ({})", kind(their_value)));
                        }
                    }
                }
            }
            (Value::Array(their_items), Value::Array(our_items)) => {
                let Some(first) = their_items.first() else {
                    return;
                };
                if let Some(mine) = counterpart(first, our_items, ids) {
                    self.compare(step, &format!("{path}[0]"), first, mine, ids);
                }
            }
            _ => {}
        }
    }

    fn differ(&mut self, step: &str, path: &str, what: String) {
        self.differences.push(Difference {
            step: step.to_string(),
            path: path.to_string(),
            what,
        });
    }
}

/// Our item for upstream's `first`: the same entity by id when we know it,
/// else our first item.
fn counterpart<'a>(
    first: &Value,
    our_items: &'a [Value],
    ids: &HashMap<String, String>,
) -> Option<&'a Value> {
    let same = first
        .get("id")
        .and_then(Value::as_str)
        .and_then(|id| ids.get(id))
        .and_then(|ours| our_items.iter().find(|item| item["id"] == ours.as_str()));
    same.or(our_items.first())
}

/// The value at a `$.a.b[0].c` path, if `root` has one.
pub fn lookup<'a>(root: &'a Value, path: &str) -> Option<&'a Value> {
    let mut at = root;
    // `$.a.b` splits into "", "a", "b"; `$[0].a` into "[0]", "a".
    for part in path.strip_prefix('$')?.split('.') {
        let (key, indexed) = match part.strip_suffix("[0]") {
            Some(key) => (key, true),
            None => (part, false),
        };
        if !key.is_empty() {
            at = at.get(key)?;
        }
        if indexed {
            at = at.get(0)?;
        }
    }
    Some(at)
}
