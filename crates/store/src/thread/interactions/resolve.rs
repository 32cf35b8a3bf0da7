//! Resolving a card: who may, what each resolution records, what it does
//! to the task (accepted suggestions become tasks; an accepted or rejected
//! plan returns the task to its author) and whom it wakes, in one
//! transaction.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::input::NewIssue;
use paperclip_core::interaction::{
    check_answers, selected_tasks, wakes_assignee, AcceptInteraction, Interaction,
    InteractionKind as K, InteractionStatus as S, ItemVerdict, QuestionAnswer, Resolution,
    ResolverPolicy, VerdictInput,
};
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::Issue;
use serde_json::{json, Value};

use crate::audit::activity::{self, Entry};
use crate::thread::interactions::cards::{get_in, map};
use crate::{now, Backend, Error, Result, Store, Tx};

/// What a resolution route was sent.
#[derive(Debug, Clone)]
pub enum Resolve {
    Accept(AcceptInteraction),
    Reject(Option<String>),
    Respond {
        answers: Vec<QuestionAnswer>,
        summary_markdown: Option<String>,
    },
    Verdicts(Vec<VerdictInput>),
    Withdraw(Option<String>),
    Skip(Option<String>),
    Cancel(Option<String>),
}

impl Resolve {
    pub fn resolution(&self) -> Resolution {
        match self {
            Resolve::Accept(_) => Resolution::Accept,
            Resolve::Reject(_) => Resolution::Reject,
            Resolve::Respond { .. } => Resolution::Respond,
            Resolve::Verdicts(_) => Resolution::Verdicts,
            Resolve::Withdraw(_) => Resolution::Withdraw,
            Resolve::Skip(_) => Resolution::Skip,
            Resolve::Cancel(_) => Resolution::Cancel,
        }
    }
}

pub async fn resolve(
    store: &Store,
    actor: &Actor,
    issue_id: &str,
    id: &str,
    input: Resolve,
) -> Result<Interaction> {
    let resolution = input.resolution();
    let mut tx = store.begin().await?;
    tx.lock_row(crate::Locked::Issue, issue_id).await?;
    let issue = crate::issues::table::load_in(&mut tx, issue_id).await?;
    // The card's row is locked first: two people answering at once get one
    // answer and one 409, on Postgres as under SQLite's single writer.
    let row = crate::engine::db::query(
        "UPDATE issue_thread_interactions SET updated_at = updated_at WHERE id = $1 AND issue_id = $2 \
         RETURNING *",
    )
    .bind(id)
    .bind(&issue.id)
    .fetch_optional(tx.conn())
    .await?;
    let card = row
        .as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| Error::not_found("Interaction"))?;
    authorize(actor, &issue, &card, resolution)?;
    if !resolution.applies_to(card.kind) {
        return Err(Error::rule(format!(
            "A {} interaction cannot be resolved with {}",
            card.kind.as_str(),
            resolution.as_str()
        )));
    }
    if issue.status.is_terminal() {
        return Err(Error::conflict(
            format!(
                "{} is closed: its interactions can no longer be answered",
                issue.identifier
            ),
            Some(json!({ "code": "interaction_issue_closed" })),
        ));
    }
    if card.status != S::Pending {
        let code = match card.status {
            S::Expired => "interaction_superseded",
            _ => "interaction_already_resolved",
        };
        return Err(Error::conflict(
            format!("This interaction is already {}", card.status.as_str()),
            Some(json!({ "code": code, "status": card.status.as_str(), "result": card.result })),
        ));
    }
    let ts = now();
    let (status, result, created) =
        outcome(&mut tx, store.backend(), actor, &issue, &card, input).await?;
    crate::engine::db::query(
        "UPDATE issue_thread_interactions SET status = $2, result = $3, resolved_by_agent_id = $4, \
         resolved_by_run_id = $5, resolved_by_user_id = $6, resolved_at = $7, updated_at = $8 \
         WHERE id = $1",
    )
    .bind(&card.id)
    .bind(status.as_str())
    .bind(result.to_string())
    .bind(actor.agent_id())
    .bind(actor.run_id.as_deref())
    .bind(actor.user_id())
    .bind((status != S::Pending).then_some(ts.as_str()))
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    let action = match (resolution, status) {
        (Resolution::Accept, _) => Action::IssueThreadInteractionAccepted,
        (Resolution::Reject, _) => Action::IssueThreadInteractionRejected,
        (Resolution::Respond, _) => Action::IssueThreadInteractionAnswered,
        (Resolution::Verdicts, _) => Action::IssueThreadInteractionItemVerdictsSubmitted,
        (Resolution::Withdraw, _) => Action::IssueThreadInteractionWithdrawn,
        (Resolution::Skip, _) => Action::IssueThreadInteractionSkipped,
        (Resolution::Cancel, _) => Action::IssueThreadInteractionCancelled,
    };
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action,
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({
                "identifier": issue.identifier,
                "interactionId": card.id,
                "interactionKind": card.kind.as_str(),
                "interactionStatus": status.as_str(),
                "resolutionActorKind": actor.kind.as_str(),
                "rejectionReason": result.get("reason").or(result.get("rejectionReason")),
                "answeredQuestionCount": result.get("answers").and_then(Value::as_array).map(Vec::len),
                "createdTaskCount": created,
            }),
        },
    )
    .await?;
    let plan = paperclip_core::interaction_payload::document_target(&card.payload)
        .is_some_and(|(key, _)| key == "plan");
    if card.kind == K::RequestConfirmation
        && card.created_by_agent_id.is_some()
        && matches!(status, S::Accepted | S::Rejected)
        && (status == S::Accepted || plan)
        && actor.user_id().is_some()
    {
        crate::thread::interactions::effects::return_to_author(&mut tx, actor, &issue, &card, &ts)
            .await?;
    }
    let updated = get_in(&mut tx, &card.id).await?;
    let issue = crate::issues::table::load_in(&mut tx, &issue.id).await?;
    let plan_rejected = plan && status == S::Rejected;
    let by_assignee =
        actor.agent_id().is_some() && actor.agent_id() == issue.assignee_agent_id.as_deref();
    let wakes = wakes_assignee(card.continuation_policy, status, plan_rejected, resolution)
        && !(resolution == Resolution::Withdraw && by_assignee);
    if wakes {
        crate::thread::interactions::effects::wake(&mut tx, actor, &issue, &updated, resolution)
            .await?;
    }
    tx.runs_may_start();
    tx.commit().await?;
    Ok(updated)
}

/// Who may resolve: skip and cancel are a person's; withdraw is the author's,
/// the assignee's or a person's; the rest follow the card's resolver policy
/// and addressee. An agent resolving names its run.
fn authorize(
    actor: &Actor,
    issue: &Issue,
    card: &Interaction,
    resolution: Resolution,
) -> Result<()> {
    let Some(agent) = actor.agent_id() else {
        return Ok(());
    };
    if actor.run_id.is_none() {
        return Err(Error::rule(
            "An agent resolving an interaction must send its run id (X-Paperclip-Run-Id)",
        ));
    }
    if resolution.board_only() {
        return Err(Error::forbidden(format!(
            "Only a person can {} an interaction",
            resolution.as_str()
        )));
    }
    if resolution == Resolution::Withdraw {
        let own = card.created_by_agent_id.as_deref() == Some(agent)
            || issue.assignee_agent_id.as_deref() == Some(agent);
        return match own {
            true => Ok(()),
            false => Err(Error::forbidden(
                "Only the interaction's author, the task's assignee or a person can withdraw it",
            )),
        };
    }
    match card.effective_resolver_policy {
        ResolverPolicy::HumanOnly => {
            return Err(Error::forbidden(
                "This interaction is for a person to answer",
            ))
        }
        ResolverPolicy::NotCreator if card.created_by_agent_id.as_deref() == Some(agent) => {
            return Err(Error::forbidden(
                "The agent that asked cannot answer its own interaction",
            ))
        }
        _ => {}
    }
    if let Some(addressee) = &card.addressee_agent_id {
        if addressee != agent {
            return Err(Error::forbidden(
                "This interaction is addressed to another agent",
            ));
        }
    }
    Ok(())
}

fn reason_text(reason: Option<String>) -> Result<Option<String>> {
    if let Some(r) = &reason {
        paperclip_core::limits::text("reason", r, 4000)?;
    }
    Ok(reason.filter(|r| !r.trim().is_empty()))
}

/// The new status and result of a resolution, and how many tasks it created.
async fn outcome(
    tx: &mut Tx,
    backend: Backend,
    actor: &Actor,
    issue: &Issue,
    card: &Interaction,
    input: Resolve,
) -> Result<(S, Value, usize)> {
    let payload = &card.payload;
    Ok(match input {
        Resolve::Accept(accept) => match card.kind {
            K::SuggestTasks => {
                let selected = accept.selected_client_keys.as_deref();
                let tasks = selected_tasks(payload, selected).map_err(Error::rule)?;
                let (created, skipped) =
                    create_tasks(tx, backend, actor, issue, card, &tasks).await?;
                let n = created.len();
                (
                    S::Accepted,
                    json!({ "version": 1, "outcome": "accepted",
                    "createdTasks": created, "skippedClientKeys": skipped }),
                    n,
                )
            }
            K::RequestCheckboxConfirmation => {
                let ids = accept.selected_option_ids.unwrap_or_default();
                let options = payload["options"].as_array().cloned().unwrap_or_default();
                for id in &ids {
                    if !options.iter().any(|o| o["id"].as_str() == Some(id)) {
                        return Err(Error::rule(format!("{id:?} is not one of the options")));
                    }
                }
                let min = payload["minSelected"].as_u64().unwrap_or(0) as usize;
                let max = payload["maxSelected"].as_u64().map(|m| m as usize);
                if ids.len() < min || max.is_some_and(|m| ids.len() > m) {
                    return Err(Error::rule(format!(
                        "Select between {min} and {} options",
                        max.map_or("any number of".to_string(), |m| m.to_string())
                    )));
                }
                (
                    S::Accepted,
                    json!({ "version": 1, "outcome": "accepted", "selectedOptionIds": ids }),
                    0,
                )
            }
            _ => (
                S::Accepted,
                json!({ "version": 1, "outcome": "accepted" }),
                0,
            ),
        },
        Resolve::Reject(reason) => {
            let reason = reason_text(reason)?;
            if payload["rejectRequiresReason"] == json!(true) && reason.is_none() {
                return Err(Error::rule("A reason is required to reject this"));
            }
            match card.kind {
                K::SuggestTasks => (
                    S::Rejected,
                    json!({ "version": 1, "outcome": "rejected", "rejectionReason": reason }),
                    0,
                ),
                _ => (
                    S::Rejected,
                    json!({ "version": 1, "outcome": "rejected", "reason": reason }),
                    0,
                ),
            }
        }
        Resolve::Respond {
            answers,
            summary_markdown,
        } => {
            if answers.len() > 20 {
                return Err(Error::invalid("answers", "At most 20 answers"));
            }
            for a in &answers {
                if let Some(t) = &a.other_text {
                    paperclip_core::limits::text("otherText", t, 20_000)?;
                }
            }
            if let Some(s) = &summary_markdown {
                paperclip_core::limits::text("summaryMarkdown", s, 20_000)?;
            }
            check_answers(payload, &answers).map_err(Error::rule)?;
            let summary = summary_markdown
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| summarize(payload, &answers));
            (
                S::Answered,
                json!({ "version": 1, "answers": answers, "summaryMarkdown": summary }),
                0,
            )
        }
        Resolve::Verdicts(verdicts) => verdicts_outcome(card, verdicts)?,
        Resolve::Withdraw(reason) => (
            S::Cancelled,
            json!({ "version": 1, "outcome": "withdrawn", "reason": reason_text(reason)? }),
            0,
        ),
        Resolve::Skip(reason) => (
            S::Cancelled,
            json!({ "version": 1, "outcome": "skipped", "reason": reason_text(reason)? }),
            0,
        ),
        Resolve::Cancel(reason) => (
            S::Cancelled,
            json!({ "version": 1, "cancelled": true, "cancellationReason": reason_text(reason)? }),
            0,
        ),
    })
}

/// The answers as the agent reads them when the person wrote no summary:
/// each question with the labels chosen and any typed text.
fn summarize(payload: &Value, answers: &[QuestionAnswer]) -> String {
    let questions = payload["questions"].as_array().cloned().unwrap_or_default();
    let mut out = String::new();
    for a in answers {
        let q = questions
            .iter()
            .find(|q| q["id"].as_str() == Some(a.question_id.as_str()));
        let prompt = q
            .and_then(|q| q["prompt"].as_str())
            .unwrap_or(&a.question_id);
        let labels: Vec<String> = a
            .option_ids
            .iter()
            .filter_map(|id| {
                let o = q?["options"]
                    .as_array()?
                    .iter()
                    .find(|o| o["id"].as_str() == Some(id))?;
                (o["freeText"] != json!(true))
                    .then(|| o["label"].as_str().unwrap_or(id).to_string())
            })
            .collect();
        let mut answer = labels.join(", ");
        if let Some(text) = a.other_text.as_deref().filter(|t| !t.trim().is_empty()) {
            if !answer.is_empty() {
                answer.push_str("; ");
            }
            answer.push_str(text);
        }
        out.push_str(&format!("- {prompt} — {answer}\n"));
    }
    out
}

fn verdicts_outcome(card: &Interaction, verdicts: Vec<VerdictInput>) -> Result<(S, Value, usize)> {
    let payload = &card.payload;
    if verdicts.is_empty() || verdicts.len() > 200 {
        return Err(Error::invalid("verdicts", "Send 1 to 200 verdicts"));
    }
    let items = payload["items"].as_array().cloned().unwrap_or_default();
    let allowed: Vec<ItemVerdict> =
        serde_json::from_value(payload["verdicts"].clone()).unwrap_or_default();
    let needs_reason: Vec<ItemVerdict> =
        serde_json::from_value(payload["requireReasonOn"].clone()).unwrap_or_default();
    let mut given: Vec<Value> = card
        .result
        .as_ref()
        .and_then(|r| r["items"].as_array().cloned())
        .unwrap_or_default();
    for v in &verdicts {
        if !items
            .iter()
            .any(|i| i["id"].as_str() == Some(v.id.as_str()))
        {
            return Err(Error::rule(format!("{:?} is not one of the items", v.id)));
        }
        if !allowed.contains(&v.verdict) {
            return Err(Error::rule(format!(
                "{} is not a verdict this card takes",
                v.verdict.as_str()
            )));
        }
        let reason = v.reason.as_deref().filter(|r| !r.trim().is_empty());
        if needs_reason.contains(&v.verdict) && reason.is_none() {
            return Err(Error::rule(format!(
                "A reason is required to {} {:?}",
                v.verdict.as_str(),
                v.id
            )));
        }
        given.retain(|g| g["id"].as_str() != Some(v.id.as_str()));
        given.push(json!({ "id": v.id, "verdict": v.verdict.as_str(), "reason": reason }));
    }
    let complete = items
        .iter()
        .all(|i| given.iter().any(|g| g["id"] == i["id"]));
    let status = if complete { S::Answered } else { S::Pending };
    Ok((
        status,
        json!({ "version": 1, "outcome": "resolved", "complete": complete, "items": given }),
        0,
    ))
}

/// Creates the accepted suggestions, parents first, under the task (or the
/// card's default parent), in the resolving transaction.
async fn create_tasks(
    tx: &mut Tx,
    backend: Backend,
    actor: &Actor,
    issue: &Issue,
    card: &Interaction,
    tasks: &[Value],
) -> Result<(Vec<Value>, Vec<String>)> {
    let payload = &card.payload;
    // An agent's suggestions grow the tree no deeper than the agent could.
    let agent_made = actor.agent_id().is_some() || card.created_by_agent_id.is_some();
    let all: Vec<String> = payload["tasks"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["clientKey"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    // A chat is never a parent: its suggestions are top-level tasks.
    let default_parent = match payload["defaultParentId"].as_str() {
        Some(id) => Some(id.to_string()),
        None if issue.conversation_agent_id.is_some() => None,
        None => Some(issue.id.clone()),
    };
    let mut created: Vec<Value> = Vec::new();
    let mut ids: Vec<(String, String, String)> = Vec::new();
    for value in tasks {
        let task = paperclip_core::interaction_payload::suggested_task(value)
            .ok_or_else(|| Error::rule("A suggested task could not be read"))?;
        let parent = match (&task.parent_client_key, &task.parent_id) {
            (Some(key), _) => ids
                .iter()
                .find(|(k, _, _)| k == key)
                .map(|(_, id, _)| id.clone()),
            (None, Some(id)) => Some(id.clone()),
            (None, None) => default_parent.clone(),
        };
        let assigned = task.assignee_agent_id.is_some() || task.assignee_user_id.is_some();
        let new = crate::issues::create::create_in_placed(
            tx,
            backend,
            actor,
            &issue.company_id,
            &NewIssue {
                title: task.title.clone(),
                description: task.description.clone(),
                status: Some(if assigned {
                    IssueStatus::Todo
                } else {
                    IssueStatus::Backlog
                }),
                priority: task.priority,
                project_id: task.project_id.clone().or(issue.project_id.clone()),
                goal_id: task.goal_id.clone().or(issue.goal_id.clone()),
                parent_id: parent.clone(),
                assignee_agent_id: task.assignee_agent_id.clone(),
                assignee_user_id: task.assignee_user_id.clone(),
                billing_code: task.billing_code.clone(),
                label_ids: None,
                blocked_by_issue_ids: None,
            },
            true,
            agent_made,
        )
        .await?;
        let adjusted = new.parent_id != parent;
        let parent = new.parent_id.clone();
        let parent_identifier = match &parent {
            Some(p) => crate::issues::table::load_in(tx, p)
                .await
                .ok()
                .map(|i| i.identifier),
            None => None,
        };
        created.push(json!({
            "clientKey": task.client_key, "issueId": new.id, "identifier": new.identifier,
            "title": new.title, "parentIssueId": parent, "parentIdentifier": parent_identifier,
        }));
        if adjusted {
            created.last_mut().expect("just pushed")["parentAdjusted"] = json!(true);
        }
        ids.push((
            task.client_key.clone(),
            new.id.clone(),
            new.identifier.clone(),
        ));
    }
    let skipped = all
        .into_iter()
        .filter(|k| !ids.iter().any(|(c, _, _)| c == k))
        .collect();
    Ok((created, skipped))
}
