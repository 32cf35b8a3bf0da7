//! Bounds on what a client may send. Each is far above what real use needs
//! and low enough that no single request can make the store slow (long
//! transactions, quadratic checks) or an aggregate overflow: an input that
//! crosses one is a 400 naming the field and the bound, before any I/O.
//!
//! Lengths count characters (Unicode scalar values), as a person would; the
//! 1 MiB request body cap bounds the bytes in any case.

use serde_json::{json, Value};

use crate::company_secret::{NewSecret, SecretPatch, SecretRotation, KEY_MAX_CHARS};
use crate::input::{
    AgentPatch, ApprovalDecision, BrandingPatch, Checkout, CompanyPatch, DocumentPut, GoalPatch,
    IssuePatch, NewAgent, NewApproval, NewComment, NewCompany, NewCostEvent, NewGoal, NewIssue,
    NewLabel, NewProject, ProjectPatch,
};
use crate::issue::IssueStatus;

/// Names of companies, agents, projects, labels; an agent's job title and icon.
pub const NAME_MAX_CHARS: usize = 200;
/// Titles of issues and goals.
pub const TITLE_MAX_CHARS: usize = 500;
/// Ids, keys and short codes: references, billing codes, providers, models,
/// colours, timestamps.
pub const SHORT_TEXT_MAX_CHARS: usize = 200;
/// Descriptions, comments, capabilities, decision notes (256 Ki characters).
pub const LONG_TEXT_MAX_CHARS: usize = 256 * 1024;
/// A document body: as much as fits in one request.
pub const DOCUMENT_BODY_MAX_CHARS: usize = 1_000_000;
/// Titles of documents.
pub const DOCUMENT_TITLE_MAX_CHARS: usize = 200;

/// A company secret's value (64 Ki characters: a PEM key or a service
/// account's JSON fits; a secret is not a file store).
pub const SECRET_VALUE_MAX_CHARS: usize = 64 * 1024;

/// Labels on one issue.
pub const LABEL_IDS_MAX: usize = 50;
/// Issues blocking one issue.
pub const BLOCKERS_MAX: usize = 100;
/// Issues one approval is linked to.
pub const APPROVAL_ISSUES_MAX: usize = 100;
/// `expectedStatuses` of a checkout: each status at most once.
pub const EXPECTED_STATUSES_MAX: usize = IssueStatus::ALL.len();

/// Tokens of one cost event (ten billion; a long run uses millions).
pub const TOKENS_MAX: u64 = 10_000_000_000;
/// Cents of one cost event ($100 million). With this bound a sum over the
/// events of a company cannot overflow i64 below ~900 million events.
pub const COST_CENTS_MAX: u64 = 10_000_000_000;

/// Steps a parent or blocker chain is followed before the write is refused.
pub const ISSUE_GRAPH_DEPTH_MAX: i64 = 1_000;
/// Issues a blocker-cycle check visits before the write is refused.
pub const ISSUE_GRAPH_WALK_MAX: i64 = 10_000;

/// Issues on a page when the client asks for no `limit`.
pub const ISSUE_PAGE_DEFAULT: i64 = 500;
/// The largest `limit` of an issue page.
pub const ISSUE_PAGE_MAX: i64 = 5_000;
/// Bytes (UTF-8) of titles and descriptions on one issue page; the page ends
/// early (with a next cursor) once they pass this, so a page of issues with
/// huge descriptions stays about a MiB. Bytes rather than characters because
/// both engines know a value's byte length without reading it.
pub const ISSUE_PAGE_TEXT_BUDGET: i64 = 1024 * 1024;

/// A run log is read from a byte offset a file can have.
pub const LOG_OFFSET_MAX: u64 = i64::MAX as u64;

/// Why an input was refused, in upstream's (zod's) validation issue shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub path: Vec<Value>,
    pub maximum: u64,
    pub message: String,
}

impl Violation {
    pub fn to_json(&self) -> Value {
        json!({
            "code": "too_big",
            "path": self.path,
            "maximum": self.maximum,
            "message": self.message,
        })
    }
}

/// An input that knows its bounds.
pub trait Validate {
    fn validate(&self) -> Result<(), Violation>;
}

pub fn text(field: &str, value: &str, max: usize) -> Result<(), Violation> {
    // Counting stops at max + 1: a huge value costs no more than a legal one.
    if value.chars().take(max + 1).count() > max {
        return Err(Violation {
            path: vec![json!(field)],
            maximum: max as u64,
            message: format!("{field} must be at most {max} characters"),
        });
    }
    Ok(())
}

fn opt(field: &str, value: Option<&String>, max: usize) -> Result<(), Violation> {
    value.map_or(Ok(()), |v| text(field, v, max))
}

/// For patch fields, where `Some(None)` clears the value.
fn opt2(field: &str, value: &Option<Option<String>>, max: usize) -> Result<(), Violation> {
    opt(field, value.as_ref().and_then(Option::as_ref), max)
}

pub fn ids(field: &str, values: Option<&Vec<String>>, max: usize) -> Result<(), Violation> {
    let Some(values) = values else {
        return Ok(());
    };
    if values.len() > max {
        return Err(Violation {
            path: vec![json!(field)],
            maximum: max as u64,
            message: format!("{field} must have at most {max} entries"),
        });
    }
    for (i, id) in values.iter().enumerate() {
        text(field, id, SHORT_TEXT_MAX_CHARS).map_err(|mut v| {
            v.path.push(json!(i));
            v
        })?;
    }
    Ok(())
}

pub fn number(field: &str, value: Option<u64>, max: u64) -> Result<(), Violation> {
    match value {
        Some(n) if n > max => Err(Violation {
            path: vec![json!(field)],
            maximum: max,
            message: format!("{field} must be at most {max}"),
        }),
        _ => Ok(()),
    }
}

/// The longest run log retention a company may set: ten years.
pub const RUN_LOG_RETENTION_DAYS_MAX: u64 = 3650;

const NAME: usize = NAME_MAX_CHARS;
const SHORT: usize = SHORT_TEXT_MAX_CHARS;
const LONG: usize = LONG_TEXT_MAX_CHARS;

impl Validate for NewCompany {
    fn validate(&self) -> Result<(), Violation> {
        text("name", &self.name, NAME)?;
        opt("description", self.description.as_ref(), LONG)?;
        opt(
            "defaultResponsibleUserId",
            self.default_responsible_user_id.as_ref(),
            SHORT,
        )
    }
}

impl Validate for CompanyPatch {
    fn validate(&self) -> Result<(), Violation> {
        opt("name", self.name.as_ref(), NAME)?;
        opt2("description", &self.description, LONG)?;
        number(
            "runLogRetentionDays",
            self.run_log_retention_days.flatten().map(u64::from),
            RUN_LOG_RETENTION_DAYS_MAX,
        )?;
        number(
            "workspaceRetentionDays",
            self.workspace_retention_days.flatten().map(u64::from),
            crate::workspace_ops::RETENTION_DAYS_MAX,
        )?;
        number(
            "workspaceDiskBudgetMb",
            self.workspace_disk_budget_mb.flatten().map(u64::from),
            crate::workspace_ops::DISK_BUDGET_MB_MAX,
        )?;
        opt2(
            "feedbackDataSharingTermsVersion",
            &self.feedback_data_sharing_terms_version,
            SHORT,
        )?;
        opt2(
            "defaultResponsibleUserId",
            &self.default_responsible_user_id,
            SHORT,
        )
    }
}

impl Validate for BrandingPatch {
    fn validate(&self) -> Result<(), Violation> {
        opt("name", self.name.as_ref(), NAME)?;
        opt2("description", &self.description, LONG)
    }
}

impl Validate for NewAgent {
    fn validate(&self) -> Result<(), Violation> {
        text("name", &self.name, NAME)?;
        opt("title", self.title.as_ref(), NAME)?;
        opt("icon", self.icon.as_ref(), NAME)?;
        opt("reportsTo", self.reports_to.as_ref(), SHORT)?;
        opt("capabilities", self.capabilities.as_ref(), LONG)?;
        opt("adapterType", self.adapter_type.as_ref(), SHORT)
    }
}

impl Validate for AgentPatch {
    fn validate(&self) -> Result<(), Violation> {
        opt("name", self.name.as_ref(), NAME)?;
        opt2("title", &self.title, NAME)?;
        opt2("icon", &self.icon, NAME)?;
        opt2("reportsTo", &self.reports_to, SHORT)?;
        opt2("capabilities", &self.capabilities, LONG)?;
        opt("adapterType", self.adapter_type.as_ref(), SHORT)
    }
}

impl Validate for NewGoal {
    fn validate(&self) -> Result<(), Violation> {
        text("title", &self.title, TITLE_MAX_CHARS)?;
        opt("description", self.description.as_ref(), LONG)?;
        opt("parentId", self.parent_id.as_ref(), SHORT)?;
        opt("ownerAgentId", self.owner_agent_id.as_ref(), SHORT)
    }
}

impl Validate for GoalPatch {
    fn validate(&self) -> Result<(), Violation> {
        opt("title", self.title.as_ref(), TITLE_MAX_CHARS)?;
        opt2("description", &self.description, LONG)?;
        opt2("parentId", &self.parent_id, SHORT)?;
        opt2("ownerAgentId", &self.owner_agent_id, SHORT)
    }
}

impl Validate for NewProject {
    fn validate(&self) -> Result<(), Violation> {
        text("name", &self.name, NAME)?;
        opt("description", self.description.as_ref(), LONG)?;
        opt("goalId", self.goal_id.as_ref(), SHORT)?;
        opt("leadAgentId", self.lead_agent_id.as_ref(), SHORT)?;
        opt("targetDate", self.target_date.as_ref(), SHORT)?;
        opt("color", self.color.as_ref(), SHORT)
    }
}

impl Validate for ProjectPatch {
    fn validate(&self) -> Result<(), Violation> {
        opt("name", self.name.as_ref(), NAME)?;
        opt2("description", &self.description, LONG)?;
        opt2("goalId", &self.goal_id, SHORT)?;
        opt2("leadAgentId", &self.lead_agent_id, SHORT)?;
        opt2("targetDate", &self.target_date, SHORT)?;
        opt2("color", &self.color, SHORT)?;
        opt2("archivedAt", &self.archived_at, SHORT)
    }
}

impl Validate for NewIssue {
    fn validate(&self) -> Result<(), Violation> {
        text("title", &self.title, TITLE_MAX_CHARS)?;
        opt("description", self.description.as_ref(), LONG)?;
        for (field, value) in [
            ("projectId", &self.project_id),
            ("goalId", &self.goal_id),
            ("parentId", &self.parent_id),
            ("assigneeAgentId", &self.assignee_agent_id),
            ("assigneeUserId", &self.assignee_user_id),
            ("billingCode", &self.billing_code),
        ] {
            opt(field, value.as_ref(), SHORT)?;
        }
        ids("labelIds", self.label_ids.as_ref(), LABEL_IDS_MAX)?;
        ids(
            "blockedByIssueIds",
            self.blocked_by_issue_ids.as_ref(),
            BLOCKERS_MAX,
        )
    }
}

impl Validate for IssuePatch {
    fn validate(&self) -> Result<(), Violation> {
        opt("title", self.title.as_ref(), TITLE_MAX_CHARS)?;
        opt2("description", &self.description, LONG)?;
        for (field, value) in [
            ("projectId", &self.project_id),
            ("goalId", &self.goal_id),
            ("parentId", &self.parent_id),
            ("assigneeAgentId", &self.assignee_agent_id),
            ("assigneeUserId", &self.assignee_user_id),
            ("billingCode", &self.billing_code),
        ] {
            opt2(field, value, SHORT)?;
        }
        ids("labelIds", self.label_ids.as_ref(), LABEL_IDS_MAX)?;
        ids(
            "blockedByIssueIds",
            self.blocked_by_issue_ids.as_ref(),
            BLOCKERS_MAX,
        )?;
        opt("comment", self.comment.as_ref(), LONG)
    }
}

impl Validate for Checkout {
    fn validate(&self) -> Result<(), Violation> {
        text("agentId", &self.agent_id, SHORT)?;
        if self.expected_statuses.len() > EXPECTED_STATUSES_MAX {
            return Err(Violation {
                path: vec![json!("expectedStatuses")],
                maximum: EXPECTED_STATUSES_MAX as u64,
                message: format!(
                    "expectedStatuses must have at most {EXPECTED_STATUSES_MAX} entries"
                ),
            });
        }
        Ok(())
    }
}

impl Validate for NewComment {
    fn validate(&self) -> Result<(), Violation> {
        if let Some(id) = &self.client_request_id {
            text("clientRequestId", id, SHORT)?;
        }
        opt(
            "onBehalfOfUserId",
            self.on_behalf_of_user_id.as_ref(),
            SHORT,
        )?;
        text("body", &self.body, LONG)
    }
}

impl Validate for NewLabel {
    fn validate(&self) -> Result<(), Violation> {
        text("name", &self.name, NAME)?;
        text("color", &self.color, SHORT)
    }
}

impl Validate for NewSecret {
    fn validate(&self) -> Result<(), Violation> {
        text("name", &self.name, NAME)?;
        opt("key", self.key.as_ref(), KEY_MAX_CHARS)?;
        opt("value", self.value.as_ref(), SECRET_VALUE_MAX_CHARS)?;
        opt("description", self.description.as_ref(), LONG)
    }
}

impl Validate for SecretPatch {
    fn validate(&self) -> Result<(), Violation> {
        opt("name", self.name.as_ref(), NAME)?;
        opt("key", self.key.as_ref(), KEY_MAX_CHARS)?;
        opt2("description", &self.description, LONG)
    }
}

impl Validate for SecretRotation {
    fn validate(&self) -> Result<(), Violation> {
        opt("value", self.value.as_ref(), SECRET_VALUE_MAX_CHARS)
    }
}

impl Validate for DocumentPut {
    fn validate(&self) -> Result<(), Violation> {
        opt("title", self.title.as_ref(), DOCUMENT_TITLE_MAX_CHARS)?;
        text("body", &self.body, DOCUMENT_BODY_MAX_CHARS)?;
        opt(
            "changeSummary",
            self.change_summary.as_ref(),
            TITLE_MAX_CHARS,
        )?;
        opt("baseRevisionId", self.base_revision_id.as_ref(), SHORT)
    }
}

impl Validate for NewApproval {
    fn validate(&self) -> Result<(), Violation> {
        ids("issueIds", self.issue_ids.as_ref(), APPROVAL_ISSUES_MAX)
    }
}

impl Validate for ApprovalDecision {
    fn validate(&self) -> Result<(), Violation> {
        opt("decisionNote", self.decision_note.as_ref(), LONG)
    }
}

impl Validate for NewCostEvent {
    fn validate(&self) -> Result<(), Violation> {
        for (field, value) in [
            ("agentId", &self.agent_id),
            ("issueId", &self.issue_id),
            ("projectId", &self.project_id),
            ("goalId", &self.goal_id),
            ("heartbeatRunId", &self.heartbeat_run_id),
            ("billingCode", &self.billing_code),
            ("provider", &self.provider),
            ("model", &self.model),
            ("occurredAt", &self.occurred_at),
        ] {
            opt(field, value.as_ref(), SHORT)?;
        }
        number("inputTokens", self.input_tokens, TOKENS_MAX)?;
        number("cachedInputTokens", self.cached_input_tokens, TOKENS_MAX)?;
        number("outputTokens", self.output_tokens, TOKENS_MAX)?;
        number("costCents", self.cost_cents, COST_CENTS_MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(body: Value) -> NewIssue {
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn a_long_title_names_the_field_and_the_bound() {
        let v = issue(json!({ "title": "x".repeat(TITLE_MAX_CHARS + 1) }))
            .validate()
            .unwrap_err();
        assert_eq!(v.path, vec![json!("title")]);
        assert_eq!(v.maximum, TITLE_MAX_CHARS as u64);
        assert!(v.message.contains("500"), "{}", v.message);
        assert!(issue(json!({ "title": "é".repeat(TITLE_MAX_CHARS) }))
            .validate()
            .is_ok());
    }

    #[test]
    fn arrays_are_bounded_and_each_entry_is_short() {
        let many: Vec<String> = (0..=LABEL_IDS_MAX).map(|i| i.to_string()).collect();
        let v = issue(json!({ "title": "t", "labelIds": many }))
            .validate()
            .unwrap_err();
        assert_eq!(v.path, vec![json!("labelIds")]);
        let long = vec!["a".to_string(), "b".repeat(SHORT + 1)];
        let v = issue(json!({ "title": "t", "blockedByIssueIds": long }))
            .validate()
            .unwrap_err();
        assert_eq!(v.path, vec![json!("blockedByIssueIds"), json!(1)]);
    }

    #[test]
    fn checkout_lists_each_status_at_most_once() {
        let all: Vec<&str> = IssueStatus::ALL.iter().map(|s| s.as_str()).collect();
        let ok: Checkout =
            serde_json::from_value(json!({ "agentId": "a", "expectedStatuses": all })).unwrap();
        assert!(ok.validate().is_ok());
        let too_many: Checkout = serde_json::from_value(
            json!({ "agentId": "a", "expectedStatuses": vec!["todo"; EXPECTED_STATUSES_MAX + 1] }),
        )
        .unwrap();
        assert_eq!(
            too_many.validate().unwrap_err().path,
            vec![json!("expectedStatuses")]
        );
    }

    #[test]
    fn cost_numbers_are_bounded() {
        let event: NewCostEvent =
            serde_json::from_value(json!({ "inputTokens": i64::MAX })).unwrap();
        assert_eq!(
            event.validate().unwrap_err().path,
            vec![json!("inputTokens")]
        );
        let event: NewCostEvent = serde_json::from_value(
            json!({ "costCents": COST_CENTS_MAX, "outputTokens": TOKENS_MAX }),
        )
        .unwrap();
        assert!(event.validate().is_ok());
    }

    #[test]
    fn sums_at_the_bounds_cannot_overflow_for_any_real_row_count() {
        let rows = i64::MAX as u64 / TOKENS_MAX.max(COST_CENTS_MAX);
        assert!(rows > 900_000_000);
    }

    #[test]
    fn a_cleared_patch_field_is_not_measured() {
        let patch: IssuePatch = serde_json::from_value(json!({ "description": null })).unwrap();
        assert!(patch.validate().is_ok());
    }
}
