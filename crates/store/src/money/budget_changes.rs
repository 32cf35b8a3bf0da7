//! The board changing a budget: setting one, overriding a stop for an agent,
//! and the monthly rollover, each releasing the stops the new budget covers.

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::money::budgets::*;
use crate::money::spend::spend_in;
use crate::{Error, Result, Store, Tx};
use chrono::{DateTime, Utc};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::budget::{level, month_window, stamp, BudgetScope, IncidentResolution, Level};
use serde_json::json;

/// Sets a monthly budget (`companies`, `agents` or `projects`) and, if it now
/// covers the month's spend, lifts that scope's stop.
pub async fn set(
    store: &Store,
    actor: &Actor,
    scope_type: BudgetScope,
    scope_id: &str,
    cents: i64,
    now: DateTime<Utc>,
) -> Result<String> {
    let table = match scope_type {
        BudgetScope::Company => "companies",
        BudgetScope::Agent => "agents",
        BudgetScope::Project => "projects",
    };
    let mut tx = store.begin().await?;
    let sql = format!("SELECT company_id FROM {table} WHERE id = $1");
    let sql = if table == "companies" {
        "SELECT id AS company_id FROM companies WHERE id = $1".to_string()
    } else {
        sql
    };
    let row = crate::engine::db::query(&sql)
        .bind(scope_id)
        .fetch_optional(tx.conn())
        .await?
        .ok_or_else(|| {
            Error::NotFound(format!("{} not found", capitalised(scope_type.as_str())))
        })?;
    let company_id = row.text("company_id")?;
    crate::engine::db::query(&format!(
        "UPDATE {table} SET budget_monthly_cents = $2, updated_at = $3 WHERE id = $1"
    ))
    .bind(scope_id)
    .bind(cents)
    .bind(stamp(now))
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &company_id,
            action: match scope_type {
                BudgetScope::Agent => Action::AgentBudgetUpdated,
                BudgetScope::Project => Action::ProjectBudgetUpdated,
                BudgetScope::Company => Action::CompanyBudgetUpdated,
            },
            entity_type: scope_entity(scope_type),
            entity_id: scope_id,
            details: json!({ "budgetMonthlyCents": cents }),
        },
    )
    .await?;
    let (start, end, month) = month_window(now);
    let scope = spend_scope(scope_type, scope_id);
    let spend = spend_in(&mut tx, &company_id, scope, &start, &end).await?;
    if level(spend, cents) < Level::Hard {
        resolve_scope(
            &mut tx,
            actor,
            &company_id,
            scope_type,
            scope_id,
            &month,
            IncidentResolution::BudgetRaised,
            now,
        )
        .await?;
        release(&mut tx, actor, &company_id, now).await?;
    } else {
        enforce_in(
            &mut tx,
            &company_id,
            (scope_type == BudgetScope::Agent).then_some(scope_id),
            (scope_type == BudgetScope::Project).then_some(scope_id),
            now,
        )
        .await?;
    }
    // A raised budget may resume paused agents and their queued runs.
    tx.runs_may_start();
    tx.commit().await?;
    Ok(company_id)
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

#[allow(clippy::too_many_arguments)]
async fn resolve_scope(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    scope_type: BudgetScope,
    scope_id: &str,
    month: &str,
    resolution: IncidentResolution,
    now: DateTime<Utc>,
) -> Result<u64> {
    let n = crate::engine::db::query(
        "UPDATE budget_incidents SET status = 'resolved', resolution = $4, resolved_at = $5 \
         WHERE scope_type = $1 AND scope_id = $2 AND window_month = $3 AND status = 'open'",
    )
    .bind(scope_type.as_str())
    .bind(scope_id)
    .bind(month)
    .bind(resolution.as_str())
    .bind(stamp(now))
    .execute(tx.conn())
    .await?
    .rows_affected();
    if n > 0 {
        activity::record(
            tx,
            actor,
            Entry {
                company_id,
                action: Action::BudgetIncidentResolved,
                entity_type: scope_entity(scope_type),
                entity_id: scope_id,
                details: json!({ "resolution": resolution, "month": month }),
            },
        )
        .await?;
    }
    Ok(n)
}

/// Resumes agents paused for budget whose company and own stops are lifted.
async fn release(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    now: DateTime<Utc>,
) -> Result<Vec<String>> {
    let (_, _, month) = month_window(now);
    let paused: Vec<(String,)> =
        crate::engine::db::query_as("SELECT id FROM agents WHERE company_id = $1 AND status = 'paused' AND pause_reason = 'budget'")
            .bind(company_id)
            .fetch_all(tx.conn())
            .await?;
    let mut resumed = Vec::new();
    for (agent_id,) in paused {
        let (open,): (i64,) = crate::engine::db::query_as(
            "SELECT COUNT(*) FROM budget_incidents WHERE kind = 'hard' AND status = 'open' AND window_month = $1 \
             AND ((scope_type = 'company' AND scope_id = $2) OR (scope_type = 'agent' AND scope_id = $3))",
        )
        .bind(&month)
        .bind(company_id)
        .bind(&agent_id)
        .fetch_one(tx.conn())
        .await?;
        if open > 0 {
            continue;
        }
        crate::engine::db::query("UPDATE agents SET status = 'idle', pause_reason = NULL, paused_at = NULL, updated_at = $2 WHERE id = $1")
            .bind(&agent_id)
            .bind(stamp(now))
            .execute(tx.conn())
            .await?;
        activity::record(
            tx,
            actor,
            Entry {
                company_id,
                action: Action::AgentResumed,
                entity_type: EntityType::Agent,
                entity_id: &agent_id,
                details: json!({ "from": "paused", "to": "idle", "reason": "budget_cleared" }),
            },
        )
        .await?;
        resumed.push(agent_id);
    }
    Ok(resumed)
}

/// The board resumes an agent paused for budget: its own and its company's
/// stops for this month count as overridden, so they do not stop it again.
pub(crate) async fn override_for_agent(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    agent_id: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let (_, _, month) = month_window(now);
    resolve_scope(
        tx,
        actor,
        company_id,
        BudgetScope::Agent,
        agent_id,
        &month,
        IncidentResolution::Override,
        now,
    )
    .await?;
    resolve_scope(
        tx,
        actor,
        company_id,
        BudgetScope::Company,
        company_id,
        &month,
        IncidentResolution::Override,
        now,
    )
    .await?;
    Ok(())
}

/// At a new UTC month, stops of past months end: their incidents resolve and
/// agents paused for budget resume (unless this month's spend stops them).
pub async fn rollover(store: &Store, now: DateTime<Utc>) -> Result<Vec<String>> {
    let (_, _, month) = month_window(now);
    let companies: Vec<(String,)> = crate::engine::db::query_as(
        "SELECT DISTINCT company_id FROM budget_incidents WHERE status = 'open' AND window_month < $1",
    )
    .bind(&month)
    .fetch_all(store.pool())
    .await?;
    let mut resumed = Vec::new();
    for (company_id,) in companies {
        let mut tx = store.begin().await?;
        let n = crate::engine::db::query(
            "UPDATE budget_incidents SET status = 'resolved', resolution = 'month_rollover', resolved_at = $3 \
             WHERE company_id = $1 AND status = 'open' AND window_month < $2",
        )
        .bind(&company_id)
        .bind(&month)
        .bind(stamp(now))
        .execute(tx.conn())
        .await?
        .rows_affected();
        if n > 0 {
            activity::record(
                &mut tx,
                &Actor::system(),
                Entry {
                    company_id: &company_id,
                    action: Action::BudgetMonthRollover,
                    entity_type: EntityType::Company,
                    entity_id: &company_id,
                    details: json!({ "month": month, "resolvedIncidents": n }),
                },
            )
            .await?;
        }
        resumed.extend(release(&mut tx, &Actor::system(), &company_id, now).await?);
        tx.commit().await?;
    }
    Ok(resumed)
}
