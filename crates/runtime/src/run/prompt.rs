//! The run's prompt: the template's values, the comments it was woken for,
//! the task so far for a run whose session was reset, and its notes.

use std::collections::{BTreeMap, HashMap};

use paperclip_core::model::{Agent, Company, HeartbeatRun, Issue, TaskSession};
use paperclip_store::Store;
use serde_json::Value;

use super::wake::WakeContext;

/// How many of a task's latest comments a run that lost its session is shown.
const SO_FAR_COMMENTS: i64 = 5;

/// What a run's prompt is built from, all loaded already.
pub(crate) struct PromptInput<'a> {
    pub api_url: &'a str,
    pub company: &'a Company,
    pub agent: &'a Agent,
    pub run: &'a HeartbeatRun,
    pub issue: Option<&'a Issue>,
    pub wake: &'a WakeContext,
    /// The run's API key (`credentials.apiKey`): in the run's redaction set.
    pub token: &'a str,
    /// Whether the adapter needs a prompt even without a template.
    pub needs_prompt: bool,
}

/// The prompt before the board's answers (added once a stop can no longer
/// prevent the run): the agent's template, or the default one, with notes.
pub(crate) async fn prompt(
    store: &Store,
    input: &PromptInput<'_>,
    saved: Option<&TaskSession>,
) -> Option<String> {
    // Compact now: the CLI's own command alone, on the saved session.
    if let Some(command) = compaction(input.run, &input.agent.adapter_type) {
        return Some(command.to_string());
    }
    let mut values = template_values(input);
    if let Some(comments) = wake_comments(store, input.run, input.wake).await {
        values.insert("wake.comments", comments);
    }
    let template = input.agent.adapter_config.get("promptTemplate");
    let prompt = match template.and_then(Value::as_str) {
        Some(t) => Some(paperclip_core::template::render(t, &values)),
        None if input.needs_prompt => Some(paperclip_core::template::default_prompt(&values)),
        None => None,
    };
    let so_far = match (&input.run.issue_id, crate::notes::overflow_reset(saved)) {
        (Some(issue), true) => task_so_far(store, issue).await,
        _ => None,
    };
    crate::notes::with_notes(prompt, input.run, saved, so_far.as_deref())
}

/// The compaction command when the run was woken to compact the session.
pub(crate) fn compaction(run: &HeartbeatRun, adapter_type: &str) -> Option<&'static str> {
    (run.wake_reason.as_deref() == Some(paperclip_core::context::COMPACT_REASON))
        .then(|| paperclip_core::context::compaction_prompt(adapter_type))
        .flatten()
}

pub(crate) fn template_values<'a>(input: &PromptInput<'_>) -> BTreeMap<&'a str, String> {
    let PromptInput {
        company,
        agent,
        run,
        ..
    } = input;
    let mut v = BTreeMap::new();
    identity_values(&mut v, company, agent, input.api_url);
    v.insert("run.id", run.id.clone());
    let started = run.started_at.clone().unwrap_or_default();
    v.insert("run.startedAt", started);
    v.insert("credentials.apiKey", input.token.to_string());
    v.insert("run.source", run.invocation_source.clone());
    let detail = run.trigger_detail.clone().unwrap_or_default();
    v.insert("run.triggerDetail", detail);
    v.insert(
        "heartbeat.reason",
        run.wake_reason.clone().unwrap_or_default(),
    );
    if let Some(issue) = input.issue {
        task_values(&mut v, issue);
    }
    wake_values(&mut v, input.wake);
    v
}

/// The values that do not depend on the run: who, where, the skill. Shared
/// with the prompt preview, so a preview shows what a run would get.
pub(crate) fn identity_values(
    v: &mut BTreeMap<&str, String>,
    company: &Company,
    agent: &Agent,
    api_url: &str,
) {
    v.insert("company.id", company.id.clone());
    v.insert("company.name", company.name.clone());
    v.insert("company.issuePrefix", company.issue_prefix.clone());
    v.insert("agent.id", agent.id.clone());
    v.insert("agent.name", agent.name.clone());
    v.insert("agent.role", agent.role.to_string());
    v.insert("agent.title", agent.title.clone().unwrap_or_default());
    v.insert("agent.urlKey", agent.url_key.clone());
    v.insert("api.url", api_url.to_string());
    v.insert("credentials.apiBaseUrl", api_url.to_string());
    v.insert(
        "paperclip.skill",
        crate::skills::PAPERCLIP_SKILL.to_string(),
    );
}

pub(crate) fn task_values(v: &mut BTreeMap<&str, String>, issue: &Issue) {
    v.insert("task.id", issue.id.clone());
    v.insert("task.identifier", issue.identifier.clone());
    v.insert("task.title", issue.title.clone());
    v.insert("task.status", issue.status.to_string());
    let description = match issue.conversation_agent_id {
        // A chat turn answers the person; it has no description to carry out.
        Some(_) => paperclip_core::chat::directive(&issue.identifier, "the person"),
        None => issue.description.clone().unwrap_or_default(),
    };
    v.insert("task.description", description);
}

fn wake_values(v: &mut BTreeMap<&str, String>, wake: &WakeContext) {
    if let Some(c) = &wake.comment_id {
        v.insert("wake.commentId", c.clone());
    }
    if let Some(payload) = &wake.payload {
        v.insert("wake.payloadJson", payload.to_string());
    }
    if let Some(a) = &wake.approval_id {
        v.insert("approval.id", a.clone());
    }
    if let Some(s) = &wake.approval_status {
        v.insert("approval.status", s.clone());
    }
}

/// The comments this run was woken for, oldest first: exactly the ids
/// its wakes collected, so a comment folded into a queued run is not
/// lost and one delivered to an earlier run is not repeated. One query for
/// the comments, one for their authors.
pub(crate) async fn wake_comments(
    store: &Store,
    run: &HeartbeatRun,
    wake: &WakeContext,
) -> Option<String> {
    let issue_id = run.issue_id.as_deref()?;
    let ids: Vec<&str> = wake.comment_ids.iter().map(String::as_str).collect();
    // A comment deleted since the wake is no longer news.
    let list = paperclip_store::thread::comments::by_ids(store, issue_id, &ids)
        .await
        .unwrap_or_else(|err| {
            tracing::warn!(run = %run.id, error = %err, "reading the wake's comments failed");
            Vec::new()
        });
    if list.is_empty() {
        return None;
    }
    let mut authors: Vec<&str> = list
        .iter()
        .filter_map(|c| c.author_agent_id.as_deref())
        .collect();
    authors.sort_unstable();
    authors.dedup();
    let names: HashMap<String, String> = paperclip_store::org::agents::briefs(store, &authors)
        .await
        .map(|briefs| briefs.into_iter().map(|a| (a.id, a.name)).collect())
        .unwrap_or_default();
    let mut out = String::new();
    for c in list {
        let author = match &c.author_agent_id {
            Some(id) => names.get(id).map_or("an agent", String::as_str),
            None => "the board",
        };
        out.push_str(&format!("- {author}: {}\n", c.body.trim()));
    }
    Some(out)
}

/// The task's latest comments, oldest first and each cut short: what a
/// run that lost its session is told of the work so far.
pub(crate) async fn task_so_far(store: &Store, issue_id: &str) -> Option<String> {
    let mut latest = paperclip_store::thread::comments::list(
        store,
        issue_id,
        None,
        paperclip_store::thread::comments::Order::Desc,
        SO_FAR_COMMENTS,
    )
    .await
    .ok()?;
    latest.reverse();
    let lines: Vec<String> = latest
        .iter()
        .map(|c| {
            let who = if c.author_agent_id.is_some() {
                "an agent"
            } else {
                "the board"
            };
            let body: String = c.body.trim().chars().take(300).collect();
            format!("- {who}: {body}")
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n") + "\n")
}
