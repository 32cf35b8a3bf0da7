//! A person's own state of a task in their inbox, as upstream keeps it: when
//! they last read it (`issue_read_states`) and whether they archived it from
//! "Mine" (`issue_inbox_archives`). One row per (company, task, user); the
//! user is a board person's id or, for an agent's own inbox, the agent's id.

use std::collections::{HashMap, HashSet};

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use serde::Serialize;
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::{new_id, now, Result, Store};

/// Upstream's read-state row.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadState {
    pub id: String,
    pub company_id: String,
    pub issue_id: String,
    pub user_id: String,
    pub last_read_at: String,
    pub created_at: String,
    pub updated_at: String,
}

/// Upstream's inbox-archive row.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Archive {
    pub id: String,
    pub company_id: String,
    pub issue_id: String,
    pub user_id: String,
    pub archived_by_actor_type: String,
    pub archived_by_agent_id: Option<String>,
    pub archived_by_run_id: Option<String>,
    pub archived_at: String,
    pub created_at: String,
    pub updated_at: String,
}

/// Who archived, when an agent did it for a person.
#[derive(Debug, Clone, Default)]
pub struct ArchivedBy {
    pub agent_id: Option<String>,
    pub run_id: Option<String>,
}

const READ_COLS: &str = "id, company_id, issue_id, user_id, last_read_at, created_at, updated_at";
const ARCHIVE_COLS: &str = "id, company_id, issue_id, user_id, archived_by_actor_type, \
     archived_by_agent_id, archived_by_run_id, archived_at, created_at, updated_at";

fn read_row(r: &crate::engine::db::DbRow) -> Result<ReadState> {
    Ok(ReadState {
        id: r.text("id")?,
        company_id: r.text("company_id")?,
        issue_id: r.text("issue_id")?,
        user_id: r.text("user_id")?,
        last_read_at: r.text("last_read_at")?,
        created_at: r.text("created_at")?,
        updated_at: r.text("updated_at")?,
    })
}

fn archive_row(r: &crate::engine::db::DbRow) -> Result<Archive> {
    Ok(Archive {
        id: r.text("id")?,
        company_id: r.text("company_id")?,
        issue_id: r.text("issue_id")?,
        user_id: r.text("user_id")?,
        archived_by_actor_type: r.text("archived_by_actor_type")?,
        archived_by_agent_id: r.opt_text("archived_by_agent_id")?,
        archived_by_run_id: r.opt_text("archived_by_run_id")?,
        archived_at: r.text("archived_at")?,
        created_at: r.text("created_at")?,
        updated_at: r.text("updated_at")?,
    })
}

/// Marks `issue_id` read by `user_id` now; marking again moves the time on.
pub async fn mark_read(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    issue_id: &str,
    user_id: &str,
) -> Result<ReadState> {
    let ts = now();
    let mut tx = store.begin().await?;
    crate::engine::db::query(
        "INSERT INTO issue_read_states (id, company_id, issue_id, user_id, last_read_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $5, $5) \
         ON CONFLICT (company_id, issue_id, user_id) DO UPDATE \
         SET last_read_at = excluded.last_read_at, updated_at = excluded.updated_at",
    )
    .bind(new_id())
    .bind(company_id)
    .bind(issue_id)
    .bind(user_id)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    let row = crate::engine::db::query(&format!(
        "SELECT {READ_COLS} FROM issue_read_states WHERE company_id = $1 AND issue_id = $2 AND user_id = $3"
    ))
    .bind(company_id)
    .bind(issue_id)
    .bind(user_id)
    .fetch_one(tx.conn())
    .await?;
    let state = read_row(&row)?;
    let details = json!({ "userId": user_id, "lastReadAt": state.last_read_at });
    log(
        &mut tx,
        actor,
        company_id,
        issue_id,
        Action::IssueReadMarked,
        details,
    )
    .await?;
    tx.commit().await?;
    Ok(state)
}

/// Forgets that `user_id` read `issue_id`; whether there was anything to forget.
pub async fn mark_unread(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    issue_id: &str,
    user_id: &str,
) -> Result<bool> {
    let mut tx = store.begin().await?;
    let done = crate::engine::db::query(
        "DELETE FROM issue_read_states WHERE company_id = $1 AND issue_id = $2 AND user_id = $3",
    )
    .bind(company_id)
    .bind(issue_id)
    .bind(user_id)
    .execute(tx.conn())
    .await?;
    let details = json!({ "userId": user_id });
    log(
        &mut tx,
        actor,
        company_id,
        issue_id,
        Action::IssueReadUnmarked,
        details,
    )
    .await?;
    tx.commit().await?;
    Ok(done.rows_affected() > 0)
}

/// Archives `issue_id` from `user_id`'s inbox; archiving again moves the time on.
pub async fn archive(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    issue_id: &str,
    user_id: &str,
    by: &ArchivedBy,
) -> Result<Archive> {
    let ts = now();
    let kind = if by.agent_id.is_some() {
        "agent"
    } else {
        "user"
    };
    let mut tx = store.begin().await?;
    crate::engine::db::query(
        "INSERT INTO issue_inbox_archives (id, company_id, issue_id, user_id, archived_by_actor_type, \
         archived_by_agent_id, archived_by_run_id, archived_at, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $8) \
         ON CONFLICT (company_id, issue_id, user_id) DO UPDATE \
         SET archived_by_actor_type = excluded.archived_by_actor_type, \
         archived_by_agent_id = excluded.archived_by_agent_id, \
         archived_by_run_id = excluded.archived_by_run_id, \
         archived_at = excluded.archived_at, updated_at = excluded.updated_at",
    )
    .bind(new_id())
    .bind(company_id)
    .bind(issue_id)
    .bind(user_id)
    .bind(kind)
    .bind(&by.agent_id)
    .bind(&by.run_id)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    let row = crate::engine::db::query(&format!(
        "SELECT {ARCHIVE_COLS} FROM issue_inbox_archives WHERE company_id = $1 AND issue_id = $2 AND user_id = $3"
    ))
    .bind(company_id)
    .bind(issue_id)
    .bind(user_id)
    .fetch_one(tx.conn())
    .await?;
    let state = archive_row(&row)?;
    let details = json!({ "userId": user_id, "archivedAt": state.archived_at });
    log(
        &mut tx,
        actor,
        company_id,
        issue_id,
        Action::IssueInboxArchived,
        details,
    )
    .await?;
    tx.commit().await?;
    Ok(state)
}

/// Brings `issue_id` back to `user_id`'s inbox; the archive row it removed, if any.
pub async fn unarchive(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    issue_id: &str,
    user_id: &str,
) -> Result<Option<Archive>> {
    let mut tx = store.begin().await?;
    let row = crate::engine::db::query(&format!(
        "SELECT {ARCHIVE_COLS} FROM issue_inbox_archives WHERE company_id = $1 AND issue_id = $2 AND user_id = $3"
    ))
    .bind(company_id)
    .bind(issue_id)
    .bind(user_id)
    .fetch_optional(tx.conn())
    .await?;
    let removed = row.as_ref().map(archive_row).transpose()?;
    crate::engine::db::query(
        "DELETE FROM issue_inbox_archives WHERE company_id = $1 AND issue_id = $2 AND user_id = $3",
    )
    .bind(company_id)
    .bind(issue_id)
    .bind(user_id)
    .execute(tx.conn())
    .await?;
    let details = json!({ "userId": user_id });
    log(
        &mut tx,
        actor,
        company_id,
        issue_id,
        Action::IssueInboxUnarchived,
        details,
    )
    .await?;
    tx.commit().await?;
    Ok(removed)
}

/// `user_id`'s inbox state in a company: when each task was last read, and
/// the tasks archived (with when).
#[derive(Debug, Clone, Default)]
pub struct UserState {
    pub last_read: HashMap<String, String>,
    pub archived: HashMap<String, String>,
}

impl UserState {
    pub fn archived_ids(&self) -> HashSet<&str> {
        self.archived.keys().map(String::as_str).collect()
    }
}

pub async fn for_user(store: &Store, company_id: &str, user_id: &str) -> Result<UserState> {
    let reads = crate::engine::db::query(
        "SELECT issue_id, last_read_at FROM issue_read_states WHERE company_id = $1 AND user_id = $2",
    )
    .bind(company_id)
    .bind(user_id)
    .fetch_all(store.pool())
    .await?;
    let archives = crate::engine::db::query(
        "SELECT issue_id, archived_at FROM issue_inbox_archives WHERE company_id = $1 AND user_id = $2",
    )
    .bind(company_id)
    .bind(user_id)
    .fetch_all(store.pool())
    .await?;
    let mut state = UserState::default();
    for r in &reads {
        state
            .last_read
            .insert(r.text("issue_id")?, r.text("last_read_at")?);
    }
    for r in &archives {
        state
            .archived
            .insert(r.text("issue_id")?, r.text("archived_at")?);
    }
    Ok(state)
}

async fn log(
    tx: &mut crate::Tx,
    actor: &Actor,
    company_id: &str,
    issue_id: &str,
    action: Action,
    details: serde_json::Value,
) -> Result<()> {
    activity::record(
        tx,
        actor,
        Entry {
            company_id,
            action,
            entity_type: EntityType::Issue,
            entity_id: issue_id,
            details,
        },
    )
    .await
}

/// A person's "Mine" inbox: the tasks they created, are assigned or have
/// read, less those they archived (until the task changes again), newest
/// change first, each with whether it is unread and when they last read it.
pub async fn mine(
    store: &Store,
    company_id: &str,
    user_id: &str,
    statuses: Vec<paperclip_core::issue::IssueStatus>,
    created_by_board: bool,
) -> Result<Vec<MineItem>> {
    let filter = crate::issues::Filter {
        statuses,
        limit: 500,
        ..Default::default()
    };
    let page = crate::issues::list(store, company_id, &filter).await?;
    let state = for_user(store, company_id, user_id).await?;
    let mut items: Vec<MineItem> = page
        .issues
        .into_iter()
        .filter_map(|issue| {
            let read = state.last_read.get(&issue.id).cloned();
            // The local board is everyone's "user": what no agent created is its.
            let touched = issue.created_by_user_id.as_deref() == Some(user_id)
                || issue.assignee_user_id.as_deref() == Some(user_id)
                || read.is_some()
                || (created_by_board && issue.created_by_agent_id.is_none());
            let archived = state.archived.get(&issue.id).map(String::as_str);
            if !touched || is_archived(&issue.updated_at, archived) {
                return None;
            }
            let unread = is_unread(&issue.updated_at, read.as_deref());
            Some(MineItem {
                issue,
                unread,
                last_read_at: read,
            })
        })
        .collect();
    items.sort_by(|a, b| b.issue.updated_at.cmp(&a.issue.updated_at));
    Ok(items)
}

pub struct MineItem {
    pub issue: paperclip_core::model::Issue,
    pub unread: bool,
    pub last_read_at: Option<String>,
}

/// Whether a task changed since `user_id` last read it (never read: unread).
/// Times are RFC 3339 in UTC with the same precision, so text order is time order.
pub fn is_unread(updated_at: &str, last_read_at: Option<&str>) -> bool {
    last_read_at.is_none_or(|read| updated_at > read)
}

/// Whether an archived task is back in the inbox: activity after the
/// archive brings it back, as upstream's does.
pub fn is_archived(updated_at: &str, archived_at: Option<&str>) -> bool {
    archived_at.is_some_and(|at| updated_at <= at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_state_compares_times() {
        assert!(is_unread("2026-01-02T00:00:00.000Z", None));
        assert!(is_unread(
            "2026-01-02T00:00:00.000Z",
            Some("2026-01-01T00:00:00.000Z")
        ));
        assert!(!is_unread(
            "2026-01-01T00:00:00.000Z",
            Some("2026-01-01T00:00:00.000Z")
        ));
    }

    #[test]
    fn later_activity_resurfaces_an_archived_task() {
        assert!(!is_archived("2026-01-01T00:00:00.000Z", None));
        assert!(is_archived(
            "2026-01-01T00:00:00.000Z",
            Some("2026-01-01T00:00:00.000Z")
        ));
        assert!(!is_archived(
            "2026-01-02T00:00:00.000Z",
            Some("2026-01-01T00:00:00.000Z")
        ));
    }
}
