//! Issue attachments: the record upstream shows, and the pure rules about a
//! file's bytes and name (declared type against magic bytes, how it is
//! served, where it is stored). Upstream does no sniffing; we refuse a file
//! whose bytes contradict a type we would serve inline, and never serve a
//! type a browser would run (HTML, SVG scripts aside) as a page of ours.

use serde::Serialize;
use utoipa::ToSchema;

/// Upstream's default upload limit (10 MiB).
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// An attachment as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    pub id: String,
    pub company_id: String,
    pub issue_id: String,
    pub issue_comment_id: Option<String>,
    pub originating_run_id: Option<String>,
    pub asset_id: String,
    pub provider: String,
    pub object_key: String,
    pub content_type: String,
    pub byte_size: i64,
    pub sha256: String,
    pub original_filename: Option<String>,
    pub created_by_agent_id: Option<String>,
    pub created_by_user_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub content_path: String,
    pub open_path: String,
    pub download_path: String,
}

impl Attachment {
    pub fn content_path_of(id: &str) -> String {
        format!("/api/attachments/{id}/content")
    }
}

/// The part's declared type as upstream normalises it: lower-cased, without
/// parameters; generic binary types of Office files become their real type.
pub fn normalize_content_type(declared: Option<&str>, filename: Option<&str>) -> String {
    let essence = declared
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let generic = matches!(
        essence.as_str(),
        "" | "application/octet-stream" | "binary/octet-stream" | "application/x-binary"
    );
    if generic {
        let ext = filename
            .and_then(|f| f.rsplit_once('.'))
            .map(|(_, e)| e.to_ascii_lowercase());
        let office = match ext.as_deref() {
            Some("docx") => {
                Some("application/vnd.openxmlformats-officedocument.wordprocessingml.document")
            }
            Some("xlsx") => {
                Some("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
            }
            Some("pptx") => {
                Some("application/vnd.openxmlformats-officedocument.presentationml.presentation")
            }
            Some("doc") => Some("application/msword"),
            Some("xls") => Some("application/vnd.ms-excel"),
            Some("ppt") => Some("application/vnd.ms-powerpoint"),
            _ => None,
        };
        if let Some(t) = office {
            return t.to_string();
        }
        if essence.is_empty() {
            return "application/octet-stream".to_string();
        }
    }
    essence
}

/// A type is a plausible MIME type: `type/subtype` of token characters.
pub fn is_valid_content_type(ct: &str) -> bool {
    let token = |s: &str| {
        !s.is_empty()
            && s.len() <= 127
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    matches!(ct.split_once('/'), Some((a, b)) if token(a) && token(b))
}

/// What the first bytes say a file is, for the types we check.
fn magic(bytes: &[u8]) -> Option<&'static str> {
    let starts = |m: &[u8]| bytes.starts_with(m);
    if starts(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if starts(b"\xff\xd8\xff") {
        Some("image/jpeg")
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && starts(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else if starts(b"%PDF-") {
        Some("application/pdf")
    } else if starts(b"BM") && bytes.len() >= 14 {
        Some("image/bmp")
    } else if starts(b"II*\x00") || starts(b"MM\x00*") {
        Some("image/tiff")
    } else if starts(b"\x00\x00\x01\x00") {
        Some("image/x-icon")
    } else if bytes.len() >= 12 && &bytes[4..8] == b"ftyp" {
        let brand = &bytes[8..12];
        if brand.starts_with(b"avi") {
            Some("image/avif")
        } else if brand.starts_with(b"hei") || brand.starts_with(b"mif1") {
            Some("image/heic")
        } else if brand == b"qt  " {
            Some("video/quicktime")
        } else {
            Some("video/mp4")
        }
    } else if starts(b"\x1a\x45\xdf\xa3") {
        Some("video/webm")
    } else {
        None
    }
}

/// Whether the bytes look like markup a browser would run as a page.
fn looks_like_html(bytes: &[u8]) -> bool {
    let head: Vec<u8> = bytes
        .iter()
        .take(512)
        .skip_while(|b| b.is_ascii_whitespace() || **b == 0xef || **b == 0xbb || **b == 0xbf)
        .map(|b| b.to_ascii_lowercase())
        .collect();
    [
        &b"<!doctype html"[..],
        b"<html",
        b"<script",
        b"<head",
        b"<body",
        b"<iframe",
        b"<svg",
        b"<?xml",
    ]
    .iter()
    .any(|m| head.starts_with(m))
}

/// Refuses a file whose bytes contradict its declared type, for the types
/// served inline: an image, a PDF or a video must carry its format's magic
/// bytes, text types must be text and not markup. Other types are served
/// as downloads and pass.
pub fn check_content(content_type: &str, bytes: &[u8]) -> Result<(), String> {
    let found = magic(bytes);
    let claim = |what: &str| {
        Err(format!(
            "The file's bytes do not match its declared type {content_type}{what}"
        ))
    };
    let is_image = content_type.starts_with("image/");
    if content_type == "image/svg+xml" {
        let text = std::str::from_utf8(bytes).is_ok();
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]).to_ascii_lowercase();
        let head = head.trim_start_matches('\u{feff}').trim_start();
        let svg = ["<svg", "<?xml", "<!doctype svg", "<!--"]
            .iter()
            .any(|m| head.starts_with(m));
        return if text && svg && found.is_none() {
            Ok(())
        } else {
            claim(": an SVG must be XML text")
        };
    }
    if is_image || content_type == "application/pdf" || content_type.starts_with("video/") {
        return match found {
            Some(f) if same_family(f, content_type) => Ok(()),
            Some(f) => claim(&format!(" (it looks like {f})")),
            None if looks_like_html(bytes) => claim(" (it looks like HTML or script)"),
            None => claim(""),
        };
    }
    if matches!(
        content_type,
        "text/plain" | "text/markdown" | "text/csv" | "application/json"
    ) {
        if found.is_some() || std::str::from_utf8(bytes).is_err() {
            return claim(" (it is not UTF-8 text)");
        }
        if content_type != "text/markdown" && looks_like_html(bytes) {
            return claim(" (it looks like HTML or script)");
        }
    }
    Ok(())
}

/// Formats that share a magic number close enough to be one claim.
fn same_family(found: &str, declared: &str) -> bool {
    found == declared
        || (found == "image/jpeg" && declared == "image/jpg")
        || (found == "image/x-icon" && declared == "image/vnd.microsoft.icon")
        || (found == "image/heic" && declared == "image/heif")
        || (found.starts_with("video/")
            && matches!(
                declared,
                "video/mp4" | "video/quicktime" | "video/x-m4v" | "video/webm"
            )
            && (found == "video/webm") == (declared == "video/webm"))
}

/// Whether a type is shown in the browser (`inline`) or downloaded.
/// HTML and anything else a browser would run is never inline: an uploaded
/// page must not execute on our origin.
pub fn serves_inline(content_type: &str) -> bool {
    content_type.starts_with("image/")
        || matches!(
            content_type,
            "application/pdf"
                | "text/plain"
                | "text/markdown"
                | "application/json"
                | "text/csv"
                | "video/mp4"
                | "video/webm"
                | "video/quicktime"
                | "video/x-m4v"
        )
}

/// The `{stem}{ext}` tail of an object key: the stem keeps `[A-Za-z0-9._-]`
/// (at most 120), the extension is lower-cased (at most 16).
pub fn key_tail(filename: Option<&str>) -> String {
    let name = filename
        .unwrap_or("")
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or("");
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s, format!(".{}", e.to_ascii_lowercase())),
        _ => (name, String::new()),
    };
    let clean = |s: &str, max: usize| -> String {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            .take(max)
            .collect()
    };
    let stem = clean(stem, 120).trim_matches('.').to_string();
    let ext = if ext.len() > 1 {
        format!(".{}", clean(&ext[1..], 15))
    } else {
        String::new()
    };
    let stem = if stem.is_empty() { "file".into() } else { stem };
    if ext == "." {
        stem
    } else {
        format!("{stem}{ext}")
    }
}

/// A stored object key is safe to open for `company_id`: it lies under the
/// company's prefix and climbs nowhere.
pub fn key_is_safe(company_id: &str, key: &str) -> bool {
    key.starts_with(&format!("{company_id}/"))
        && !key
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
        && !key.contains('\\')
        && !key.contains('\0')
}

/// A `Range` that cannot be served (416).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsatisfiable;

/// One byte range of a file of `size` bytes, as `Range: bytes=...` asks:
/// `Ok(None)` without a header, `Ok(Some((start, end)))` inclusive.
pub fn parse_range(header: Option<&str>, size: u64) -> Result<Option<(u64, u64)>, Unsatisfiable> {
    let Some(h) = header else { return Ok(None) };
    let spec = h.trim().strip_prefix("bytes=").ok_or(Unsatisfiable)?;
    if spec.contains(',') || size == 0 {
        return Err(Unsatisfiable);
    }
    let (a, b) = spec.split_once('-').ok_or(Unsatisfiable)?;
    let (a, b) = (a.trim(), b.trim());
    let num = |s: &str| s.parse::<u64>().map_err(|_| Unsatisfiable);
    let (start, end) = match (a.is_empty(), b.is_empty()) {
        (true, true) => return Err(Unsatisfiable),
        (true, false) => {
            let n = num(b)?;
            if n == 0 {
                return Err(Unsatisfiable);
            }
            (size.saturating_sub(n), size - 1)
        }
        (false, true) => (num(a)?, size - 1),
        (false, false) => (num(a)?, num(b)?.min(size - 1)),
    };
    if start > end || start >= size {
        return Err(Unsatisfiable);
    }
    Ok(Some((start, end)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn declared_types_must_match_the_bytes() {
        assert!(check_content("image/png", PNG).is_ok());
        assert!(check_content("image/png", b"GIF89a...").is_err());
        assert!(check_content("image/png", b"<html><script>x</script>").is_err());
        assert!(check_content("image/jpeg", b"plain text").is_err());
        assert!(check_content("application/pdf", b"%PDF-1.7 ...").is_ok());
        assert!(check_content("text/plain", b"hello").is_ok());
        assert!(check_content("text/plain", b"<script>alert(1)</script>").is_err());
        assert!(check_content("text/plain", PNG).is_err());
        assert!(check_content("image/svg+xml", b"<svg xmlns='x'></svg>").is_ok());
        assert!(check_content("image/svg+xml", PNG).is_err());
        assert!(check_content("image/svg+xml", b"<html><script>").is_err());
        assert!(check_content("application/zip", b"PK\x03\x04").is_ok());
        assert!(check_content("text/html", b"<html>").is_ok());
    }

    #[test]
    fn html_is_never_inline() {
        assert!(!serves_inline("text/html"));
        assert!(!serves_inline("application/xhtml+xml"));
        assert!(serves_inline("image/png"));
        assert!(!serves_inline("application/zip"));
    }

    #[test]
    fn types_are_normalised_like_upstream() {
        assert_eq!(
            normalize_content_type(Some("Image/PNG; q=1"), None),
            "image/png"
        );
        assert_eq!(
            normalize_content_type(Some("application/octet-stream"), Some("a.DOCX")),
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
        );
        assert_eq!(
            normalize_content_type(None, Some("x.bin")),
            "application/octet-stream"
        );
    }

    #[test]
    fn key_tails_keep_safe_characters() {
        assert_eq!(key_tail(Some("My Report (v2).PDF")), "MyReportv2.pdf");
        assert_eq!(key_tail(Some("../../etc/passwd")), "passwd");
        assert_eq!(key_tail(Some("")), "file");
        assert_eq!(key_tail(None), "file");
    }

    #[test]
    fn keys_stay_in_their_company() {
        assert!(key_is_safe("c1", "c1/issues/i/2026/01/02/x-a.png"));
        assert!(!key_is_safe("c1", "c2/issues/i/x"));
        assert!(!key_is_safe("c1", "c1/../c2/x"));
        assert!(!key_is_safe("c1", "c1//x"));
    }

    #[test]
    fn ranges_follow_rfc_7233() {
        assert_eq!(parse_range(None, 10), Ok(None));
        assert_eq!(parse_range(Some("bytes=0-3"), 10), Ok(Some((0, 3))));
        assert_eq!(parse_range(Some("bytes=5-"), 10), Ok(Some((5, 9))));
        assert_eq!(parse_range(Some("bytes=-4"), 10), Ok(Some((6, 9))));
        assert_eq!(parse_range(Some("bytes=8-100"), 10), Ok(Some((8, 9))));
        assert_eq!(parse_range(Some("bytes=10-"), 10), Err(Unsatisfiable));
        assert_eq!(parse_range(Some("bytes=0-1,3-4"), 10), Err(Unsatisfiable));
        assert_eq!(parse_range(Some("bytes=5-2"), 10), Err(Unsatisfiable));
        assert_eq!(parse_range(Some("items=0-1"), 10), Err(Unsatisfiable));
    }
}
