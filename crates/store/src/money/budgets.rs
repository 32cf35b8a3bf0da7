//! Monthly budgets and their enforcement. At 80 % of a budget the board is
//! warned (a soft incident); at 100 % the work stops (a hard incident): the
//! agent, or every agent of the company, is paused with reason `budget`, its
//! queued runs are cancelled `budget_blocked`, and the runtime is told to
//! stop what is running. Raising the budget, the board resuming the agent,
//! or the next UTC month ends it.

use crate::engine::db::DbRow;
use chrono::{DateTime, Utc};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::budget::{
    level, month_window, stamp, BudgetScope, IncidentKind, IncidentResolution, IncidentStatus,
    Level,
};
use paperclip_core::model::BudgetIncident;
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::money::spend::{spend_in, Scope};
use crate::{new_id, Result, Store, StoreEvent, Tx};

/// Checks the company, agent and project budgets an event touched; opens
/// incidents and stops work as the thresholds say. Returns new incidents.
pub(crate) async fn enforce_in(
    tx: &mut Tx,
    company_id: &str,
    agent_id: Option<&str>,
    project_id: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Vec<BudgetIncident>> {
    let mut opened = Vec::new();
    let company_budget = budget_of(tx, "companies", company_id).await?;
    check_scope(
        tx,
        company_id,
        BudgetScope::Company,
        company_id,
        company_budget,
        now,
        &mut opened,
    )
    .await?;
    if let Some(agent) = agent_id {
        let budget = budget_of(tx, "agents", agent).await?;
        check_scope(
            tx,
            company_id,
            BudgetScope::Agent,
            agent,
            budget,
            now,
            &mut opened,
        )
        .await?;
    }
    if let Some(project) = project_id {
        let budget = budget_of(tx, "projects", project).await?;
        check_scope(
            tx,
            company_id,
            BudgetScope::Project,
            project,
            budget,
            now,
            &mut opened,
        )
        .await?;
    }
    Ok(opened)
}

async fn budget_of(tx: &mut Tx, table: &str, id: &str) -> Result<i64> {
    let sql = format!("SELECT budget_monthly_cents AS b FROM {table} WHERE id = $1");
    let row = crate::engine::db::query(&sql)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?;
    Ok(row.map(|r| r.int("b")).transpose()?.unwrap_or(0))
}

/// The entity a budget scope names: a company, an agent or a project.
pub(crate) fn scope_entity(scope_type: BudgetScope) -> EntityType {
    match scope_type {
        BudgetScope::Company => EntityType::Company,
        BudgetScope::Agent => EntityType::Agent,
        BudgetScope::Project => EntityType::Project,
    }
}

/// The scope's spend query: the company's, or one agent's or project's.
pub(crate) fn spend_scope(scope_type: BudgetScope, scope_id: &str) -> Scope<'_> {
    match scope_type {
        BudgetScope::Company => Scope::Company,
        BudgetScope::Agent => Scope::Agent(scope_id),
        BudgetScope::Project => Scope::Project(scope_id),
    }
}

async fn check_scope(
    tx: &mut Tx,
    company_id: &str,
    scope_type: BudgetScope,
    scope_id: &str,
    budget: i64,
    now: DateTime<Utc>,
    opened: &mut Vec<BudgetIncident>,
) -> Result<()> {
    let (start, end, month) = month_window(now);
    let scope = spend_scope(scope_type, scope_id);
    let spend = spend_in(tx, company_id, scope, &start, &end).await?;
    let reached = level(spend, budget);
    if reached == Level::Ok {
        return Ok(());
    }
    if let Some(incident) = open_incident(
        tx,
        company_id,
        scope_type,
        scope_id,
        IncidentKind::Soft,
        &month,
        spend,
        budget,
        now,
    )
    .await?
    {
        activity::record(
            tx,
            &Actor::system(),
            Entry {
                company_id,
                action: Action::BudgetSoftAlert,
                entity_type: scope_entity(scope_type),
                entity_id: scope_id,
                details: json!({ "incidentId": incident.id, "spendCents": spend, "budgetCents": budget, "month": month }),
            },
        )
        .await?;
        opened.push(incident);
    }
    if reached == Level::Hard {
        if let Some(incident) = open_incident(
            tx,
            company_id,
            scope_type,
            scope_id,
            IncidentKind::Hard,
            &month,
            spend,
            budget,
            now,
        )
        .await?
        {
            let stopped = stop(tx, company_id, scope_type, scope_id, now).await?;
            activity::record(
                tx,
                &Actor::system(),
                Entry {
                    company_id,
                    action: Action::BudgetHardStop,
                    entity_type: scope_entity(scope_type),
                    entity_id: scope_id,
                    details: json!({
                        "incidentId": incident.id, "spendCents": spend, "budgetCents": budget,
                        "month": month, "pausedAgentIds": stopped,
                    }),
                },
            )
            .await?;
            tx.announce(StoreEvent::AgentsStopped {
                agent_ids: stopped,
                reason: "budget hard stop".into(),
            });
            opened.push(incident);
        }
    }
    Ok(())
}

/// Opens the incident of this scope, kind and month, unless one exists.
/// A hard stop lifted by raising the budget opens again when the new budget
/// is spent too; one the board overrode stays lifted for the month.
#[allow(clippy::too_many_arguments)]
async fn open_incident(
    tx: &mut Tx,
    company_id: &str,
    scope_type: BudgetScope,
    scope_id: &str,
    kind: IncidentKind,
    month: &str,
    spend: i64,
    budget: i64,
    now: DateTime<Utc>,
) -> Result<Option<BudgetIncident>> {
    let existing = crate::engine::db::query(
        "SELECT * FROM budget_incidents WHERE scope_type = $1 AND scope_id = $2 AND kind = $3 AND window_month = $4",
    )
    .bind(scope_type.as_str())
    .bind(scope_id)
    .bind(kind.as_str())
    .bind(month)
    .fetch_optional(tx.conn())
    .await?;
    let id = match existing.as_ref().map(map).transpose()? {
        Some(old)
            if old.status == IncidentStatus::Resolved
                && old.resolution == Some(IncidentResolution::BudgetRaised)
                && budget > old.budget_cents =>
        {
            crate::engine::db::query(
                "UPDATE budget_incidents SET status = 'open', resolution = NULL, resolved_at = NULL, \
                 spend_cents = $2, budget_cents = $3, created_at = $4 WHERE id = $1",
            )
            .bind(&old.id)
            .bind(spend)
            .bind(budget)
            .bind(stamp(now))
            .execute(tx.conn())
            .await?;
            old.id
        }
        Some(_) => return Ok(None),
        None => {
            let id = new_id();
            crate::engine::db::query(
                "INSERT INTO budget_incidents (id, company_id, scope_type, scope_id, kind, window_month, \
                 spend_cents, budget_cents, status, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'open', $9)",
            )
            .bind(&id)
            .bind(company_id)
            .bind(scope_type.as_str())
            .bind(scope_id)
            .bind(kind.as_str())
            .bind(month)
            .bind(spend)
            .bind(budget)
            .bind(stamp(now))
            .execute(tx.conn())
            .await?;
            id
        }
    };
    let row = crate::engine::db::query("SELECT * FROM budget_incidents WHERE id = $1")
        .bind(&id)
        .fetch_one(tx.conn())
        .await?;
    Ok(Some(map(&row)?))
}

/// Pauses the agents a hard stop covers and cancels their queued runs.
/// Projects have no agents of their own: their stop blocks new checkouts
/// and wakes, and cancels the runs already queued for their tasks (a run
/// under way is stopped by its own budget watch, `runtime/budget.rs`).
async fn stop(
    tx: &mut Tx,
    company_id: &str,
    scope_type: BudgetScope,
    scope_id: &str,
    now: DateTime<Utc>,
) -> Result<Vec<String>> {
    let ids: Vec<(String,)> = match scope_type {
        BudgetScope::Company => {
            crate::engine::db::query_as("SELECT id FROM agents WHERE company_id = $1 AND status NOT IN ('terminated', 'pending_approval')")
                .bind(company_id)
                .fetch_all(tx.conn())
                .await?
        }
        BudgetScope::Agent => vec![(scope_id.to_string(),)],
        BudgetScope::Project => Vec::new(),
    };
    let ts = stamp(now);
    if scope_type == BudgetScope::Project {
        crate::runs::finish::cancel_queued_in(
            tx,
            crate::runs::finish::QueuedOf::Project(scope_id),
            "Project budget hard stop",
            "budget_blocked",
            &ts,
        )
        .await?;
    }
    let mut stopped = Vec::new();
    for (agent_id,) in ids {
        crate::engine::db::query(
            "UPDATE agents SET status = 'paused', pause_reason = 'budget', paused_at = $2, updated_at = $2 \
             WHERE id = $1 AND status NOT IN ('terminated', 'pending_approval')",
        )
        .bind(&agent_id)
        .bind(&ts)
        .execute(tx.conn())
        .await?;
        crate::runs::finish::cancel_queued_of_agent_in(
            tx,
            &agent_id,
            "Budget hard stop",
            "budget_blocked",
            &ts,
        )
        .await?;
        stopped.push(agent_id);
    }
    Ok(stopped)
}

/// Whether new work in this project is blocked by its budget this month.
pub(crate) async fn project_blocked(
    tx: &mut Tx,
    project_id: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let (_, _, month) = month_window(now);
    let row: Option<(String,)> = crate::engine::db::query_as(
        "SELECT id FROM budget_incidents WHERE scope_type = 'project' AND scope_id = $1 AND kind = 'hard' \
         AND window_month = $2 AND status = 'open'",
    )
    .bind(project_id)
    .bind(&month)
    .fetch_optional(tx.conn())
    .await?;
    Ok(row.is_some())
}

pub async fn incidents(
    store: &Store,
    company_id: &str,
    status: Option<&str>,
) -> Result<Vec<BudgetIncident>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM budget_incidents WHERE company_id = $1 AND (status = $2 OR $2 IS NULL) ORDER BY created_at DESC, id DESC",
    )
    .bind(company_id)
    .bind(status)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

fn map(row: &DbRow) -> Result<BudgetIncident> {
    Ok(BudgetIncident {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        scope_type: row.stored("scope_type")?,
        scope_id: row.text("scope_id")?,
        kind: row.stored("kind")?,
        window_month: row.text("window_month")?,
        spend_cents: row.int("spend_cents")?,
        budget_cents: row.int("budget_cents")?,
        status: row.stored("status")?,
        resolution: row.opt_stored("resolution")?,
        created_at: row.text("created_at")?,
        resolved_at: row.opt_text("resolved_at")?,
    })
}
