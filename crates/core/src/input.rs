//! Commands as clients send them (JSON request bodies). Unknown fields are
//! ignored, as upstream does. In patches, a field that is absent is left
//! alone and a field that is `null` is cleared: `Option<Option<T>>`.

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use utoipa::ToSchema;

use crate::agent::{AgentRole, AgentStatus};
use crate::company::CompanyStatus;
use crate::goal::{GoalLevel, GoalStatus};
use crate::issue::{IssuePriority, IssueStatus};
use crate::project::ProjectStatus;

/// Present-and-null becomes `Some(None)`; absent stays `None` (with `default`).
pub fn double_option<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewCompany {
    pub name: String,
    pub description: Option<String>,
    pub budget_monthly_cents: Option<u32>,
    pub default_responsible_user_id: Option<String>,
    pub require_board_approval_for_new_agents: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompanyPatch {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    pub status: Option<CompanyStatus>,
    pub budget_monthly_cents: Option<u32>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub default_responsible_user_id: Option<Option<String>>,
    pub require_board_approval_for_new_agents: Option<bool>,
    /// Days a finished run's log is kept (1 to 3650); null keeps logs for good.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<u32>)]
    pub run_log_retention_days: Option<Option<u32>>,
    /// Days a closed task's worktree is kept (1 to 3650); null: 7.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<u32>)]
    pub workspace_retention_days: Option<Option<u32>>,
    /// MiB the company's open worktrees may use; null: 10 GiB.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<u32>)]
    pub workspace_disk_budget_mb: Option<Option<u32>>,
    /// Replaces the company's rule over who resolves its cards; unknown
    /// kinds, keys or policies are a 400.
    pub interaction_resolver_governance: Option<crate::company_governance::ResolverGovernance>,
    /// Consent to share feedback (a record only: nothing is sent anywhere).
    pub feedback_data_sharing_enabled: Option<bool>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub feedback_data_sharing_terms_version: Option<Option<String>>,
    /// Recorded by the server when consent is given; a request naming it is
    /// refused rather than trusted.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub feedback_data_sharing_consent_at: Option<Option<Value>>,
    /// As `feedbackDataSharingConsentAt`: the server records who agreed.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub feedback_data_sharing_consent_by_user_id: Option<Option<Value>>,
    /// An uploaded logo asset of the company (`POST .../logo`); null removes it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub logo_asset_id: Option<Option<String>>,
}

/// The body of `PATCH /api/companies/{id}/branding` (and of the company's
/// own PATCH when its CEO agent sends it): upstream's strict schema, so any
/// other field is a 400, and at least one field must be there.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BrandingPatch {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub logo_asset_id: Option<Option<String>>,
}

impl From<BrandingPatch> for CompanyPatch {
    fn from(b: BrandingPatch) -> CompanyPatch {
        CompanyPatch {
            name: b.name,
            description: b.description,
            logo_asset_id: b.logo_asset_id,
            ..CompanyPatch::default()
        }
    }
}

#[derive(Debug, Clone, Deserialize, serde::Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewAgent {
    pub name: String,
    pub role: Option<AgentRole>,
    pub title: Option<String>,
    pub icon: Option<String>,
    pub reports_to: Option<String>,
    pub capabilities: Option<String>,
    pub adapter_type: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub adapter_config: Option<serde_json::Map<String, Value>>,
    #[schema(value_type = Option<Object>)]
    pub runtime_config: Option<serde_json::Map<String, Value>>,
    pub budget_monthly_cents: Option<u32>,
    #[schema(value_type = Option<Object>)]
    pub permissions: Option<serde_json::Map<String, Value>>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Map<String, Value>>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentPatch {
    pub name: Option<String>,
    pub role: Option<AgentRole>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub title: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub icon: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub reports_to: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub capabilities: Option<Option<String>>,
    pub adapter_type: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub adapter_config: Option<serde_json::Map<String, Value>>,
    /// When true, `adapterConfig` replaces the stored config instead of being merged into it.
    pub replace_adapter_config: Option<bool>,
    #[schema(value_type = Option<Object>)]
    pub runtime_config: Option<serde_json::Map<String, Value>>,
    pub budget_monthly_cents: Option<u32>,
    #[schema(value_type = Option<Object>)]
    pub permissions: Option<serde_json::Map<String, Value>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Option<serde_json::Map<String, Value>>>,
    pub status: Option<AgentStatus>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewGoal {
    pub title: String,
    pub description: Option<String>,
    pub level: Option<GoalLevel>,
    pub status: Option<GoalStatus>,
    pub parent_id: Option<String>,
    pub owner_agent_id: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalPatch {
    pub title: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    pub level: Option<GoalLevel>,
    pub status: Option<GoalStatus>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub parent_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub owner_agent_id: Option<Option<String>>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewProject {
    pub name: String,
    pub description: Option<String>,
    pub status: Option<ProjectStatus>,
    pub goal_id: Option<String>,
    /// Upstream's list form; a project serves one goal here, so at most one
    /// id (or the same one as `goalId`).
    pub goal_ids: Option<Vec<String>>,
    pub lead_agent_id: Option<String>,
    pub target_date: Option<String>,
    pub color: Option<String>,
    pub execution_workspace_policy: Option<crate::workspace_ops::ExecutionWorkspacePolicy>,
    pub icon: Option<crate::project::ProjectIcon>,
    #[schema(value_type = Option<Object>)]
    pub env: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectPatch {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    pub status: Option<ProjectStatus>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub goal_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub lead_agent_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub target_date: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub color: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub archived_at: Option<Option<String>>,
    /// null goes back to the default (isolated).
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<crate::workspace_ops::ExecutionWorkspacePolicy>)]
    pub execution_workspace_policy: Option<Option<crate::workspace_ops::ExecutionWorkspacePolicy>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<crate::project::ProjectIcon>)]
    pub icon: Option<Option<crate::project::ProjectIcon>>,
    /// null removes every variable.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Object>)]
    pub env: Option<Option<serde_json::Value>>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewIssue {
    pub title: String,
    pub description: Option<String>,
    pub status: Option<IssueStatus>,
    pub priority: Option<IssuePriority>,
    pub project_id: Option<String>,
    pub goal_id: Option<String>,
    pub parent_id: Option<String>,
    pub assignee_agent_id: Option<String>,
    pub assignee_user_id: Option<String>,
    pub billing_code: Option<String>,
    pub label_ids: Option<Vec<String>>,
    pub blocked_by_issue_ids: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssuePatch {
    pub title: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    pub status: Option<IssueStatus>,
    pub priority: Option<IssuePriority>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub project_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub goal_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub parent_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub assignee_agent_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub assignee_user_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub billing_code: Option<Option<String>>,
    pub label_ids: Option<Vec<String>>,
    pub blocked_by_issue_ids: Option<Vec<String>>,
    /// A comment added in the same transaction as the update.
    pub comment: Option<String>,
    /// On a done or cancelled task: `true` reopens it to `todo` (when no
    /// `status` is given) and wakes its assignee; `false` keeps a comment
    /// from reopening it. Without it, a person's comment on closed work an
    /// agent owns reopens it (upstream's rule).
    pub reopen: Option<bool>,
    /// Upstream's execution policy; only its `monitor` is kept (`null` clears it).
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Object>)]
    pub execution_policy: Option<Option<Value>>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Checkout {
    pub agent_id: String,
    pub expected_statuses: Vec<IssueStatus>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewComment {
    pub body: String,
    /// The client's id for this comment: sending it again (a retry) returns
    /// the comment already made instead of a second one.
    pub client_request_id: Option<String>,
    /// On a done or cancelled task: `true` reopens it to `todo` and wakes
    /// its assignee; `false` leaves it closed (a note: nobody is woken, and
    /// the answer's `notWoken` says so). Without it, a person's comment on
    /// closed work an agent owns reopens it; an agent's does not.
    pub reopen: Option<bool>,
    /// Upstream's explicit follow-up; on a closed task it reopens it as
    /// `reopen: true` does.
    pub resume: Option<bool>,
    /// How the board's thread shows the comment (people only; see
    /// [`crate::comment::Presentation`]). Present at all, even null, from
    /// an agent: 403, as upstream.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Object>)]
    pub presentation: Option<Option<crate::comment::Presentation>>,
    /// Structured detail shown beside the comment (people only; see
    /// [`crate::comment::CommentMetadata`]).
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Option<crate::comment::CommentMetadata>>,
    /// Never the caller's to say: an agent naming one is refused (403);
    /// from a person it is ignored, as upstream.
    pub on_behalf_of_user_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewLabel {
    pub name: String,
    pub color: String,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DocumentPut {
    pub title: Option<String>,
    pub format: DocumentFormat,
    pub body: String,
    pub change_summary: Option<String>,
    /// When given, the write succeeds only if it is still the latest revision (409 otherwise).
    pub base_revision_id: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DocumentFormat {
    Markdown,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewApproval {
    #[serde(rename = "type")]
    pub kind: crate::approval::ApprovalType,
    #[schema(value_type = Option<Object>)]
    pub payload: Option<serde_json::Map<String, Value>>,
    /// Issues this approval concerns; their assignees hear of the decision.
    pub issue_ids: Option<Vec<String>>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecision {
    pub decision_note: Option<String>,
    /// For `resubmit`: the revised payload (fields replace the old ones).
    #[schema(value_type = Option<Object>)]
    pub payload: Option<serde_json::Map<String, Value>>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewCostEvent {
    pub agent_id: Option<String>,
    pub issue_id: Option<String>,
    pub project_id: Option<String>,
    pub goal_id: Option<String>,
    pub heartbeat_run_id: Option<String>,
    pub billing_code: Option<String>,
    /// Who pays: upstream's words (`metered_api`, `subscription_included`,
    /// ...); absent is `unknown`.
    #[serde(default)]
    pub billing_type: Option<crate::billing::BillingType>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub input_tokens: Option<u64>,
    pub cached_input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Absent means the price is unknown: the event is stored as unpriced.
    pub cost_cents: Option<u64>,
    pub occurred_at: Option<String>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetPatch {
    pub budget_monthly_cents: u32,
}
