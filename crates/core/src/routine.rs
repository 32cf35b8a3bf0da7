//! Routines: a task template (title, instructions, assignee) and triggers
//! (a cron schedule, a signed webhook, an API call) that each create a
//! tracked task from it and wake its assignee. Vocabulary, records and
//! request bodies; the schedule rules are in [`crate::cron`].

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::input::double_option;
use crate::issue::{IssuePriority, IssueStatus};

macro_rules! text_enum {
    ($(#[$doc:meta])* $name:ident: $what:literal { $($variant:ident = $text:tt,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
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

        impl crate::stored::Stored for $name {
            const WHAT: &'static str = $what;
            const ALL: &'static [$name] = &[$($name::$variant),*];
            fn as_str(self) -> &'static str {
                $name::as_str(self)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

text_enum! {
    /// `archived` is terminal: no route brings a routine back from it.
    RoutineStatus: "routine status" {
        Active = "active",
        Paused = "paused",
        Archived = "archived",
    }
}

text_enum! {
    /// What a new run does while an earlier execution's task is still live.
    ConcurrencyPolicy: "routine concurrency policy" {
        CoalesceIfActive = "coalesce_if_active",
        SkipIfActive = "skip_if_active",
        AlwaysEnqueue = "always_enqueue",
    }
}

text_enum! {
    CatchUpPolicy: "routine catch-up policy" {
        SkipMissed = "skip_missed",
        EnqueueMissedWithCap = "enqueue_missed_with_cap",
    }
}

text_enum! {
    /// Whether a scheduled tick needs something to have happened since the
    /// routine last ran: `require_external_activity` skips a quiet tick
    /// (no task, no run, no tokens) instead of waking its agent for nothing.
    ActivityGatePolicy: "routine activity gate policy" {
        Always = "always",
        RequireExternalActivity = "require_external_activity",
    }
}

text_enum! {
    /// Where the gate looks for activity: the whole company, or the
    /// routine's project.
    ActivityGateScope: "routine activity gate scope" {
        Company = "company",
        Project = "project",
    }
}

text_enum! {
    TriggerKind: "routine trigger kind" {
        Schedule = "schedule",
        Webhook = "webhook",
        Api = "api",
    }
}

text_enum! {
    SigningMode: "webhook signing mode" {
        Bearer = "bearer",
        HmacSha256 = "hmac_sha256",
        GithubHmac = "github_hmac",
        None = "none",
    }
}

text_enum! {
    RunSource: "routine run source" {
        Schedule = "schedule",
        Manual = "manual",
        Api = "api",
        Webhook = "webhook",
    }
}

text_enum! {
    RoutineRunStatus: "routine run status" {
        Received = "received",
        Coalesced = "coalesced",
        Skipped = "skipped",
        IssueCreated = "issue_created",
        Completed = "completed",
        Failed = "failed",
    }
}

text_enum! {
    /// What made a routine: a person or agent through the API (`manual`), or
    /// upstream's pipelines (`pipeline_automation`, which this server does
    /// not have, so it never makes one).
    RoutineOriginKind: "routine origin kind" {
        Manual = "manual",
        PipelineAutomation = "pipeline_automation",
    }
}

text_enum! {
    VariableType: "routine variable type" {
        Text = "text",
        Textarea = "textarea",
        Number = "number",
        Boolean = "boolean",
        Select = "select",
        Date = "date",
    }
}

impl RoutineRunStatus {
    /// A run that made a task follows it: done completes the run, blocked
    /// or cancelled fails it, and a reopened task makes it live again.
    pub fn following(self, issue: IssueStatus) -> RoutineRunStatus {
        match (self, issue) {
            (
                RoutineRunStatus::IssueCreated
                | RoutineRunStatus::Completed
                | RoutineRunStatus::Failed,
                IssueStatus::Done,
            ) => RoutineRunStatus::Completed,
            (
                RoutineRunStatus::IssueCreated
                | RoutineRunStatus::Completed
                | RoutineRunStatus::Failed,
                IssueStatus::Blocked | IssueStatus::Cancelled,
            ) => RoutineRunStatus::Failed,
            (
                RoutineRunStatus::Completed | RoutineRunStatus::Failed,
                IssueStatus::Backlog
                | IssueStatus::Todo
                | IssueStatus::InProgress
                | IssueStatus::InReview,
            ) => RoutineRunStatus::IssueCreated,
            (status, _) => status,
        }
    }
}

/// The issue statuses of a live execution (upstream's "open" set).
pub const OPEN_ISSUE_STATUSES: &[IssueStatus] = &[
    IssueStatus::Backlog,
    IssueStatus::Todo,
    IssueStatus::InProgress,
    IssueStatus::InReview,
    IssueStatus::Blocked,
];

pub const WEBHOOK_REPLAY_MIN_SEC: i64 = 30;
pub const WEBHOOK_REPLAY_MAX_SEC: i64 = 86_400;
pub const WEBHOOK_REPLAY_DEFAULT_SEC: i64 = 300;
pub const TITLE_MAX: usize = 200;
pub const LABEL_MAX: usize = 120;
pub const IDEMPOTENCY_KEY_MAX: usize = 255;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutineVariable {
    pub name: String,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(rename = "type", default = "text_type")]
    pub kind: VariableType,
    #[serde(default)]
    pub default_value: Option<Value>,
    #[serde(default = "yes")]
    pub required: bool,
    #[serde(default)]
    pub options: Vec<String>,
}

fn text_type() -> VariableType {
    VariableType::Text
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Routine {
    pub id: String,
    pub company_id: String,
    pub project_id: Option<String>,
    /// The routine folder it is filed in; none: unfiled.
    pub folder_id: Option<String>,
    pub goal_id: Option<String>,
    pub parent_issue_id: Option<String>,
    pub title: String,
    pub description: Option<String>,
    pub assignee_agent_id: Option<String>,
    pub priority: IssuePriority,
    pub status: RoutineStatus,
    pub concurrency_policy: ConcurrencyPolicy,
    pub catch_up_policy: CatchUpPolicy,
    pub activity_gate_policy: ActivityGatePolicy,
    pub activity_gate_scope: ActivityGateScope,
    pub origin_kind: RoutineOriginKind,
    pub origin_id: Option<String>,
    pub variables: Vec<RoutineVariable>,
    /// Variables for the runs it starts, over the agent's and the project's
    /// (as an agent's env holds them: a secret is a `secret_ref`, resolved
    /// only when a run starts).
    #[schema(value_type = Option<Object>)]
    pub env: Option<Value>,
    pub latest_revision_id: Option<String>,
    pub latest_revision_number: i64,
    pub created_by_agent_id: Option<String>,
    pub created_by_user_id: Option<String>,
    /// The person its runs and tasks are done for.
    pub responsible_user_id: Option<String>,
    pub updated_by_agent_id: Option<String>,
    pub updated_by_user_id: Option<String>,
    pub last_triggered_at: Option<String>,
    pub last_enqueued_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutineTrigger {
    pub id: String,
    pub company_id: String,
    pub routine_id: String,
    pub kind: TriggerKind,
    pub label: Option<String>,
    pub enabled: bool,
    pub cron_expression: Option<String>,
    pub timezone: Option<String>,
    pub next_run_at: Option<String>,
    pub last_fired_at: Option<String>,
    pub public_id: Option<String>,
    pub signing_mode: Option<SigningMode>,
    pub replay_window_sec: Option<i64>,
    pub last_rotated_at: Option<String>,
    pub last_result: Option<String>,
    pub created_by_agent_id: Option<String>,
    pub created_by_user_id: Option<String>,
    pub updated_by_agent_id: Option<String>,
    pub updated_by_user_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutineRun {
    pub id: String,
    pub company_id: String,
    pub routine_id: String,
    pub trigger_id: Option<String>,
    pub source: RunSource,
    pub status: RoutineRunStatus,
    pub triggered_at: String,
    pub routine_revision_id: Option<String>,
    pub responsible_user_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub trigger_payload: Option<Value>,
    /// What the run dispatched ([`crate::routine_dispatch`]); none on runs
    /// that never got that far (a tick that failed) or predate it.
    pub dispatch_fingerprint: Option<String>,
    pub linked_issue_id: Option<String>,
    pub coalesced_into_run_id: Option<String>,
    pub failure_reason: Option<String>,
    pub completed_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkedIssue {
    pub id: String,
    pub identifier: String,
    pub title: String,
    pub status: IssueStatus,
    pub priority: IssuePriority,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TriggerRef {
    pub id: String,
    pub kind: TriggerKind,
    pub label: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutineRunSummary {
    #[serde(flatten)]
    pub run: RoutineRun,
    pub linked_issue: Option<LinkedIssue>,
    pub trigger: Option<TriggerRef>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutineRevision {
    pub id: String,
    pub company_id: String,
    pub routine_id: String,
    pub revision_number: i64,
    pub title: String,
    pub description: Option<String>,
    pub snapshot: Value,
    pub change_summary: Option<String>,
    pub restored_from_revision_id: Option<String>,
    pub created_by_agent_id: Option<String>,
    pub created_by_user_id: Option<String>,
    pub created_by_run_id: Option<String>,
    pub responsible_user_id: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssigneeRef {
    pub id: String,
    pub name: String,
    pub role: String,
    pub title: Option<String>,
    pub url_key: String,
}

/// A routine's description as the original keeps it: a markdown document
/// (key `description`) with a revision for each change of the text.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutineDocument {
    pub id: String,
    pub company_id: String,
    pub routine_id: String,
    pub key: String,
    pub title: String,
    pub format: String,
    pub body: String,
    pub latest_revision_id: Option<String>,
    pub latest_revision_number: i64,
    pub created_by_agent_id: Option<String>,
    pub created_by_user_id: Option<String>,
    pub updated_by_agent_id: Option<String>,
    pub updated_by_user_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutineDetail {
    #[serde(flatten)]
    pub routine: Routine,
    /// Upstream's plugin that owns the routine: there are no plugins here.
    #[schema(value_type = Option<Object>)]
    pub managed_by_plugin: Option<Value>,
    pub project: Option<crate::model::Project>,
    pub assignee: Option<AssigneeRef>,
    pub parent_issue: Option<crate::model::Issue>,
    pub description_document: Option<RoutineDocument>,
    pub triggers: Vec<RoutineTrigger>,
    pub recent_runs: Vec<RoutineRunSummary>,
    pub active_issue: Option<LinkedIssue>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TriggerListItem {
    pub id: String,
    pub kind: TriggerKind,
    pub label: Option<String>,
    pub enabled: bool,
    pub cron_expression: Option<String>,
    pub timezone: Option<String>,
    pub next_run_at: Option<String>,
    pub last_fired_at: Option<String>,
    pub last_result: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutineListItem {
    #[serde(flatten)]
    pub routine: Routine,
    /// Upstream's plugin that owns the routine: there are no plugins here.
    #[schema(value_type = Option<Object>)]
    pub managed_by_plugin: Option<Value>,
    pub triggers: Vec<TriggerListItem>,
    pub last_run: Option<RoutineRunSummary>,
    pub active_issue: Option<LinkedIssue>,
}

/// Shown once, when a webhook trigger is made or its secret rotated.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretMaterial {
    pub webhook_url: String,
    pub webhook_secret: String,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewRoutine {
    pub title: String,
    pub description: Option<String>,
    pub project_id: Option<String>,
    pub goal_id: Option<String>,
    pub parent_issue_id: Option<String>,
    pub assignee_agent_id: Option<String>,
    pub priority: Option<IssuePriority>,
    pub status: Option<RoutineStatus>,
    pub concurrency_policy: Option<ConcurrencyPolicy>,
    pub catch_up_policy: Option<CatchUpPolicy>,
    pub activity_gate_policy: Option<ActivityGatePolicy>,
    pub activity_gate_scope: Option<ActivityGateScope>,
    pub variables: Option<Vec<RoutineVariable>>,
    pub folder_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub env: Option<Value>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RoutinePatch {
    pub title: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub project_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub goal_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub parent_issue_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub assignee_agent_id: Option<Option<String>>,
    pub priority: Option<IssuePriority>,
    pub status: Option<RoutineStatus>,
    pub concurrency_policy: Option<ConcurrencyPolicy>,
    pub catch_up_policy: Option<CatchUpPolicy>,
    pub activity_gate_policy: Option<ActivityGatePolicy>,
    pub activity_gate_scope: Option<ActivityGateScope>,
    pub variables: Option<Vec<RoutineVariable>>,
    /// null takes it out of its folder.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub folder_id: Option<Option<String>>,
    /// null removes every variable.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Object>)]
    pub env: Option<Option<Value>>,
    /// The revision the editor saw; a newer one means someone else saved.
    pub base_revision_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewTrigger {
    pub kind: TriggerKind,
    pub label: Option<String>,
    pub enabled: Option<bool>,
    pub cron_expression: Option<String>,
    pub timezone: Option<String>,
    pub signing_mode: Option<SigningMode>,
    pub replay_window_sec: Option<i64>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TriggerPatch {
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub label: Option<Option<String>>,
    pub enabled: Option<bool>,
    pub cron_expression: Option<String>,
    pub timezone: Option<String>,
    pub signing_mode: Option<SigningMode>,
    pub replay_window_sec: Option<i64>,
}

/// `POST /api/routines/{id}/run`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunRequest {
    pub trigger_id: Option<String>,
    pub payload: Option<Value>,
    pub variables: Option<serde_json::Map<String, Value>>,
    pub assignee_agent_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub source: Option<RunSource>,
}
