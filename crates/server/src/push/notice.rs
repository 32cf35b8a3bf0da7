//! What is pushed, from the activity the store commits: a card waiting on a
//! person, an approval requested, a failed run, a budget hard stop. A notice
//! names the task by its identifier and the agent by its name, and says
//! where to open it; each recipient's copy gets its own action links.

use paperclip_core::activity::Action;
use paperclip_core::approval::ApprovalType;
use paperclip_core::model::ActivityEntry;
use paperclip_core::push::NoticeKind;
use paperclip_store::Store;

/// Longest body text sent: phones show two or three lines anyway, and the
/// whole message must fit one push (about 4 KB with its links).
const BODY_CHARS: usize = 240;

#[derive(Debug, Clone)]
pub struct Notice {
    pub kind: NoticeKind,
    pub company_id: String,
    pub title: String,
    pub body: String,
    /// The page to open, a path on this server.
    pub url: String,
    /// Replaces an earlier notification of the same thing on the device.
    pub tag: String,
    pub target: Target,
    /// Only this person's devices (a card addressed to one person).
    pub only_user: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    None,
    Approval { id: String },
    Card { issue_id: String, id: String },
}

/// Whether an activity entry may make a notice, before anything is read.
pub fn relevant(entry: &ActivityEntry) -> bool {
    matches!(
        Action::parse(&entry.action),
        Some(
            Action::ApprovalCreated
                | Action::IssueThreadInteractionCreated
                | Action::HeartbeatFinished
                | Action::BudgetHardStop
        )
    )
}

/// The notice an entry makes, if any.
pub async fn from_activity(store: &Store, entry: &ActivityEntry) -> anyhow::Result<Option<Notice>> {
    let Some(action) = Action::parse(&entry.action) else {
        return Ok(None);
    };
    let company = paperclip_store::org::companies::get(store, &entry.company_id).await?;
    let prefix = &company.issue_prefix;
    let agent_name = |id: Option<String>| async move {
        match id {
            Some(id) => paperclip_store::org::agents::get(store, &id)
                .await
                .map(|a| a.name)
                .ok(),
            None => None,
        }
    };
    let detail = |key: &str| {
        entry
            .details
            .get(key)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let notice = match action {
        Action::ApprovalCreated => {
            let approval = paperclip_store::approvals::get(store, &entry.entity_id).await?;
            let who = agent_name(approval.requested_by_agent_id.clone())
                .await
                .unwrap_or_else(|| "Someone".into());
            let tasks: Vec<String> = paperclip_store::approvals::issues_of(store, &approval.id)
                .await?
                .into_iter()
                .map(|i| i.identifier)
                .collect();
            let what = approval_words(approval.kind, &approval.payload);
            let mut body = format!("{who} asks to {what}");
            if !tasks.is_empty() {
                body.push_str(&format!(" · {}", tasks.join(", ")));
            }
            Notice {
                kind: NoticeKind::Approval,
                company_id: company.id.clone(),
                title: format!("Approval requested · {}", company.name),
                body,
                url: format!("/{prefix}/approvals/{}", approval.id),
                tag: format!("approval-{}", approval.id),
                target: Target::Approval { id: approval.id },
                only_user: None,
            }
        }
        Action::IssueThreadInteractionCreated => {
            // A card for an agent waits on that agent, not on a person.
            if detail("addresseeAgentId").is_some() {
                return Ok(None);
            }
            let Some(card_id) = detail("interactionId") else {
                return Ok(None);
            };
            let issue = paperclip_store::issues::get(store, &entry.entity_id).await?;
            let card =
                paperclip_store::thread::interactions::get(store, &issue.id, &card_id).await?;
            let who = agent_name(card.created_by_agent_id.clone())
                .await
                .unwrap_or_else(|| "Someone".into());
            let question = card
                .title
                .clone()
                .or_else(|| first_prompt(&card.payload))
                .or_else(|| card.summary.clone())
                .unwrap_or_else(|| issue.title.clone());
            Notice {
                kind: NoticeKind::Question,
                company_id: company.id.clone(),
                title: format!("{} · {who} asks you", issue.identifier),
                body: question,
                url: format!("/{prefix}/tasks/{}", issue.identifier),
                tag: format!("card-{}", card.id),
                target: Target::Card {
                    issue_id: issue.id,
                    id: card.id,
                },
                only_user: card.addressee_user_id.clone(),
            }
        }
        Action::HeartbeatFinished => {
            let status = detail("status").unwrap_or_default();
            if status != "failed" && status != "timed_out" {
                return Ok(None);
            }
            let run = paperclip_store::runs::get(store, &entry.entity_id).await?;
            let agent = paperclip_store::org::agents::get(store, &run.agent_id).await?;
            let task = match &run.issue_id {
                Some(id) => paperclip_store::issues::get(store, id).await.ok(),
                None => None,
            };
            let why = run
                .error
                .clone()
                .or_else(|| run.error_code.as_deref().map(|c| c.replace('_', " ")))
                .unwrap_or_else(|| "no reason given".into());
            let ended = if status == "timed_out" {
                "timed out"
            } else {
                "failed"
            };
            let body = match &task {
                Some(t) => format!("{} · {why}", t.identifier),
                None => why,
            };
            Notice {
                kind: NoticeKind::FailedRun,
                company_id: company.id.clone(),
                title: format!("{}'s run {ended}", agent.name),
                body,
                url: format!("/{prefix}/agents/{}/runs/{}", agent.url_key, run.id),
                tag: format!("run-{}", run.id),
                target: Target::None,
                only_user: None,
            }
        }
        Action::BudgetHardStop => {
            let cents = |key: &str| entry.details.get(key).and_then(|v| v.as_i64()).unwrap_or(0);
            let paused = entry
                .details
                .get("pausedAgentIds")
                .and_then(|v| v.as_array())
                .map_or(0, Vec::len);
            let scope = match entry.entity_type.as_str() {
                "agent" => agent_name(Some(entry.entity_id.clone()))
                    .await
                    .unwrap_or_else(|| "An agent".into()),
                "project" => paperclip_store::org::projects::get(store, &entry.entity_id)
                    .await
                    .map(|p| format!("Project {}", p.name))
                    .unwrap_or_else(|_| "A project".into()),
                _ => company.name.clone(),
            };
            let agents = match paused {
                1 => "1 agent paused".to_string(),
                n => format!("{n} agents paused"),
            };
            Notice {
                kind: NoticeKind::BudgetStop,
                company_id: company.id.clone(),
                title: format!("Budget stop · {scope}"),
                body: format!(
                    "Spent {} of {} this month; {agents}",
                    dollars(cents("spendCents")),
                    dollars(cents("budgetCents"))
                ),
                url: format!("/{prefix}/costs"),
                tag: format!("budget-{}", entry.entity_id),
                target: Target::None,
                only_user: None,
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(Notice {
        body: clip(&notice.body),
        title: clip(&notice.title),
        ..notice
    }))
}

fn approval_words(kind: ApprovalType, payload: &serde_json::Value) -> String {
    let name = payload.get("name").and_then(|v| v.as_str());
    match (kind, name) {
        (ApprovalType::HireAgent, Some(name)) => format!("hire the agent “{name}”"),
        (ApprovalType::HireAgent, None) => "hire an agent".into(),
        (ApprovalType::ApproveCeoStrategy, _) => "approve the CEO's strategy".into(),
        (ApprovalType::BudgetOverrideRequired, _) => "go over a budget".into(),
        (ApprovalType::RequestBoardApproval, _) => payload
            .get("title")
            .and_then(|v| v.as_str())
            .map(|t| format!("approve: {t}"))
            .unwrap_or_else(|| "have the board decide".into()),
    }
}

fn first_prompt(payload: &serde_json::Value) -> Option<String> {
    payload
        .get("questions")
        .and_then(|q| q.get(0))
        .and_then(|q| q.get("prompt"))
        .or_else(|| payload.get("prompt"))
        .and_then(|p| p.as_str())
        .map(str::to_string)
}

fn dollars(cents: i64) -> String {
    format!("${}.{:02}", cents / 100, (cents % 100).abs())
}

fn clip(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= BODY_CHARS {
        return text.to_string();
    }
    let mut out: String = text.chars().take(BODY_CHARS - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_reads_as_dollars_and_long_text_is_clipped() {
        assert_eq!(dollars(12345), "$123.45");
        assert_eq!(dollars(5), "$0.05");
        let long = "x".repeat(BODY_CHARS + 10);
        assert_eq!(clip(&long).chars().count(), BODY_CHARS);
        assert!(clip(&long).ends_with('…'));
        assert_eq!(clip(" short "), "short");
    }

    #[test]
    fn a_hire_names_the_agent_in_words() {
        let payload = serde_json::json!({ "name": "Designer" });
        assert_eq!(
            approval_words(ApprovalType::HireAgent, &payload),
            "hire the agent “Designer”"
        );
        assert_eq!(
            first_prompt(&serde_json::json!({ "questions": [{ "prompt": "Ship it?" }] })),
            Some("Ship it?".into())
        );
    }
}
