//! Issues (tasks): identifiers from an atomic per-company counter, the status
//! transition table, parent/child and blocker graphs, labels, and the atomic
//! checkout that gives one agent exclusive ownership of a task.


use paperclip_core::activity::{Action, EntityType};
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use crate::engine::db::Conn;
use paperclip_core::actor::Actor;
use paperclip_core::agent::AgentStatus;
use paperclip_core::input::{Checkout, IssuePatch};
use paperclip_core::issue::{parse_identifier, transition_effects, IssueStatus};
use paperclip_core::model::{Comment, Issue, IssueRef, Label};
use serde_json::{json, Map, Value};

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::engine::sql::{json_array, json_values, ListOf};
use crate::engine::sql::diff;
use crate::engine::sql::placeholders;
use crate::{now, Error, Result, Store, Tx};

/// A newly assigned agent is woken, in the assigning transaction, unless the
/// work is already over or the agent assigned itself.
pub(crate) async fn wake_assignee(tx: &mut Tx, actor: &Actor, issue: &Issue) -> Result<()> {
    let Some(agent) = &issue.assignee_agent_id else {
        return Ok(());
    };
    let status = issue.status;
    if status.is_terminal() || actor.agent_id() == Some(agent.as_str()) {
        return Ok(());
    }
    crate::wakes::enqueue_in(
        tx,
        actor,
        crate::wakes::enqueue::Wake {
            agent_id: agent.clone(),
            source: paperclip_core::heartbeat::WakeSource::Assignment,
            trigger_detail: Some("system".to_string()),
            reason: Some("issue_assigned".to_string()),
            payload: Some(json!({ "issueId": issue.id, "identifier": issue.identifier })),
            issue_id: Some(issue.id.clone()),
            idempotency_key: None,
        },
    )
    .await?;
    Ok(())
}

/// Looks an issue up by UUID or by identifier (`ACM-12`).
pub async fn get(store: &Store, id_or_identifier: &str) -> Result<Issue> {
    let mut conn = store.pool().acquire().await?;
    load(&mut conn, id_or_identifier).await
}

pub(crate) async fn load_in(tx: &mut Tx, id_or_identifier: &str) -> Result<Issue> {
    load(tx.conn(), id_or_identifier).await
}

/// The issue row plus whether it has any labels, blockers or blocked issues,
/// so an issue without relations is loaded in one statement.
/// Also whether it has documents, so the detail answer reads them only then
/// (one index probe here instead of a second query for most tasks).
static LOAD_BY_ID: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {COLUMNS}, {HAS_RELATIONS}, {HAS_DOCUMENTS} FROM issues WHERE id = $1")
});
static LOAD_BY_IDENTIFIER: LazyLock<String> = LazyLock::new(|| {
    format!("SELECT {COLUMNS}, {HAS_RELATIONS}, {HAS_DOCUMENTS} FROM issues WHERE identifier = $1")
});
const HAS_DOCUMENTS: &str = "CAST(CASE WHEN EXISTS (SELECT 1 FROM issue_documents d \
     WHERE d.issue_id = issues.id) THEN 1 ELSE 0 END AS BIGINT) AS has_documents";
/// Probes as scalar subqueries, not `EXISTS`: Postgres turned each `EXISTS`
/// of a list of 50 into a hashed read of the whole blockers table (15 ms a
/// board column at 15,000 blockers, against 1 ms for the probes).
pub(crate) const HAS_RELATIONS: &str =
    "CAST(CASE WHEN (SELECT 1 FROM issue_labels r WHERE r.issue_id = issues.id LIMIT 1) IS NOT NULL \
     OR (SELECT 1 FROM issue_blockers r WHERE r.issue_id = issues.id LIMIT 1) IS NOT NULL \
     OR (SELECT 1 FROM issue_blockers r WHERE r.blocked_by_issue_id = issues.id LIMIT 1) IS NOT NULL \
     THEN 1 ELSE 0 END AS BIGINT) AS has_relations";

async fn load(conn: &mut Conn, id_or_identifier: &str) -> Result<Issue> {
    Ok(load_flagged(conn, id_or_identifier).await?.0)
}

/// An issue and whether it has documents (`GET /api/issues/{id}` embeds them).
pub async fn get_with_documents_flag(
    store: &Store,
    id_or_identifier: &str,
) -> Result<(Issue, bool)> {
    let mut conn = store.pool().acquire().await?;
    load_flagged(&mut conn, id_or_identifier).await
}

async fn load_flagged(conn: &mut Conn, id_or_identifier: &str) -> Result<(Issue, bool)> {
    let row = match parse_identifier(id_or_identifier) {
        Some(_) => {
            crate::engine::db::query(LOAD_BY_IDENTIFIER.as_str())
                .bind(id_or_identifier.to_ascii_uppercase())
                .fetch_optional(&mut *conn)
                .await?
        }
        None => {
            crate::engine::db::query(LOAD_BY_ID.as_str())
                .bind(id_or_identifier)
                .fetch_optional(&mut *conn)
                .await?
        }
    }
    .ok_or_else(|| Error::not_found("Issue"))?;
    let mut issue = map(&row)?;
    if row.flag(COLUMN_COUNT)? {
        attach_relations(conn, std::slice::from_mut(&mut issue)).await?;
    }
    Ok((issue, row.flag(COLUMN_COUNT + 1)?))
}

pub struct Updated {
    pub issue: Issue,
    pub comment: Option<Comment>,
    pub changes: Map<String, Value>,
}

pub async fn update(store: &Store, actor: &Actor, id: &str, patch: IssuePatch) -> Result<Updated> {
    let mut tx = store.begin().await?;
    tx.lock_row(crate::Locked::Issue, id).await?;
    let before = load_in(&mut tx, id).await?;
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
    if let Some(status) = patch.status {
        let from = before.status;
        if !from.can_transition_to(status) {
            return Err(Error::rule(format!(
                "Cannot transition issue from {} to {}",
                from.as_str(),
                status.as_str()
            )));
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
        activity::record(
            &mut tx,
            actor,
            Entry {
                company_id: &company_id,
                action: Action::IssueUpdated,
                entity_type: EntityType::Issue,
                entity_id: &id,
                details: json!({ "identifier": before.identifier, "changes": changes }),
            },
        )
        .await?;
    }
    if changes.contains_key("status") {
        // Progress: agents waking each other on the task start a new count.
        crate::wakes::loops::reset(&mut tx, &id).await?;
    }
    if changes.contains_key("assigneeAgentId") {
        wake_assignee(&mut tx, actor, &after).await?;
    }
    let comment = match patch.comment {
        Some(body) => {
            Some(crate::thread::comments::insert(&mut tx, actor, &after, body, None).await?)
        }
        None => None,
    };
    let issue = load_in(&mut tx, &id).await?;
    tx.commit().await?;
    Ok(Updated {
        issue,
        comment,
        changes,
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

const CEO_GATE: &str = "The CEO's strategy is not approved yet: tasks the CEO creates stay drafts until the board approves it";

pub(crate) fn is_active(status: IssueStatus) -> bool {
    matches!(status, IssueStatus::Todo | IssueStatus::InProgress)
}

/// Whether `creator` is the company's CEO and its strategy still awaits approval.
pub(crate) async fn ceo_gate_closed(
    tx: &mut Tx,
    company_id: &str,
    creator: Option<&str>,
) -> Result<bool> {
    let Some(creator) = creator else {
        return Ok(false);
    };
    let role: Option<(String,)> =
        crate::engine::db::query_as("SELECT role FROM agents WHERE id = $1")
            .bind(creator)
            .fetch_optional(tx.conn())
            .await?;
    if role.is_none_or(|(r,)| r != "ceo") {
        return Ok(false);
    }
    Ok(!crate::approvals::strategy_approved(tx, company_id).await?)
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

/// Work in progress has an owner: an issue cannot be `in_progress` unassigned.
pub(crate) fn check_assignable(
    status: IssueStatus,
    agent: Option<&str>,
    user: Option<&str>,
) -> Result<()> {
    if status == IssueStatus::InProgress && agent.is_none() && user.is_none() {
        return Err(Error::rule("An issue in progress needs an assignee"));
    }
    Ok(())
}

pub(crate) async fn set_labels(
    tx: &mut Tx,
    company_id: &str,
    issue_id: &str,
    label_ids: &[String],
) -> Result<()> {
    let unique: HashSet<&String> = label_ids.iter().collect();
    if !unique.is_empty() {
        let sql = format!(
            "SELECT COUNT(*) AS n FROM labels WHERE company_id = $1 AND id IN ({})",
            placeholders(2, unique.len())
        );
        let mut query = crate::engine::db::query(&sql).bind(company_id);
        for id in &unique {
            query = query.bind(id.as_str());
        }
        let found = query.fetch_one(tx.conn()).await?.int("n")?;
        if found != unique.len() as i64 {
            return Err(Error::not_found("Label"));
        }
    }
    crate::engine::db::query("DELETE FROM issue_labels WHERE issue_id = $1")
        .bind(issue_id)
        .execute(tx.conn())
        .await?;
    for label in unique {
        // With the task's number (migration 24), which a trigger would
        // otherwise look up.
        crate::engine::db::query(
            "INSERT INTO issue_labels (issue_id, label_id, task_number) \
             SELECT id, $1, issue_number FROM issues WHERE id = $2",
        )
        .bind(label.as_str())
        .bind(issue_id)
        .execute(tx.conn())
        .await?;
    }
    Ok(())
}

/// Replaces the issue's blockers. Each must be another issue of the company,
/// and the blocker graph must stay acyclic.
pub(crate) async fn set_blockers(
    tx: &mut Tx,
    company_id: &str,
    issue_id: &str,
    blockers: &[String],
) -> Result<()> {
    let unique: HashSet<&String> = blockers.iter().collect();
    let ids: Vec<&str> = unique.iter().map(|b| b.as_str()).collect();
    crate::issues::graph::check_blockers(tx, company_id, issue_id, &ids).await?;
    crate::engine::db::query("DELETE FROM issue_blockers WHERE issue_id = $1")
        .bind(issue_id)
        .execute(tx.conn())
        .await?;
    let ts = now();
    for blocker in unique {
        crate::engine::db::query("INSERT INTO issue_blockers (issue_id, blocked_by_issue_id, created_at) VALUES ($1, $2, $3)")
            .bind(issue_id)
            .bind(blocker.as_str())
            .bind(&ts)
            .execute(tx.conn())
            .await?;
    }
    Ok(())
}

/// Labels (kind 0), blockers (kind 1) and blocked issues (kind 2) of the
/// owners matched by each branch's `{owner}` condition, in one statement:
/// labels by name, issues by number.
const RELATIONS: &str = "SELECT 0 AS kind, il.issue_id AS owner_id, l.id, CAST(l.company_id AS TEXT) AS company_id, l.name, \
     l.color, l.created_at, l.updated_at, l.name AS sort_name, NULL AS sort_number \
     FROM issue_labels il JOIN issues o ON o.id = il.issue_id JOIN labels l ON l.id = il.label_id \
     WHERE {owner} \
     UNION ALL SELECT 1, b.issue_id, i.id, i.identifier, i.title, i.status, NULL, NULL, NULL, \
     i.issue_number FROM issue_blockers b JOIN issues o ON o.id = b.issue_id \
     JOIN issues i ON i.id = b.blocked_by_issue_id WHERE {owner} \
     UNION ALL SELECT 2, b.blocked_by_issue_id, i.id, i.identifier, i.title, i.status, NULL, NULL, \
     NULL, i.issue_number FROM issue_blockers b JOIN issues o ON o.id = b.blocked_by_issue_id \
     JOIN issues i ON i.id = b.issue_id WHERE {owner} \
     ORDER BY kind, sort_name, sort_number";

/// Fills labels, blockers and blocked issues for a page of issues with one
/// query, whatever the page size: the page's ids go in as one JSON array.
pub(crate) async fn attach_relations(conn: &mut Conn, issues: &mut [Issue]) -> Result<()> {
    attach_relations_where(conn, issues, |_| true).await
}

/// [`attach_relations`] for the issues at the places `wanted` picks.
pub(crate) async fn attach_relations_where(
    conn: &mut Conn,
    issues: &mut [Issue],
    wanted: impl Fn(usize) -> bool,
) -> Result<()> {
    let ids: Vec<&str> = (0..issues.len())
        .filter(|&at| wanted(at))
        .map(|at| issues[at].id.as_str())
        .collect();
    if ids.is_empty() {
        return Ok(());
    }
    let owner = format!("o.id IN {}", json_values(conn.backend(), "$1", ListOf::Ids));
    let rows = crate::engine::db::query(&RELATIONS.replace("{owner}", &owner))
        .bind(json_array(ids.into_iter()))
        .fetch_map(&mut *conn, relation, relation)
        .await?;
    if rows.is_empty() {
        return Ok(());
    }
    let index: HashMap<&str, usize> = issues
        .iter()
        .enumerate()
        .map(|(i, issue)| (issue.id.as_str(), i))
        .collect();
    let mut found: Vec<(usize, Relation)> = Vec::with_capacity(rows.len());
    for (owner, relation) in rows {
        if let Some(&at) = index.get(owner.as_str()) {
            found.push((at, relation));
        }
    }
    drop(index);
    for (at, relation) in found {
        let issue = &mut issues[at];
        match relation {
            Relation::Label(label) => {
                issue.label_ids.push(label.id.clone());
                issue.labels.push(label);
            }
            Relation::BlockedBy(r) => issue.blocked_by.push(r),
            Relation::Blocks(r) => issue.blocks.push(r),
        }
    }
    Ok(())
}

/// A row of [`RELATIONS`]: the issue it belongs to and what it is.
fn relation<R: RowExt>(row: &R) -> Result<(String, Relation)> {
    let owner = row.text(1)?;
    let relation = match row.int(0)? {
        0 => Relation::Label(Label {
            id: row.text(2)?,
            company_id: row.text(3)?,
            name: row.text(4)?,
            color: row.text(5)?,
            created_at: row.text(6)?,
            updated_at: row.text(7)?,
        }),
        kind => {
            let r = IssueRef {
                id: row.text(2)?,
                identifier: row.text(3)?,
                title: row.text(4)?,
                status: row.stored(5)?,
            };
            if kind == 1 {
                Relation::BlockedBy(r)
            } else {
                Relation::Blocks(r)
            }
        }
    };
    Ok((owner, relation))
}

enum Relation {
    Label(Label),
    BlockedBy(IssueRef),
    Blocks(IssueRef),
}

/// The bare columns needed for rule checks, without relations.
pub(crate) struct IssueRow {
    id: String,
    status: IssueStatus,
    pub request_depth: i64,
    assignee_agent_id: Option<String>,
    checkout_run_id: Option<String>,
    execution_run_id: Option<String>,
}

async fn get_row(tx: &mut Tx, id: &str) -> Result<IssueRow> {
    let row = crate::engine::db::query(
        "SELECT id, company_id, status, request_depth, assignee_agent_id, \
         checkout_run_id, execution_run_id FROM issues WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(tx.conn())
    .await?
    .ok_or_else(|| Error::not_found("Issue"))?;
    Ok(IssueRow {
        id: row.text("id")?,
        status: row.stored("status")?,
        request_depth: row.int("request_depth")?,
        assignee_agent_id: row.opt_text("assignee_agent_id")?,
        checkout_run_id: row.opt_text("checkout_run_id")?,
        execution_run_id: row.opt_text("execution_run_id")?,
    })
}

pub(crate) async fn get_row_in_company(
    tx: &mut Tx,
    company_id: &str,
    id: &str,
) -> Result<IssueRow> {
    let row: Option<(String,)> =
        crate::engine::db::query_as("SELECT company_id FROM issues WHERE id = $1")
            .bind(id)
            .fetch_optional(tx.conn())
            .await?;
    match row {
        Some((owner,)) if owner == company_id => get_row(tx, id).await,
        _ => Err(Error::not_found("Issue")),
    }
}

pub(crate) async fn write(tx: &mut Tx, i: &Issue, ts: &str) -> Result<()> {
    crate::engine::db::query(
        "UPDATE issues SET project_id = $2, goal_id = $3, parent_id = $4, title = $5, \
         description = $6, status = $7, priority = $8, assignee_agent_id = $9, \
         assignee_user_id = $10, checkout_run_id = $11, execution_run_id = $12, \
         execution_locked_at = $13, request_depth = $14, billing_code = $15, started_at = $16, \
         completed_at = $17, cancelled_at = $18, updated_at = $19 WHERE id = $1",
    )
    .bind(&i.id)
    .bind(i.project_id.as_deref())
    .bind(i.goal_id.as_deref())
    .bind(i.parent_id.as_deref())
    .bind(&i.title)
    .bind(i.description.as_deref())
    .bind(i.status)
    .bind(i.priority)
    .bind(i.assignee_agent_id.as_deref())
    .bind(i.assignee_user_id.as_deref())
    .bind(i.checkout_run_id.as_deref())
    .bind(i.execution_run_id.as_deref())
    .bind(i.execution_locked_at.as_deref())
    .bind(i.request_depth)
    .bind(i.billing_code.as_deref())
    .bind(i.started_at.as_deref())
    .bind(i.completed_at.as_deref())
    .bind(i.cancelled_at.as_deref())
    .bind(ts)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Upstream's `workMode` of ordinary work; it has others (e.g. planning
/// only) that we do not, so every task of ours is standard work.
const STANDARD_WORK: &str = "standard";

/// The columns `map` reads, by position.
pub(crate) const COLUMNS: &str =
    "id, company_id, project_id, goal_id, parent_id, title, description, \
     status, priority, assignee_agent_id, assignee_user_id, checkout_run_id, execution_run_id, \
     execution_locked_at, created_by_agent_id, created_by_user_id, issue_number, identifier, \
     origin_kind, request_depth, billing_code, started_at, completed_at, cancelled_at, \
     created_at, updated_at, status_version";
const COLUMN_COUNT: usize = 27;

/// An issue from a row of [`COLUMNS`] and [`HAS_RELATIONS`], with that flag.
pub(crate) fn flagged<R: RowExt>(row: &R) -> Result<(Issue, bool)> {
    Ok((map(row)?, row.flag(COLUMN_COUNT)?))
}

/// The issues of [`flagged`] rows, with the relations of those flagged.
pub(crate) async fn attach_flagged(
    conn: &mut Conn,
    rows: Vec<(Issue, bool)>,
) -> Result<Vec<Issue>> {
    let (mut issues, flags): (Vec<Issue>, Vec<bool>) = rows.into_iter().unzip();
    attach_relations_where(conn, &mut issues, |at| flags[at]).await?;
    Ok(issues)
}

/// An issue from a row whose first columns are [`COLUMNS`].
pub(crate) fn map<R: RowExt>(row: &R) -> Result<Issue> {
    Ok(Issue {
        id: row.text(0)?,
        company_id: row.text(1)?,
        project_id: row.opt_text(2)?,
        goal_id: row.opt_text(3)?,
        parent_id: row.opt_text(4)?,
        title: row.text(5)?,
        description: row.opt_text(6)?,
        status: row.stored(7)?,
        priority: row.stored(8)?,
        assignee_agent_id: row.opt_text(9)?,
        assignee_user_id: row.opt_text(10)?,
        checkout_run_id: row.opt_text(11)?,
        execution_run_id: row.opt_text(12)?,
        execution_locked_at: row.opt_text(13)?,
        created_by_agent_id: row.opt_text(14)?,
        created_by_user_id: row.opt_text(15)?,
        issue_number: row.int(16)?,
        identifier: row.text(17)?,
        origin_kind: row.text(18)?,
        request_depth: row.int(19)?,
        billing_code: row.opt_text(20)?,
        started_at: row.opt_text(21)?,
        completed_at: row.opt_text(22)?,
        cancelled_at: row.opt_text(23)?,
        created_at: row.text(24)?,
        updated_at: row.text(25)?,
        status_version: row.int(26)?,
        work_mode: STANDARD_WORK.to_string(),
        labels: Vec::new(),
        label_ids: Vec::new(),
        blocked_by: Vec::new(),
        blocks: Vec::new(),
    })
}

/// Whether the company exists (without loading it).
pub(crate) async fn company_exists(tx: &mut Tx, company_id: &str) -> Result<()> {
    crate::engine::db::query("SELECT 1 FROM companies WHERE id = $1")
        .bind(company_id)
        .fetch_optional(tx.conn())
        .await?
        .map(|_| ())
        .ok_or_else(|| Error::not_found("Company"))
}
