//! Changing a task: the update that may reassign it (and wake the new
//! assignee), move its status (the CEO's strategy gate, the transition
//! table), write a comment with it; checkout and release; delete. Flows
//! over the issues table that reach comments, wakes, approvals and budgets.

use crate::audit::activity::{self, Entry};
use crate::engine::sql::diff;
use crate::engine::sql::placeholders;
use crate::issues::gate::{ceo_gate_closed, is_active, CEO_GATE};
use crate::issues::reopen::{self, Reopened};
use crate::issues::table::*;
use crate::{now, Error, Result, Store, Tx};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::agent::AgentStatus;
use paperclip_core::input::{Checkout, IssuePatch};
use paperclip_core::issue::{transition_effects, transition_refusal, IssueStatus};
use paperclip_core::model::{Comment, Issue};
use serde_json::{json, Map, Value};

pub struct Updated {
    pub issue: Issue,
    pub comment: Option<Comment>,
    pub changes: Map<String, Value>,
    /// Agents the comment did not wake, and why (the task stays closed).
    pub not_woken: Vec<reopen::NotWoken>,
}

pub async fn update(store: &Store, actor: &Actor, id: &str, patch: IssuePatch) -> Result<Updated> {
    let mut tx = store.begin().await?;
    tx.lock_row(crate::Locked::Issue, id).await?;
    let before = load_in(&mut tx, id).await?;
    let was_backlog = before.status == IssueStatus::Backlog;
    let id = before.id.clone();
    let company_id = before.company_id.clone();
    let mut after = before.clone();
    let mut changes = Map::new();
    if let Some(title) = patch.title {
        let title = title.trim().to_string();
        if title.is_empty() {
            return Err(Error::invalid("title", "Title must not be empty"));
        }
        diff(&mut changes, "title", &before.title, &title);
        after.title = title;
    }
    if let Some(description) = patch.description {
        diff(
            &mut changes,
            "description",
            &before.description,
            &description,
        );
        after.description = description;
    }
    if let Some(priority) = patch.priority {
        after.priority = priority;
        diff(&mut changes, "priority", &before.priority, &after.priority);
    }
    if let Some(code) = patch.billing_code {
        diff(&mut changes, "billingCode", &before.billing_code, &code);
        after.billing_code = code;
    }
    resolve_refs(
        &mut tx,
        &company_id,
        Refs {
            project_id: patch.project_id.as_ref().and_then(|p| p.as_deref()),
            goal_id: patch.goal_id.as_ref().and_then(|p| p.as_deref()),
            assignee_agent_id: patch.assignee_agent_id.as_ref().and_then(|p| p.as_deref()),
        },
    )
    .await?;
    if let Some(project) = patch.project_id {
        diff(&mut changes, "projectId", &before.project_id, &project);
        after.project_id = project;
    }
    if let Some(goal) = patch.goal_id {
        diff(&mut changes, "goalId", &before.goal_id, &goal);
        after.goal_id = goal;
    }
    if let Some(agent) = patch.assignee_agent_id {
        diff(
            &mut changes,
            "assigneeAgentId",
            &before.assignee_agent_id,
            &agent,
        );
        after.assignee_agent_id = agent;
    }
    if let Some(user) = patch.assignee_user_id {
        diff(
            &mut changes,
            "assigneeUserId",
            &before.assignee_user_id,
            &user,
        );
        after.assignee_user_id = user;
    }
    if after.assignee_agent_id != before.assignee_agent_id
        || after.assignee_user_id != before.assignee_user_id
    {
        // A new owner starts without the previous owner's checkout.
        after.checkout_run_id = None;
        after.execution_run_id = None;
        after.execution_locked_at = None;
    }
    if let Some(parent) = patch.parent_id {
        after.request_depth = match &parent {
            Some(parent_id) => {
                crate::issues::graph::check_parent(&mut tx, &company_id, &id, parent_id).await?;
                get_row_in_company(&mut tx, &company_id, parent_id)
                    .await?
                    .request_depth
                    + 1
            }
            None => 0,
        };
        diff(&mut changes, "parentId", &before.parent_id, &parent);
        after.parent_id = parent;
    }
    let ts = now();
    let agent_assignee = after.assignee_agent_id.is_some();
    let mut reopened: Option<Reopened> = None;
    let commented = patch.comment.is_some();
    let asked = patch
        .status
        .or_else(|| reopen::implied(actor, &before, agent_assignee, commented, patch.reopen));
    if let Some(status) = asked {
        let from = before.status;
        if !from.can_transition_to(status) {
            return Err(Error::rule(transition_refusal(from, status)));
        }
        if from.is_terminal() && !status.is_terminal() {
            reopen::check(actor, &before)?;
            reopened = Some(Reopened::of(&before));
        }
        if from != status
            && is_active(status)
            && ceo_gate_closed(&mut tx, &company_id, before.created_by_agent_id.as_deref()).await?
        {
            return Err(Error::rule(CEO_GATE));
        }
        let effects = transition_effects(from, status);
        if effects.set_started_at && after.started_at.is_none() {
            after.started_at = Some(ts.clone());
        }
        if effects.set_completed_at {
            after.completed_at = Some(ts.clone());
        }
        if effects.set_cancelled_at {
            after.cancelled_at = Some(ts.clone());
        }
        if effects.clear_closed_at {
            after.completed_at = None;
            after.cancelled_at = None;
            reopen::drop_ended_hold(&mut tx, &mut after).await?;
        }
        after.status = status;
        diff(&mut changes, "status", &before.status, &after.status);
    }
    if changes.contains_key("status")
        || changes.contains_key("assigneeAgentId")
        || changes.contains_key("assigneeUserId")
    {
        let status = after.status;
        check_assignable(
            status,
            after.assignee_agent_id.as_deref(),
            after.assignee_user_id.as_deref(),
        )?;
    }
    crate::issues::chat_rules::check_patch(&before, &after, commented)?;
    if let Some(labels) = &patch.label_ids {
        let mut new: Vec<String> = labels.clone();
        new.sort();
        new.dedup();
        let mut old = before.label_ids.clone();
        old.sort();
        if new != old {
            set_labels(&mut tx, &company_id, &id, &new).await?;
            changes.insert("labelIds".into(), json!({ "from": old, "to": new }));
        }
    }
    if let Some(blockers) = &patch.blocked_by_issue_ids {
        let mut new: Vec<String> = blockers.clone();
        new.sort();
        new.dedup();
        let mut old: Vec<String> = before.blocked_by.iter().map(|b| b.id.clone()).collect();
        old.sort();
        if new != old {
            set_blockers(&mut tx, &company_id, &id, &new).await?;
            changes.insert(
                "blockedByIssueIds".into(),
                json!({ "from": old, "to": new }),
            );
        }
    }
    if !changes.is_empty() {
        write(&mut tx, &after, &ts).await?;
        let mut details = json!({ "identifier": before.identifier, "changes": changes });
        crate::issues::update_details::add(&mut details, &changes, actor);
        if let Some(r) = &reopened {
            let source = if patch.comment.is_some() {
                "comment"
            } else {
                "update"
            };
            reopen::mark(&mut details, r, source);
        }
        activity::record(
            &mut tx,
            actor,
            Entry {
                company_id: &company_id,
                action: Action::IssueUpdated,
                entity_type: EntityType::Issue,
                entity_id: &id,
                details,
            },
        )
        .await?;
    }
    if changes.contains_key("status") {
        // Progress: agents waking each other on the task start a new count.
        crate::wakes::loops::reset(&mut tx, &id).await?;
    }
    if changes.contains_key("assigneeAgentId") {
        crate::issues::wake::wake_assignee(&mut tx, actor, &after).await?;
    }
    // An assignee who keeps the task is woken once for its reopening (a new
    // one was just woken by the assignment), with the comment if any; not
    // for a task put back in the backlog, which waits.
    let reopen_wake = reopened
        .as_ref()
        .filter(|_| is_active(after.status) && !changes.contains_key("assigneeAgentId"));
    if let (Some(r), None) = (reopen_wake, &patch.comment) {
        reopen::wake(&mut tx, actor, &after, r, None).await?;
    }
    // Out of the backlog with the same assignee: the work starts now.
    let started = was_backlog
        && is_active(after.status)
        && changes.contains_key("status")
        && !changes.contains_key("assigneeAgentId");
    if started {
        crate::issues::wake::wake_started(&mut tx, actor, &after).await?;
    }
    let (comment, not_woken) = match patch.comment {
        Some(body) => {
            let posted =
                crate::thread::comments::insert(&mut tx, actor, &after, body, None, reopen_wake)
                    .await?;
            (Some(posted.comment), posted.not_woken)
        }
        None => (None, Vec::new()),
    };
    crate::issues::monitors::after_update(&mut tx, actor, &after, patch.execution_policy).await?;
    let issue = load_in(&mut tx, &id).await?;
    tx.commit().await?;
    Ok(Updated {
        issue,
        comment,
        changes,
        not_woken,
    })
}

pub async fn delete(store: &Store, actor: &Actor, id: &str) -> Result<Issue> {
    let mut tx = store.begin().await?;
    let issue = load_in(&mut tx, id).await?;
    crate::engine::db::query("DELETE FROM issues WHERE id = $1")
        .bind(&issue.id)
        .execute(tx.conn())
        .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action: Action::IssueDeleted,
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({ "identifier": issue.identifier, "title": issue.title }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(issue)
}

/// The atomic checkout: one conditional UPDATE decides the race, so of many
/// concurrent callers exactly one becomes the owner and the rest see 409.
pub async fn checkout(store: &Store, actor: &Actor, id: &str, input: Checkout) -> Result<Issue> {
    let mut tx = store.begin().await?;
    let issue = load_in(&mut tx, id).await?;
    let agent =
        crate::org::agents::get_in_company(&mut tx, &issue.company_id, &input.agent_id).await?;
    let agent_status = agent.status;
    if agent_status == AgentStatus::Paused && agent.pause_reason.as_deref() == Some("budget") {
        return Err(budget_blocked(
            "Agent is paused by a budget hard stop",
            json!({ "agentId": agent.id }),
        ));
    }
    if let Some(project) = &issue.project_id {
        if crate::money::budgets::project_blocked(&mut tx, project, chrono::Utc::now()).await? {
            return Err(budget_blocked(
                "The project's budget is spent for this month",
                json!({ "projectId": project }),
            ));
        }
    }
    if matches!(
        agent_status,
        AgentStatus::Terminated | AgentStatus::PendingApproval | AgentStatus::Paused
    ) {
        return Err(Error::rule(format!(
            "Agent is {} and cannot check out work",
            agent.status
        )));
    }
    if ceo_gate_closed(
        &mut tx,
        &issue.company_id,
        issue.created_by_agent_id.as_deref(),
    )
    .await?
    {
        return Err(Error::rule(CEO_GATE));
    }
    if input.expected_statuses.is_empty() {
        return Err(Error::invalid(
            "expectedStatuses",
            "At least one expected status is required",
        ));
    }
    // A run locks a checkout only while it is live, and holds its row while
    // doing so: the run's end (which releases what it holds) either comes
    // first, or waits for this checkout and then releases it. An ended run
    // (named with an agent's API key, as upstream's clients do) takes the
    // task without a lock: nothing would ever release it.
    let mut lock_run = actor.run_id.as_deref();
    if let Some(run_id) = actor.run_id.as_deref() {
        let live = crate::engine::db::query(
            "UPDATE heartbeat_runs SET updated_at = updated_at WHERE id = $1 AND status IN ('queued', 'running')",
        )
        .bind(run_id)
        .execute(tx.conn())
        .await?
        .rows_affected();
        // An agent key may name a run id of its own choosing (upstream's
        // clients do); only a run of ours that has ended is refused.
        let ended = live == 0
            && crate::engine::db::query_as::<(String,)>(
                "SELECT id FROM heartbeat_runs WHERE id = $1",
            )
            .bind(run_id)
            .fetch_all(tx.conn())
            .await?
            .pop()
            .is_some();
        if ended {
            lock_run = None;
        }
    }
    let ts = now();
    let mut statuses: Vec<&str> = input.expected_statuses.iter().map(|s| s.as_str()).collect();
    statuses.sort_unstable();
    statuses.dedup();
    let sql = format!(
        "UPDATE issues SET assignee_agent_id = $2, assignee_user_id = NULL, status = 'in_progress', \
         started_at = COALESCE(started_at, $3), checkout_run_id = $4, execution_run_id = $4, \
         updated_at = $3 WHERE id = $1 AND (assignee_agent_id IS NULL OR assignee_agent_id = $2) \
         AND status IN ({})",
        placeholders(5, statuses.len())
    );
    let mut query = crate::engine::db::query(&sql)
        .bind(&issue.id)
        .bind(&agent.id)
        .bind(&ts)
        .bind(lock_run);
    for s in &statuses {
        query = query.bind(*s);
    }
    let updated = query.execute(tx.conn()).await?.rows_affected();
    if updated == 0 {
        let current = get_row(&mut tx, &issue.id).await?;
        // The UPDATE took SQLite's write lock even though it changed nothing:
        // roll back before the writer mutex goes, so the next writer does not
        // find the lock still held.
        tx.rollback().await?;
        let own = current.assignee_agent_id.as_deref() == Some(agent.id.as_str())
            && current.status == IssueStatus::InProgress;
        if own {
            // Checking out what you already hold changes nothing.
            return Ok(issue);
        }
        return Err(Error::conflict(
            "Issue checkout conflict",
            Some(json!({
                "issueId": current.id,
                "status": current.status,
                "assigneeAgentId": current.assignee_agent_id,
                "checkoutRunId": current.checkout_run_id,
                "executionRunId": current.execution_run_id,
            })),
        ));
    }
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action: Action::IssueCheckedOut,
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({
                "identifier": issue.identifier,
                "agentId": agent.id,
                "fromStatus": issue.status,
                "runId": actor.run_id,
                // True when an ended run took the task (see above).
                "unlocked": actor.run_id.is_some() && lock_run.is_none(),
            }),
        },
    )
    .await?;
    let issue = load_in(&mut tx, &issue.id).await?;
    tx.commit().await?;
    Ok(issue)
}

/// Gives a checked-out issue back: it returns to `todo` with no owner.
/// Only its assignee agent or the board may release it.
pub async fn release(store: &Store, actor: &Actor, id: &str) -> Result<Issue> {
    let mut tx = store.begin().await?;
    let issue = load_in(&mut tx, id).await?;
    if let Some(agent) = actor.agent_id() {
        if issue.assignee_agent_id.as_deref() != Some(agent) {
            return Err(Error::conflict(
                "Only the assignee can release this issue",
                Some(json!({ "issueId": issue.id, "assigneeAgentId": issue.assignee_agent_id })),
            ));
        }
    }
    if issue.status != IssueStatus::InProgress && issue.checkout_run_id.is_none() {
        return Err(Error::conflict(
            "Issue is not checked out",
            Some(json!({ "issueId": issue.id, "status": issue.status })),
        ));
    }
    let ts = now();
    crate::engine::db::query(
        "UPDATE issues SET status = 'todo', assignee_agent_id = NULL, checkout_run_id = NULL, \
         execution_run_id = NULL, execution_locked_at = NULL, updated_at = $2 WHERE id = $1",
    )
    .bind(&issue.id)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action: Action::IssueReleased,
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({
                "identifier": issue.identifier,
                "previousAssigneeAgentId": issue.assignee_agent_id,
                "previousStatus": issue.status,
            }),
        },
    )
    .await?;
    let issue = load_in(&mut tx, &issue.id).await?;
    tx.commit().await?;
    Ok(issue)
}

/// Board-only: clears the checkout and execution locks (of a crashed run, say)
/// and keeps the assignee and status.
pub async fn force_release(store: &Store, actor: &Actor, id: &str) -> Result<Issue> {
    let mut tx = store.begin().await?;
    let issue = load_in(&mut tx, id).await?;
    crate::engine::db::query(
        "UPDATE issues SET checkout_run_id = NULL, execution_run_id = NULL, \
         execution_locked_at = NULL, updated_at = $2 WHERE id = $1",
    )
    .bind(&issue.id)
    .bind(now())
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &issue.company_id,
            action: Action::IssueAdminForceRelease,
            entity_type: EntityType::Issue,
            entity_id: &issue.id,
            details: json!({
                "identifier": issue.identifier,
                "previousCheckoutRunId": issue.checkout_run_id,
                "previousExecutionRunId": issue.execution_run_id,
                "assigneeAgentId": issue.assignee_agent_id,
            }),
        },
    )
    .await?;
    let issue = load_in(&mut tx, &issue.id).await?;
    tx.commit().await?;
    Ok(issue)
}

fn budget_blocked(message: &str, mut details: Value) -> Error {
    details["code"] = json!("budget_blocked");
    Error::conflict(message, Some(details))
}

pub(crate) struct Refs<'a> {
    pub project_id: Option<&'a str>,
    pub goal_id: Option<&'a str>,
    pub assignee_agent_id: Option<&'a str>,
}

pub(crate) struct Resolved {
    pub goal_id: Option<String>,
}

/// Checks that every referenced entity exists in this company. An id from
/// another company is reported exactly like a missing one.
pub(crate) async fn resolve_refs(
    tx: &mut Tx,
    company_id: &str,
    refs: Refs<'_>,
) -> Result<Resolved> {
    let mut goal_id = refs.goal_id.map(str::to_string);
    if let Some(project) = refs.project_id {
        let project = crate::org::projects::get_in_company(tx, company_id, project).await?;
        // An issue in a project serves the project's goal unless told otherwise.
        if goal_id.is_none() {
            goal_id = project.goal_id;
        }
    }
    if let Some(goal) = refs.goal_id {
        crate::org::goals::get_in_company(tx, company_id, goal).await?;
    }
    if let Some(agent) = refs.assignee_agent_id {
        let agent = crate::org::agents::get_in_company(tx, company_id, agent).await?;
        if agent.status == AgentStatus::Terminated {
            return Err(Error::rule("Cannot assign work to a terminated agent"));
        }
    }
    Ok(Resolved { goal_id })
}
