//! What a person wants pushed to their devices. No row: everything.

use paperclip_core::push::Preferences;

use crate::engine::db::DbRow;
use crate::{now, Result, Store};

pub async fn get(store: &Store, user_id: &str) -> Result<Preferences> {
    let row = crate::engine::db::query(
        "SELECT questions, approvals, failed_runs, budget_stops FROM push_preferences \
         WHERE user_id = $1",
    )
    .bind(user_id)
    .fetch_optional(store.pool())
    .await?;
    Ok(match row {
        Some(row) => from_row(&row)?,
        None => Preferences::default(),
    })
}

pub async fn set(store: &Store, user_id: &str, prefs: Preferences) -> Result<Preferences> {
    let mut tx = store.begin().await?;
    crate::engine::db::query(
        "INSERT INTO push_preferences (user_id, questions, approvals, failed_runs, budget_stops, \
         updated_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (user_id) DO UPDATE SET \
         questions = excluded.questions, approvals = excluded.approvals, \
         failed_runs = excluded.failed_runs, budget_stops = excluded.budget_stops, \
         updated_at = excluded.updated_at",
    )
    .bind(user_id)
    .bind(i64::from(prefs.questions))
    .bind(i64::from(prefs.approvals))
    .bind(i64::from(prefs.failed_runs))
    .bind(i64::from(prefs.budget_stops))
    .bind(now())
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    Ok(prefs)
}

/// The preference columns of a row (`NULL` from a missing row: on).
pub(crate) fn from_row(row: &DbRow) -> Result<Preferences> {
    let on = |col: &str| -> Result<bool> {
        Ok(row.try_get::<Option<i64>, _>(col)?.is_none_or(|v| v != 0))
    };
    Ok(Preferences {
        questions: on("questions")?,
        approvals: on("approvals")?,
        failed_runs: on("failed_runs")?,
        budget_stops: on("budget_stops")?,
    })
}
