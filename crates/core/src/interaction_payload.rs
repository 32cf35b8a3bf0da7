//! The payload of each interaction kind, with upstream's field names, limits
//! and defaults. [`normalize`] reads a request's payload, refuses what breaks
//! a limit or a rule, and returns it with every default filled in, as the
//! card is stored and returned (unknown keys are dropped, as upstream's
//! schemas strip them).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::interaction::{InteractionKind, ItemVerdict};
use crate::issue::IssuePriority;

/// Why a payload was refused: a 400 with the path, or (`rule`) a 422.
#[derive(Debug, Clone, PartialEq)]
pub struct PayloadError {
    pub path: Vec<Value>,
    pub message: String,
    pub rule: bool,
}

fn bad(path: Vec<Value>, message: impl Into<String>) -> PayloadError {
    PayloadError {
        path,
        message: message.into(),
        rule: false,
    }
}

fn yes() -> bool {
    true
}

fn one() -> u8 {
    1
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Questions {
    #[serde(default = "one")]
    version: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    submit_label: Option<String>,
    #[serde(default = "yes")]
    supersede_on_user_comment: bool,
    questions: Vec<Question>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Question {
    id: String,
    prompt: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    help_text: Option<String>,
    selection_mode: SelectionMode,
    #[serde(skip_serializing_if = "Option::is_none")]
    required: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    allow_other: Option<bool>,
    options: Vec<QuestionOption>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
enum SelectionMode {
    Single,
    Multi,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct QuestionOption {
    id: String,
    label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    free_text: Option<bool>,
}

/// The fields every confirmation-like card shares.
#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Confirmation {
    #[serde(default = "one")]
    version: u8,
    prompt: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    accept_label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reject_label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reject_requires_reason: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reject_reason_label: Option<String>,
    #[serde(default = "yes")]
    allow_decline_reason: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    decline_reason_placeholder: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details_markdown: Option<String>,
    #[serde(default = "yes")]
    supersede_on_user_comment: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<Target>,
}

/// What a confirmation is about: a revision of a task's document (a plan),
/// or something of the agent's own naming.
#[derive(Debug, Deserialize, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Target {
    #[serde(rename_all = "camelCase")]
    IssueDocument {
        #[serde(skip_serializing_if = "Option::is_none")]
        issue_id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        document_id: Option<String>,
        key: String,
        revision_id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        revision_number: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        href: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Custom {
        key: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        revision_id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        revision_number: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        href: Option<String>,
    },
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Checkbox {
    #[serde(flatten)]
    base: Confirmation,
    options: Vec<CheckOption>,
    #[serde(default)]
    default_selected_option_ids: Vec<String>,
    #[serde(default)]
    min_selected: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_selected: Option<u32>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct CheckOption {
    id: String,
    label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
}

fn approve_reject() -> Vec<ItemVerdict> {
    vec![ItemVerdict::Approve, ItemVerdict::Reject]
}

fn reject_only() -> Vec<ItemVerdict> {
    vec![ItemVerdict::Reject]
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct Verdicts {
    #[serde(default = "one")]
    version: u8,
    prompt: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    details_markdown: Option<String>,
    items: Vec<VerdictItem>,
    #[serde(default = "approve_reject")]
    verdicts: Vec<ItemVerdict>,
    #[serde(default = "reject_only")]
    require_reason_on: Vec<ItemVerdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason_label: Option<String>,
    #[serde(default = "yes")]
    allow_bulk_approve: bool,
    #[serde(default = "yes")]
    supersede_on_user_comment: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<Target>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct VerdictItem {
    id: String,
    label: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    preview_markdown: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    href: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attachment_id: Option<String>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
struct SuggestTasks {
    #[serde(default = "one")]
    version: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    default_parent_id: Option<String>,
    tasks: Vec<SuggestedTask>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SuggestedTask {
    pub client_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_client_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<IssuePriority>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignee_agent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assignee_user_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub goal_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub billing_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden_in_preview: Option<bool>,
}

/// Reads one suggested task of an accepted card back into its shape.
pub fn suggested_task(value: &Value) -> Option<SuggestedTask> {
    serde_json::from_value(value.clone()).ok()
}

fn parse<T: DeserializeOwned>(payload: &Value) -> Result<T, PayloadError> {
    serde_json::from_value(payload.clone()).map_err(|e| bad(vec![json!("payload")], e.to_string()))
}

/// Limits, each checked as `path: at most N characters`.
struct Check(Vec<PayloadError>);

impl Check {
    fn text(&mut self, path: &[Value], value: &str, max: usize) {
        if value.trim().is_empty() {
            self.0.push(bad(path.to_vec(), "must not be empty"));
        } else {
            self.opt(path, Some(value), max);
        }
    }

    fn opt(&mut self, path: &[Value], value: Option<&str>, max: usize) {
        if let Some(v) = value {
            if v.chars().take(max + 1).count() > max {
                self.0.push(bad(
                    path.to_vec(),
                    format!("must be at most {max} characters"),
                ));
            } else if v.contains('\0') {
                self.0.push(bad(path.to_vec(), "must not contain NUL"));
            }
        }
    }

    fn count(&mut self, path: &[Value], n: usize, min: usize, max: usize) {
        if n < min || n > max {
            self.0.push(bad(
                path.to_vec(),
                format!("must have {min} to {max} entries (has {n})"),
            ));
        }
    }

    fn unique<'a>(&mut self, path: &[Value], ids: impl Iterator<Item = &'a str>) {
        let mut seen = std::collections::HashSet::new();
        for id in ids {
            if !seen.insert(id) {
                self.0
                    .push(bad(path.to_vec(), format!("{id:?} appears twice")));
            }
        }
    }
}

fn p(parts: &[&dyn ToJson]) -> Vec<Value> {
    parts.iter().map(|x| x.to_json()).collect()
}

trait ToJson {
    fn to_json(&self) -> Value;
}

impl ToJson for &str {
    fn to_json(&self) -> Value {
        json!(self)
    }
}

impl ToJson for usize {
    fn to_json(&self) -> Value {
        json!(self)
    }
}

fn confirmation(c: &mut Check, base: &Confirmation) {
    c.text(&p(&[&"payload", &"prompt"]), &base.prompt, 1000);
    c.opt(
        &p(&[&"payload", &"acceptLabel"]),
        base.accept_label.as_deref(),
        80,
    );
    c.opt(
        &p(&[&"payload", &"rejectLabel"]),
        base.reject_label.as_deref(),
        80,
    );
    c.opt(
        &p(&[&"payload", &"rejectReasonLabel"]),
        base.reject_reason_label.as_deref(),
        160,
    );
    c.opt(
        &p(&[&"payload", &"declineReasonPlaceholder"]),
        base.decline_reason_placeholder.as_deref(),
        240,
    );
    c.opt(
        &p(&[&"payload", &"detailsMarkdown"]),
        base.details_markdown.as_deref(),
        20_000,
    );
    if let Some(
        Target::IssueDocument {
            key, revision_id, ..
        }
        | Target::Custom {
            key,
            revision_id: Some(revision_id),
            ..
        },
    ) = &base.target
    {
        c.text(&p(&[&"payload", &"target", &"key"]), key, 64);
        c.opt(
            &p(&[&"payload", &"target", &"revisionId"]),
            Some(revision_id),
            64,
        );
    }
}

/// The payload checked against its kind, with defaults filled in.
pub fn normalize(kind: InteractionKind, payload: &Value) -> Result<Value, PayloadError> {
    if !payload.is_object() {
        return Err(bad(vec![json!("payload")], "payload must be an object"));
    }
    for server_only in ["toolAction", "secretProposal"] {
        if payload.get(server_only).is_some() {
            return Err(PayloadError {
                path: vec![json!("payload"), json!(server_only)],
                message: format!("payload.{server_only} is set by the server only"),
                rule: true,
            });
        }
    }
    if let Some(v) = payload.get("version") {
        if v != &json!(1) {
            return Err(bad(
                vec![json!("payload"), json!("version")],
                "version must be 1",
            ));
        }
    }
    let mut c = Check(Vec::new());
    let normalized = match kind {
        InteractionKind::ConnectionIntent => {
            return Err(PayloadError {
                path: vec![json!("kind")],
                message: "connection_intent cards are created by the server only".into(),
                rule: true,
            })
        }
        InteractionKind::AskUserQuestions => {
            let q: Questions = parse(payload)?;
            c.opt(&p(&[&"payload", &"title"]), q.title.as_deref(), 240);
            c.opt(
                &p(&[&"payload", &"submitLabel"]),
                q.submit_label.as_deref(),
                120,
            );
            c.count(&p(&[&"payload", &"questions"]), q.questions.len(), 1, 64);
            c.unique(
                &p(&[&"payload", &"questions"]),
                q.questions.iter().map(|q| q.id.as_str()),
            );
            for (i, question) in q.questions.iter().enumerate() {
                let at = |f: &str| p(&[&"payload", &"questions", &i, &f]);
                c.text(&at("id"), &question.id, 160);
                c.text(&at("prompt"), &question.prompt, 4000);
                c.opt(&at("helpText"), question.help_text.as_deref(), 4000);
                c.count(&at("options"), question.options.len(), 1, 129);
                c.unique(
                    &at("options"),
                    question.options.iter().map(|o| o.id.as_str()),
                );
                let free = question
                    .options
                    .iter()
                    .filter(|o| o.free_text == Some(true));
                if free.count() > 1 {
                    c.0.push(bad(at("options"), "at most one option may be freeText"));
                }
                for (j, option) in question.options.iter().enumerate() {
                    let at = |f: &str| p(&[&"payload", &"questions", &i, &"options", &j, &f]);
                    c.text(&at("id"), &option.id, 160);
                    c.text(&at("label"), &option.label, 1000);
                    c.opt(&at("description"), option.description.as_deref(), 4000);
                }
            }
            serde_json::to_value(q)
        }
        InteractionKind::RequestConfirmation => {
            let q: Confirmation = parse(payload)?;
            confirmation(&mut c, &q);
            serde_json::to_value(q)
        }
        InteractionKind::RequestCheckboxConfirmation => {
            let q: Checkbox = parse(payload)?;
            confirmation(&mut c, &q.base);
            c.count(&p(&[&"payload", &"options"]), q.options.len(), 1, 200);
            c.unique(
                &p(&[&"payload", &"options"]),
                q.options.iter().map(|o| o.id.as_str()),
            );
            for (j, option) in q.options.iter().enumerate() {
                c.text(&p(&[&"payload", &"options", &j, &"id"]), &option.id, 160);
                c.text(
                    &p(&[&"payload", &"options", &j, &"label"]),
                    &option.label,
                    120,
                );
            }
            for id in &q.default_selected_option_ids {
                if !q.options.iter().any(|o| &o.id == id) {
                    c.0.push(bad(
                        p(&[&"payload", &"defaultSelectedOptionIds"]),
                        format!("{id:?} is not an option"),
                    ));
                }
            }
            if q.max_selected.is_some_and(|m| m < q.min_selected) {
                c.0.push(bad(
                    p(&[&"payload", &"maxSelected"]),
                    "maxSelected must be at least minSelected",
                ));
            }
            serde_json::to_value(q)
        }
        InteractionKind::RequestItemVerdicts => {
            let q: Verdicts = parse(payload)?;
            c.text(&p(&[&"payload", &"prompt"]), &q.prompt, 1000);
            c.opt(
                &p(&[&"payload", &"detailsMarkdown"]),
                q.details_markdown.as_deref(),
                20_000,
            );
            c.count(&p(&[&"payload", &"items"]), q.items.len(), 1, 200);
            c.unique(
                &p(&[&"payload", &"items"]),
                q.items.iter().map(|o| o.id.as_str()),
            );
            for (j, item) in q.items.iter().enumerate() {
                c.text(&p(&[&"payload", &"items", &j, &"id"]), &item.id, 160);
                c.text(&p(&[&"payload", &"items", &j, &"label"]), &item.label, 1000);
                c.opt(
                    &p(&[&"payload", &"items", &j, &"previewMarkdown"]),
                    item.preview_markdown.as_deref(),
                    20_000,
                );
            }
            if !(q.verdicts.contains(&ItemVerdict::Approve)
                && q.verdicts.contains(&ItemVerdict::Reject))
            {
                c.0.push(bad(
                    p(&[&"payload", &"verdicts"]),
                    "verdicts must include approve and reject",
                ));
            }
            serde_json::to_value(q)
        }
        InteractionKind::SuggestTasks => {
            let q: SuggestTasks = parse(payload)?;
            c.count(&p(&[&"payload", &"tasks"]), q.tasks.len(), 1, 50);
            c.unique(
                &p(&[&"payload", &"tasks"]),
                q.tasks.iter().map(|t| t.client_key.as_str()),
            );
            for (j, task) in q.tasks.iter().enumerate() {
                let at = |f: &str| p(&[&"payload", &"tasks", &j, &f]);
                c.text(&at("clientKey"), &task.client_key, 120);
                c.text(&at("title"), &task.title, 240);
                c.opt(&at("description"), task.description.as_deref(), 100_000);
                if task.assignee_agent_id.is_some() && task.assignee_user_id.is_some() {
                    c.0.push(bad(
                        at("assigneeUserId"),
                        "name one assignee, an agent or a person",
                    ));
                }
                if task.labels.as_ref().is_some_and(|l| l.len() > 20) {
                    c.0.push(bad(at("labels"), "at most 20 labels"));
                }
                if let Some(parent) = &task.parent_client_key {
                    if parent == &task.client_key
                        || !q.tasks.iter().any(|t| &t.client_key == parent)
                    {
                        c.0.push(bad(
                            at("parentClientKey"),
                            format!("{parent:?} is not another suggested task"),
                        ));
                    }
                }
            }
            if has_cycle(&q.tasks) {
                c.0.push(bad(
                    p(&[&"payload", &"tasks"]),
                    "parentClientKey links form a cycle",
                ));
            }
            serde_json::to_value(q)
        }
    };
    if let Some(first) = c.0.into_iter().next() {
        return Err(first);
    }
    normalized.map_err(|e| bad(vec![json!("payload")], e.to_string()))
}

fn has_cycle(tasks: &[SuggestedTask]) -> bool {
    tasks.iter().any(|start| {
        let mut cur = start.parent_client_key.as_deref();
        for _ in 0..=tasks.len() {
            match cur {
                None => return false,
                Some(k) if k == start.client_key => return true,
                Some(k) => {
                    cur = tasks
                        .iter()
                        .find(|t| t.client_key == k)
                        .and_then(|t| t.parent_client_key.as_deref())
                }
            }
        }
        true
    })
}

/// The document revision a confirmation targets, when it is one: `(key, revisionId)`.
pub fn document_target(payload: &Value) -> Option<(String, String)> {
    let target = payload.get("target")?;
    if target.get("type")?.as_str()? != "issue_document" {
        return None;
    }
    Some((
        target.get("key")?.as_str()?.to_string(),
        target.get("revisionId")?.as_str()?.to_string(),
    ))
}

#[cfg(test)]
#[path = "interaction_payload_tests.rs"]
mod tests;
