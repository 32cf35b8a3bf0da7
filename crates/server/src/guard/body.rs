//! The guard's checks on a write's body: its type and its size. They are
//! kept apart from who may call (host, origin, local board) because they
//! depend on nothing about the caller, only on the request's route and
//! headers, and the body is read whole here so no handler can be held by a
//! slow or oversized one.

use axum::http::{header, HeaderMap, Method, StatusCode};
use serde_json::json;

use crate::error::ApiError;
use crate::extract::header_text;
use crate::AppState;

/// Room for the multipart framing around an attachment: boundaries, part
/// headers, a comment id field.
pub const MULTIPART_OVERHEAD: usize = 64 * 1024;

/// The body limit of an upload, when this request is one: an attachment
/// (`POST /api/companies/{companyId}/issues/{issueId}/attachments`) or a
/// company logo (`POST /api/companies/{companyId}/logo`) with a
/// `multipart/form-data` body. Every other write stays JSON-only.
pub(super) fn upload_limit(
    app: &AppState,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
) -> Result<Option<usize>, ApiError> {
    if *method != Method::POST {
        return Ok(None);
    }
    let Some(rest) = path.strip_prefix("/api/") else {
        return Ok(None);
    };
    let parts: Vec<&str> = rest.split('/').collect();
    let route = matches!(
        parts.as_slice(),
        ["companies", c, "issues", i, "attachments"] if !c.is_empty() && !i.is_empty()
    ) || matches!(parts.as_slice(), ["companies", c, "logo"] if !c.is_empty());
    let multipart = header_text(headers, header::CONTENT_TYPE.as_str())?
        .and_then(|v| v.split(';').next())
        .is_some_and(|e| e.trim().eq_ignore_ascii_case("multipart/form-data"));
    Ok((route && multipart).then(|| {
        usize::try_from(app.security.limits.attachment_max_bytes)
            .unwrap_or(usize::MAX)
            .saturating_add(MULTIPART_OVERHEAD)
    }))
}

pub(super) fn check_content_type(headers: &HeaderMap) -> Result<(), ApiError> {
    let declared_body = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() != "0")
        || headers.contains_key(header::TRANSFER_ENCODING);
    match header_text(headers, header::CONTENT_TYPE.as_str())? {
        Some(ct) if is_json(ct) => Ok(()),
        // A bodyless POST (`curl -X POST .../pause`) needs no type.
        None if !declared_body => Ok(()),
        other => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Expected a JSON body: send Content-Type: application/json",
        )
        .with_details(json!({
            "code": "unsupported_media_type",
            "contentType": other,
        }))),
    }
}

pub fn is_json(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Reads the whole body up front, within the size limit and the deadline,
/// so no handler can be held by a client that declares 10 GB or sends one
/// byte a second.
pub(super) async fn read_body(
    app: &AppState,
    headers: &HeaderMap,
    body: axum::body::Body,
    max: usize,
) -> Result<axum::body::Body, ApiError> {
    let too_large = || {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")
            .with_details(json!({ "maxBytes": max }))
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let limit = app.security.limits.body_timeout;
    match tokio::time::timeout(limit, axum::body::to_bytes(body, max)).await {
        Ok(Ok(bytes)) => Ok(axum::body::Body::from(bytes)),
        Ok(Err(err)) => {
            let over = std::error::Error::source(&err)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            if over {
                Err(too_large())
            } else {
                Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "Could not read the request body",
                ))
            }
        }
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!("Request body not received within {} s", limit.as_secs_f32()),
        )),
    }
}
