//! Cost events and their rollups. Events are never edited: every figure
//! (spend this month, by agent, by model, ...) is a query over them.
//!
//! Recording an event also enforces budgets (see [`crate::money::budgets`]) in the
//! same transaction, after taking the company row's lock, so concurrent
//! reports are counted one after another and a stop is decided exactly once.

use crate::engine::db::DbRow;
pub use crate::money::spend::{Breakdown, By, Scope, Window};
use chrono::{DateTime, Utc};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::budget::{month_window, stamp};
use paperclip_core::input::NewCostEvent;
use paperclip_core::model::{BudgetIncident, CostEvent};
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::{new_id, Error, Result, Store};

pub struct Recorded {
    pub event: CostEvent,
    /// Incidents this event opened (an 80 % alert, a hard stop).
    pub incidents: Vec<BudgetIncident>,
}

pub async fn record(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    input: NewCostEvent,
    at: Option<DateTime<Utc>>,
) -> Result<Recorded> {
    paperclip_core::limits::Validate::validate(&input)?;
    let parsed = match &input.occurred_at {
        Some(t) => stamp(
            DateTime::parse_from_rfc3339(t)
                .map_err(|_| Error::invalid("occurredAt", "Expected an RFC 3339 timestamp"))?
                .with_timezone(&Utc),
        )
        .into(),
        None => None,
    };
    let mut tx = store.begin().await?;
    // Serialises cost reports of one company (a no-op write that takes the
    // row lock on Postgres; SQLite writers are serialised already).
    let locked = crate::engine::db::query(
        "UPDATE companies SET issue_counter = issue_counter WHERE id = $1",
    )
    .bind(company_id)
    .execute(tx.conn())
    .await?
    .rows_affected();
    if locked == 0 {
        return Err(Error::not_found("Company"));
    }
    // Without a given time, the report happens when it holds the lock, not
    // when it was sent: a stop it decides is then stamped after every run
    // the writer claimed before it and before every claim it refuses.
    let now = at.unwrap_or_else(Utc::now);
    let occurred_at = parsed.unwrap_or_else(|| stamp(now));
    let agent_id = input
        .agent_id
        .clone()
        .or_else(|| actor.agent_id().map(str::to_string));
    if let Some(agent) = &agent_id {
        crate::org::agents::get_in_company(&mut tx, company_id, agent).await?;
    }
    let (mut project_id, mut goal_id) = (input.project_id.clone(), input.goal_id.clone());
    let mut issue_id = None;
    if let Some(issue) = &input.issue_id {
        // By id or identifier (`ACM-12`), as every issue route accepts; the
        // event keeps the id.
        let issue = crate::issues::table::load_in(&mut tx, issue).await?;
        if issue.company_id != company_id {
            return Err(Error::not_found("Issue"));
        }
        project_id = project_id.or(issue.project_id);
        goal_id = goal_id.or(issue.goal_id);
        issue_id = Some(issue.id);
    }
    let heartbeat_run_id = input
        .heartbeat_run_id
        .clone()
        .or_else(|| actor.run_id.clone());
    if let Some(run) = &input.heartbeat_run_id {
        // Another company's run is answered like a missing one.
        let owner: Option<(String,)> =
            crate::engine::db::query_as("SELECT company_id FROM heartbeat_runs WHERE id = $1")
                .bind(run)
                .fetch_optional(tx.conn())
                .await?;
        if owner.is_none_or(|(owner,)| owner != company_id) {
            return Err(Error::not_found("Heartbeat run"));
        }
    }
    if let Some(project) = &project_id {
        crate::org::projects::get_in_company(&mut tx, company_id, project).await?;
    }
    if let Some(goal) = &goal_id {
        crate::org::goals::get_in_company(&mut tx, company_id, goal).await?;
    }
    let event = CostEvent {
        id: new_id(),
        company_id: company_id.to_string(),
        agent_id,
        issue_id,
        project_id,
        goal_id,
        heartbeat_run_id,
        billing_code: input.billing_code.clone(),
        provider: input.provider.clone(),
        cost_status: if input.cost_cents.is_some() {
            "priced"
        } else {
            "unpriced"
        }
        .to_string(),
        model: input.model.clone(),
        input_tokens: clamp(input.input_tokens),
        cached_input_tokens: clamp(input.cached_input_tokens),
        output_tokens: clamp(input.output_tokens),
        cost_cents: input.cost_cents.map(|c| c.min(i64::MAX as u64) as i64),
        occurred_at,
        created_at: stamp(now),
    };
    crate::engine::db::query(
        "INSERT INTO cost_events (id, company_id, agent_id, issue_id, project_id, goal_id, heartbeat_run_id, \
         billing_code, provider, model, input_tokens, cached_input_tokens, output_tokens, cost_cents, \
         occurred_at, created_at, billing_type) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)",
    )
    .bind(&event.id)
    .bind(&event.company_id)
    .bind(event.agent_id.as_deref())
    .bind(event.issue_id.as_deref())
    .bind(event.project_id.as_deref())
    .bind(event.goal_id.as_deref())
    .bind(event.heartbeat_run_id.as_deref())
    .bind(event.billing_code.as_deref())
    .bind(event.provider.as_deref())
    .bind(event.model.as_deref())
    .bind(event.input_tokens)
    .bind(event.cached_input_tokens)
    .bind(event.output_tokens)
    .bind(event.cost_cents)
    .bind(&event.occurred_at)
    .bind(&event.created_at)
    .bind(
        input
            .billing_type
            .unwrap_or(paperclip_core::billing::BillingType::Unknown)
            .as_str(),
    )
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id,
            action: Action::CostReported,
            entity_type: EntityType::CostEvent,
            entity_id: &event.id,
            details: json!({ "model": event.model, "costCents": event.cost_cents, "agentId": event.agent_id }),
        },
    )
    .await?;
    let incidents = crate::money::budgets::enforce_in(
        &mut tx,
        company_id,
        event.agent_id.as_deref(),
        event.project_id.as_deref(),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(Recorded { event, incidents })
}

fn clamp(n: Option<u64>) -> i64 {
    n.unwrap_or(0).min(i64::MAX as u64) as i64
}

impl Window {
    pub fn month_of(now: DateTime<Utc>) -> Window {
        let (start, end, _) = month_window(now);
        Window { start, end }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub company_id: String,
    pub spend_cents: i64,
    pub budget_cents: i64,
    pub utilization_percent: f64,
    pub event_count: i64,
    pub unpriced_event_count: i64,
    pub window_start: String,
    pub window_end: String,
}

pub async fn summary(store: &Store, company_id: &str, window: &Window) -> Result<Summary> {
    let company = crate::org::companies::get(store, company_id).await?;
    let (spend, events, unpriced) = match window.month_key() {
        // A calendar month: its kept totals (migration 13).
        Some(month) => {
            let sum = crate::money::cost_totals::month_sum(store, company_id, month).await?;
            (sum.cents, sum.events, sum.unpriced_events)
        }
        None => summed(store, company_id, window).await?,
    };
    Ok(Summary {
        company_id: company_id.to_string(),
        spend_cents: spend,
        budget_cents: company.budget_monthly_cents,
        utilization_percent: paperclip_core::budget::utilization_percent(
            spend,
            company.budget_monthly_cents,
        ),
        event_count: events,
        unpriced_event_count: unpriced,
        window_start: window.start.clone(),
        window_end: window.end.clone(),
    })
}

/// Spend, events and unpriced events of any window, summed from the events.
async fn summed(store: &Store, company_id: &str, window: &Window) -> Result<(i64, i64, i64)> {
    let row = crate::engine::db::query(concat!(
        "SELECT CAST(COALESCE(SUM(",
        capped!("cost_cents"),
        "), 0) AS BIGINT) AS spend, COUNT(*) AS n, \
         CAST(SUM(CASE WHEN cost_cents IS NULL THEN 1 ELSE 0 END) AS BIGINT) AS unpriced FROM cost_events \
         WHERE company_id = $1 AND occurred_at >= $2 AND occurred_at < $3",
    ))
    .bind(company_id)
    .bind(&window.start)
    .bind(&window.end)
    .fetch_one(store.pool())
    .await?;
    let unpriced: Option<i64> = DbRow::try_get(&row, "unpriced")?;
    Ok((row.int("spend")?, row.int("n")?, unpriced.unwrap_or(0)))
}

/// Spend grouped one way, biggest first: a calendar month from its kept
/// totals, any other window by one grouped query over its events.
pub async fn breakdown(
    store: &Store,
    company_id: &str,
    by: By,
    window: &Window,
) -> Result<Vec<Breakdown>> {
    top(store, company_id, by, window, None).await
}

/// [`breakdown`], one page of it: `page` is `(limit, offset)`.
pub async fn top(
    store: &Store,
    company_id: &str,
    by: By,
    window: &Window,
    page: Option<(i64, i64)>,
) -> Result<Vec<Breakdown>> {
    if let Some(month) = window.month_key() {
        return crate::money::cost_totals::breakdown(store, company_id, by, month, page).await;
    }
    let (key, label, join) = match by {
        By::Agent => (
            "e.agent_id",
            "a.name",
            "LEFT JOIN agents a ON a.id = e.agent_id",
        ),
        By::Project => (
            "e.project_id",
            "p.name",
            "LEFT JOIN projects p ON p.id = e.project_id",
        ),
        By::Model => ("e.model", "MAX(e.provider)", ""),
        By::Issue => (
            "e.issue_id",
            "i.identifier",
            "LEFT JOIN issues i ON i.id = e.issue_id",
        ),
    };
    let group_label = if matches!(by, By::Model) {
        String::new()
    } else {
        format!(", {label}")
    };
    let filter = match by {
        By::Project => " AND e.project_id IS NOT NULL",
        By::Issue => " AND e.issue_id IS NOT NULL",
        _ => "",
    };
    let sql = format!(
        "SELECT {key} AS k, {label} AS label, CAST(COALESCE(SUM({cost}), 0) AS BIGINT) AS cost, \
         CAST(COALESCE(SUM({input}), 0) AS BIGINT) AS input, CAST(COALESCE(SUM({cached}), 0) AS BIGINT) AS cached, \
         CAST(COALESCE(SUM({output}), 0) AS BIGINT) AS output, COUNT(*) AS n, \
         CAST(SUM(CASE WHEN e.cost_cents IS NULL THEN 1 ELSE 0 END) AS BIGINT) AS unpriced \
         FROM cost_events e {join} WHERE e.company_id = $1 AND e.occurred_at >= $2 AND e.occurred_at < $3{filter} \
         GROUP BY {key}{group_label} ORDER BY cost DESC, n DESC, k LIMIT $4 OFFSET $5",
        cost = capped!("e.cost_cents"),
        input = capped!("e.input_tokens"),
        cached = capped!("e.cached_input_tokens"),
        output = capped!("e.output_tokens"),
    );
    let rows = crate::engine::db::query(&sql)
        .bind(company_id)
        .bind(&window.start)
        .bind(&window.end)
        .bind(page.map_or(i64::MAX, |p| p.0))
        .bind(page.map_or(0, |p| p.1))
        .fetch_all(store.pool())
        .await?;
    rows.iter()
        .map(|r| {
            let unpriced: Option<i64> = DbRow::try_get(r, "unpriced")?;
            Ok(Breakdown {
                key: r.opt_text("k")?,
                label: r.opt_text("label")?,
                cost_cents: r.int("cost")?,
                input_tokens: r.int("input")?,
                cached_input_tokens: r.int("cached")?,
                output_tokens: r.int("output")?,
                event_count: r.int("n")?,
                unpriced_event_count: unpriced.unwrap_or(0),
            })
        })
        .collect()
}

pub async fn list(
    store: &Store,
    company_id: &str,
    window: &Window,
    limit: i64,
) -> Result<Vec<CostEvent>> {
    // Newest first by when they happened: a walk of the (company, time)
    // index that stops at the page. Ordered by id, a month of a busy company
    // (50,000 events) was sorted whole for every page (~80 ms).
    let rows = crate::engine::db::query(
        "SELECT * FROM cost_events WHERE company_id = $1 AND occurred_at >= $2 AND occurred_at < $3 \
         ORDER BY occurred_at DESC, id DESC LIMIT $4",
    )
    .bind(company_id)
    .bind(&window.start)
    .bind(&window.end)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

fn map(row: &DbRow) -> Result<CostEvent> {
    let cost: Option<i64> = DbRow::try_get(row, "cost_cents")?;
    Ok(CostEvent {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        agent_id: row.opt_text("agent_id")?,
        issue_id: row.opt_text("issue_id")?,
        project_id: row.opt_text("project_id")?,
        goal_id: row.opt_text("goal_id")?,
        heartbeat_run_id: row.opt_text("heartbeat_run_id")?,
        billing_code: row.opt_text("billing_code")?,
        provider: row.opt_text("provider")?,
        cost_status: if cost.is_some() { "priced" } else { "unpriced" }.to_string(),
        model: row.opt_text("model")?,
        input_tokens: row.int("input_tokens")?,
        cached_input_tokens: row.int("cached_input_tokens")?,
        output_tokens: row.int("output_tokens")?,
        cost_cents: cost,
        occurred_at: row.text("occurred_at")?,
        created_at: row.text("created_at")?,
    })
}
