//! A task's documents as the API shows them: the document, its body-less
//! summary for lists, and its revisions. No other entity refers to them, so
//! they live apart from the rest of [`crate::model`], which re-exports them
//! under their usual paths.

use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Document {
    pub id: String,
    pub company_id: String,
    pub issue_id: String,
    pub key: String,
    pub title: Option<String>,
    pub format: String,
    pub body: String,
    pub latest_revision_id: String,
    pub latest_revision_number: i64,
    pub created_by_agent_id: Option<String>,
    pub created_by_user_id: Option<String>,
    pub updated_by_agent_id: Option<String>,
    pub updated_by_user_id: Option<String>,
    /// Set while the board has the document locked: writes are refused (409).
    pub locked_at: Option<String>,
    pub locked_by_agent_id: Option<String>,
    pub locked_by_user_id: Option<String>,
    /// The original's trust label on text that came from outside the
    /// company; every document here is written by the board or the
    /// company's agents, so it is always null (unlabelled).
    #[schema(value_type = Option<Object>)]
    pub source_trust: Option<serde_json::Value>,
    pub created_at: String,
    pub updated_at: String,
}

/// A document without its body, as a task lists its documents.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentSummary {
    pub id: String,
    pub company_id: String,
    pub issue_id: String,
    pub key: String,
    pub title: Option<String>,
    pub format: String,
    pub latest_revision_id: String,
    pub latest_revision_number: i64,
    pub created_by_agent_id: Option<String>,
    pub created_by_user_id: Option<String>,
    pub updated_by_agent_id: Option<String>,
    pub updated_by_user_id: Option<String>,
    pub locked_at: Option<String>,
    pub locked_by_agent_id: Option<String>,
    pub locked_by_user_id: Option<String>,
    /// The original's trust label on text that came from outside the
    /// company; every document here is written by the board or the
    /// company's agents, so it is always null (unlabelled).
    #[schema(value_type = Option<Object>)]
    pub source_trust: Option<serde_json::Value>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Document> for DocumentSummary {
    fn from(d: Document) -> DocumentSummary {
        DocumentSummary {
            id: d.id,
            company_id: d.company_id,
            issue_id: d.issue_id,
            key: d.key,
            title: d.title,
            format: d.format,
            latest_revision_id: d.latest_revision_id,
            latest_revision_number: d.latest_revision_number,
            created_by_agent_id: d.created_by_agent_id,
            created_by_user_id: d.created_by_user_id,
            updated_by_agent_id: d.updated_by_agent_id,
            updated_by_user_id: d.updated_by_user_id,
            locked_at: d.locked_at,
            locked_by_agent_id: d.locked_by_agent_id,
            locked_by_user_id: d.locked_by_user_id,
            source_trust: d.source_trust,
            created_at: d.created_at,
            updated_at: d.updated_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentRevision {
    pub id: String,
    pub company_id: String,
    pub document_id: String,
    /// The document's task and key (a revision belongs to one document).
    pub issue_id: String,
    pub key: String,
    pub revision_number: i64,
    pub title: Option<String>,
    pub format: String,
    pub body: String,
    pub change_summary: Option<String>,
    pub created_by_agent_id: Option<String>,
    pub created_by_user_id: Option<String>,
    pub created_at: String,
}
