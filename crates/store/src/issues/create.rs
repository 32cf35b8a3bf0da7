//! Creating a task: checks, the next number of the company's counter, the
//! row, its relations, its activity entry and the assignee's wakeup, in one
//! transaction.
//!
//! Concurrent creates in one company queue on the company row from the
//! counter update to the commit, so what runs in between is what limits
//! them. On Postgres the counter, the row and the activity entry are one
//! statement: the row lock is then held for one round trip and the commit,
//! where it was three and the commit.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::input::NewIssue;
use paperclip_core::issue::{transition_effects, IssuePriority, IssueStatus};
use paperclip_core::model::Issue;
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::db::Query;
use crate::engine::row::RowExt;
use crate::issues::edit::{resolve_refs, Refs};
use crate::issues::gate::{ceo_gate_closed, is_active};
use crate::issues::table::{
    attach_relations, check_assignable, company_exists, get_row_in_company, map, set_blockers,
    set_labels, COLUMNS,
};
use crate::issues::wake::wake_assignee;
use crate::{new_id, now, Backend, Error, Result, Store, Tx};

pub async fn create(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    input: NewIssue,
) -> Result<Issue> {
    let title = input.title.trim().to_string();
    if title.is_empty() {
        return Err(Error::invalid("title", "Title must not be empty"));
    }
    let status = input.status.unwrap_or(IssueStatus::Backlog);
    // Checks run before the company row is locked by the counter update below
    // (and a missing company is reported first); without any, that update is
    // the existence check.
    let checks = actor.agent_id().is_some()
        || input.project_id.is_some()
        || input.goal_id.is_some()
        || input.assignee_agent_id.is_some()
        || input.parent_id.is_some()
        || check_assignable(
            status,
            input.assignee_agent_id.as_deref(),
            input.assignee_user_id.as_deref(),
        )
        .is_err();
    // A new task has no labels or blockers to replace: an empty list is none.
    let labels = input.label_ids.as_ref().filter(|ids| !ids.is_empty());
    let blockers = input
        .blocked_by_issue_ids
        .as_ref()
        .filter(|ids| !ids.is_empty());
    // With no checks and no relations, a create is the one statement below
    // on Postgres.
    let mut tx = match !checks && labels.is_none() && blockers.is_none() {
        true => store.begin_one_statement().await?,
        false => store.begin().await?,
    };
    let issue = create_in(&mut tx, store.backend(), actor, company_id, &input, checks).await?;
    tx.commit().await?;
    Ok(issue)
}

/// [`create`] inside a transaction the caller owns (a routine's dispatch
/// makes its run, the task and the wake in one). `checks`: whether the
/// references must be looked up first (see [`create`]).
pub(crate) async fn create_in(
    tx: &mut Tx,
    backend: Backend,
    actor: &Actor,
    company_id: &str,
    input: &NewIssue,
    checks: bool,
) -> Result<Issue> {
    let agent_made = actor.agent_id().is_some();
    create_in_placed(tx, backend, actor, company_id, input, checks, agent_made).await
}

/// [`create_in`], saying whether an agent made the task (its tree depth is
/// then limited: `core::task_tree`), as when a person accepts an agent's
/// suggested tasks.
pub(crate) async fn create_in_placed(
    tx: &mut Tx,
    backend: Backend,
    actor: &Actor,
    company_id: &str,
    input: &NewIssue,
    checks: bool,
    agent_made: bool,
) -> Result<Issue> {
    let placed;
    let mut requested_parent = None;
    let input = match (agent_made, input.parent_id.as_deref()) {
        (true, Some(parent)) => match agent_parent(tx, company_id, parent).await? {
            Some(moved) => {
                requested_parent = Some(parent.to_string());
                placed = NewIssue {
                    parent_id: moved,
                    ..input.clone()
                };
                &placed
            }
            None => input,
        },
        _ => input,
    };
    let title = input.title.trim().to_string();
    let mut status = input.status.unwrap_or(IssueStatus::Backlog);
    let labels = input.label_ids.as_ref().filter(|ids| !ids.is_empty());
    let blockers = input
        .blocked_by_issue_ids
        .as_ref()
        .filter(|ids| !ids.is_empty());
    if checks {
        company_exists(tx, company_id).await?;
    }
    if ceo_gate_closed(tx, company_id, actor.agent_id()).await? && is_active(status) {
        // Until the board approves the CEO's strategy, the CEO drafts: its
        // tasks wait in the backlog instead of being worked on.
        status = IssueStatus::Backlog;
    }
    let refs = resolve_refs(
        tx,
        company_id,
        Refs {
            project_id: input.project_id.as_deref(),
            goal_id: input.goal_id.as_deref(),
            assignee_agent_id: input.assignee_agent_id.as_deref(),
        },
    )
    .await?;
    let request_depth = match &input.parent_id {
        Some(parent) => {
            let depth = get_row_in_company(tx, company_id, parent)
                .await
                .map_err(|_| Error::not_found("Parent issue"))?
                .request_depth;
            crate::issues::chat_rules::refuse_subtask(tx, parent).await?;
            depth + 1
        }
        None => 0,
    };
    check_assignable(
        status,
        input.assignee_agent_id.as_deref(),
        input.assignee_user_id.as_deref(),
    )?;
    let id = new_id();
    let ts = now();
    let effects = transition_effects(IssueStatus::Backlog, status);
    let row = Row {
        id: &id,
        company_id,
        input,
        goal_id: refs.goal_id.as_deref(),
        title: &title,
        status,
        actor,
        request_depth,
        started_at: effects.set_started_at.then(|| ts.clone()),
        completed_at: effects.set_completed_at.then(|| ts.clone()),
        cancelled_at: effects.set_cancelled_at.then(|| ts.clone()),
        ts: &ts,
    };
    // The identifier is added to the details once the number is taken.
    let entry = || Entry {
        company_id,
        action: Action::IssueCreated,
        entity_type: EntityType::Issue,
        entity_id: &id,
        details: json!({
            "title": title,
            "status": status.as_str(),
            "assigneeAgentId": input.assignee_agent_id,
            "parentId": input.parent_id,
        }),
    };
    let entry = || {
        let mut entry = entry();
        if let Some(requested) = &requested_parent {
            entry.details["parentAdjusted"] = json!(true);
            entry.details["requestedParentId"] = json!(requested);
        }
        entry
    };
    let mut issue = match backend {
        Backend::Sqlite => {
            let issue = insert_numbered(tx, &row).await?;
            let mut entry = entry();
            entry.details["identifier"] = json!(issue.identifier);
            activity::record(tx, actor, entry).await?;
            issue
        }
        Backend::Postgres => {
            // The statement adds the row's identifier to the entry's details.
            let mut logged = activity::entry_row(actor, entry());
            let issue = insert_numbered_logged(tx, &row, &logged).await?;
            logged.details["identifier"] = json!(issue.identifier);
            activity::announce(tx, logged);
            issue
        }
    };
    if let Some(labels) = labels {
        set_labels(tx, company_id, &id, labels).await?;
    }
    if let Some(blockers) = blockers {
        set_blockers(tx, company_id, &id, blockers).await?;
    }
    if labels.is_some() || blockers.is_some() {
        // A new issue blocks nothing yet; labels and blockers are its own.
        attach_relations(tx.conn(), std::slice::from_mut(&mut issue)).await?;
    }
    if let Some(parent) = issue.parent_id.as_deref() {
        crate::issues::tree_holds::join_parent_holds(tx, &issue, parent).await?;
    }
    wake_assignee(tx, actor, &issue).await?;
    Ok(issue)
}

/// Where an agent's child of `parent` goes when the tree would grow past
/// the agent limit: `Some(new parent)` (`None` inside: a root task), or
/// `None` when it stays under `parent`. A missing parent is left to the
/// caller's own check.
async fn agent_parent(
    tx: &mut Tx,
    company_id: &str,
    parent: &str,
) -> Result<Option<Option<String>>> {
    let mut ancestors = Vec::new();
    let mut at = parent.to_string();
    while ancestors.len() < paperclip_core::task_tree::MAX_AGENT_TASK_HIERARCHY_DEPTH {
        let up: Option<(Option<String>,)> = crate::engine::db::query_as(
            "SELECT parent_id FROM issues WHERE id = $1 AND company_id = $2",
        )
        .bind(&at)
        .bind(company_id)
        .fetch_optional(tx.conn())
        .await?;
        match up {
            Some((Some(next),)) => {
                ancestors.push(next.clone());
                at = next;
            }
            _ => break,
        }
    }
    let placed = paperclip_core::task_tree::agent_placement(parent, &ancestors);
    Ok(placed.parent_adjusted.then_some(placed.parent_id))
}

/// A new task's values, bound as `$1`..`$19` by [`Row::bind`].
struct Row<'a> {
    id: &'a str,
    company_id: &'a str,
    input: &'a NewIssue,
    goal_id: Option<&'a str>,
    title: &'a str,
    status: IssueStatus,
    actor: &'a Actor,
    request_depth: i64,
    started_at: Option<String>,
    completed_at: Option<String>,
    cancelled_at: Option<String>,
    ts: &'a str,
}

const INSERT: &str = "INSERT INTO issues (id, company_id, project_id, goal_id, parent_id, title, \
     description, status, priority, assignee_agent_id, assignee_user_id, created_by_agent_id, \
     created_by_user_id, request_depth, billing_code, started_at, completed_at, cancelled_at, \
     created_at, updated_at, responsible_user_id, origin_kind, issue_number, identifier)";

/// The responsible person (upstream's `responsibleUserId`) is the person who
/// created the task, else the parent's responsible person or creator.
const VALUES: &str = "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
     $17, $18, $19, $19, COALESCE($13, (SELECT COALESCE(p.responsible_user_id, \
     p.created_by_user_id) FROM issues p WHERE p.id = $5)), 'manual'";

impl Row<'_> {
    fn bind<'q>(&'q self, query: Query<'q>) -> Query<'q> {
        let input = self.input;
        query
            .bind(self.id)
            .bind(self.company_id)
            .bind(input.project_id.as_deref())
            .bind(self.goal_id)
            .bind(input.parent_id.as_deref())
            .bind(self.title)
            .bind(input.description.as_deref())
            .bind(self.status.as_str())
            .bind(input.priority.unwrap_or(IssuePriority::Medium).as_str())
            .bind(input.assignee_agent_id.as_deref())
            .bind(input.assignee_user_id.as_deref())
            .bind(self.actor.agent_id())
            .bind(self.actor.user_id())
            .bind(self.request_depth)
            .bind(input.billing_code.as_deref())
            .bind(self.started_at.as_deref())
            .bind(self.completed_at.as_deref())
            .bind(self.cancelled_at.as_deref())
            .bind(self.ts)
    }
}

/// The next number, then the row. Concurrent creates serialise on the
/// company row, and a rolled-back create gives its number back.
async fn insert_numbered(tx: &mut Tx, row: &Row<'_>) -> Result<Issue> {
    let counter = crate::engine::db::query(
        "UPDATE companies SET issue_counter = issue_counter + 1 WHERE id = $1 \
         RETURNING issue_counter, issue_prefix",
    )
    .bind(row.company_id)
    // Stepped to the end (not `fetch_optional`): a SQLite statement left
    // part-read is how a sqlx-sqlite worker was seen to panic on a later row.
    .fetch_all(tx.conn())
    .await?
    .pop()
    .ok_or_else(|| Error::not_found("Company"))?;
    let number = counter.int(0)?;
    let identifier = format!("{}-{number}", counter.text(1)?);
    let sql = format!("{INSERT} VALUES ({VALUES}, $20, $21) RETURNING {COLUMNS}");
    let inserted = row
        .bind(crate::engine::db::query(&sql))
        .bind(number)
        .bind(&identifier)
        .fetch_all(tx.conn())
        .await?
        .pop()
        .ok_or_else(|| Error::not_found("Issue"))?;
    map(&inserted)
}

/// [`insert_numbered`] and the activity entry in one Postgres statement.
async fn insert_numbered_logged(
    tx: &mut Tx,
    row: &Row<'_>,
    entry: &paperclip_core::model::ActivityEntry,
) -> Result<Issue> {
    let sql = format!(
        "WITH n AS (UPDATE companies SET issue_counter = issue_counter + 1 WHERE id = $2 \
         RETURNING issue_counter, issue_prefix), \
         i AS ({INSERT} SELECT {VALUES}, n.issue_counter, \
         n.issue_prefix || '-' || n.issue_counter FROM n RETURNING {COLUMNS}), \
         a AS (INSERT INTO activity_log (id, company_id, actor_type, actor_id, action, \
         entity_type, entity_id, agent_id, run_id, details, created_at) \
         SELECT $20, $2, $21, $22, $23, $24, $1, $25, $26, \
         jsonb_build_object('identifier', i.identifier) || $27::jsonb, $28 FROM i) \
         SELECT * FROM i"
    );
    let inserted = row
        .bind(crate::engine::db::query(&sql))
        .bind(&entry.id)
        .bind(&entry.actor_type)
        .bind(&entry.actor_id)
        .bind(&entry.action)
        .bind(&entry.entity_type)
        .bind(entry.agent_id.as_deref())
        .bind(entry.run_id.as_deref())
        .bind(entry.details.to_string())
        .bind(&entry.created_at)
        .fetch_all(tx.conn())
        .await?
        .pop()
        .ok_or_else(|| Error::not_found("Company"))?;
    map(&inserted)
}
