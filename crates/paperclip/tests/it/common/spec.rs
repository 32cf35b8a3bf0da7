//! The server's own OpenAPI document as a test oracle: a real response is
//! checked against the schema its route declares for its status, so the
//! spec cannot drift from the wire (a generated client trusts the spec).
//!
//! A small validator for what utoipa emits (OpenAPI 3.1, JSON Schema
//! 2020-12 subset): `$ref` (any local pointer), `type` (one or a list),
//! `enum`, `const`, `properties`, `required`, `additionalProperties`,
//! `propertyNames`, `items`, `allOf`, `anyOf`, `oneOf` (exactly one),
//! `not`, numeric and length bounds, integer `format`s and 3.0's
//! `nullable`. Annotations are ignored; any other keyword is reported as
//! unsupported rather than skipped, so pointing it at a new route never
//! passes by not looking.
//!
//! ```ignore
//! let spec = Spec::of(&server).await;
//! spec.assert_response("get", "/api/routines/{id}", 200, &body);
//! // or, from a concrete path:
//! let route = spec.route_of("get", "/api/routines/5f0c...").unwrap();
//! ```

use serde_json::Value;

use super::TestServer;

/// Keywords that describe and never constrain.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "example",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "discriminator",
    "contentMediaType",
    "contentEncoding",
    "$comment",
    "xml",
    "externalDocs",
];

/// Deeper than any real schema: a `$ref` cycle walked by a value that
/// never ends is reported instead of overflowing the stack.
const MAX_DEPTH: usize = 128;

pub struct Spec {
    doc: Value,
}

impl Spec {
    /// `GET /api/openapi.json` of a running server.
    pub async fn of(server: &TestServer) -> Spec {
        Spec::from_value(server.ok_get("/api/openapi.json").await)
    }

    pub fn from_value(doc: Value) -> Spec {
        assert!(
            doc["paths"].is_object(),
            "not an OpenAPI document: no paths"
        );
        Spec { doc }
    }

    pub fn doc(&self) -> &Value {
        &self.doc
    }

    /// Every `(method, route)` the document declares, methods lowercase.
    pub fn operations(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (route, item) in self.doc["paths"].as_object().into_iter().flatten() {
            for method in item.as_object().into_iter().flatten().map(|(m, _)| m) {
                if matches!(
                    method.as_str(),
                    "get" | "put" | "post" | "delete" | "patch" | "head" | "options" | "trace"
                ) {
                    out.push((method.clone(), route.clone()));
                }
            }
        }
        out
    }

    /// The declared route a concrete path (no query) is served by, e.g.
    /// `/api/routines/abc` → `/api/routines/{id}`. Where several match, the
    /// one with the most literal segments wins (`/api/agents/me` over
    /// `/api/agents/{id}`), as the router picks.
    pub fn route_of(&self, method: &str, path: &str) -> Option<String> {
        let want: Vec<&str> = path.split('/').collect();
        self.operations()
            .into_iter()
            .filter(|(m, _)| m.eq_ignore_ascii_case(method))
            .filter_map(|(_, route)| {
                let have: Vec<&str> = route.split('/').collect();
                if have.len() != want.len() {
                    return None;
                }
                let mut literal = 0;
                for (h, w) in have.iter().zip(&want) {
                    if h.starts_with('{') && h.ends_with('}') {
                        if w.is_empty() {
                            return None;
                        }
                    } else if h == w {
                        literal += 1;
                    } else {
                        return None;
                    }
                }
                Some((literal, route))
            })
            .max_by_key(|(literal, _)| *literal)
            .map(|(_, route)| route)
    }

    /// The JSON schema `method route` declares for `status`: `Ok(None)` when
    /// the status is declared without a JSON body, `Err` when the status (or
    /// the operation) is not declared at all.
    pub fn response_schema(
        &self,
        method: &str,
        route: &str,
        status: u16,
    ) -> Result<Option<&Value>, String> {
        let op = self.doc["paths"]
            .get(route)
            .and_then(|item| item.get(method.to_ascii_lowercase()))
            .ok_or_else(|| format!("{method} {route} is not in the spec"))?;
        let responses = &op["responses"];
        let response = responses
            .get(status.to_string())
            .or_else(|| responses.get(format!("{}XX", status / 100)))
            .or_else(|| responses.get("default"))
            .ok_or_else(|| {
                let declared: Vec<&String> = responses
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, _)| k)
                    .collect();
                format!("{method} {route} does not declare status {status} (declares {declared:?})")
            })?;
        let response = match response.get("$ref") {
            Some(Value::String(r)) => self.pointer(r)?,
            _ => response,
        };
        Ok(response
            .get("content")
            .and_then(|c| {
                c.get("application/json").or_else(|| {
                    c.as_object()?
                        .iter()
                        .find(|(ct, _)| ct.ends_with("+json"))
                        .map(|(_, v)| v)
                })
            })
            .and_then(|media| media.get("schema")))
    }

    /// Checks a response body against what its route declares for its
    /// status. A JSON body where the spec declares none is a mismatch too.
    pub fn check_response(
        &self,
        method: &str,
        route: &str,
        status: u16,
        body: &Value,
    ) -> Result<(), Vec<String>> {
        match self.response_schema(method, route, status) {
            Err(e) => Err(vec![e]),
            Ok(None) if body.is_null() => Ok(()),
            Ok(None) => Err(vec![format!(
                "{method} {route} {status}: the spec declares no JSON body, the server sent one"
            )]),
            Ok(Some(schema)) => {
                let errors = self.validate(schema, body);
                if errors.is_empty() {
                    Ok(())
                } else {
                    Err(errors)
                }
            }
        }
    }

    /// [`Spec::check_response`], panicking with every mismatch and the body.
    pub fn assert_response(&self, method: &str, route: &str, status: u16, body: &Value) {
        if let Err(errors) = self.check_response(method, route, status, body) {
            panic!(
                "{method} {route} {status} does not match the spec:\n  {}\nbody: {}",
                errors.join("\n  "),
                serde_json::to_string_pretty(body).unwrap()
            );
        }
    }

    /// Every way `value` breaks `schema`, each as `at <JSON pointer>: why`.
    pub fn validate(&self, schema: &Value, value: &Value) -> Vec<String> {
        let mut errors = Vec::new();
        self.check(schema, value, "", &mut errors, 0);
        errors
    }

    fn pointer(&self, reference: &str) -> Result<&Value, String> {
        let pointer = reference
            .strip_prefix('#')
            .ok_or_else(|| format!("only local $refs are supported: {reference}"))?;
        self.doc
            .pointer(pointer)
            .ok_or_else(|| format!("$ref {reference} resolves to nothing"))
    }

    fn check(
        &self,
        schema: &Value,
        value: &Value,
        at: &str,
        errors: &mut Vec<String>,
        depth: usize,
    ) {
        let here = if at.is_empty() { "/" } else { at };
        if depth > MAX_DEPTH {
            errors.push(format!("at {here}: schema nesting deeper than {MAX_DEPTH}"));
            return;
        }
        let schema = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                errors.push(format!("at {here}: the schema allows nothing here"));
                return;
            }
            Value::Object(map) => map,
            other => {
                errors.push(format!("at {here}: not a schema: {other}"));
                return;
            }
        };
        if value.is_null() && schema.get("nullable") == Some(&Value::Bool(true)) {
            return;
        }
        for (keyword, arg) in schema {
            match keyword.as_str() {
                "$ref" => match arg.as_str().map(|r| self.pointer(r)) {
                    Some(Ok(target)) => self.check(target, value, at, errors, depth + 1),
                    Some(Err(e)) => errors.push(format!("at {here}: {e}")),
                    None => errors.push(format!("at {here}: $ref is not a string")),
                },
                "type" => {
                    let types: Vec<&str> = match arg {
                        Value::String(t) => vec![t.as_str()],
                        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                        _ => vec![],
                    };
                    if !types.iter().any(|t| is_type(value, t)) {
                        errors.push(format!(
                            "at {here}: expected {}, got {}",
                            types.join(" or "),
                            kind(value)
                        ));
                    }
                }
                "enum" => {
                    if !arg.as_array().is_some_and(|vs| vs.contains(value)) {
                        errors.push(format!("at {here}: {value} is not one of {arg}"));
                    }
                }
                "const" => {
                    if arg != value {
                        errors.push(format!("at {here}: {value} is not {arg}"));
                    }
                }
                "required" => {
                    if let Some(object) = value.as_object() {
                        for name in arg
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                        {
                            if !object.contains_key(name) {
                                errors.push(format!(
                                    "at {here}: required property {name:?} is missing"
                                ));
                            }
                        }
                    }
                }
                "properties" => {
                    if let (Some(object), Some(props)) = (value.as_object(), arg.as_object()) {
                        for (name, sub) in props {
                            if let Some(v) = object.get(name) {
                                self.check(sub, v, &child(at, name), errors, depth + 1);
                            }
                        }
                    }
                }
                "additionalProperties" => {
                    if let Some(object) = value.as_object() {
                        let declared = schema.get("properties").and_then(Value::as_object);
                        for (name, v) in object {
                            if declared.is_some_and(|d| d.contains_key(name)) {
                                continue;
                            }
                            self.check(arg, v, &child(at, name), errors, depth + 1);
                        }
                    }
                }
                "propertyNames" => {
                    if let Some(object) = value.as_object() {
                        for name in object.keys() {
                            let key = Value::String(name.clone());
                            self.check(arg, &key, &child(at, name), errors, depth + 1);
                        }
                    }
                }
                "items" => {
                    if let Some(items) = value.as_array() {
                        for (i, v) in items.iter().enumerate() {
                            self.check(arg, v, &child(at, &i.to_string()), errors, depth + 1);
                        }
                    }
                }
                "allOf" => {
                    for sub in arg.as_array().into_iter().flatten() {
                        self.check(sub, value, at, errors, depth + 1);
                    }
                }
                "anyOf" | "oneOf" => {
                    let branches: Vec<Vec<String>> = arg
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|sub| {
                            let mut e = Vec::new();
                            self.check(sub, value, at, &mut e, depth + 1);
                            e
                        })
                        .collect();
                    let matched = branches.iter().filter(|e| e.is_empty()).count();
                    if matched == 0 {
                        let why: Vec<String> = branches
                            .iter()
                            .enumerate()
                            .map(|(i, e)| format!("[{i}] {}", e.join("; ")))
                            .collect();
                        errors.push(format!(
                            "at {here}: matches none of {keyword}: {}",
                            why.join(" | ")
                        ));
                    } else if keyword == "oneOf" && matched > 1 {
                        errors.push(format!(
                            "at {here}: matches {matched} alternatives of oneOf, exactly one allowed"
                        ));
                    }
                }
                "not" => {
                    let mut e = Vec::new();
                    self.check(arg, value, at, &mut e, depth + 1);
                    if e.is_empty() {
                        errors.push(format!("at {here}: matches a schema it must not"));
                    }
                }
                "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                    if let (Some(v), Some(bound)) = (value.as_f64(), arg.as_f64()) {
                        let ok = match keyword.as_str() {
                            "minimum" => v >= bound,
                            "maximum" => v <= bound,
                            "exclusiveMinimum" => v > bound,
                            _ => v < bound,
                        };
                        if !ok {
                            errors.push(format!("at {here}: {v} breaks {keyword} {bound}"));
                        }
                    }
                }
                "minLength" | "maxLength" => {
                    if let (Some(s), Some(bound)) = (value.as_str(), arg.as_u64()) {
                        let len = s.chars().count() as u64;
                        let ok = if keyword == "minLength" {
                            len >= bound
                        } else {
                            len <= bound
                        };
                        if !ok {
                            errors
                                .push(format!("at {here}: length {len} breaks {keyword} {bound}"));
                        }
                    }
                }
                "minItems" | "maxItems" => {
                    if let (Some(a), Some(bound)) = (value.as_array(), arg.as_u64()) {
                        let len = a.len() as u64;
                        let ok = if keyword == "minItems" {
                            len >= bound
                        } else {
                            len <= bound
                        };
                        if !ok {
                            errors.push(format!("at {here}: {len} items break {keyword} {bound}"));
                        }
                    }
                }
                "format" => {
                    let ok = match (arg.as_str(), value) {
                        (Some("int64"), Value::Number(n)) => n.as_i64().is_some(),
                        (Some("int32"), Value::Number(n)) => {
                            n.as_i64().is_some_and(|n| i32::try_from(n).is_ok())
                        }
                        (Some("uint64"), Value::Number(n)) => n.as_u64().is_some(),
                        (Some("uint32"), Value::Number(n)) => {
                            n.as_u64().is_some_and(|n| u32::try_from(n).is_ok())
                        }
                        // Other formats (date-time, double, ...) annotate,
                        // as JSON Schema 2020-12 has it by default.
                        _ => true,
                    };
                    if !ok {
                        errors.push(format!("at {here}: {value} is not a {arg}"));
                    }
                }
                "nullable" => {}
                k if ANNOTATIONS.contains(&k) => {}
                other => errors.push(format!(
                    "at {here}: unsupported schema keyword `{other}` (teach common/spec.rs)"
                )),
            }
        }
    }
}

fn child(at: &str, name: &str) -> String {
    format!("{at}/{}", name.replace('~', "~0").replace('/', "~1"))
}

fn is_type(value: &Value, ty: &str) -> bool {
    match ty {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        _ => false,
    }
}

fn kind(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) if s.chars().count() > 60 => {
            format!("string {:?}…", s.chars().take(60).collect::<String>())
        }
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> Spec {
        Spec::from_value(json!({
            "paths": {
                "/api/things/{id}": { "get": { "responses": {
                    "200": { "content": { "application/json": {
                        "schema": { "$ref": "#/components/schemas/Thing" } } } },
                    "404": { "description": "none" } } } },
                "/api/things/mine": { "get": { "responses": {} } }
            },
            "components": { "schemas": {
                "Kind": { "type": "string", "enum": ["a_b", "c"] },
                "Thing": { "type": "object", "required": ["id", "kind"],
                    "properties": {
                        "id": { "type": "integer", "format": "int32" },
                        "kind": { "$ref": "#/components/schemas/Kind" },
                        "parent": { "oneOf": [{ "type": "null" }, { "$ref": "#/components/schemas/Thing" }] },
                        "tags": { "type": "array", "items": { "type": "string" } }
                    } }
            } }
        }))
    }

    #[test]
    fn a_valid_body_passes_and_every_kind_of_break_is_named() {
        let spec = spec();
        let ok = json!({ "id": 1, "kind": "a_b", "parent": { "id": 2, "kind": "c" }, "tags": [] });
        spec.assert_response("get", "/api/things/{id}", 200, &ok);
        let bad = json!({ "id": 1.5, "kind": "AB", "parent": { "kind": "c" }, "tags": [3] });
        let errors = spec
            .check_response("get", "/api/things/{id}", 200, &bad)
            .unwrap_err();
        let text = errors.join("\n");
        assert!(text.contains("at /id: expected integer"), "{text}");
        assert!(text.contains("at /kind: \"AB\" is not one of"), "{text}");
        assert!(text.contains("at /parent: matches none of oneOf"), "{text}");
        assert!(text.contains("at /tags/0: expected string"), "{text}");
        assert!(spec
            .check_response("get", "/api/things/{id}", 404, &Value::Null)
            .is_ok());
        assert!(spec
            .check_response("get", "/api/things/{id}", 500, &Value::Null)
            .is_err());
        assert!(spec
            .check_response("get", "/api/things/{id}", 404, &json!({}))
            .is_err());
        let odd = json!({ "type": "string", "pattern": "^x" });
        assert!(spec.validate(&odd, &json!("x"))[0].contains("unsupported"));
    }

    #[test]
    fn concrete_paths_find_their_route() {
        let spec = spec();
        assert_eq!(
            spec.route_of("GET", "/api/things/7").as_deref(),
            Some("/api/things/{id}")
        );
        assert_eq!(
            spec.route_of("get", "/api/things/mine").as_deref(),
            Some("/api/things/mine")
        );
        assert_eq!(spec.route_of("get", "/api/things/"), None);
        assert_eq!(spec.route_of("post", "/api/things/7"), None);
    }
}
