//! Uploaded assets (upstream's `assets`): a stored file a company owns and
//! other records point at. The one kind this build takes is a company logo.

use serde::Serialize;
use utoipa::ToSchema;

/// The image types a logo may be (upstream's list). SVG is taken and served
/// only under a sandboxing policy, so a script in it never runs here.
pub const LOGO_CONTENT_TYPES: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/jpg",
    "image/webp",
    "image/gif",
    "image/svg+xml",
];

/// Where a logo's file is stored within its company.
pub const LOGO_NAMESPACE: &str = "assets/companies";

/// An asset as upstream's upload answers it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Asset {
    pub asset_id: String,
    pub company_id: String,
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
}

/// Where an asset's bytes are served.
pub fn content_path(asset_id: &str) -> String {
    format!("/api/assets/{asset_id}/content")
}

/// A company's `logoUrl`, from its `logoAssetId`.
pub fn logo_url(asset_id: Option<&str>) -> Option<String> {
    asset_id.map(content_path)
}

/// Whether a declared type may be a logo.
pub fn is_logo_type(content_type: &str) -> bool {
    LOGO_CONTENT_TYPES.contains(&content_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logos_are_images_and_their_url_is_the_asset_content() {
        assert!(is_logo_type("image/png") && is_logo_type("image/svg+xml"));
        assert!(!is_logo_type("text/html") && !is_logo_type("image/heic"));
        assert_eq!(
            logo_url(Some("a1")).as_deref(),
            Some("/api/assets/a1/content")
        );
        assert_eq!(logo_url(None), None);
    }
}
