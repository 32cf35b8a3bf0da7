//! A `multipart/form-data` body, already read whole by the guard (within the
//! upload limit), split into its parts. Only what an upload needs: each
//! part's field name, file name, type and bytes; anything malformed is a 400.

use axum::body::Bytes;
use axum::http::StatusCode;

use crate::error::ApiError;

pub struct Part {
    pub name: String,
    pub filename: Option<String>,
    pub content_type: Option<String>,
    pub data: Bytes,
}

/// More parts than an upload form has is not an upload.
const MAX_PARTS: usize = 16;
/// Part headers beyond this are not a browser's or curl's.
const MAX_HEADERS_BYTES: usize = 8 * 1024;

fn bad(message: &str) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, message.to_string())
}

/// An upload's parts and its one `file` part: the body (already bounded by
/// the guard) collected and split by the boundary its `Content-Type` names.
/// No `file` part, or more than one, is a 400.
pub async fn with_one_file(
    headers: &axum::http::HeaderMap,
    body: axum::body::Body,
) -> Result<(Vec<Part>, Part), ApiError> {
    let content_type = headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let boundary = boundary(content_type)?;
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .map_err(|_| bad("Could not read the request body"))?;
    let parts = parse(&bytes, &boundary)?;
    let mut files = parts.iter().filter(|p| p.name == "file");
    let file = files
        .next()
        .ok_or_else(|| bad("Missing file field 'file'"))?;
    if files.next().is_some() {
        return Err(bad("Send exactly one file in field 'file'"));
    }
    let file = Part {
        name: file.name.clone(),
        filename: file.filename.clone(),
        content_type: file.content_type.clone(),
        data: file.data.clone(),
    };
    Ok((parts, file))
}

/// The `boundary` parameter of a `multipart/form-data` type.
pub fn boundary(content_type: &str) -> Result<String, ApiError> {
    let mut pieces = content_type.split(';');
    let essence = pieces.next().unwrap_or("").trim();
    if !essence.eq_ignore_ascii_case("multipart/form-data") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Expected a multipart/form-data body with the file in field 'file'",
        ));
    }
    for p in pieces {
        if let Some((k, v)) = p.split_once('=') {
            if k.trim().eq_ignore_ascii_case("boundary") {
                let v = v.trim().trim_matches('"');
                if !v.is_empty() && v.len() <= 200 {
                    return Ok(v.to_string());
                }
            }
        }
    }
    Err(bad("Multipart body without a boundary"))
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let first = *needle.first()?;
    let mut i = from;
    while i + needle.len() <= hay.len() {
        match hay[i..hay.len() - needle.len() + 1]
            .iter()
            .position(|b| *b == first)
        {
            None => return None,
            Some(off) => {
                let at = i + off;
                if &hay[at..at + needle.len()] == needle {
                    return Some(at);
                }
                i = at + 1;
            }
        }
    }
    None
}

pub fn parse(body: &Bytes, boundary: &str) -> Result<Vec<Part>, ApiError> {
    let delimiter = format!("--{boundary}").into_bytes();
    let next_delimiter = format!("\r\n--{boundary}").into_bytes();
    let start = find(body, &delimiter, 0).ok_or_else(|| bad("Multipart body has no parts"))?;
    let mut at = start + delimiter.len();
    let mut parts = Vec::new();
    loop {
        if body[at..].starts_with(b"--") {
            return Ok(parts);
        }
        if !body[at..].starts_with(b"\r\n") {
            return Err(bad("Malformed multipart body"));
        }
        at += 2;
        let head_end = find(body, b"\r\n\r\n", at)
            .filter(|e| e - at <= MAX_HEADERS_BYTES)
            .ok_or_else(|| bad("Malformed multipart part headers"))?;
        let head = std::str::from_utf8(&body[at..head_end])
            .map_err(|_| bad("Multipart part headers are not UTF-8"))?;
        let data_start = head_end + 4;
        let data_end = find(body, &next_delimiter, data_start)
            .ok_or_else(|| bad("Multipart body ends without its closing boundary"))?;
        let mut part = Part {
            name: String::new(),
            filename: None,
            content_type: None,
            data: body.slice(data_start..data_end),
        };
        for line in head.split("\r\n") {
            let Some((name, value)) = line.split_once(':') else {
                return Err(bad("Malformed multipart part header"));
            };
            let name = name.trim().to_ascii_lowercase();
            if name == "content-disposition" {
                for param in split_params(value).into_iter().skip(1) {
                    match param {
                        (k, v) if k.eq_ignore_ascii_case("name") => part.name = v,
                        (k, v) if k.eq_ignore_ascii_case("filename") => part.filename = Some(v),
                        _ => {}
                    }
                }
            } else if name == "content-type" {
                part.content_type = Some(value.trim().to_string());
            }
        }
        if part.name.is_empty() {
            return Err(bad("Multipart part without a field name"));
        }
        parts.push(part);
        if parts.len() > MAX_PARTS {
            return Err(bad("Too many multipart parts"));
        }
        at = data_end + next_delimiter.len();
    }
}

/// `form-data; name="file"; filename="a;b.png"` → its `key=value` pairs,
/// quotes honoured (a `;` inside quotes is part of the value).
fn split_params(value: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut key = String::new();
    let mut val = String::new();
    let (mut in_val, mut quoted, mut escaped) = (false, false, false);
    let mut push = |key: &mut String, val: &mut String| {
        out.push((key.trim().to_string(), std::mem::take(val)));
        key.clear();
    };
    for c in value.chars() {
        if quoted {
            match c {
                _ if escaped => {
                    val.push(c);
                    escaped = false;
                }
                '\\' => escaped = true,
                '"' => quoted = false,
                _ => val.push(c),
            }
            continue;
        }
        match c {
            ';' => {
                push(&mut key, &mut val);
                in_val = false;
            }
            '=' if !in_val => in_val = true,
            '"' if in_val && val.trim().is_empty() => {
                val.clear();
                quoted = true;
            }
            _ if in_val => val.push(c),
            _ => key.push(c),
        }
    }
    push(&mut key, &mut val);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_curl_style_bodies() {
        let body = Bytes::from_static(
            b"--XyZ\r\nContent-Disposition: form-data; name=\"issueCommentId\"\r\n\r\nabc\r\n\
              --XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a;b.png\"\r\n\
              Content-Type: image/png\r\n\r\n\x89PNG\r\n--X\r\n--XyZ--\r\n",
        );
        let parts = parse(&body, "XyZ").unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].name, "issueCommentId");
        assert_eq!(&parts[0].data[..], b"abc");
        assert_eq!(parts[1].filename.as_deref(), Some("a;b.png"));
        assert_eq!(parts[1].content_type.as_deref(), Some("image/png"));
        assert_eq!(&parts[1].data[..], b"\x89PNG\r\n--X");
    }

    #[test]
    fn refuses_truncated_bodies() {
        let body = Bytes::from_static(
            b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc",
        );
        assert!(parse(&body, "XyZ").is_err());
        assert!(boundary("multipart/form-data").is_err());
        assert_eq!(
            boundary("multipart/form-data; boundary=\"q\"").unwrap(),
            "q"
        );
    }
}
