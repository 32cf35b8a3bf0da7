//! Every JSON body our server gives in the upstream scenario is checked
//! against the response schema our own `/api/openapi.json` declares for its
//! route and status (`common/spec.rs`), so a client generated from the spec
//! reads exactly what is served, errors included.
//!
//! Beyond what the schema requires, a property we serve that the schema
//! does not declare (where the schema lists its properties, and allows no
//! others) is a mismatch too: a generated client would drop it.
//!
//! A mismatch is fixed in the declaration (`crates/server/src/routes`), never
//! in what is served. What cannot be fixed yet is listed in [`SPEC_EXCEPTIONS`]
//! with its reason; the test fails on a mismatch that is not listed and on a
//! listed one that no longer occurs.

use serde_json::Value;

use crate::common::spec::Spec;

/// One answer of the replay: the step, the request and what we served.
pub struct Served {
    pub step: String,
    pub method: String,
    /// The concrete path, query included.
    pub path: String,
    pub status: u16,
    pub body: Value,
}

/// Steps whose body may not match its declaration, each with its reason.
/// Empty: every body the scenario gets matches.
pub const SPEC_EXCEPTIONS: &[(&str, &str)] = &[];

/// Validates every served JSON body; returns how many were validated. Panics
/// on an unlisted mismatch or a stale exception.
pub fn check(spec: &Spec, served: &[Served]) -> usize {
    let mut validated = 0;
    let mut mismatches: Vec<(String, String)> = Vec::new();
    for s in served {
        if s.body.is_null() {
            continue;
        }
        let path = s.path.split('?').next().unwrap_or_default();
        let Some(route) = spec.route_of(&s.method, path) else {
            mismatches.push((
                s.step.clone(),
                format!("{} {path}: no route of the spec serves it", s.method),
            ));
            continue;
        };
        validated += 1;
        let mut errors = match spec.check_response(&s.method, &route, s.status, &s.body) {
            Ok(()) => Vec::new(),
            Err(errors) => errors,
        };
        if let Ok(Some(schema)) = spec.response_schema(&s.method, &route, s.status) {
            undeclared(spec, schema, &s.body, "", &mut errors, 0);
        }
        if !errors.is_empty() {
            mismatches.push((
                s.step.clone(),
                format!(
                    "{} {route} {}:\n    {}\n    body: {}",
                    s.method,
                    s.status,
                    errors.join("\n    "),
                    s.body
                ),
            ));
        }
    }
    let unlisted: Vec<String> = mismatches
        .iter()
        .filter(|(step, _)| !SPEC_EXCEPTIONS.iter().any(|(s, _)| s == step))
        .map(|(step, what)| format!("{step}: {what}"))
        .collect();
    let stale: Vec<&str> = SPEC_EXCEPTIONS
        .iter()
        .filter(|(s, _)| !mismatches.iter().any(|(step, _)| step == s))
        .map(|(s, _)| *s)
        .collect();
    println!(
        "upstream scenario: {validated} JSON bodies validated against /api/openapi.json, {} listed exceptions",
        SPEC_EXCEPTIONS.len()
    );
    assert!(
        unlisted.is_empty(),
        "{} bodies do not match what /api/openapi.json declares:\n{}",
        unlisted.len(),
        unlisted.join("\n")
    );
    assert!(
        stale.is_empty(),
        "listed spec exceptions that no longer occur (remove them): {stale:?}"
    );
    validated
}

/// Properties of `value` that `schema` lists none of, where it lists some
/// and allows no others; recursively.
fn undeclared(
    spec: &Spec,
    schema: &Value,
    value: &Value,
    at: &str,
    out: &mut Vec<String>,
    depth: usize,
) {
    if depth > 64 {
        return;
    }
    let mut parts = Vec::new();
    flatten(spec, schema, value, &mut parts, 0);
    match value {
        Value::Object(object) => {
            let mut declared: serde_json::Map<String, Value> = serde_json::Map::new();
            let mut lists = false;
            let mut others: Option<&Value> = None;
            for part in &parts {
                if let Some(props) = part.get("properties").and_then(Value::as_object) {
                    lists = true;
                    for (k, v) in props {
                        declared.entry(k.clone()).or_insert_with(|| v.clone());
                    }
                }
                if let Some(extra) = part.get("additionalProperties") {
                    others = Some(extra);
                }
            }
            for (name, v) in object {
                let here = format!("{at}/{name}");
                match (declared.get(name), others) {
                    (Some(sub), _) | (None, Some(sub)) => {
                        undeclared(spec, sub, v, &here, out, depth + 1)
                    }
                    (None, None) if lists => out.push(format!(
                        "at {here}: served, but the schema does not declare this property"
                    )),
                    (None, None) => {}
                }
            }
        }
        Value::Array(items) => {
            for part in &parts {
                if let Some(sub) = part.get("items") {
                    for (i, v) in items.iter().enumerate() {
                        undeclared(spec, sub, v, &format!("{at}/{i}"), out, depth + 1);
                    }
                }
            }
        }
        _ => {}
    }
}

/// `schema` with its `$ref`s resolved, its `allOf` parts, and the first
/// `oneOf`/`anyOf` alternative `value` matches: the parts that apply.
fn flatten<'a>(
    spec: &'a Spec,
    schema: &'a Value,
    value: &Value,
    out: &mut Vec<&'a Value>,
    depth: usize,
) {
    if depth > 64 {
        return;
    }
    if let Some(target) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| spec.doc().pointer(r.trim_start_matches('#')))
    {
        flatten(spec, target, value, out, depth + 1);
    }
    out.push(schema);
    for part in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        flatten(spec, part, value, out, depth + 1);
    }
    for keyword in ["oneOf", "anyOf"] {
        if let Some(matching) = schema
            .get(keyword)
            .and_then(Value::as_array)
            .and_then(|alts| alts.iter().find(|alt| spec.validate(alt, value).is_empty()))
        {
            flatten(spec, matching, value, out, depth + 1);
        }
    }
}
