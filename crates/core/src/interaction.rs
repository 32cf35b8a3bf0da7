//! Issue-thread interactions: cards an agent puts in a task's thread when it
//! needs a person (questions, a confirmation, a plan approval, suggested
//! tasks, verdicts on items), and the rules for answering them. The payload
//! shapes are in [`crate::interaction_payload`].

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

macro_rules! words {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:tt,)* }) => {
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
    };
}

words! {
    InteractionKind {
        SuggestTasks = "suggest_tasks",
        AskUserQuestions = "ask_user_questions",
        RequestConfirmation = "request_confirmation",
        RequestCheckboxConfirmation = "request_checkbox_confirmation",
        RequestItemVerdicts = "request_item_verdicts",
        ConnectionIntent = "connection_intent",
    }
}

words! {
    InteractionStatus {
        Pending = "pending",
        Accepted = "accepted",
        Rejected = "rejected",
        Answered = "answered",
        Cancelled = "cancelled",
        Expired = "expired",
        Failed = "failed",
    }
}

words! {
    /// Whom a resolution wakes: the task's assignee on any resolution, only on
    /// an acceptance (or answer), or nobody.
    ContinuationPolicy {
        None = "none",
        WakeAssignee = "wake_assignee",
        WakeAssigneeOnAccept = "wake_assignee_on_accept",
    }
}

/// Who may resolve a card. Upstream's older names are read as aliases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum ResolverPolicy {
    #[serde(rename = "anyone", alias = "board_or_agents")]
    Anyone,
    #[serde(rename = "not_creator")]
    NotCreator,
    #[serde(rename = "human_only", alias = "board_only")]
    HumanOnly,
}

impl ResolverPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            ResolverPolicy::Anyone => "anyone",
            ResolverPolicy::NotCreator => "not_creator",
            ResolverPolicy::HumanOnly => "human_only",
        }
    }
}

words! {
    ItemVerdict {
        Approve = "approve",
        Reject = "reject",
        Defer = "defer",
    }
}

/// How a pending card is resolved, one per route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    Accept,
    Reject,
    Respond,
    Verdicts,
    Withdraw,
    Skip,
    Cancel,
}

impl Resolution {
    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Accept => "accept",
            Resolution::Reject => "reject",
            Resolution::Respond => "respond",
            Resolution::Verdicts => "verdicts",
            Resolution::Withdraw => "withdraw",
            Resolution::Skip => "skip",
            Resolution::Cancel => "cancel",
        }
    }

    /// Whether the route applies to the kind; `None` means every kind.
    pub fn applies_to(self, kind: InteractionKind) -> bool {
        use InteractionKind as K;
        match self {
            Resolution::Accept | Resolution::Reject => matches!(
                kind,
                K::SuggestTasks | K::RequestConfirmation | K::RequestCheckboxConfirmation
            ),
            Resolution::Respond | Resolution::Cancel => kind == K::AskUserQuestions,
            Resolution::Verdicts => kind == K::RequestItemVerdicts,
            Resolution::Withdraw | Resolution::Skip => true,
        }
    }

    /// Resolutions only a person may make.
    pub fn board_only(self) -> bool {
        matches!(self, Resolution::Skip | Resolution::Cancel)
    }
}

/// Whether resolving a card into `status` wakes the task's assignee. A plan
/// sent back for changes always reaches its author, whatever the policy: it
/// is the one answer the author cannot go on without.
pub fn wakes_assignee(
    policy: ContinuationPolicy,
    status: InteractionStatus,
    plan_rejected: bool,
    resolution: Resolution,
) -> bool {
    use InteractionStatus as S;
    if resolution == Resolution::Skip || status == S::Expired || status == S::Pending {
        return false;
    }
    match policy {
        ContinuationPolicy::WakeAssignee => true,
        ContinuationPolicy::WakeAssigneeOnAccept => matches!(status, S::Accepted | S::Answered),
        ContinuationPolicy::None => plan_rejected,
    }
}

/// A card in a task's thread, as upstream returns it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Interaction {
    pub id: String,
    pub company_id: String,
    pub issue_id: String,
    pub kind: InteractionKind,
    pub idempotency_key: Option<String>,
    pub source_comment_id: Option<String>,
    pub source_run_id: Option<String>,
    pub addressee_agent_id: Option<String>,
    pub addressee_user_id: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub status: InteractionStatus,
    pub continuation_policy: ContinuationPolicy,
    /// Deprecated upstream; the requested policy.
    pub resolver_policy: ResolverPolicy,
    pub requested_resolver_policy: ResolverPolicy,
    pub effective_resolver_policy: ResolverPolicy,
    /// `explicit` when the card named a policy, else `inherited`.
    pub resolver_policy_provenance: &'static str,
    pub effective_resolver_policy_source: &'static str,
    pub legacy_resolver_policy_aliases: Value,
    #[schema(value_type = Object)]
    pub payload: Value,
    #[schema(value_type = Object)]
    pub result: Option<Value>,
    pub created_by_agent_id: Option<String>,
    pub created_by_user_id: Option<String>,
    pub resolved_by_agent_id: Option<String>,
    pub resolved_by_run_id: Option<String>,
    pub resolved_by_user_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub resolved_at: Option<String>,
}

/// The body of `POST /api/issues/{id}/interactions`; the payload is checked
/// against its kind by [`crate::interaction_payload::normalize`].
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewInteraction {
    pub kind: InteractionKind,
    #[schema(value_type = Object)]
    pub payload: Value,
    pub resolver_policy: Option<ResolverPolicy>,
    pub continuation_policy: Option<ContinuationPolicy>,
    pub idempotency_key: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
    pub addressee_agent_id: Option<String>,
    pub addressee_user_id: Option<String>,
    pub source_comment_id: Option<String>,
    /// Only a board caller may name the run; an agent's is its own.
    pub source_run_id: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AcceptInteraction {
    pub selected_client_keys: Option<Vec<String>>,
    pub selected_option_ids: Option<Vec<String>>,
    pub remember_action: Option<bool>,
}

/// Reject, withdraw, skip and cancel: an optional reason.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InteractionReason {
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionAnswer {
    pub question_id: String,
    #[serde(default)]
    pub option_ids: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_text: Option<String>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RespondInteraction {
    pub answers: Vec<QuestionAnswer>,
    pub summary_markdown: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerdictInput {
    pub id: String,
    pub verdict: ItemVerdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerdictsInteraction {
    pub verdicts: Vec<VerdictInput>,
}

/// Checks a board member's answers against the card's questions: every
/// question named exists and once, each option belongs to its question, a
/// single-choice question has at most one, typed text only where the
/// question takes it, and every required question is answered.
pub fn check_answers(payload: &Value, answers: &[QuestionAnswer]) -> Result<(), String> {
    let questions = payload
        .get("questions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut seen: Vec<&str> = Vec::new();
    for answer in answers {
        let question = questions
            .iter()
            .find(|q| q.get("id").and_then(Value::as_str) == Some(answer.question_id.as_str()))
            .ok_or_else(|| format!("Unknown question {:?}", answer.question_id))?;
        if seen.contains(&answer.question_id.as_str()) {
            return Err(format!("Question {:?} answered twice", answer.question_id));
        }
        seen.push(&answer.question_id);
        let options = question
            .get("options")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let option = |id: &str| {
            options
                .iter()
                .find(|o| o.get("id").and_then(Value::as_str) == Some(id))
        };
        for id in &answer.option_ids {
            if option(id).is_none() {
                return Err(format!(
                    "Option {id:?} is not one of question {:?}'s",
                    answer.question_id
                ));
            }
        }
        let single = question.get("selectionMode").and_then(Value::as_str) == Some("single");
        if single && answer.option_ids.len() > 1 {
            return Err(format!(
                "Question {:?} takes one option",
                answer.question_id
            ));
        }
        let typed = answer
            .other_text
            .as_deref()
            .is_some_and(|t| !t.trim().is_empty());
        let takes_text = question.get("allowOther").and_then(Value::as_bool) == Some(true)
            || answer.option_ids.iter().any(|id| {
                option(id)
                    .and_then(|o| o.get("freeText"))
                    .and_then(Value::as_bool)
                    == Some(true)
            });
        if typed && !takes_text {
            return Err(format!(
                "Question {:?} does not take typed text",
                answer.question_id
            ));
        }
        if answer.option_ids.is_empty() && !typed {
            return Err(format!("Question {:?} has no answer", answer.question_id));
        }
    }
    for question in &questions {
        let id = question.get("id").and_then(Value::as_str).unwrap_or("");
        let required = question.get("required").and_then(Value::as_bool) == Some(true);
        if required && !seen.contains(&id) {
            return Err(format!("Question {id:?} is required"));
        }
    }
    Ok(())
}

/// The suggested tasks an acceptance creates, parents first: all of them
/// when nothing is selected. A selected child needs its suggested parent
/// selected too, or it would be created without the parent it describes.
pub fn selected_tasks(payload: &Value, selected: Option<&[String]>) -> Result<Vec<Value>, String> {
    let tasks = payload
        .get("tasks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let key = |t: &Value| {
        t.get("clientKey")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let chosen: Vec<Value> = match selected {
        None => tasks.clone(),
        Some(keys) => {
            for k in keys {
                if !tasks.iter().any(|t| key(t) == *k) {
                    return Err(format!("Unknown suggested task {k:?}"));
                }
            }
            tasks
                .iter()
                .filter(|t| keys.contains(&key(t)))
                .cloned()
                .collect()
        }
    };
    for task in &chosen {
        if let Some(parent) = task.get("parentClientKey").and_then(Value::as_str) {
            if !chosen.iter().any(|t| key(t) == parent) {
                return Err(format!(
                    "Suggested task {:?} needs its parent {parent:?} selected",
                    key(task)
                ));
            }
        }
    }
    // Parents before children: a stable pass by depth (the payload check
    // refuses cycles, so depth is finite).
    let depth = |t: &Value| {
        let mut d = 0;
        let mut cur = t.get("parentClientKey").and_then(Value::as_str);
        while let Some(p) = cur {
            d += 1;
            if d > chosen.len() {
                break;
            }
            cur = chosen
                .iter()
                .find(|c| key(c) == p)
                .and_then(|c| c.get("parentClientKey"))
                .and_then(Value::as_str);
        }
        d
    };
    let mut ordered = chosen.clone();
    ordered.sort_by_key(depth);
    Ok(ordered)
}

impl crate::limits::Validate for NewInteraction {
    fn validate(&self) -> Result<(), crate::limits::Violation> {
        use crate::limits::text;
        if let Some(key) = &self.idempotency_key {
            text("idempotencyKey", key, 255)?;
        }
        if let Some(title) = &self.title {
            text("title", title, 240)?;
        }
        if let Some(summary) = &self.summary {
            text("summary", summary, 1000)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn questions() -> Value {
        json!({ "questions": [
            { "id": "db", "prompt": "Which database?", "selectionMode": "single", "required": true,
              "options": [{ "id": "pg", "label": "Postgres" }, { "id": "lite", "label": "SQLite" }] },
            { "id": "notes", "prompt": "Anything else?", "selectionMode": "single",
              "options": [{ "id": "text", "label": "Say it", "freeText": true }] },
        ]})
    }

    fn answer(q: &str, options: &[&str], text: Option<&str>) -> QuestionAnswer {
        QuestionAnswer {
            question_id: q.into(),
            option_ids: options.iter().map(|o| o.to_string()).collect(),
            other_text: text.map(str::to_string),
        }
    }

    #[test]
    fn answers_must_fit_their_questions() {
        let p = questions();
        assert!(check_answers(&p, &[answer("db", &["pg"], None)]).is_ok());
        assert!(check_answers(
            &p,
            &[
                answer("db", &["pg"], None),
                answer("notes", &["text"], Some("ship it"))
            ]
        )
        .is_ok());
        assert!(check_answers(&p, &[]).unwrap_err().contains("required"));
        assert!(check_answers(&p, &[answer("zz", &["pg"], None)]).is_err());
        assert!(check_answers(&p, &[answer("db", &["pg", "lite"], None)]).is_err());
        assert!(check_answers(&p, &[answer("db", &["nope"], None)]).is_err());
        assert!(check_answers(&p, &[answer("db", &["pg"], Some("typed"))]).is_err());
        let twice = [answer("db", &["pg"], None), answer("db", &["lite"], None)];
        assert!(check_answers(&p, &twice).unwrap_err().contains("twice"));
    }

    #[test]
    fn selected_tasks_keep_parents_first_and_refuse_orphans() {
        let p = json!({ "tasks": [
            { "clientKey": "child", "parentClientKey": "root", "title": "Child" },
            { "clientKey": "root", "title": "Root" },
            { "clientKey": "other", "title": "Other" },
        ]});
        let all = selected_tasks(&p, None).unwrap();
        let keys: Vec<&str> = all
            .iter()
            .map(|t| t["clientKey"].as_str().unwrap())
            .collect();
        assert_eq!(keys, ["root", "other", "child"]);
        let some = selected_tasks(&p, Some(&["other".to_string()])).unwrap();
        assert_eq!(some.len(), 1);
        assert!(selected_tasks(&p, Some(&["child".to_string()])).is_err());
        assert!(selected_tasks(&p, Some(&["ghost".to_string()])).is_err());
    }

    #[test]
    fn continuation_policy_decides_the_wake() {
        use ContinuationPolicy as C;
        use InteractionStatus as S;
        assert!(wakes_assignee(
            C::WakeAssignee,
            S::Rejected,
            false,
            Resolution::Reject
        ));
        assert!(!wakes_assignee(
            C::WakeAssignee,
            S::Cancelled,
            false,
            Resolution::Skip
        ));
        assert!(!wakes_assignee(
            C::WakeAssigneeOnAccept,
            S::Rejected,
            false,
            Resolution::Reject
        ));
        assert!(wakes_assignee(
            C::WakeAssigneeOnAccept,
            S::Answered,
            false,
            Resolution::Respond
        ));
        assert!(!wakes_assignee(
            C::None,
            S::Accepted,
            false,
            Resolution::Accept
        ));
        assert!(wakes_assignee(
            C::None,
            S::Rejected,
            true,
            Resolution::Reject
        ));
    }
}
