//! Decisions (upstream's): an agent's issue-scoped run asks the board to
//! choose one of a few options; each option carries effects on issues
//! (comment, create, change status, reassign, cancel a tree, clear
//! blockers) that run when the board picks it. Here are the vocabulary,
//! the request bodies and the rules a body must satisfy (400 naming the
//! field), as upstream's validators state them.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use crate::issue::IssueStatus;
use crate::limits::{text, Validate, Violation};

/// Open decisions one origin agent may hold at once (upstream's default cap).
pub const OPEN_CAP: i64 = 50;
/// A decision expires after this many days unless it names its own expiry.
pub const DEFAULT_TTL_DAYS: i64 = 7;
/// The latest expiry a decision may name, in days from now.
pub const MAX_TTL_DAYS: i64 = 30;

use crate::stored::stored_words as words;

words!(
    DecisionStatus,
    "decision status",
    [
        Open = "open",
        Decided = "decided",
        Expired = "expired",
        Cancelled = "cancelled"
    ]
);
words!(
    ExecutionStatus,
    "decision execution status",
    [
        Running = "running",
        Succeeded = "succeeded",
        Partial = "partial",
        Failed = "failed"
    ]
);
words!(
    EffectStatus,
    "decision effect status",
    [
        Claimed = "claimed",
        Executed = "executed",
        Failed = "failed",
        Skipped = "skipped"
    ]
);
words!(
    Staleness,
    "decision effect staleness",
    [Strict = "strict", Lenient = "lenient"]
);
words!(
    OptionStyle,
    "decision option style",
    [
        Default = "default",
        Primary = "primary",
        Destructive = "destructive"
    ]
);
words!(
    Continuation,
    "decision continuation policy",
    [None = "none", WakeOriginAgent = "wake_origin_agent"]
);

/// What a `create_issue` effect creates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssueDraft {
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee_user_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by_issue_ids: Option<Vec<String>>,
}

/// One thing an option does to an issue when chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Effect {
    CommentOnIssue {
        target_issue_id: String,
        staleness: Staleness,
        body_markdown: String,
    },
    CreateIssue {
        target_issue_id: String,
        staleness: Staleness,
        draft: IssueDraft,
    },
    UpdateIssueStatus {
        target_issue_id: String,
        staleness: Staleness,
        status: IssueStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment: Option<String>,
    },
    AssignIssue {
        target_issue_id: String,
        staleness: Staleness,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        assignee_agent_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        assignee_user_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        comment: Option<String>,
    },
    CancelIssueTree {
        target_issue_id: String,
        staleness: Staleness,
        reason_comment: String,
    },
    ResolveBlocker {
        target_issue_id: String,
        staleness: Staleness,
        remove_blocked_by_issue_ids: Vec<String>,
    },
}

impl Effect {
    pub fn kind(&self) -> &'static str {
        match self {
            Effect::CommentOnIssue { .. } => "comment_on_issue",
            Effect::CreateIssue { .. } => "create_issue",
            Effect::UpdateIssueStatus { .. } => "update_issue_status",
            Effect::AssignIssue { .. } => "assign_issue",
            Effect::CancelIssueTree { .. } => "cancel_issue_tree",
            Effect::ResolveBlocker { .. } => "resolve_blocker",
        }
    }

    pub fn target(&self) -> &str {
        match self {
            Effect::CommentOnIssue {
                target_issue_id, ..
            }
            | Effect::CreateIssue {
                target_issue_id, ..
            }
            | Effect::UpdateIssueStatus {
                target_issue_id, ..
            }
            | Effect::AssignIssue {
                target_issue_id, ..
            }
            | Effect::CancelIssueTree {
                target_issue_id, ..
            }
            | Effect::ResolveBlocker {
                target_issue_id, ..
            } => target_issue_id,
        }
    }

    pub fn staleness(&self) -> Staleness {
        match self {
            Effect::CommentOnIssue { staleness, .. }
            | Effect::CreateIssue { staleness, .. }
            | Effect::UpdateIssueStatus { staleness, .. }
            | Effect::AssignIssue { staleness, .. }
            | Effect::CancelIssueTree { staleness, .. }
            | Effect::ResolveBlocker { staleness, .. } => *staleness,
        }
    }

    /// Every issue the effect names (its target, a draft's parent, the
    /// blockers it removes): all must exist in the company.
    pub fn issue_ids(&self) -> Vec<&str> {
        let mut ids = vec![self.target()];
        match self {
            Effect::CreateIssue { draft, .. } => {
                ids.extend(draft.parent_id.as_deref());
                ids.extend(
                    draft
                        .blocked_by_issue_ids
                        .iter()
                        .flatten()
                        .map(String::as_str),
                );
            }
            Effect::ResolveBlocker {
                remove_blocked_by_issue_ids,
                ..
            } => {
                ids.extend(remove_blocked_by_issue_ids.iter().map(String::as_str));
            }
            _ => {}
        }
        ids
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionOption {
    pub id: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<OptionStyle>,
    pub effects: Vec<Effect>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionInput {
    pub id: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<u64>,
}

/// `POST /api/companies/:id/decisions` (strict: an unknown key is a 400).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewDecision {
    pub title: String,
    pub body: String,
    #[serde(default)]
    pub rule_key: Option<String>,
    pub options: Vec<DecisionOption>,
    #[serde(default)]
    pub inputs: Option<Vec<DecisionInput>>,
    /// ISO-8601; within 30 days (default 7).
    #[serde(default)]
    pub expires_at: Option<String>,
    #[serde(default)]
    pub idempotency_key: Option<String>,
    #[serde(default)]
    pub continuation_policy: Option<Continuation>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Map<String, Value>>,
}

/// `POST /api/companies/:id/decision-bundles`: 1 to 50 decisions, atomic.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewBundle {
    pub title: String,
    pub summary: String,
    pub decisions: Vec<NewDecision>,
}

/// `POST /api/decisions/:id/decide`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Decide {
    pub option_id: String,
    #[serde(default)]
    pub input_values: Option<std::collections::BTreeMap<String, String>>,
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// `POST /api/decisions/:id/dismiss`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Dismiss {
    #[serde(default)]
    pub reason: Option<String>,
}

/// A refused body in zod's issue shape: the path to the field and why.
pub type Issue = Value;

fn issue(path: Value, message: &str) -> Issue {
    json!({ "code": "custom", "path": path, "message": message })
}

fn required(path: Value, value: &str) -> Result<(), Issue> {
    if value.trim().is_empty() {
        return Err(issue(path, "Must not be empty"));
    }
    Ok(())
}

impl NewDecision {
    /// Upstream's refinements beyond bounds: non-empty names, 1 to 8 options
    /// with unique ids, at most 10 effects each, at most 4 inputs, exactly one
    /// assignee to assign, a tree cancel only behind a destructive option.
    pub fn rules(&self, at: &[Value]) -> Result<(), Issue> {
        let path = |rest: Value| {
            let mut p = at.to_vec();
            match rest {
                Value::Array(items) => p.extend(items),
                other => p.push(other),
            }
            Value::Array(p)
        };
        required(path(json!("title")), &self.title)?;
        if self.options.is_empty() || self.options.len() > 8 {
            return Err(issue(path(json!("options")), "Between 1 and 8 options"));
        }
        for (i, option) in self.options.iter().enumerate() {
            required(path(json!(["options", i, "id"])), &option.id)?;
            required(path(json!(["options", i, "label"])), &option.label)?;
            if self.options[..i].iter().any(|o| o.id == option.id) {
                return Err(issue(
                    path(json!(["options", i, "id"])),
                    "Decision option ids must be unique",
                ));
            }
            if option.effects.len() > 10 {
                return Err(issue(
                    path(json!(["options", i, "effects"])),
                    "At most 10 effects",
                ));
            }
            for (j, effect) in option.effects.iter().enumerate() {
                let at = |field: &str| path(json!(["options", i, "effects", j, field]));
                if uuid_like(effect.target()).is_none() {
                    return Err(issue(at("targetIssueId"), "Invalid uuid"));
                }
                match effect {
                    Effect::AssignIssue {
                        assignee_agent_id,
                        assignee_user_id,
                        ..
                    } if assignee_agent_id.is_some() == assignee_user_id.is_some() => {
                        return Err(issue(
                            at("assigneeAgentId"),
                            "Exactly one assignee must be set",
                        ));
                    }
                    Effect::CancelIssueTree {
                        staleness,
                        reason_comment,
                        ..
                    } => {
                        required(at("reasonComment"), reason_comment)?;
                        if *staleness != Staleness::Strict {
                            return Err(issue(at("staleness"), "A tree cancel is strict"));
                        }
                        if option.style != Some(OptionStyle::Destructive) {
                            return Err(issue(
                                path(json!(["options", i, "style"])),
                                "Options that cancel an issue tree must use destructive style",
                            ));
                        }
                    }
                    Effect::CommentOnIssue {
                        body_markdown: t, ..
                    } => required(at("bodyMarkdown"), t)?,
                    Effect::CreateIssue { draft, .. } => required(at("draft"), &draft.title)?,
                    Effect::ResolveBlocker {
                        remove_blocked_by_issue_ids: ids,
                        ..
                    } if ids.is_empty() => {
                        return Err(issue(at("removeBlockedByIssueIds"), "At least one issue"));
                    }
                    _ => {}
                }
            }
        }
        let inputs = self.inputs.as_deref().unwrap_or_default();
        if inputs.len() > 4 {
            return Err(issue(path(json!("inputs")), "At most 4 inputs"));
        }
        for (i, input) in inputs.iter().enumerate() {
            required(path(json!(["inputs", i, "id"])), &input.id)?;
            if inputs[..i].iter().any(|o| o.id == input.id) {
                return Err(issue(
                    path(json!(["inputs", i, "id"])),
                    "Decision input ids must be unique",
                ));
            }
            if input.max_length.is_some_and(|m| m == 0 || m > 20_000) {
                return Err(issue(
                    path(json!(["inputs", i, "maxLength"])),
                    "Between 1 and 20000",
                ));
            }
        }
        Ok(())
    }
}

impl NewBundle {
    pub fn rules(&self) -> Result<(), Issue> {
        required(json!(["title"]), &self.title)?;
        if self.decisions.is_empty() || self.decisions.len() > 50 {
            return Err(issue(json!(["decisions"]), "Between 1 and 50 decisions"));
        }
        for (i, d) in self.decisions.iter().enumerate() {
            d.rules(&[json!("decisions"), json!(i)])?;
        }
        Ok(())
    }
}

/// A UUID's canonical text, or `None`: effect references must be ids.
pub fn uuid_like(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let ok = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    ok.then_some(s)
}

impl Validate for NewDecision {
    fn validate(&self) -> Result<(), Violation> {
        text("title", &self.title, 500)?;
        text("body", &self.body, 100_000)?;
        text("ruleKey", self.rule_key.as_deref().unwrap_or(""), 240)?;
        text(
            "idempotencyKey",
            self.idempotency_key.as_deref().unwrap_or(""),
            500,
        )?;
        for option in &self.options {
            text("options.id", &option.id, 120)?;
            text("options.label", &option.label, 240)?;
            text(
                "options.description",
                option.description.as_deref().unwrap_or(""),
                2_000,
            )?;
            for effect in &option.effects {
                let long = match effect {
                    Effect::CommentOnIssue {
                        body_markdown: t, ..
                    }
                    | Effect::CancelIssueTree {
                        reason_comment: t, ..
                    } => Some(t),
                    Effect::UpdateIssueStatus { comment, .. }
                    | Effect::AssignIssue { comment, .. } => comment.as_ref(),
                    Effect::CreateIssue { draft, .. } => {
                        text("draft.title", &draft.title, 500)?;
                        draft.description.as_ref()
                    }
                    Effect::ResolveBlocker {
                        remove_blocked_by_issue_ids: ids,
                        ..
                    } => {
                        crate::limits::ids("removeBlockedByIssueIds", Some(ids), 100)?;
                        None
                    }
                };
                text(
                    "effects.text",
                    long.map(String::as_str).unwrap_or(""),
                    100_000,
                )?;
            }
        }
        for input in self.inputs.iter().flatten() {
            text("inputs.id", &input.id, 120)?;
            text("inputs.label", &input.label, 240)?;
            text(
                "inputs.placeholder",
                input.placeholder.as_deref().unwrap_or(""),
                500,
            )?;
        }
        let metadata = self
            .metadata
            .as_ref()
            .map(|m| Value::Object(m.clone()).to_string());
        text("metadata", metadata.as_deref().unwrap_or(""), 64 * 1024)
    }
}

impl Validate for NewBundle {
    fn validate(&self) -> Result<(), Violation> {
        text("title", &self.title, 500)?;
        text("summary", &self.summary, 100_000)?;
        crate::limits::number("decisions", Some(self.decisions.len() as u64), 50)?;
        self.decisions.iter().try_for_each(Validate::validate)
    }
}

impl Validate for Decide {
    fn validate(&self) -> Result<(), Violation> {
        text("optionId", &self.option_id, 120)?;
        text(
            "idempotencyKey",
            self.idempotency_key.as_deref().unwrap_or(""),
            500,
        )?;
        for value in self.input_values.iter().flat_map(|m| m.values()) {
            text("inputValues", value, 20_000)?;
        }
        Ok(())
    }
}

impl Validate for Dismiss {
    fn validate(&self) -> Result<(), Violation> {
        text("reason", self.reason.as_deref().unwrap_or(""), 20_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stored::Stored;

    fn decision(options: Value) -> NewDecision {
        serde_json::from_value(json!({ "title": "Ship?", "body": "b", "options": options }))
            .unwrap()
    }

    const T: &str = "0190a3c4-0000-7000-8000-000000000001";

    #[test]
    fn effects_read_upstreams_shape_and_the_rules_name_the_field() {
        let ok = decision(json!([
            { "id": "yes", "label": "Yes", "effects": [
                { "type": "assign_issue", "targetIssueId": T, "staleness": "lenient", "assigneeUserId": "u" },
                { "type": "update_issue_status", "targetIssueId": T, "staleness": "strict", "status": "in_review" }
            ] },
            { "id": "no", "label": "No", "effects": [] }
        ]));
        assert!(ok.rules(&[]).is_ok());
        let back = serde_json::to_value(&ok.options[0].effects[1]).unwrap();
        assert_eq!(
            back,
            json!({ "type": "update_issue_status", "targetIssueId": T, "staleness": "strict", "status": "in_review" })
        );
        let twice = decision(
            json!([{ "id": "a", "label": "A", "effects": [] }, { "id": "a", "label": "B", "effects": [] }]),
        );
        assert_eq!(
            twice.rules(&[]).unwrap_err()["path"],
            json!(["options", 1, "id"])
        );
        let both = decision(json!([{ "id": "a", "label": "A", "effects": [
            { "type": "assign_issue", "targetIssueId": T, "staleness": "strict" }] }]));
        assert_eq!(
            both.rules(&[]).unwrap_err()["path"],
            json!(["options", 0, "effects", 0, "assigneeAgentId"])
        );
        let cancel = decision(json!([{ "id": "a", "label": "A", "effects": [
            { "type": "cancel_issue_tree", "targetIssueId": T, "staleness": "strict", "reasonComment": "r" }] }]));
        assert_eq!(
            cancel.rules(&[]).unwrap_err()["path"],
            json!(["options", 0, "style"])
        );
        assert!(decision(json!([])).rules(&[]).is_err());
        assert!(serde_json::from_value::<NewDecision>(
            json!({ "title": "t", "body": "b", "options": [], "x": 1 })
        )
        .is_err());
        assert!(serde_json::from_value::<Effect>(
            json!({ "type": "launch", "targetIssueId": T, "staleness": "strict" })
        )
        .is_err());
        assert_eq!(
            DecisionStatus::from_stored("open"),
            Some(DecisionStatus::Open)
        );
        assert_eq!(DecisionStatus::from_stored("opened"), None);
    }
}
