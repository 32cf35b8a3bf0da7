//! Issues (tasks): identifiers from an atomic per-company counter, the status
//! transition table, parent/child and blocker graphs, labels, and the atomic
//! checkout that gives one agent exclusive ownership of a task.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use crate::engine::db::Conn;
use paperclip_core::issue::{parse_identifier, IssueStatus};
use paperclip_core::issue_attention::{
    review_attention, Blocker, BlockerAttention, ReviewAttention, ReviewFacts,
};
use paperclip_core::model::{Issue, IssueRef, Label};

use crate::engine::row::RowExt;
use crate::engine::sql::placeholders;
use crate::engine::sql::{json_array, json_values, ListOf};
use crate::{now, Error, Result, Store, Tx};

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
     l.color, l.created_at, l.updated_at, l.name AS sort_name, NULL AS sort_number, \
     NULL AS blocker_user, NULL AS blocker_flags \
     FROM issue_labels il JOIN issues o ON o.id = il.issue_id JOIN labels l ON l.id = il.label_id \
     WHERE {owner} \
     UNION ALL SELECT 1, b.issue_id, i.id, i.identifier, i.title, i.status, NULL, NULL, NULL, \
     i.issue_number, i.assignee_user_id, \
     CASE WHEN i.execution_run_id IS NOT NULL THEN 'l' ELSE '' END || \
     CASE WHEN i.parent_id = o.id THEN 'c' ELSE '' END FROM issue_blockers b JOIN issues o ON o.id = b.issue_id \
     JOIN issues i ON i.id = b.blocked_by_issue_id WHERE {owner} \
     UNION ALL SELECT 2, b.blocked_by_issue_id, i.id, i.identifier, i.title, i.status, NULL, NULL, \
     NULL, i.issue_number, NULL, NULL FROM issue_blockers b JOIN issues o ON o.id = b.blocked_by_issue_id \
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
    let mut blockers: HashMap<usize, Vec<Blocker>> = HashMap::new();
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
            Relation::BlockedBy(r, facts) => {
                issue.blocked_by.push(r);
                blockers.entry(at).or_default().push(facts);
            }
            Relation::Blocks(r) => issue.blocks.push(r),
        }
    }
    for (at, facts) in blockers {
        issues[at].blocker_attention = blocker_attention(&issues[at], &facts);
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
                // The blocker's facts for the attention rules (columns 10, 11).
                let flags = row.opt_text(11)?.unwrap_or_default();
                let facts = Blocker {
                    id: r.id.clone(),
                    identifier: r.identifier.clone(),
                    title: r.title.clone(),
                    status: r.status,
                    has_user: row.opt_text(10)?.is_some(),
                    live: flags.contains('l'),
                    child: flags.contains('c'),
                };
                Relation::BlockedBy(r, facts)
            } else {
                Relation::Blocks(r)
            }
        }
    };
    Ok((owner, relation))
}

enum Relation {
    Label(Label),
    BlockedBy(IssueRef, Blocker),
    Blocks(IssueRef),
}

/// The bare columns needed for rule checks, without relations.
pub(crate) struct IssueRow {
    pub(crate) id: String,
    pub(crate) status: IssueStatus,
    pub request_depth: i64,
    pub(crate) assignee_agent_id: Option<String>,
    pub(crate) checkout_run_id: Option<String>,
    pub(crate) execution_run_id: Option<String>,
}

pub(crate) async fn get_row(tx: &mut Tx, id: &str) -> Result<IssueRow> {
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
     created_at, updated_at, status_version, execution_policy, execution_state, \
     monitor_next_check_at, monitor_wake_requested_at, monitor_last_triggered_at, \
     monitor_attempt_count, monitor_notes, monitor_scheduled_by, responsible_user_id, \
     conversation_agent_id, conversation_user_id, conversation_state, \
     conversation_session_generation, conversation_boundary_comment_id";
const COLUMN_COUNT: usize = 41;

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
        execution_policy: row.opt_json(27)?,
        execution_state: row.opt_json(28)?,
        monitor_next_check_at: row.opt_text(29)?,
        monitor_wake_requested_at: row.opt_text(30)?,
        monitor_last_triggered_at: row.opt_text(31)?,
        monitor_attempt_count: row.int(32)?,
        monitor_notes: row.opt_text(33)?,
        monitor_scheduled_by: row.opt_text(34)?,
        responsible_user_id: row.opt_text(35)?,
        conversation_agent_id: row.opt_text(36)?,
        conversation_user_id: row.opt_text(37)?,
        conversation_state: row.opt_stored(38)?,
        conversation_session_generation: row.int(39)?,
        conversation_boundary_comment_id: row.opt_text(40)?,
        work_mode: STANDARD_WORK.to_string(),
        source_trust: None,
        labels: Vec::new(),
        label_ids: Vec::new(),
        blocked_by: Vec::new(),
        blocks: Vec::new(),
        blocker_attention: BlockerAttention::none(),
        review_attention: ReviewAttention::none(),
    })
    .map(|mut issue| {
        issue.blocker_attention = blocker_attention(&issue, &[]);
        if issue.status == IssueStatus::InReview {
            issue.review_attention = review_attention(&review_facts(&issue), &now());
        }
        issue
    })
}

fn blocker_attention(issue: &Issue, blockers: &[Blocker]) -> BlockerAttention {
    let (id, identifier, title) = (&issue.id, &issue.identifier, &issue.title);
    paperclip_core::issue_attention::blocker_attention(
        id,
        identifier,
        title,
        issue.status,
        blockers,
    )
}

fn review_facts(issue: &Issue) -> ReviewFacts<'_> {
    ReviewFacts {
        status: issue.status,
        assignee_user_id: issue.assignee_user_id.as_deref(),
        assignee_agent_id: issue.assignee_agent_id.as_deref(),
        execution_run_id: issue.execution_run_id.as_deref(),
        execution_locked_at: issue.execution_locked_at.as_deref(),
        monitor_next_check_at: issue.monitor_next_check_at.as_deref(),
        updated_at: &issue.updated_at,
    }
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
