//! The entities as the API shows them: camelCase JSON with upstream's field
//! names. Statuses, roles and levels are the enums of the sibling modules,
//! read strictly from the database (see [`crate::stored`]).

use serde::Serialize;

use crate::agent::{AgentRole, AgentStatus};
use crate::company::CompanyStatus;
use crate::goal::{GoalLevel, GoalStatus};
use crate::heartbeat::RunStatus;
use crate::issue::{IssuePriority, IssueStatus};
use crate::project::ProjectStatus;
use serde_json::Value;
use utoipa::ToSchema;

mod comment;
mod documents;
mod keys;

pub use comment::Comment;
pub use documents::{Document, DocumentRevision, DocumentSummary};
pub use keys::{AgentApiKey, KeyScope, KeyScopeKind};

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Company {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub status: CompanyStatus,
    pub pause_reason: Option<String>,
    pub paused_at: Option<String>,
    pub issue_prefix: String,
    pub issue_counter: i64,
    pub budget_monthly_cents: i64,
    pub spent_monthly_cents: i64,
    pub default_responsible_user_id: Option<String>,
    pub require_board_approval_for_new_agents: bool,
    /// Days a finished run's log is kept before the retention sweep deletes
    /// it; null keeps logs for good.
    pub run_log_retention_days: Option<i64>,
    /// Days a closed task's worktree is kept before the sweep removes it
    /// (its branch stays); null is the default (7).
    pub workspace_retention_days: Option<i64>,
    /// The disk the company's open worktrees may use, in MiB; null is the
    /// default (10 GiB). A task's first run is refused past it.
    pub workspace_disk_budget_mb: Option<i64>,
    /// Who may resolve the company's interaction cards, per kind.
    pub interaction_resolver_governance: crate::company_governance::ResolverGovernance,
    /// Consent to share feedback traces; only the record is kept (this
    /// build shares nothing).
    pub feedback_data_sharing_enabled: bool,
    pub feedback_data_sharing_consent_at: Option<String>,
    pub feedback_data_sharing_consent_by_user_id: Option<String>,
    pub feedback_data_sharing_terms_version: Option<String>,
    pub logo_asset_id: Option<String>,
    /// Where the logo is served (`/api/assets/{logoAssetId}/content`).
    pub logo_url: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    pub id: String,
    pub company_id: String,
    pub name: String,
    pub role: AgentRole,
    pub title: Option<String>,
    pub icon: Option<String>,
    pub status: AgentStatus,
    pub reports_to: Option<String>,
    pub capabilities: Option<String>,
    pub adapter_type: String,
    /// Secret values are write-only: shown as `[REDACTED]`; sending the
    /// placeholder back keeps the stored value.
    #[schema(value_type = Object)]
    #[serde(serialize_with = "crate::secrets::serialize_redacted")]
    pub adapter_config: Value,
    /// Redacted like `adapterConfig`, as revisions are.
    #[schema(value_type = Object)]
    #[serde(serialize_with = "crate::secrets::serialize_redacted")]
    pub runtime_config: Value,
    pub budget_monthly_cents: i64,
    pub spent_monthly_cents: i64,
    pub pause_reason: Option<String>,
    pub paused_at: Option<String>,
    pub error_reason: Option<String>,
    #[schema(value_type = Object)]
    pub permissions: Value,
    pub last_heartbeat_at: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    pub created_at: String,
    pub updated_at: String,
    pub url_key: String,
    /// The provider refused its last run for a usage limit that lifts at
    /// this time; its wakes wait until then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_limited_until: Option<String>,
}

impl Agent {
    /// The config as anyone outside the run may see it (pages, reports).
    pub fn redacted_config(&self) -> Value {
        crate::secrets::redact_config(&self.adapter_config).0
    }

    pub fn redacted_runtime_config(&self) -> Value {
        crate::secrets::redact_config(&self.runtime_config).0
    }
}

/// One node of `GET /api/companies/:id/org`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrgNode {
    pub id: String,
    pub name: String,
    pub role: AgentRole,
    pub title: Option<String>,
    pub status: AgentStatus,
    #[schema(no_recursion)]
    pub reports: Vec<OrgNode>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Goal {
    pub id: String,
    pub company_id: String,
    pub title: String,
    pub description: Option<String>,
    pub level: GoalLevel,
    pub status: GoalStatus,
    pub parent_id: Option<String>,
    pub owner_agent_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    pub id: String,
    pub company_id: String,
    pub goal_id: Option<String>,
    pub name: String,
    pub description: Option<String>,
    pub status: ProjectStatus,
    pub lead_agent_id: Option<String>,
    pub target_date: Option<String>,
    pub color: Option<String>,
    pub archived_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub url_key: String,
    pub goal_ids: Vec<String>,
    /// The goals of `goalIds`, named.
    pub goals: Vec<GoalRef>,
    /// The project's tasks, whatever their status.
    pub task_count: i64,
    /// The project's monthly budget; null when it has none (0).
    pub budget: Option<ProjectBudget>,
    /// Where its code lives: primary first, then oldest.
    pub workspaces: Vec<crate::workspace::ProjectWorkspace>,
    /// The workspace its tasks' worktrees are made from (else the first).
    pub primary_workspace: Option<crate::workspace::ProjectWorkspace>,
    pub codebase: crate::codebase::Codebase,
    /// null: a task of the project gets its own worktree when the project
    /// declares a git repository.
    pub execution_workspace_policy: Option<crate::workspace_ops::ExecutionWorkspacePolicy>,
    #[serde(flatten)]
    pub look: crate::project::ProjectLook,
}

/// A project's spending limit as upstream lists it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectBudget {
    pub amount_cents: i64,
    pub window_kind: BudgetWindowKind,
}

/// Budgets here are per UTC calendar month (`crate::budget::month_window`).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BudgetWindowKind {
    CalendarMonthUtc,
}

/// A goal as a project names it: upstream's `{ id, title }`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalRef {
    pub id: String,
    pub title: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Label {
    pub id: String,
    pub company_id: String,
    pub name: String,
    pub color: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A blocker or blocked issue, as embedded in an issue's `blockedBy` / `blocks`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssueRef {
    pub id: String,
    pub identifier: String,
    pub title: String,
    pub status: IssueStatus,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Issue {
    pub id: String,
    pub company_id: String,
    pub project_id: Option<String>,
    pub goal_id: Option<String>,
    pub parent_id: Option<String>,
    pub title: String,
    pub description: Option<String>,
    pub status: IssueStatus,
    pub priority: IssuePriority,
    pub assignee_agent_id: Option<String>,
    pub assignee_user_id: Option<String>,
    pub checkout_run_id: Option<String>,
    pub execution_run_id: Option<String>,
    pub execution_locked_at: Option<String>,
    pub created_by_agent_id: Option<String>,
    pub created_by_user_id: Option<String>,
    pub issue_number: i64,
    pub identifier: String,
    pub origin_kind: String,
    pub request_depth: i64,
    pub billing_code: Option<String>,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub cancelled_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// How many times the status has changed since the task was created.
    pub status_version: i64,
    /// Upstream's execution policy: here only a scheduled monitor (`monitor`).
    #[schema(value_type = Option<Object>)]
    pub execution_policy: Option<serde_json::Value>,
    /// Upstream's execution state: the monitor's state (scheduled, triggered, cleared).
    #[schema(value_type = Option<Object>)]
    pub execution_state: Option<serde_json::Value>,
    pub monitor_next_check_at: Option<String>,
    pub monitor_wake_requested_at: Option<String>,
    pub monitor_last_triggered_at: Option<String>,
    pub monitor_attempt_count: i64,
    pub monitor_notes: Option<String>,
    pub monitor_scheduled_by: Option<String>,
    /// The person answerable for the task: its creator, else its parent's.
    pub responsible_user_id: Option<String>,
    /// Agent Chat (upstream's conversation columns): the agent and person of
    /// a chat, its state and session generation, and the `/new` comment
    /// that began the current session. All none (generation 0) on a task.
    pub conversation_agent_id: Option<String>,
    pub conversation_user_id: Option<String>,
    pub conversation_state: Option<crate::chat::ConversationState>,
    pub conversation_session_generation: i64,
    pub conversation_boundary_comment_id: Option<String>,
    /// Upstream's kind of work; always `standard` here (we have no others).
    pub work_mode: String,
    /// Upstream's trust label on text from outside the company: always
    /// null here, where every task is written by the board or an agent.
    #[schema(value_type = Option<Object>)]
    pub source_trust: Option<serde_json::Value>,
    pub labels: Vec<Label>,
    pub label_ids: Vec<String>,
    pub blocked_by: Vec<IssueRef>,
    pub blocks: Vec<IssueRef>,
    pub blocker_attention: crate::issue_attention::BlockerAttention,
    pub review_attention: crate::issue_attention::ReviewAttention,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivityEntry {
    pub id: String,
    pub company_id: String,
    pub actor_type: String,
    pub actor_id: String,
    pub action: String,
    pub entity_type: String,
    pub entity_id: String,
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
    /// The person accountable for the action: the acting person on a
    /// person's action (as upstream has it); null on an agent's or the
    /// system's, which we do not trace to a person.
    pub responsible_user_id: Option<String>,
    #[schema(value_type = Object)]
    pub details: Value,
    pub created_at: String,
}

impl ActivityEntry {
    /// [`ActivityEntry::responsible_user_id`] of an action by this actor.
    pub fn responsible_of(actor_type: &str, actor_id: &str) -> Option<String> {
        (actor_type == "user").then(|| actor_id.to_string())
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeartbeatRun {
    pub id: String,
    pub company_id: String,
    pub agent_id: String,
    pub invocation_source: String,
    pub trigger_detail: Option<String>,
    pub status: RunStatus,
    pub wakeup_request_id: Option<String>,
    pub issue_id: Option<String>,
    pub wake_reason: Option<String>,
    #[schema(value_type = Object)]
    pub context_snapshot: Value,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub error: Option<String>,
    pub error_code: Option<String>,
    pub exit_code: Option<i64>,
    pub signal: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub usage_json: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub result_json: Option<Value>,
    pub stdout_excerpt: Option<String>,
    pub stderr_excerpt: Option<String>,
    pub log_store: Option<String>,
    pub log_ref: Option<String>,
    pub log_bytes: i64,
    /// Always false: run logs are stored as written, never compressed.
    pub log_compressed: bool,
    /// When the company's log retention deleted the run's log (absent while
    /// the log is kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_removed_at: Option<String>,
    /// The `seq` the run's next event gets.
    pub next_event_seq: i64,
    pub process_pid: Option<i64>,
    pub process_group_id: Option<i64>,
    /// When the run's process started (its leader), RFC 3339.
    pub process_started_at: Option<String>,
    /// When the agent's process last wrote output (kept at most every few
    /// seconds while the run goes, exactly at its end).
    pub last_output_at: Option<String>,
    /// The `seq` of that chunk in the run log.
    pub last_output_seq: Option<i64>,
    /// `stdout` or `stderr`.
    pub last_output_stream: Option<String>,
    /// The run log's size in bytes after that chunk.
    pub last_output_bytes: Option<i64>,
    /// Once finished: did the run move its work forward (see
    /// `run_liveness`), and why.
    pub liveness_state: Option<crate::run_liveness::Liveness>,
    pub liveness_reason: Option<String>,
    /// The latest change the run made on the board, when it made progress.
    pub last_useful_action_at: Option<String>,
    /// The run whose work this one continues (after a restart) or retries.
    pub retry_of_run_id: Option<String>,
    /// Consecutive continuations of the task after restarts; bounded.
    pub continuation_attempt: i64,
    /// How many later wakes were folded into this run while it was queued.
    pub coalesced_count: i64,
    /// The CLI session the run resumed, and the one it ended in.
    pub session_id_before: Option<String>,
    pub session_id_after: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(flatten)]
    pub upstream: crate::run_shape::RunUpstreamKeys,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunEvent {
    pub id: String,
    pub company_id: String,
    pub run_id: String,
    pub agent_id: String,
    pub seq: i64,
    pub event_type: String,
    pub stream: Option<String>,
    pub level: String,
    pub message: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub payload: Option<Value>,
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WakeupRequest {
    pub id: String,
    pub company_id: String,
    pub agent_id: String,
    pub source: crate::heartbeat::WakeSource,
    pub trigger_detail: Option<String>,
    pub reason: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub payload: Option<Value>,
    pub issue_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub status: crate::heartbeat::WakeStatus,
    pub skip_reason: Option<crate::heartbeat::WakeSkipReason>,
    pub run_id: Option<String>,
    pub coalesced_count: i64,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    pub id: String,
    pub company_id: String,
    #[serde(rename = "type")]
    pub kind: crate::approval::ApprovalType,
    pub requested_by_agent_id: Option<String>,
    pub requested_by_user_id: Option<String>,
    pub status: crate::approval::ApprovalStatus,
    /// A hire's `adapterConfig` shows secret values as `[REDACTED]`.
    #[schema(value_type = Object)]
    #[serde(serialize_with = "crate::secrets::serialize_redacted_payload")]
    pub payload: Value,
    pub decision_note: Option<String>,
    pub decided_by_user_id: Option<String>,
    pub decided_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl Approval {
    pub fn redacted_payload(&self) -> Value {
        crate::secrets::redact_payload(&self.payload)
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalComment {
    pub id: String,
    pub company_id: String,
    pub approval_id: String,
    pub author_agent_id: Option<String>,
    pub author_user_id: Option<String>,
    pub author_type: String,
    pub body: String,
    pub created_at: String,
    /// Approval comments are never edited here: always `createdAt`.
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CostEvent {
    pub id: String,
    pub company_id: String,
    pub agent_id: Option<String>,
    pub issue_id: Option<String>,
    pub project_id: Option<String>,
    pub goal_id: Option<String>,
    pub heartbeat_run_id: Option<String>,
    pub billing_code: Option<String>,
    pub provider: Option<String>,
    /// `priced`, or `unpriced` when the event carried no cost.
    pub cost_status: String,
    pub model: Option<String>,
    pub input_tokens: i64,
    pub cached_input_tokens: i64,
    pub output_tokens: i64,
    pub cost_cents: Option<i64>,
    pub occurred_at: String,
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetIncident {
    pub id: String,
    pub company_id: String,
    pub scope_type: crate::budget::BudgetScope,
    pub scope_id: String,
    /// `soft` (80 %) or `hard` (100 %, work stopped).
    pub kind: crate::budget::IncidentKind,
    pub window_month: String,
    pub spend_cents: i64,
    pub budget_cents: i64,
    pub status: crate::budget::IncidentStatus,
    pub resolution: Option<crate::budget::IncidentResolution>,
    pub created_at: String,
    pub resolved_at: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigRevision {
    pub id: String,
    pub agent_id: String,
    pub company_id: String,
    pub revision_number: i64,
    pub adapter_type: String,
    /// Secret values are shown as `[REDACTED]`.
    #[schema(value_type = Object)]
    pub adapter_config: Value,
    #[schema(value_type = Object)]
    pub runtime_config: Value,
    pub redacted_paths: Vec<Vec<String>>,
    /// The agent that made the change, if an agent did.
    pub created_by_agent_id: Option<String>,
    /// The board user that made the change, if one did.
    pub created_by_user_id: Option<String>,
    /// `patch`, or `rollback` for a revision written by a rollback.
    pub source: String,
    /// The revision a rollback restored.
    pub rolled_back_from_revision_id: Option<String>,
    /// The keys of the snapshot that differ from the revision before.
    pub changed_keys: Vec<String>,
    /// The snapshot before this change: `{}` for the first revision. It
    /// has `adapterType`, `adapterConfig` and `runtimeConfig` (redacted) and,
    /// from schema 50 on, who the agent is (`name`, `role`, `title`, `icon`,
    /// `reportsTo`, `capabilities`, `budgetMonthlyCents`, `metadata`,
    /// `defaultEnvironmentId`).
    #[schema(value_type = Object)]
    pub before_config: Value,
    /// The snapshot after this change.
    #[schema(value_type = Object)]
    pub after_config: Value,
    pub change_summary: Option<String>,
    pub created_at: String,
}

/// A resumable CLI session of one agent on one task.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskSession {
    pub id: String,
    pub company_id: String,
    pub agent_id: String,
    pub adapter_type: String,
    pub task_key: String,
    #[schema(value_type = Option<Object>)]
    pub session_params_json: Option<Value>,
    pub session_display_id: Option<String>,
    pub last_run_id: Option<String>,
    pub last_error: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// An agent's runtime totals, computed from its runs and cost events.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeState {
    pub agent_id: String,
    pub company_id: String,
    pub adapter_type: String,
    /// The session of the agent's latest run that ended in one.
    pub session_id: Option<String>,
    pub last_run_id: Option<String>,
    pub last_run_status: Option<crate::heartbeat::RunStatus>,
    pub last_error: Option<String>,
    pub total_input_tokens: i64,
    pub total_output_tokens: i64,
    pub total_cached_input_tokens: i64,
    pub total_cost_cents: i64,
    pub updated_at: Option<String>,
    /// The first run, or the first read before any (upstream's row creation).
    pub created_at: String,
    /// Upstream's adapter state blob: we keep none beyond sessions, so `{}`.
    #[schema(value_type = Object)]
    pub state_json: Value,
    pub session_display_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub session_params_json: Option<Value>,
}
