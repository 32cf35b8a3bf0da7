//! Work products: what a task produced, as upstream records it (a pull
//! request with its state, a branch, a commit, a preview URL, a file
//! artifact backed by an attachment, a document). Types and states are
//! closed vocabularies; the provider is free text, as upstream's is.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::input::double_option;
use crate::limits::{text, Validate, Violation};
use crate::stored::Stored;

macro_rules! wp_enum {
    ($(#[$doc:meta])* $name:ident, $what:literal { $($variant:ident = $text:tt,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
        pub enum $name {
            // `$text` is a `tt`, not a `literal`: a `literal` fragment reaches
            // derives wrapped in an invisible group that serde reads but
            // utoipa skips, and the spec then declared the variant names.
            $(#[serde(rename = $text)] $variant,)*
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }
        }

        impl Stored for $name {
            const WHAT: &'static str = $what;
            const ALL: &'static [$name] = &[$($name::$variant),*];
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
/// The one enum shape for stored vocabularies (work products, workspaces).
pub(crate) use wp_enum;

wp_enum! {
    /// What was produced. There is no `file` type: a file is an
    /// attachment-backed `artifact` (upstream's rule).
    WorkProductType, "work product type" {
        PreviewUrl = "preview_url",
        RuntimeService = "runtime_service",
        PullRequest = "pull_request",
        Branch = "branch",
        Commit = "commit",
        Artifact = "artifact",
        Document = "document",
    }
}

wp_enum! {
    WorkProductStatus, "work product status" {
        Active = "active",
        ReadyForReview = "ready_for_review",
        Approved = "approved",
        ChangesRequested = "changes_requested",
        Merged = "merged",
        Closed = "closed",
        Failed = "failed",
        Archived = "archived",
        Draft = "draft",
    }
}

wp_enum! {
    ReviewState, "work product review state" {
        None = "none",
        NeedsBoardReview = "needs_board_review",
        Approved = "approved",
        ChangesRequested = "changes_requested",
    }
}

wp_enum! {
    HealthStatus, "work product health status" {
        Unknown = "unknown",
        Healthy = "healthy",
        Unhealthy = "unhealthy",
    }
}

/// The provider whose artifacts are this instance's own attachments.
pub const PAPERCLIP_PROVIDER: &str = "paperclip";

/// Upper bound on a work product's metadata, serialised (64 KiB): it
/// describes a product, it is not one.
pub const METADATA_MAX_BYTES: usize = 64 * 1024;

/// A work product as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkProduct {
    pub id: String,
    pub company_id: String,
    pub project_id: Option<String>,
    pub issue_id: String,
    pub execution_workspace_id: Option<String>,
    pub runtime_service_id: Option<String>,
    #[serde(rename = "type")]
    pub kind: WorkProductType,
    pub provider: String,
    pub external_id: Option<String>,
    pub title: String,
    pub url: Option<String>,
    pub status: WorkProductStatus,
    pub review_state: ReviewState,
    pub is_primary: bool,
    pub health_status: HealthStatus,
    pub summary: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    pub created_by_run_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewWorkProduct {
    #[serde(rename = "type")]
    pub kind: WorkProductType,
    pub provider: String,
    pub title: String,
    pub project_id: Option<String>,
    pub execution_workspace_id: Option<String>,
    pub runtime_service_id: Option<String>,
    pub external_id: Option<String>,
    pub url: Option<String>,
    pub summary: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    pub status: Option<WorkProductStatus>,
    pub review_state: Option<ReviewState>,
    pub is_primary: Option<bool>,
    pub health_status: Option<HealthStatus>,
    pub created_by_run_id: Option<String>,
}

/// Every field optional; `null` clears an optional one.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkProductPatch {
    #[serde(rename = "type")]
    pub kind: Option<WorkProductType>,
    pub provider: Option<String>,
    pub title: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub project_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub execution_workspace_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub runtime_service_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub external_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub url: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub summary: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Option<Value>>,
    pub status: Option<WorkProductStatus>,
    pub review_state: Option<ReviewState>,
    pub is_primary: Option<bool>,
    pub health_status: Option<HealthStatus>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub created_by_run_id: Option<Option<String>>,
}

fn at_least_one(field: &str, value: &str) -> Result<(), Violation> {
    if value.trim().is_empty() {
        return Err(Violation {
            path: vec![serde_json::json!(field)],
            maximum: 0,
            message: format!("{field} must not be empty"),
        });
    }
    Ok(())
}

fn opt_text(field: &str, value: Option<&String>, max: usize) -> Result<(), Violation> {
    value.map_or(Ok(()), |v| text(field, v, max))
}

fn metadata(value: Option<&Value>) -> Result<(), Violation> {
    let Some(value) = value else { return Ok(()) };
    let bad = |message: String| Violation {
        path: vec![serde_json::json!("metadata")],
        maximum: METADATA_MAX_BYTES as u64,
        message,
    };
    if !value.is_object() {
        return Err(bad("metadata must be an object".into()));
    }
    if value.to_string().len() > METADATA_MAX_BYTES {
        return Err(bad(format!(
            "metadata must be at most {METADATA_MAX_BYTES} bytes as JSON"
        )));
    }
    Ok(())
}

/// `url` must be an absolute http(s) URL (upstream: a URL; a `javascript:`
/// link on a card would run on our origin).
fn url(value: Option<&String>) -> Result<(), Violation> {
    let Some(u) = value else { return Ok(()) };
    text("url", u, 2000)?;
    let lower = u.to_ascii_lowercase();
    let ok = (lower.starts_with("https://") || lower.starts_with("http://"))
        && u.len() > lower.find("://").unwrap_or(0) + 3
        && !u.chars().any(|c| c.is_whitespace() || c.is_control());
    if !ok {
        return Err(Violation {
            path: vec![serde_json::json!("url")],
            maximum: 2000,
            message: "url must be an absolute http(s) URL".into(),
        });
    }
    Ok(())
}

const SHORT: usize = crate::limits::SHORT_TEXT_MAX_CHARS;

impl Validate for NewWorkProduct {
    fn validate(&self) -> Result<(), Violation> {
        at_least_one("provider", &self.provider)?;
        text("provider", &self.provider, SHORT)?;
        at_least_one("title", &self.title)?;
        text("title", &self.title, crate::limits::TITLE_MAX_CHARS)?;
        for (field, value) in [
            ("projectId", &self.project_id),
            ("executionWorkspaceId", &self.execution_workspace_id),
            ("runtimeServiceId", &self.runtime_service_id),
            ("externalId", &self.external_id),
            ("createdByRunId", &self.created_by_run_id),
        ] {
            opt_text(field, value.as_ref(), SHORT)?;
        }
        url(self.url.as_ref())?;
        opt_text(
            "summary",
            self.summary.as_ref(),
            crate::limits::LONG_TEXT_MAX_CHARS,
        )?;
        metadata(self.metadata.as_ref())
    }
}

impl Validate for WorkProductPatch {
    fn validate(&self) -> Result<(), Violation> {
        if let Some(p) = &self.provider {
            at_least_one("provider", p)?;
            text("provider", p, SHORT)?;
        }
        if let Some(t) = &self.title {
            at_least_one("title", t)?;
            text("title", t, crate::limits::TITLE_MAX_CHARS)?;
        }
        for (field, value) in [
            ("projectId", &self.project_id),
            ("executionWorkspaceId", &self.execution_workspace_id),
            ("runtimeServiceId", &self.runtime_service_id),
            ("externalId", &self.external_id),
            ("createdByRunId", &self.created_by_run_id),
        ] {
            opt_text(field, value.as_ref().and_then(Option::as_ref), SHORT)?;
        }
        url(self.url.as_ref().and_then(Option::as_ref))?;
        opt_text(
            "summary",
            self.summary.as_ref().and_then(Option::as_ref),
            crate::limits::LONG_TEXT_MAX_CHARS,
        )?;
        metadata(self.metadata.as_ref().and_then(Option::as_ref))
    }
}

impl WorkProductPatch {
    /// The camelCase names of the fields the patch sets, for the activity
    /// entry's `changedKeys`.
    pub fn changed_keys(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        let mut add = |set: bool, key: &'static str| {
            if set {
                keys.push(key);
            }
        };
        add(self.kind.is_some(), "type");
        add(self.provider.is_some(), "provider");
        add(self.title.is_some(), "title");
        add(self.project_id.is_some(), "projectId");
        add(
            self.execution_workspace_id.is_some(),
            "executionWorkspaceId",
        );
        add(self.runtime_service_id.is_some(), "runtimeServiceId");
        add(self.external_id.is_some(), "externalId");
        add(self.url.is_some(), "url");
        add(self.summary.is_some(), "summary");
        add(self.metadata.is_some(), "metadata");
        add(self.status.is_some(), "status");
        add(self.review_state.is_some(), "reviewState");
        add(self.is_primary.is_some(), "isPrimary");
        add(self.health_status.is_some(), "healthStatus");
        add(self.created_by_run_id.is_some(), "createdByRunId");
        keys
    }
}

/// The attachment an `artifact` from provider `paperclip` stands for
/// (`metadata.attachmentId`), which upstream requires.
pub fn attachment_id_of(metadata: Option<&Value>) -> Option<&str> {
    metadata?
        .get("attachmentId")?
        .as_str()
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn enums_read_their_upstream_names_and_refuse_others() {
        let t: WorkProductType = serde_json::from_value(json!("pull_request")).unwrap();
        assert_eq!(t, WorkProductType::PullRequest);
        assert!(serde_json::from_value::<WorkProductType>(json!("file")).is_err());
        assert_eq!(
            ReviewState::from_stored("needs_board_review"),
            Some(ReviewState::NeedsBoardReview)
        );
        assert_eq!(WorkProductStatus::from_stored("someday"), None);
    }

    #[test]
    fn urls_must_be_http() {
        assert!(url(Some(&"https://example.com/pr/1".into())).is_ok());
        assert!(url(Some(&"javascript:alert(1)".into())).is_err());
        assert!(url(Some(&"https://".into())).is_err());
        assert!(url(Some(&"https://a b".into())).is_err());
    }

    #[test]
    fn a_patch_names_what_it_changes() {
        let p: WorkProductPatch =
            serde_json::from_value(json!({ "status": "merged", "url": null })).unwrap();
        assert_eq!(p.changed_keys(), vec!["url", "status"]);
    }
}
