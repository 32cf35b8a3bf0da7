//! Server-sent events for the three wire formats: a finite list of events,
//! optionally followed by a stream that never ends ([`crate::Turn::Hang`]).

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::Response;
use futures::stream::{self, StreamExt};
use serde_json::Value;

/// One SSE frame; `event: None` gives a data-only frame (chat completions).
pub(crate) fn frame(event: Option<&str>, data: &Value) -> Bytes {
    let data = data.to_string();
    Bytes::from(match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    })
}

pub(crate) fn response(frames: Vec<Bytes>, hang: bool) -> Response {
    let head = stream::iter(frames.into_iter().map(Ok::<_, Infallible>));
    let body = if hang {
        Body::from_stream(head.chain(stream::pending()))
    } else {
        Body::from_stream(head)
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .expect("static response parts")
}

/// Adds the provider's rate-limit headers to a response.
pub(crate) fn with_headers(mut r: Response, headers: &[(String, String)]) -> Response {
    for (name, value) in headers {
        if let (Ok(n), Ok(v)) = (
            axum::http::HeaderName::from_bytes(name.as_bytes()),
            axum::http::HeaderValue::from_str(value),
        ) {
            r.headers_mut().insert(n, v);
        }
    }
    r
}

/// A JSON error response with the given status.
pub(crate) fn json_error(status: u16, body: Value) -> Response {
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .expect("static response parts")
}

/// A plausible token count for a request body: about four bytes a token.
pub(crate) fn estimate_tokens(body: &Value) -> u64 {
    (body.to_string().len() as u64 / 4).max(1)
}
