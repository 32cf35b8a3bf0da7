//! A comment on a task as the API shows it, with its provenance (see
//! [`crate::comment`]), in the original's field order.

use serde::Serialize;
use utoipa::ToSchema;

use crate::comment::{CommentActorType, CommentMetadata, DerivedAuthorSource, Presentation};

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Comment {
    pub id: String,
    pub company_id: String,
    pub issue_id: String,
    pub author_agent_id: Option<String>,
    pub author_user_id: Option<String>,
    /// The person an agent wrote for: the one its API key answers to (who
    /// created the key). Null for people's comments, which are their own,
    /// and for an agent using its run token: our runs record no responsible
    /// person (the original takes it from the run's identity context).
    pub on_behalf_of_user_id: Option<String>,
    pub author_type: String,
    pub created_by_run_id: Option<String>,
    /// On a comment the local board wrote naming an agent's run: that run's
    /// agent, the comment's real author.
    pub derived_author_agent_id: Option<String>,
    pub derived_created_by_run_id: Option<String>,
    pub derived_author_source: Option<DerivedAuthorSource>,
    /// The id the client sent to make the comment safe to retry.
    pub client_request_id: Option<String>,
    /// On a chat's `/new` comment: the session generation it began.
    pub conversation_session_generation: Option<i64>,
    pub body: String,
    #[schema(value_type = Option<Object>)]
    pub presentation: Option<Presentation>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<CommentMetadata>,
    pub deleted_at: Option<String>,
    pub deleted_by_type: Option<CommentActorType>,
    pub deleted_by_agent_id: Option<String>,
    pub deleted_by_user_id: Option<String>,
    /// The run the deleting agent (or the board, naming one) acted in.
    pub deleted_by_run_id: Option<String>,
    /// Always null: see [`super::Issue::source_trust`].
    #[schema(value_type = Option<Object>)]
    pub source_trust: Option<serde_json::Value>,
    pub created_at: String,
    pub updated_at: String,
}
