//! Input extractors that answer bad input the way upstream does: a JSON body
//! that does not fit its schema is a 400 naming the offending field path,
//! an oversized body is a 413, and unknown fields are ignored.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::error::ApiError;

pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<JsonBody<T>, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")
                    .with_details(json!({ "maxBytes": crate::MAX_BODY_BYTES }))
            } else {
                ApiError::new(StatusCode::BAD_REQUEST, rejection.body_text())
            }
        })?;
        parse_json(&bytes).map(JsonBody)
    }
}

/// Parses a body, reporting the first error with its field path, e.g.
/// `{"path": ["status"], "code": "invalid_value", "message": "..."}`.
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let bytes = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}".as_slice()
    } else {
        bytes
    };
    if let Some(at) = nul_escape(bytes) {
        // Neither engine stores U+0000 in text (Postgres refuses it), so it
        // is refused here rather than as a database error.
        return Err(ApiError::validation(json!([{
            "code": "invalid_string",
            "path": [],
            "message": format!("Text must not contain NUL (\\u0000 at byte {at})"),
        }])));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        // One JSON value and nothing after it but whitespace: `{...} xyz`
        // (or a second value) is not a body whose meaning is clear.
        Ok(value) => de.end().map(|()| value).map_err(|e| malformed(&e)),
        Err(err) => {
            let inner = err.inner();
            if inner.is_syntax() || inner.is_eof() {
                return Err(malformed(inner));
            }
            let mut path: Vec<Value> = err
                .path()
                .iter()
                .filter_map(|segment| match segment {
                    serde_path_to_error::Segment::Seq { index } => Some(json!(index)),
                    serde_path_to_error::Segment::Map { key } => Some(json!(key)),
                    serde_path_to_error::Segment::Enum { variant } => Some(json!(variant)),
                    serde_path_to_error::Segment::Unknown => None,
                })
                .collect();
            let message = strip_position(&inner.to_string());
            if message.starts_with("missing field") {
                if let Some(field) = message.split('`').nth(1) {
                    path.push(json!(field));
                }
            }
            if let Some(values) = expected_variants(&message) {
                let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
                return Err(ApiError::validation(json!([{
                    "code": "invalid_value",
                    "values": values,
                    "path": path,
                    "message": format!("Invalid option: expected one of {}", quoted.join("|")),
                }])));
            }
            Err(ApiError::validation(
                json!([{ "code": "invalid_type", "path": path, "message": message }]),
            ))
        }
    }
}

fn malformed(err: &serde_json::Error) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "Malformed JSON body").with_details(json!([{
        "code": "invalid_json",
        "path": [],
        "message": err.to_string(),
    }]))
}

/// Byte offset of a `\u0000` escape in a JSON text. Outside strings JSON has
/// no backslashes, and inside them each backslash starts one escape, so
/// walking escapes in order finds exactly the NULs (`\\u0000` is not one).
fn nul_escape(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            if bytes.get(i + 1) == Some(&b'u') && bytes.get(i + 2..i + 6) == Some(b"0000") {
                return Some(i);
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    None
}

/// The allowed values named by serde's "unknown variant `x`, expected one of `a`, `b`".
fn expected_variants(message: &str) -> Option<Vec<String>> {
    if !message.starts_with("unknown variant") {
        return None;
    }
    let (_, list) = message
        .split_once("expected one of ")
        .or_else(|| message.split_once("expected "))?;
    Some(
        list.split(", ")
            .map(|v| v.trim().trim_matches('`').to_string())
            .filter(|v| !v.is_empty())
            .collect(),
    )
}

fn strip_position(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// A header the server reads as text to decide something. Absent: `None`.
/// Present but not text (visible ASCII, spaces and tabs: bytes outside it,
/// such as Latin-1 or UTF-8, are not decoded by guessing): 400 naming the
/// header, never taken as absent, so a garbled credential or run id is not
/// silently dropped.
pub fn header_text<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<&'h str>, ApiError> {
    match headers.get(name) {
        None => Ok(None),
        Some(value) => value.to_str().map(Some).map_err(|_| not_text(name)),
    }
}

/// The 400 for a header (or cookie) that must be text and is not.
pub fn not_text(name: &str) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        format!("Header {name} must be text (visible ASCII)"),
    )
    .with_details(json!({ "code": "invalid_header", "header": name }))
}

/// Query strings, parsed into a struct of optional strings so that a bad
/// value is reported by the handler that knows what it means.
pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<QueryParams<T>, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        serde_urlencoded::from_str(query)
            .map(QueryParams)
            .map_err(|e| {
                ApiError::validation(
                    json!([{ "code": "invalid_type", "path": [], "message": e.to_string() }]),
                )
            })
    }
}

/// A `limit` query value: a positive integer up to `max`, else 400.
pub fn parse_limit(raw: Option<&str>, default: i64, max: i64) -> Result<i64, ApiError> {
    match raw {
        None | Some("") => Ok(default),
        Some(s) => match s.parse::<i64>() {
            Ok(n) if n >= 1 && n <= max => Ok(n),
            _ => Err(ApiError::validation(json!([{
                "code": "invalid_value",
                "path": ["limit"],
                "message": format!("limit must be an integer from 1 to {max}"),
            }]))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_core::input::IssuePatch;

    #[test]
    fn a_bad_enum_value_names_its_field() {
        let err = parse_json::<IssuePatch>(br#"{"status": "not_a_status"}"#).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        let details = err.details.unwrap();
        assert_eq!(details[0]["path"], json!(["status"]));
        assert_eq!(details[0]["code"], "invalid_value");
        assert_eq!(details[0]["values"].as_array().unwrap().len(), 7);
    }

    #[test]
    fn a_wrong_type_deep_in_a_list_names_the_index() {
        let err = parse_json::<IssuePatch>(br#"{"labelIds": ["a", 3]}"#).unwrap_err();
        assert_eq!(err.details.unwrap()[0]["path"], json!(["labelIds", 1]));
    }

    #[test]
    fn nul_escapes_are_refused_but_escaped_backslashes_are_not() {
        assert_eq!(nul_escape(br#"{"title": "a\u0000b"}"#), Some(12));
        assert_eq!(nul_escape(br#"{"title": "a\\u0000b"}"#), None);
        assert_eq!(nul_escape(br#"{"title": "a\\\u0000"}"#), Some(14));
        assert_eq!(nul_escape(br#"{"title": "\u00001"}"#), Some(11));
        let err = parse_json::<IssuePatch>(br#"{"title": "x\u0000"}"#).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
    }

    #[test]
    fn one_json_value_and_only_whitespace_after_it() {
        for bad in [
            &br#"{"title": "a"} xyz"#[..],
            br#"{"title": "a"}{}"#,
            br#"{"title": "a"} 1"#,
        ] {
            let err = parse_json::<IssuePatch>(bad).unwrap_err();
            assert_eq!(err.status, StatusCode::BAD_REQUEST);
            assert_eq!(err.details.unwrap()[0]["code"], "invalid_json");
        }
        assert!(parse_json::<IssuePatch>(b"{\"title\": \"a\"} \r\n\t ").is_ok());
    }

    #[test]
    fn a_header_that_is_not_text_is_refused_not_dropped() {
        let mut headers = HeaderMap::new();
        headers.insert("x-a", axum::http::HeaderValue::from_static("run 1"));
        headers.insert(
            "x-b",
            axum::http::HeaderValue::from_bytes(b"r\xc3\xa9").unwrap(),
        );
        assert_eq!(header_text(&headers, "x-a").unwrap(), Some("run 1"));
        assert_eq!(header_text(&headers, "x-none").unwrap(), None);
        let err = header_text(&headers, "x-b").unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        assert_eq!(err.details.unwrap()["header"], "x-b");
    }

    #[test]
    fn unknown_fields_are_ignored_and_missing_ones_named() {
        assert!(parse_json::<IssuePatch>(br#"{"whatever": 1}"#).is_ok());
        let err =
            parse_json::<paperclip_core::input::NewIssue>(br#"{"description": "x"}"#).unwrap_err();
        assert_eq!(err.details.unwrap()[0]["path"], json!(["title"]));
    }
}
