//! A task's files and work products on its page: cards for what it produced
//! (a pull request with its state, branch and commit, a preview URL, an
//! artifact with its link) and its attachments, images shown inline. The
//! upload form sits outside the live region (see `task.rs`), so a live
//! update never drops a chosen file; cards re-render with every event.

use maud::{html, Markup};
use paperclip_core::attachment::Attachment;
use paperclip_core::work_product::{WorkProduct, WorkProductType};
use serde_json::Value;

use crate::fmt::pill;

pub struct Files {
    pub attachments: Vec<Attachment>,
    pub products: Vec<WorkProduct>,
}

pub async fn load(
    store: &paperclip_store::Store,
    issue_id: &str,
) -> paperclip_store::Result<Files> {
    Ok(Files {
        attachments: paperclip_store::thread::attachments::list(store, issue_id).await?,
        products: paperclip_store::thread::work_products::list(store, issue_id).await?,
    })
}

fn meta<'a>(p: &'a WorkProduct, key: &str) -> Option<&'a Value> {
    p.metadata.as_ref()?.get(key).filter(|v| !v.is_null())
}

fn meta_text(p: &WorkProduct, key: &str) -> Option<String> {
    meta(p, key).map(|v| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// A link is shown only for http(s) URLs and our own paths: a card must not
/// carry a `javascript:` link, whatever an agent recorded.
fn safe_href(url: &str) -> Option<&str> {
    let lower = url.to_ascii_lowercase();
    (lower.starts_with("https://")
        || lower.starts_with("http://")
        || (url.starts_with("/api/attachments/") && !url.contains("..")))
    .then_some(url)
}

fn kind_label(kind: WorkProductType) -> &'static str {
    match kind {
        WorkProductType::PullRequest => "Pull request",
        WorkProductType::Branch => "Branch",
        WorkProductType::Commit => "Commit",
        WorkProductType::PreviewUrl => "Preview",
        WorkProductType::RuntimeService => "Service",
        WorkProductType::Artifact => "Artifact",
        WorkProductType::Document => "Document",
    }
}

/// One work product as a card.
pub fn card(p: &WorkProduct) -> Markup {
    let link = match p.kind {
        WorkProductType::Artifact => meta_text(p, "contentPath").or_else(|| p.url.clone()),
        _ => p.url.clone(),
    };
    let link = link.as_deref().and_then(safe_href).map(str::to_string);
    let state = meta_text(p, "state");
    let branch = meta_text(p, "headRef").or_else(|| meta_text(p, "branch"));
    let base = meta_text(p, "baseRef");
    let sha = meta_text(p, "sha");
    let repo = meta_text(p, "repo");
    let number = meta_text(p, "number");
    html! {
        article.work-product data-work-product-id=(p.id) data-type=(p.kind.as_str()) {
            header {
                span.wp-kind { (kind_label(p.kind)) }
                " "
                @match &link {
                    Some(href) => a href=(href) rel="noopener noreferrer" target="_blank" { strong { (p.title) } },
                    None => strong { (p.title) },
                }
                @if p.is_primary { " " span.pill { "primary" } }
            }
            p.wp-facts {
                (pill(p.status.as_str()))
                @if let Some(s) = &state { " " span.wp-state { "PR " (s) } }
                @if p.review_state.as_str() != "none" { " " span.wp-review { "review: " (p.review_state.as_str().replace('_', " ")) } }
                @if let Some(r) = &repo { " · " code { (r) @if let Some(n) = &number { "#" (n) } } }
                @if let Some(b) = &branch { " · branch " code.wp-branch { (b) } @if let Some(base) = &base { " → " code { (base) } } }
                @if let Some(sha) = &sha { " · commit " code.wp-commit { (sha.get(..12).unwrap_or(sha)) } }
                @if p.kind == WorkProductType::PreviewUrl { @if let Some(u) = &link { " · " a.wp-preview href=(u) rel="noopener noreferrer" target="_blank" { (u) } } }
                @if p.kind == WorkProductType::Artifact {
                    @if let Some(name) = meta_text(p, "originalFilename") { " · " (name) }
                    @if let Some(dl) = meta_text(p, "downloadPath").as_deref().and_then(safe_href) { " · " a href=(dl) { "download" } }
                }
                " · " span.muted { (p.provider) }
            }
            @if let Some(summary) = &p.summary { p.muted { (summary) } }
        }
    }
}

fn human_bytes(n: i64) -> String {
    match n {
        n if n >= 1024 * 1024 => format!("{:.1} MB", n as f64 / (1024.0 * 1024.0)),
        n if n >= 1024 => format!("{:.1} KB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

/// The cards and the attachment list, for the live region.
pub fn section(files: &Files) -> Markup {
    html! {
        // Empty sections fold to one quiet line, so the runs and the thread
        // stay near the top.
        section.work-products.empty-section[files.products.is_empty()] #work-products {
            h2 { "Work products" }
            @if files.products.is_empty() { p.muted { "Nothing recorded yet." } }
            div.wp-cards { @for p in &files.products { (card(p)) } }
        }
        section.attachments.empty-section[files.attachments.is_empty()] #attachments {
            h2 { "Attachments" }
            @if files.attachments.is_empty() { p.muted { "No files yet." } }
            ul.attachment-list {
                @for a in &files.attachments {
                    @let name = a.original_filename.as_deref().unwrap_or("file");
                    li.attachment data-attachment-id=(a.id) {
                        @if a.content_type.starts_with("image/") {
                            a href=(a.content_path) target="_blank" rel="noopener" {
                                img.attachment-image src=(a.content_path) alt=(name) loading="lazy";
                            }
                        }
                        a href=(a.open_path) target="_blank" rel="noopener" { (name) }
                        span.muted { " · " (a.content_type) " · " (human_bytes(a.byte_size)) " · " }
                        a href=(a.download_path) { "download" }
                        " "
                        button.small.danger type="button" data-action="DELETE" data-url={"/api/attachments/" (a.id)}
                            data-confirm={"Delete " (name) "?"} data-done="Attachment deleted" { "Delete" }
                    }
                }
            }
        }
    }
}

/// The upload form, outside the live region.
pub fn upload_form(company_id: &str, issue_id: &str) -> Markup {
    html! {
        form.upload #attachment-upload data-upload-company=(company_id) data-upload-issue=(issue_id) {
            label { "Attach a file" input type="file" name="file" required; }
            button type="submit" { "Upload" }
        }
    }
}
