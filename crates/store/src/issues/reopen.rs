//! Reopening a done or cancelled task: who may, what a reopen clears, the
//! assignee's one wake for it, and what a comment that leaves a task closed
//! says instead of waking anyone. Below both of its users, the update
//! (`issues/edit`) and comments (`thread/comments`).

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::WakeSource;
use paperclip_core::issue::{reopen_refusal, IssueStatus, ReopenRefusal, Reopener};
use paperclip_core::model::Issue;
use serde_json::{json, Value};

use crate::audit::activity::{self, Entry};
use crate::issues::gate::{ceo_gate_closed, CEO_GATE};
use crate::{now, Error, Result, Tx};

/// A reopen under way: the closed status it ends, and the key that makes its
/// wake happen once.
#[derive(Debug, Clone)]
pub(crate) struct Reopened {
    pub from: IssueStatus,
    key: String,
}

impl Reopened {
    /// Of `before`, the task while still closed. The key names the closing
    /// it undoes (that closing's time), so however often a reopen of it is
    /// retried the assignee is woken once; closing the task again makes a
    /// new closing and a new key.
    pub(crate) fn of(before: &Issue) -> Reopened {
        let closed_at = match before.status {
            IssueStatus::Cancelled => before.cancelled_at.as_deref(),
            _ => before.completed_at.as_deref(),
        }
        .unwrap_or(&before.updated_at);
        Reopened {
            from: before.status,
            key: format!("issue_reopened:{}:{closed_at}", before.id),
        }
    }
}

pub(crate) fn reopener(actor: &Actor, issue: &Issue) -> Reopener {
    match actor.agent_id() {
        None => Reopener::Board,
        Some(agent) if issue.assignee_agent_id.as_deref() == Some(agent) => Reopener::Assignee,
        Some(_) => Reopener::OtherAgent,
    }
}

/// Refuses a reopen that `actor` may not make, before anything is written.
pub(crate) fn check(actor: &Actor, before: &Issue) -> Result<()> {
    match reopen_refusal(before.status, reopener(actor, before)) {
        None => Ok(()),
        Some(ReopenRefusal::Forbidden(message)) => Err(Error::forbidden(message)),
        Some(ReopenRefusal::Conflict(message)) => Err(Error::conflict(
            message,
            Some(json!({
                "issueId": before.id,
                "status": before.status,
                "assigneeAgentId": before.assignee_agent_id,
            })),
        )),
    }
}

/// Upstream's marks of a reopen on its `issue.updated` activity row.
pub(crate) fn mark(details: &mut Value, reopened: &Reopened, source: &str) {
    details["reopened"] = json!(true);
    details["reopenedFrom"] = json!(reopened.from);
    details["source"] = json!(source);
}

/// Reopens `before` to todo because of a comment: the checks, the write and
/// its activity row. The assignee's wake goes with the comment (`wake`). A
/// CEO's draft stays closed under a comment that did not ask to reopen it
/// (none: the comment is a note); asked, that is refused.
pub(crate) async fn for_comment(
    tx: &mut Tx,
    actor: &Actor,
    before: &Issue,
    asked: bool,
) -> Result<Option<(Issue, Reopened)>> {
    check(actor, before)?;
    let creator = before.created_by_agent_id.as_deref();
    if ceo_gate_closed(tx, &before.company_id, creator).await? {
        return match asked {
            true => Err(Error::rule(CEO_GATE)),
            false => Ok(None),
        };
    }
    let reopened = Reopened::of(before);
    let mut after = before.clone();
    after.status = IssueStatus::Todo;
    after.completed_at = None;
    after.cancelled_at = None;
    drop_ended_hold(tx, &mut after).await?;
    crate::issues::table::write(tx, &after, &now()).await?;
    let mut details = json!({
        "identifier": before.identifier,
        "changes": { "status": { "from": before.status, "to": after.status } },
    });
    mark(&mut details, &reopened, "comment");
    activity::record(
        tx,
        actor,
        Entry {
            company_id: &before.company_id,
            action: Action::IssueUpdated,
            entity_type: EntityType::Issue,
            entity_id: &before.id,
            details,
        },
    )
    .await?;
    // A new status is progress: agents waking each other start a new count.
    crate::wakes::loops::reset(tx, &before.id).await?;
    let after = crate::issues::table::load_in(tx, &before.id).await?;
    Ok(Some((after, reopened)))
}

/// A reopened task starts without the checkout its last run left behind (no
/// finished run holds open work). A run still live keeps it: it releases
/// what it holds when it ends.
pub(crate) async fn drop_ended_hold(tx: &mut Tx, issue: &mut Issue) -> Result<()> {
    let holders = [&issue.checkout_run_id, &issue.execution_run_id];
    for run in holders.into_iter().flatten() {
        let live: Option<(String,)> = crate::engine::db::query_as(
            "SELECT status FROM heartbeat_runs WHERE id = $1 AND status IN ('queued', 'running')",
        )
        .bind(run)
        .fetch_optional(tx.conn())
        .await?;
        if live.is_some() {
            return Ok(());
        }
    }
    issue.checkout_run_id = None;
    issue.execution_run_id = None;
    issue.execution_locked_at = None;
    Ok(())
}

/// The assignee's one wake for a reopen, with upstream's reasons. An agent
/// that reopened its own task is not woken (its run is already at work).
pub(crate) async fn wake(
    tx: &mut Tx,
    actor: &Actor,
    issue: &Issue,
    reopened: &Reopened,
    comment_id: Option<&str>,
) -> Result<()> {
    let Some(agent) = &issue.assignee_agent_id else {
        return Ok(());
    };
    let (reason, mutation) = match comment_id {
        Some(_) => ("issue_reopened_via_comment", "comment"),
        None => ("issue_status_changed", "update"),
    };
    let mut payload = json!({
        "issueId": issue.id,
        "identifier": issue.identifier,
        "reopenedFrom": reopened.from,
        "mutation": mutation,
    });
    if let Some(comment) = comment_id {
        payload["commentId"] = json!(comment);
    }
    crate::wakes::enqueue::enqueue_in(
        tx,
        actor,
        crate::wakes::queue::Wake {
            agent_id: agent.clone(),
            source: WakeSource::Automation,
            trigger_detail: Some("system".to_string()),
            reason: Some(reason.to_string()),
            payload: Some(payload),
            issue_id: Some(issue.id.clone()),
            idempotency_key: Some(reopened.key.clone()),
        },
    )
    .await?;
    Ok(())
}

/// An agent a comment would have woken, and why it was not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotWoken {
    pub agent_id: String,
    pub agent_name: String,
    /// `issue_closed`: the task is done or cancelled and stays so.
    pub reason: &'static str,
    /// The same, for a person.
    pub message: String,
}

/// Instead of a run that would find nothing to do (a closed task cannot be
/// checked out) and still say "succeeded", each agent a comment on a task
/// that stays closed would have woken is named here with the reason.
pub(crate) async fn not_woken(
    tx: &mut Tx,
    issue: &Issue,
    agents: &[&str],
) -> Result<Vec<NotWoken>> {
    let mut out = Vec::new();
    for id in agents {
        let name: Option<(String,)> =
            crate::engine::db::query_as("SELECT name FROM agents WHERE id = $1")
                .bind(*id)
                .fetch_optional(tx.conn())
                .await?;
        let Some((name,)) = name else { continue };
        out.push(NotWoken {
            agent_id: id.to_string(),
            message: format!(
                "{} is {}, so {name} was not woken. Reopen the task to give {name} more work.",
                issue.identifier,
                issue.status.as_str()
            ),
            agent_name: name,
            reason: "issue_closed",
        });
    }
    Ok(out)
}

/// The status an update moves closed work to without naming one: `reopen:
/// true`, or its comment when that reopens by the rule (`comment_reopens`),
/// with the assignee the update leaves.
pub(crate) fn implied(
    actor: &Actor,
    before: &Issue,
    agent_assignee: bool,
    comment: bool,
    asked: Option<bool>,
) -> Option<IssueStatus> {
    if !comment && asked != Some(true) {
        return None;
    }
    let by = reopener(actor, before);
    paperclip_core::issue::comment_reopens(before.status, by, agent_assignee, asked)
        .then_some(IssueStatus::Todo)
}
