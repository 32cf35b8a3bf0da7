//! A prompt as a run would get it, for a person editing the template: the
//! agent's real identity, a sample wake (or a task the person names), and
//! every sensitive value masked, so the preview never shows a credential.

use std::collections::BTreeMap;

use paperclip_core::model::{Agent, Company, Issue};
use paperclip_core::template::{self, TemplateError};

/// What a preview stands in for the parts of a wake that only a run has.
const SAMPLE_WAKE: &[(&str, &str)] = &[
    ("run.id", "(the run's id)"),
    ("run.source", "on_demand"),
    ("run.triggerDetail", "manual"),
    (
        "heartbeat.reason",
        "(why the agent woke, e.g. issue_assigned)",
    ),
    ("wake.commentId", "(the comment's id)"),
    (
        "wake.comments",
        "- the board: (a comment the agent was woken for)\n",
    ),
    ("task.id", "(the task's id)"),
    ("task.identifier", "(the task, e.g. ACM-12)"),
    ("task.title", "(the task's title)"),
    ("task.status", "todo"),
    ("task.description", "(the task's description)"),
];

/// `template` (the agent's default prompt when `None` or blank) rendered
/// for a sample wake of `agent`, about `issue` when given. An unknown or
/// unclosed variable is the error a save would give.
pub fn render(
    api_url: &str,
    company: &Company,
    agent: &Agent,
    template: Option<&str>,
    issue: Option<&Issue>,
    now: &str,
) -> Result<String, TemplateError> {
    let mut values: BTreeMap<&str, String> = BTreeMap::new();
    for (k, v) in SAMPLE_WAKE {
        values.insert(k, v.to_string());
    }
    crate::run::prompt::identity_values(&mut values, company, agent, api_url);
    if let Some(issue) = issue {
        crate::run::prompt::task_values(&mut values, issue);
    }
    values.insert("run.startedAt", now.to_string());
    values.insert("credentials.apiKey", String::new());
    match template.filter(|t| !t.trim().is_empty()) {
        Some(t) => {
            template::variables(t)?;
            Ok(template::render_masked(t, &values))
        }
        None => Ok(template::default_prompt(&values)),
    }
}
