//! A task's monitor (upstream's `executionPolicy.monitor`): the assignee
//! agent asks to be woken at `nextCheckAt` to look at something outside
//! (a deploy, a job), bounded by a deadline and a number of attempts. A
//! monitor fires once: the wake strips it from the policy and counts the
//! attempt; the agent schedules the next check itself.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::issue::IssueStatus;

use crate::stored::stored_words as words;

/// What answers show in place of the monitor's external reference.
pub const REDACTED_EXTERNAL_REF: &str = "[redacted]";
/// The wake reason of a due (or checked-now) monitor.
pub const WAKE_REASON: &str = "issue_monitor_due";
/// A claim older than this is taken again (its waker died mid-dispatch).
pub const STALE_CLAIM_SECS: i64 = 5 * 60;

words!(
    ScheduledBy,
    "monitor scheduled by",
    [Assignee = "assignee", Board = "board"]
);
words!(
    MonitorKind,
    "monitor monitor kind",
    [ExternalService = "external_service"]
);
words!(
    RecoveryPolicy,
    "monitor recovery policy",
    [
        WakeOwner = "wake_owner",
        CreateRecoveryIssue = "create_recovery_issue",
        EscalateToBoard = "escalate_to_board"
    ]
);
words!(
    ClearReason,
    "monitor clear reason",
    [
        Manual = "manual",
        Triggered = "triggered",
        Done = "done",
        Cancelled = "cancelled",
        InvalidStatus = "invalid_status",
        InvalidAssignee = "invalid_assignee",
        DispatchSkipped = "dispatch_skipped",
        TimeoutExceeded = "timeout_exceeded",
        MaxAttemptsExhausted = "max_attempts_exhausted"
    ]
);

/// `executionPolicy.monitor` as a client sends it (upstream's fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MonitorPolicy {
    pub next_check_at: String,
    #[serde(default)]
    pub notes: Option<String>,
    #[serde(default)]
    pub scheduled_by: Option<ScheduledBy>,
    #[serde(default)]
    pub kind: Option<MonitorKind>,
    #[serde(default)]
    pub service_name: Option<String>,
    #[serde(default)]
    pub external_ref: Option<String>,
    #[serde(default)]
    pub timeout_at: Option<String>,
    #[serde(default)]
    pub max_attempts: Option<i64>,
    #[serde(default)]
    pub recovery_policy: Option<RecoveryPolicy>,
}

/// A bad field of a monitor: its path under `executionPolicy.monitor` and why.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub field: &'static str,
    pub message: String,
}

fn field(field: &'static str, message: &str) -> FieldError {
    FieldError {
        field,
        message: message.to_string(),
    }
}

fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Upstream's time text: UTC, milliseconds, `Z`.
pub fn iso(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

fn trimmed(value: &mut Option<String>, name: &'static str, max: usize) -> Result<(), FieldError> {
    if let Some(text) = value.take() {
        let text = text.trim().to_string();
        if text.is_empty() || text.chars().count() > max {
            return Err(field(name, &format!("Must be 1 to {max} characters")));
        }
        *value = Some(text);
    }
    Ok(())
}

impl MonitorPolicy {
    /// Checks the bounds upstream's validator has and fills its defaults
    /// (`scheduledBy: assignee`); times come back in upstream's form.
    pub fn validated(mut self) -> Result<MonitorPolicy, FieldError> {
        let next = parse_time(&self.next_check_at)
            .ok_or_else(|| field("nextCheckAt", "Invalid datetime"))?;
        self.next_check_at = iso(next);
        if let Some(timeout) = self.timeout_at.take() {
            let at = parse_time(&timeout).ok_or_else(|| field("timeoutAt", "Invalid datetime"))?;
            self.timeout_at = Some(iso(at));
        }
        if self.notes.as_ref().is_some_and(|n| n.chars().count() > 500) {
            return Err(field("notes", "Must be at most 500 characters"));
        }
        trimmed(&mut self.service_name, "serviceName", 120)?;
        trimmed(&mut self.external_ref, "externalRef", 500)?;
        if self.max_attempts.is_some_and(|n| !(1..=100).contains(&n)) {
            return Err(field("maxAttempts", "Must be an integer from 1 to 100"));
        }
        self.scheduled_by.get_or_insert(ScheduledBy::Assignee);
        Ok(self)
    }

    /// The policy as answers show it: the external reference redacted.
    pub fn public(&self) -> Value {
        json!({
            "nextCheckAt": self.next_check_at,
            "notes": self.notes,
            "scheduledBy": self.scheduled_by.unwrap_or(ScheduledBy::Assignee).as_str(),
            "kind": self.kind.map(MonitorKind::as_str),
            "serviceName": self.service_name,
            "externalRef": self.external_ref.as_ref().map(|_| REDACTED_EXTERNAL_REF),
            "timeoutAt": self.timeout_at,
            "maxAttempts": self.max_attempts,
            "recoveryPolicy": self.recovery_policy.map(RecoveryPolicy::as_str),
        })
    }
}

/// Only an agent's work in progress or in review can be monitored: the
/// monitor wakes the assignee agent, and a person assigned owns the waiting.
pub fn eligible(status: IssueStatus, agent: Option<&str>, user: Option<&str>) -> bool {
    agent.is_some()
        && user.is_none()
        && matches!(status, IssueStatus::InProgress | IssueStatus::InReview)
}

/// Why a task in this state cannot keep a monitor (`None`: it can).
pub fn clear_reason_for(
    status: IssueStatus,
    agent: Option<&str>,
    user: Option<&str>,
) -> Option<ClearReason> {
    match status {
        IssueStatus::Done => Some(ClearReason::Done),
        IssueStatus::Cancelled => Some(ClearReason::Cancelled),
        _ if eligible(status, agent, user) => None,
        _ if user.is_some() || agent.is_none() => Some(ClearReason::InvalidAssignee),
        _ => Some(ClearReason::InvalidStatus),
    }
}

/// A new schedule whose bounds are already spent (the deadline passed, or
/// as many attempts made as allowed) is refused.
pub fn exhausted_at_schedule(
    policy: &MonitorPolicy,
    attempts: i64,
    now: DateTime<Utc>,
) -> Option<ClearReason> {
    limit(policy, attempts, now, attempts)
}

/// At a due check: the deadline reached, or this attempt (`next_attempt`,
/// counting from 1) beyond the maximum, ends the monitor instead of waking.
pub fn limit_at_trigger(
    policy: &MonitorPolicy,
    next_attempt: i64,
    now: DateTime<Utc>,
) -> Option<ClearReason> {
    limit(policy, next_attempt, now, next_attempt - 1)
}

fn limit(
    policy: &MonitorPolicy,
    _attempt: i64,
    now: DateTime<Utc>,
    done: i64,
) -> Option<ClearReason> {
    if policy
        .timeout_at
        .as_deref()
        .and_then(parse_time)
        .is_some_and(|t| now >= t)
    {
        return Some(ClearReason::TimeoutExceeded);
    }
    if policy.max_attempts.is_some_and(|max| done >= max) {
        return Some(ClearReason::MaxAttemptsExhausted);
    }
    None
}

/// Upstream's `executionPolicy` carrying only a monitor (we have no review
/// stages): what the issue row keeps and answers.
pub fn execution_policy(policy: &MonitorPolicy) -> Value {
    json!({
        "mode": "normal",
        "commentRequired": true,
        "stages": [],
        "monitor": policy.public(),
        "maxReviewRounds": null,
    })
}

words!(
    MonitorStatus,
    "monitor monitor status",
    [
        Scheduled = "scheduled",
        Triggered = "triggered",
        Cleared = "cleared"
    ]
);

/// Upstream's `executionState` with its `monitor` state: `scheduled` with
/// the policy, `triggered` after a wake, `cleared` with the reason.
pub fn execution_state(
    status: MonitorStatus,
    policy: &MonitorPolicy,
    attempts: i64,
    last_triggered_at: Option<&str>,
    cleared: Option<(ClearReason, &str)>,
) -> Value {
    let public = policy.public();
    let next = match status {
        MonitorStatus::Scheduled => Value::from(policy.next_check_at.clone()),
        _ => Value::Null,
    };
    json!({
        "status": "idle",
        "currentStageId": null,
        "currentStageIndex": null,
        "currentStageType": null,
        "currentParticipant": null,
        "returnAssignee": null,
        "reviewRequest": null,
        "completedStageIds": [],
        "lastDecisionId": null,
        "lastDecisionOutcome": null,
        "monitor": {
            "status": status.as_str(),
            "nextCheckAt": next,
            "lastTriggeredAt": last_triggered_at,
            "attemptCount": attempts,
            "notes": public["notes"],
            "scheduledBy": public["scheduledBy"],
            "kind": public["kind"],
            "serviceName": public["serviceName"],
            "externalRef": public["externalRef"],
            "timeoutAt": public["timeoutAt"],
            "maxAttempts": public["maxAttempts"],
            "recoveryPolicy": public["recoveryPolicy"],
            "clearedAt": cleared.map(|(_, at)| at),
            "clearReason": cleared.map(|(reason, _)| reason.as_str()),
        },
        "changesRequestedCount": 0,
    })
}

/// The monitor policy a stored `executionPolicy` carries (its external
/// reference comes from its own column, the JSON has it redacted).
pub fn stored_policy(
    execution_policy: &Value,
    external_ref: Option<String>,
) -> Option<MonitorPolicy> {
    let monitor = execution_policy.get("monitor")?;
    let mut policy: MonitorPolicy = serde_json::from_value(monitor.clone()).ok()?;
    policy.external_ref = external_ref;
    Some(policy)
}

/// "next check at 14:05 UTC, attempt 2 of 3": the board's words.
pub fn describe(next_check_at: &str, attempts: i64, max_attempts: Option<i64>) -> String {
    let at = parse_time(next_check_at)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|| next_check_at.to_string());
    match max_attempts {
        Some(max) => format!("Next check at {at}, attempt {} of {max}", attempts + 1),
        None => format!("Next check at {at}, attempt {}", attempts + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(v: Value) -> MonitorPolicy {
        serde_json::from_value::<MonitorPolicy>(v)
            .unwrap()
            .validated()
            .unwrap()
    }

    fn at(s: &str) -> DateTime<Utc> {
        parse_time(s).unwrap()
    }

    #[test]
    fn only_an_agents_active_work_is_eligible() {
        use IssueStatus::*;
        assert!(eligible(InProgress, Some("a"), None));
        assert!(eligible(InReview, Some("a"), None));
        assert!(!eligible(Todo, Some("a"), None));
        assert!(!eligible(InProgress, Some("a"), Some("u")));
        assert!(!eligible(InProgress, None, None));
        assert_eq!(
            clear_reason_for(Done, Some("a"), None),
            Some(ClearReason::Done)
        );
        assert_eq!(
            clear_reason_for(Cancelled, None, None),
            Some(ClearReason::Cancelled)
        );
        assert_eq!(
            clear_reason_for(Todo, Some("a"), None),
            Some(ClearReason::InvalidStatus)
        );
        assert_eq!(
            clear_reason_for(InProgress, None, Some("u")),
            Some(ClearReason::InvalidAssignee)
        );
        assert_eq!(clear_reason_for(InReview, Some("a"), None), None);
    }

    #[test]
    fn bounds_end_the_monitor_at_the_attempt_past_the_maximum() {
        let p = policy(
            json!({"nextCheckAt": "2026-01-01T00:00:00Z", "maxAttempts": 2,
            "timeoutAt": "2026-01-02T00:00:00Z"}),
        );
        let now = at("2026-01-01T00:00:00Z");
        assert_eq!(limit_at_trigger(&p, 1, now), None);
        assert_eq!(limit_at_trigger(&p, 2, now), None);
        assert_eq!(
            limit_at_trigger(&p, 3, now),
            Some(ClearReason::MaxAttemptsExhausted)
        );
        assert_eq!(exhausted_at_schedule(&p, 1, now), None);
        assert_eq!(
            exhausted_at_schedule(&p, 2, now),
            Some(ClearReason::MaxAttemptsExhausted)
        );
        let late = at("2026-01-02T00:00:00Z");
        assert_eq!(
            limit_at_trigger(&p, 1, late),
            Some(ClearReason::TimeoutExceeded)
        );
    }

    #[test]
    fn validation_names_the_field_and_fills_defaults() {
        let bad = |v: Value| {
            serde_json::from_value::<MonitorPolicy>(v)
                .unwrap()
                .validated()
                .unwrap_err()
                .field
        };
        assert_eq!(bad(json!({"nextCheckAt": "soon"})), "nextCheckAt");
        assert_eq!(
            bad(json!({"nextCheckAt": "2026-01-01T00:00:00Z", "maxAttempts": 0})),
            "maxAttempts"
        );
        assert_eq!(
            bad(json!({"nextCheckAt": "2026-01-01T00:00:00Z", "serviceName": "  "})),
            "serviceName"
        );
        assert!(serde_json::from_value::<MonitorPolicy>(
            json!({"nextCheckAt": "x", "kind": "other"})
        )
        .is_err());
        let p = policy(
            json!({"nextCheckAt": "2026-01-01T01:00:00+01:00", "externalRef": "secret-job"}),
        );
        assert_eq!(p.next_check_at, "2026-01-01T00:00:00.000Z");
        assert_eq!(p.scheduled_by, Some(ScheduledBy::Assignee));
        assert_eq!(
            execution_policy(&p)["monitor"]["externalRef"],
            REDACTED_EXTERNAL_REF
        );
        let back = stored_policy(&execution_policy(&p), Some("secret-job".into())).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn the_board_reads_the_schedule_in_words() {
        assert_eq!(
            describe("2026-01-01T14:05:00.000Z", 1, Some(3)),
            "Next check at 2026-01-01 14:05 UTC, attempt 2 of 3"
        );
    }
}
