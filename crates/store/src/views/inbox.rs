//! The board's inbox of failures: failed and timed-out runs a person has not
//! dismissed, one item per agent and task (the newest failure, with how many
//! came before it), leaving out a task whose later run succeeded. And the
//! dismissals themselves (upstream's inbox dismissals: `run:<id>`,
//! `approval:<id>`, ... per person, dismissed or snoozed until a time).

use chrono::{DateTime, SecondsFormat, Utc};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::stored::Stored;
use serde::Serialize;
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::{new_id, now, Error, Result, Store};

/// Failures older than this leave the inbox on their own.
pub const WINDOW_DAYS: i64 = 14;
/// Newest failures looked at per status: bounds the inbox's queries however
/// long a company has been failing.
const SCAN: i64 = 200;

#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dismissal {
    /// Its own id (migration 51), kept when the item is dismissed again.
    pub id: String,
    pub company_id: String,
    /// The person whose inbox it is.
    pub user_id: String,
    pub item_key: String,
    pub kind: Kind,
    /// When it was last dismissed for good; null for a snooze.
    pub dismissed_at: Option<String>,
    pub snoozed_until: Option<String>,
    /// When the item was first dismissed or snoozed.
    pub created_at: String,
    /// Dismissing again rewrites the choice: the last time it was set.
    pub updated_at: String,
}

/// A row's own fields, apart from the choice it holds.
struct Made {
    id: String,
    created_at: String,
    updated_at: String,
}

impl Dismissal {
    fn new(
        company_id: &str,
        user_id: &str,
        item_key: String,
        kind: Kind,
        snoozed_until: Option<String>,
        made: Made,
    ) -> Dismissal {
        let Made {
            id,
            created_at,
            updated_at: at,
        } = made;
        Dismissal {
            id,
            company_id: company_id.to_string(),
            user_id: user_id.to_string(),
            item_key,
            kind,
            dismissed_at: (kind == Kind::Dismiss).then(|| at.clone()),
            snoozed_until,
            created_at,
            updated_at: at,
        }
    }
}

/// How a dismissal hides its item: for good, or until a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Dismiss,
    Snooze,
}

impl Stored for Kind {
    const WHAT: &'static str = "inbox dismissal kind";
    const ALL: &'static [Kind] = &[Kind::Dismiss, Kind::Snooze];
    fn as_str(self) -> &'static str {
        Kind::as_str(self)
    }
}

impl Kind {
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "dismiss" => Some(Kind::Dismiss),
            "snooze" => Some(Kind::Snooze),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Kind::Dismiss => "dismiss",
            Kind::Snooze => "snooze",
        }
    }
}

/// Whether `key` names an inbox item (upstream's pattern: a known kind, a
/// colon, an id).
pub fn valid_key(key: &str) -> bool {
    ["approval:", "join:", "run:", "attention:"]
        .iter()
        .any(|p| key.len() > p.len() && key.starts_with(p))
        && key.len() <= 200
        && !key.chars().any(char::is_control)
}

/// Dismisses (or snoozes until `until`) `item_key` for `user_id`; doing it
/// again replaces the earlier choice.
pub async fn dismiss(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    user_id: &str,
    item_key: &str,
    kind: Kind,
    until: Option<DateTime<Utc>>,
) -> Result<Dismissal> {
    if !valid_key(item_key) {
        return Err(Error::invalid(
            "itemKey",
            "itemKey must be approval:<id>, join:<id>, run:<id> or attention:<id>",
        ));
    }
    let snoozed_until = match (kind, until) {
        (Kind::Snooze, Some(t)) => Some(t.to_rfc3339_opts(SecondsFormat::Millis, true)),
        (Kind::Snooze, None) => {
            return Err(Error::invalid(
                "snoozedUntil",
                "A snooze needs snoozedUntil",
            ))
        }
        (Kind::Dismiss, _) => None,
    };
    let ts = now();
    let mut tx = store.begin().await?;
    // Again for the same item: the same row (its id and createdAt stay, as
    // upstream's upsert keeps them), with the new choice.
    let row = crate::engine::db::query(
        "INSERT INTO inbox_dismissals (id, company_id, user_id, item_key, kind, snoozed_until, \
         created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $7) \
         ON CONFLICT (company_id, user_id, item_key) DO UPDATE \
         SET kind = excluded.kind, snoozed_until = excluded.snoozed_until, updated_at = excluded.updated_at \
         RETURNING id, created_at",
    )
    .bind(new_id())
    .bind(company_id)
    .bind(user_id)
    .bind(item_key)
    .bind(kind.as_str())
    .bind(&snoozed_until)
    .bind(&ts)
    .fetch_one(tx.conn())
    .await?;
    let made = Made {
        id: row.text("id")?,
        created_at: row.text("created_at")?,
        updated_at: ts,
    };
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id,
            action: Action::InboxDismissed,
            entity_type: EntityType::Company,
            entity_id: company_id,
            details: json!({ "itemKey": item_key, "kind": kind.as_str(), "snoozedUntil": snoozed_until }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(Dismissal::new(
        company_id,
        user_id,
        item_key.to_string(),
        kind,
        snoozed_until,
        made,
    ))
}

/// Brings a dismissed item back; `NotFound` when it was not dismissed.
pub async fn restore(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    user_id: &str,
    item_key: &str,
) -> Result<()> {
    let mut tx = store.begin().await?;
    let gone = crate::engine::db::query(
        "DELETE FROM inbox_dismissals WHERE company_id = $1 AND user_id = $2 AND item_key = $3",
    )
    .bind(company_id)
    .bind(user_id)
    .bind(item_key)
    .execute(tx.conn())
    .await?;
    if gone.rows_affected() == 0 {
        return Err(Error::not_found("Inbox dismissal"));
    }
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id,
            action: Action::InboxRestored,
            entity_type: EntityType::Company,
            entity_id: company_id,
            details: json!({ "itemKey": item_key }),
        },
    )
    .await?;
    tx.commit().await
}

/// A person's dismissals, last set first (at most 500).
pub async fn list(store: &Store, company_id: &str, user_id: &str) -> Result<Vec<Dismissal>> {
    let rows = crate::engine::db::query(
        "SELECT id, item_key, kind, snoozed_until, created_at, updated_at FROM inbox_dismissals \
         WHERE company_id = $1 AND user_id = $2 ORDER BY updated_at DESC LIMIT 500",
    )
    .bind(company_id)
    .bind(user_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Dismissal::new(
                company_id,
                user_id,
                r.text("item_key")?,
                r.stored("kind")?,
                r.opt_text("snoozed_until")?,
                Made {
                    id: r.text("id")?,
                    created_at: r.text("created_at")?,
                    updated_at: r.text("updated_at")?,
                },
            ))
        })
        .collect()
}

/// One inbox item: an agent's newest unhandled failure on a task.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedRun {
    pub run_id: String,
    pub agent_id: String,
    pub issue_id: Option<String>,
    pub identifier: Option<String>,
    pub title: Option<String>,
    /// `failed` or `timed_out`.
    pub status: RunStatus,
    pub error_code: Option<String>,
    pub error: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
    /// Earlier failures of the same agent on the same task, folded in.
    pub earlier: i64,
}

/// The failures `user_id` has not dismissed: see the module comment. With
/// `dismissed`, the ones they did dismiss instead (still one per agent and
/// task), for the inbox's Dismissed tab.
pub async fn failed_runs(
    store: &Store,
    company_id: &str,
    user_id: &str,
    dismissed: bool,
) -> Result<Vec<FailedRun>> {
    let since = (Utc::now() - chrono::Duration::days(WINDOW_DAYS))
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    let ts = now();
    // The newest SCAN failures per status, each an index walk on (company,
    // status, id) that stops at SCAN rows: the window is applied to those
    // rows, not in the walk, so a company with few recent failures and a
    // long history never walks that history (it did: minutes at 1M runs).
    let mut found = Vec::new();
    for status in ["failed", "timed_out"] {
        let rows = crate::engine::db::query(
            "SELECT r.id, r.agent_id, r.issue_id, r.status, r.error_code, r.error, r.created_at, r.finished_at, \
                    i.identifier, i.title, d.kind AS dismissed_kind, d.snoozed_until \
             FROM heartbeat_runs r \
             LEFT JOIN issues i ON i.id = r.issue_id \
             LEFT JOIN inbox_dismissals d ON d.company_id = r.company_id AND d.user_id = $3 \
                  AND d.item_key = 'run:' || r.id \
             WHERE r.company_id = $1 AND r.status = $2 \
             ORDER BY r.id DESC LIMIT $4",
        )
        .bind(company_id)
        .bind(status)
        .bind(user_id)
        .bind(SCAN)
        // Read in place: through sqlx each of these rows was a thread
        // hand-off, and the sidebar reads them on every page (~10 ms of CPU
        // per page with a long failure history).
        .fetch_map(store.pool(), scanned, scanned)
        .await?;
        for (run, dismissed_kind, snoozed_until) in rows {
            if run.created_at < since {
                continue;
            }
            let hidden = match dismissed_kind {
                Some(Kind::Snooze) => snoozed_until.is_some_and(|u| u > ts),
                Some(Kind::Dismiss) => true,
                None => false,
            };
            found.push((hidden, run));
        }
    }
    // A later success on the task settles its failures: the newest success
    // of each task involved, one query on (company, task, id). The status
    // is compared as an expression so neither engine walks the company's
    // successes by the status index instead.
    let tasks: Vec<&str> = {
        let mut t: Vec<&str> = found
            .iter()
            .filter_map(|(_, f)| f.issue_id.as_deref())
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    };
    if !tasks.is_empty() {
        let list =
            crate::engine::sql::json_values(store.backend(), "$2", crate::engine::sql::ListOf::Ids);
        let rows = crate::engine::db::query(&format!(
            "SELECT s.issue_id, MAX(CAST(s.id AS TEXT)) AS last_ok FROM heartbeat_runs s \
             WHERE s.company_id = $1 AND s.issue_id IN {list} AND s.status || '' = 'succeeded' \
             GROUP BY s.issue_id"
        ))
        .bind(company_id)
        .bind(crate::engine::sql::json_array(tasks.iter()))
        .fetch_all(store.pool())
        .await?;
        let mut settled = std::collections::HashMap::new();
        for r in &rows {
            settled.insert(r.text("issue_id")?, r.text("last_ok")?);
        }
        found.retain(
            |(_, f)| match f.issue_id.as_ref().and_then(|i| settled.get(i)) {
                Some(last_ok) => *last_ok < f.run_id,
                None => true,
            },
        );
    }
    Ok(fold(found, dismissed))
}

/// A scanned failure, with its dismissal's kind and snooze end if any.
fn scanned<R: RowExt>(r: &R) -> Result<(FailedRun, Option<Kind>, Option<String>)> {
    Ok((
        FailedRun {
            run_id: r.text("id")?,
            agent_id: r.text("agent_id")?,
            issue_id: r.opt_text("issue_id")?,
            identifier: r.opt_text("identifier")?,
            title: r.opt_text("title")?,
            status: r.stored("status")?,
            error_code: r.opt_text("error_code")?,
            error: r.opt_text("error")?,
            created_at: r.text("created_at")?,
            finished_at: r.opt_text("finished_at")?,
            earlier: 0,
        },
        r.opt_stored("dismissed_kind")?,
        r.opt_text("snoozed_until")?,
    ))
}

/// Newest first, one item per agent and task. Dismissing an item covers the
/// failures before it too; a failure after it is a new item.
fn fold(mut runs: Vec<(bool, FailedRun)>, dismissed: bool) -> Vec<FailedRun> {
    runs.sort_by(|a, b| b.1.run_id.cmp(&a.1.run_id));
    let mut items: Vec<FailedRun> = Vec::new();
    // Groups whose newest item is already decided (shown or hidden).
    let mut decided: Vec<((String, Option<String>), bool)> = Vec::new();
    for (hidden, run) in runs {
        let key = (run.agent_id.clone(), run.issue_id.clone());
        match decided.iter().find(|(k, _)| *k == key) {
            Some((_, shown)) => {
                if *shown {
                    if let Some(item) = items
                        .iter_mut()
                        .find(|i| i.agent_id == key.0 && i.issue_id == key.1)
                    {
                        item.earlier += 1;
                    }
                }
            }
            None => {
                let show = hidden == dismissed;
                decided.push((key, show));
                if show {
                    items.push(run);
                }
            }
        }
    }
    items
}

/// Approvals awaiting the board (pending or sent back for revision) that
/// `user_id` has not dismissed or snoozed: the sidebar's approvals badge.
pub async fn open_approvals(store: &Store, company_id: &str, user_id: &str) -> Result<i64> {
    let row = crate::engine::db::query(
        "SELECT COUNT(*) AS n FROM approvals a \
         LEFT JOIN inbox_dismissals d ON d.company_id = a.company_id AND d.user_id = $2 \
              AND d.item_key = 'approval:' || a.id \
         WHERE a.company_id = $1 AND a.status IN ('pending', 'revision_requested') \
           AND (d.kind IS NULL OR (d.kind = 'snooze' AND d.snoozed_until <= $3))",
    )
    .bind(company_id)
    .bind(user_id)
    .bind(now())
    .fetch_one(store.pool())
    .await?;
    Ok(row.int("n")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, agent: &str, issue: Option<&str>) -> FailedRun {
        FailedRun {
            run_id: id.into(),
            agent_id: agent.into(),
            issue_id: issue.map(Into::into),
            identifier: None,
            title: None,
            status: RunStatus::Failed,
            error_code: None,
            error: None,
            created_at: String::new(),
            finished_at: None,
            earlier: 0,
        }
    }

    #[test]
    fn a_dismissal_kind_reads_back_as_its_api_text_and_nothing_else_does() {
        for kind in Kind::ALL {
            assert_eq!(Kind::from_stored(kind.as_str()), Some(*kind));
            assert_eq!(Kind::parse(kind.as_str()), Some(*kind));
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
        assert_eq!(Kind::from_stored("hide"), None);
    }

    #[test]
    fn repeats_fold_into_the_newest_and_a_dismissal_covers_older_ones() {
        let runs = vec![
            (false, run("01", "a", Some("t"))),
            (false, run("03", "a", Some("t"))),
            (false, run("02", "a", Some("t"))),
            (true, run("05", "b", Some("t"))),
            (false, run("04", "b", Some("t"))),
            (false, run("06", "a", None)),
        ];
        let open = fold(runs.clone(), false);
        let ids: Vec<_> = open
            .iter()
            .map(|r| (r.run_id.as_str(), r.earlier))
            .collect();
        assert_eq!(ids, vec![("06", 0), ("03", 2)]);
        let gone = fold(runs, true);
        let ids: Vec<_> = gone.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(ids, vec!["05"]);
    }

    #[test]
    fn item_keys_follow_upstreams_pattern() {
        assert!(valid_key("run:01"));
        assert!(valid_key("approval:x"));
        assert!(!valid_key("run:"));
        assert!(!valid_key("task:1"));
        assert!(!valid_key("run:a\u{0}b"));
        assert!(!valid_key(&format!("run:{}", "x".repeat(300))));
    }
}
