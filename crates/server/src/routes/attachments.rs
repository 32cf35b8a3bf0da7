//! Issue attachments (upstream's `/api/companies/:companyId/issues/:issueId/
//! attachments`, `/api/issues/:id/attachments`, `/api/attachments/:id/...`).
//! An upload is the one non-JSON body the API takes (see `guard`): its bytes
//! are checked against the declared type, stored, then recorded; content is
//! served with a disposition that never lets an uploaded page run here.

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use paperclip_core::attachment::{
    check_content, is_valid_content_type, key_tail, normalize_content_type, parse_range,
    serves_inline, Attachment,
};
use paperclip_store::thread::attachments;
use paperclip_store::thread::uploads::{self, NewAttachment};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::storage::{LocalDisk, Storage};
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(upload_attachment))
        .routes(routes!(list_attachments))
        .routes(routes!(attachment_content))
        .routes(routes!(delete_attachment))
}

pub(super) fn for_writes(app: &AppState) -> Storage {
    Storage::for_writes(&app.info.data_dir, app.security.limits.s3.as_ref())
}

pub(super) fn for_provider(app: &AppState, provider: &str) -> Option<Storage> {
    Storage::for_provider(
        provider,
        &app.info.data_dir,
        app.security.limits.s3.as_ref(),
    )
}

/// Before an issue (`Some`) or a whole company is deleted: the keys of its
/// objects in the bucket, which its rows will no longer name. Nothing to
/// read without a bucket: the data dir's files go by directory.
pub(crate) async fn objects_before_delete(
    app: &AppState,
    company_or_issue: &str,
    is_issue: bool,
) -> Vec<(String, String)> {
    if app.security.limits.s3.is_none() {
        return Vec::new();
    }
    let scope = if is_issue {
        match paperclip_store::issues::get(&app.store, company_or_issue).await {
            Ok(issue) => (issue.company_id, Some(issue.id)),
            Err(_) => return Vec::new(),
        }
    } else {
        (company_or_issue.to_string(), None)
    };
    attachments::s3_objects(&app.store, &scope.0, scope.1.as_deref())
        .await
        .unwrap_or_default()
}

/// After the rows are gone: their files (best effort; the rows decide what
/// exists, so a leftover is never served).
pub(crate) async fn forget_files(
    app: &AppState,
    company_id: &str,
    issue_id: Option<&str>,
    objects: Vec<(String, String)>,
) {
    LocalDisk::under(&app.info.data_dir)
        .remove_all(company_id, issue_id)
        .await;
    if let Some(s3) = for_provider(app, crate::storage::S3_PROVIDER) {
        for (company, key) in objects {
            if let Err(e) = s3.delete(&company, &key).await {
                tracing::warn!(error = %e, "could not delete an attachment object");
            }
        }
    }
}

fn unprocessable(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
}

fn bad_request(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, message)
}

/// Upload one file: a `multipart/form-data` body (the only non-JSON body
/// the API takes) with the file in field `file` and an optional text field
/// `issueCommentId`. Bytes that contradict the declared type are refused.
#[utoipa::path(post, path = "/api/companies/{companyId}/issues/{issueId}/attachments", tag = "issues",
    params(("companyId" = String, Path), ("issueId" = String, Path)),
    responses((status = 201, body = Attachment), (status = 400, description = "Missing file field 'file' or a malformed body"),
        (status = 404, description = "Issue not found"),
        (status = 422, description = "Empty, too large, not what its type says, or the issue is another company's")))]
#[paperclip_macros::handler]
async fn upload_attachment(
    State(app): State<AppState>,
    caller: Caller,
    Path((company_id, issue_id)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<(StatusCode, Json<Attachment>)> {
    access::company_scope(&app, &caller, &company_id).await?;
    let issue = paperclip_store::issues::get(&app.store, &issue_id).await?;
    if issue.company_id != company_id {
        return Err(unprocessable("Issue does not belong to company"));
    }
    let actor = caller.require_run()?.clone();
    let max = app.security.limits.attachment_max_bytes;
    let (parts, file) = crate::multipart::with_one_file(&headers, body).await?;
    let comment_id =
        match parts.iter().find(|p| p.name == "issueCommentId") {
            None => None,
            Some(p) => {
                let text = std::str::from_utf8(&p.data).unwrap_or("").trim();
                match text {
                    "" => None,
                    t if uuid::Uuid::parse_str(t).is_ok() => Some(t.to_string()),
                    _ => return Err(bad_request("Invalid attachment metadata").with_details(
                        json!([{
                            "path": ["issueCommentId"], "message": "issueCommentId must be a UUID",
                        }]),
                    )),
                }
            }
        };
    let filename = file.filename.as_deref().map(clean_filename);
    if file.data.is_empty() {
        return Err(unprocessable("Attachment is empty"));
    }
    if file.data.len() as u64 > max {
        return Err(unprocessable(format!(
            "Attachment is larger than the {} limit",
            human_size(max)
        ))
        .with_details(json!({ "maxBytes": max })));
    }
    let content_type = normalize_content_type(file.content_type.as_deref(), filename.as_deref());
    if !is_valid_content_type(&content_type) {
        return Err(
            bad_request("Invalid attachment metadata").with_details(json!([{
                "path": ["file", "contentType"], "message": "not a MIME type",
            }])),
        );
    }
    check_content(&content_type, &file.data).map_err(|reason| {
        unprocessable(reason).with_details(
            json!({ "code": "attachment_type_mismatch", "contentType": content_type }),
        )
    })?;
    let id = paperclip_store::new_id();
    let now = chrono::Utc::now();
    let object_key = format!(
        "{}/issues/{}/{}/{}-{}",
        issue.company_id,
        issue.id,
        now.format("%Y/%m/%d"),
        uuid::Uuid::new_v4(),
        key_tail(filename.as_deref())
    );
    let disk = for_writes(&app);
    disk.put(&issue.company_id, &object_key, &file.data)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "could not store an attachment");
            ApiError::new(
                StatusCode::INSUFFICIENT_STORAGE,
                "Could not store the attachment",
            )
        })?;
    let new = NewAttachment {
        id,
        asset_id: uuid::Uuid::now_v7().to_string(),
        provider: disk.provider().to_string(),
        object_key: object_key.clone(),
        content_type,
        byte_size: file.data.len() as i64,
        sha256: hex::encode(Sha256::digest(&file.data)),
        original_filename: filename,
        issue_comment_id: comment_id,
    };
    match uploads::create(&app.store, &actor, &issue, new).await {
        Ok(created) => Ok((StatusCode::CREATED, Json(created))),
        Err(err) => {
            let _ = disk.delete(&issue.company_id, &object_key).await;
            Err(err.into())
        }
    }
}

#[utoipa::path(get, path = "/api/issues/{id}/attachments", tag = "issues",
    params(("id" = String, Path)), responses((status = 200, body = [Attachment])))]
#[paperclip_macros::handler]
async fn list_attachments(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Attachment>>> {
    let issue = access::issue(&app, &caller, &id).await?;
    Ok(Json(attachments::list(&app.store, &issue.id).await?))
}

#[derive(Deserialize)]
struct ContentQuery {
    download: Option<String>,
}

/// Sets a header, leaving out a value that is not a valid header value.
pub(super) fn set(out: &mut HeaderMap, name: header::HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        out.insert(name, v);
    }
}

/// The headers a stored file (an attachment, a company's logo) is served
/// with: its type, never sniffed, shown inline or downloaded, and an SVG or
/// a download sandboxed so that no script of it runs on our origin.
pub(super) fn file_headers(content_type: &str, inline: bool, filename: Option<&str>) -> HeaderMap {
    let mut out = HeaderMap::new();
    let shown = if content_type == "text/markdown" {
        "text/markdown; charset=utf-8"
    } else {
        content_type
    };
    set(&mut out, header::CONTENT_TYPE, shown);
    set(&mut out, header::CACHE_CONTROL, "private, max-age=60");
    set(&mut out, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(
        &mut out,
        header::CONTENT_DISPOSITION,
        &disposition(inline, filename),
    );
    if content_type == "image/svg+xml" {
        set(
            &mut out,
            header::CONTENT_SECURITY_POLICY,
            "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'",
        );
    } else if !inline {
        set(
            &mut out,
            header::CONTENT_SECURITY_POLICY,
            "sandbox; default-src 'none'",
        );
    }
    out
}

/// The bytes, `inline` for types a browser shows safely, else (and with
/// `?download=1`) as a download; one `Range` is honoured.
#[utoipa::path(get, path = "/api/attachments/{id}/content", tag = "issues",
    params(("id" = String, Path), ("download" = Option<String>, Query)),
    responses((status = 200, description = "The file"), (status = 206, description = "The requested range"),
        (status = 404, description = "Attachment not found"), (status = 416, description = "Range not satisfiable")))]
#[paperclip_macros::handler]
async fn attachment_content(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(query): Query<ContentQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let a = attachments::get(&app.store, &id).await?;
    caller.ensure_company(&a.company_id)?;
    let store = for_provider(&app, &a.provider)
        .ok_or_else(|| ApiError::not_found("Attachment content not found"))?;
    let size = u64::try_from(a.byte_size).unwrap_or(0);
    let download = query
        .download
        .as_deref()
        .is_some_and(|d| matches!(d, "1" | "true"));
    let inline = serves_inline(&a.content_type) && !download;
    let mut out = file_headers(&a.content_type, inline, a.original_filename.as_deref());
    set(&mut out, header::ACCEPT_RANGES, "bytes");
    let range = headers.get(header::RANGE).and_then(|v| v.to_str().ok());
    let (status, start, len) = match parse_range(range, size) {
        Ok(None) => (StatusCode::OK, 0, size),
        Ok(Some((start, end))) => {
            set(
                &mut out,
                header::CONTENT_RANGE,
                &format!("bytes {start}-{end}/{size}"),
            );
            (StatusCode::PARTIAL_CONTENT, start, end - start + 1)
        }
        Err(_) => {
            let mut out = HeaderMap::new();
            set(&mut out, header::CONTENT_RANGE, &format!("bytes */{size}"));
            let body = Json(json!({ "error": "Range not satisfiable" }));
            return Ok((StatusCode::RANGE_NOT_SATISFIABLE, out, body).into_response());
        }
    };
    // Streamed from the store: a download holds a chunk, not the file.
    let chunks = store
        .read(&a.company_id, &a.object_key, size, start, len)
        .await
        .map_err(|e| {
            tracing::warn!(attachment = %a.id, error = %e, "attachment content unreadable");
            ApiError::not_found("Attachment content not found")
        })?;
    set(&mut out, header::CONTENT_LENGTH, &len.to_string());
    Ok((status, out, axum::body::Body::from_stream(chunks)).into_response())
}

#[utoipa::path(delete, path = "/api/attachments/{id}", tag = "issues",
    params(("id" = String, Path)),
    responses((status = 200, body = super::Acknowledged), (status = 404, description = "Attachment not found")))]
#[paperclip_macros::handler]
async fn delete_attachment(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<super::Acknowledged>> {
    let a = attachments::get(&app.store, &id).await?;
    caller.ensure_company(&a.company_id)?;
    let actor = caller.require_run()?;
    // Bytes first, as upstream: a failure there is logged, the row goes.
    match for_provider(&app, &a.provider) {
        Some(store) => {
            if let Err(e) = store.delete(&a.company_id, &a.object_key).await {
                tracing::warn!(attachment = %a.id, error = %e, "could not delete attachment bytes");
            }
        }
        None => {
            tracing::warn!(attachment = %a.id, "attachment in a bucket this instance does not use")
        }
    }
    attachments::delete(&app.store, actor, &id).await?;
    Ok(super::acknowledged())
}

/// The name as the client sent it, without any path, control characters or
/// excess (255 characters).
pub(super) fn clean_filename(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    base.chars().filter(|c| !c.is_control()).take(255).collect()
}

pub(super) fn disposition(inline: bool, filename: Option<&str>) -> String {
    let kind = if inline { "inline" } else { "attachment" };
    let Some(name) = filename.filter(|n| !n.is_empty()) else {
        return kind.to_string();
    };
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String = name
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("{kind}; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

pub(super) fn human_size(bytes: u64) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MB", bytes / (1024 * 1024))
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KB", bytes / 1024)
    } else {
        format!("{bytes} byte")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispositions_quote_safely() {
        assert_eq!(
            disposition(true, Some("a \"b\".png")),
            "inline; filename=\"a _b_.png\"; filename*=UTF-8''a%20%22b%22.png"
        );
        assert_eq!(disposition(false, None), "attachment");
        assert_eq!(human_size(10 * 1024 * 1024), "10 MB");
    }
}
