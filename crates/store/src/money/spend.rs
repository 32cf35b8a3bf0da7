//! What was spent, by scope and window: the sums budgets enforce and the
//! shapes of a cost breakdown. The floor of the money folder.

use crate::engine::row::RowExt;
use crate::{Result, Tx};
use serde::Serialize;
use utoipa::ToSchema;

/// Priced spend in `[start, end)` for a company, optionally one agent or project.
pub(crate) async fn spend_in(
    tx: &mut Tx,
    company_id: &str,
    scope: Scope<'_>,
    start: &str,
    end: &str,
) -> Result<i64> {
    spend_on(tx.conn(), company_id, scope, start, end).await
}

/// [`spend_in`] on any connection: a read outside a transaction (a running
/// run's budget check) must not take SQLite's write lock.
pub(crate) async fn spend_on<'e>(
    on: impl crate::engine::db::Exec<'e>,
    company_id: &str,
    scope: Scope<'_>,
    start: &str,
    end: &str,
) -> Result<i64> {
    let (column, value) = match scope {
        Scope::Company => ("company_id", company_id),
        Scope::Agent(id) => ("agent_id", id),
        Scope::Project(id) => ("project_id", id),
    };
    let sql = format!(
        "SELECT CAST(COALESCE(SUM({}), 0) AS BIGINT) AS spend FROM cost_events WHERE company_id = $1 \
         AND {column} = $2 AND occurred_at >= $3 AND occurred_at < $4",
        capped!("cost_cents")
    );
    let row = crate::engine::db::query(&sql)
        .bind(company_id)
        .bind(value)
        .bind(start)
        .bind(end)
        .fetch_one(on)
        .await?;
    Ok(row.int("spend")?)
}

#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    Company,
    Agent(&'a str),
    Project(&'a str),
}

/// A time window for rollups: a calendar month, or an explicit range.
#[derive(Debug, Clone)]
pub struct Window {
    pub start: String,
    pub end: String,
}

/// One row of a breakdown (by agent, project, model or issue).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Breakdown {
    /// The agent, project or issue id, or the model name.
    pub key: Option<String>,
    /// Agent or project name, issue identifier, or provider of a model.
    pub label: Option<String>,
    pub cost_cents: i64,
    pub input_tokens: i64,
    pub cached_input_tokens: i64,
    pub output_tokens: i64,
    pub event_count: i64,
    pub unpriced_event_count: i64,
}

#[derive(Debug, Clone, Copy)]
pub enum By {
    Agent,
    Project,
    Model,
    Issue,
}
