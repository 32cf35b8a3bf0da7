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
use crate::{new_id, Error, Result, Store, StoreEvent, Tx};

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
fn scope_entity(scope_type: BudgetScope) -> EntityType {
    match scope_type {
        BudgetScope::Company => EntityType::Company,
        BudgetScope::Agent => EntityType::Agent,
        BudgetScope::Project => EntityType::Project,
    }
}

/// The scope's spend query: the company's, or one agent's or project's.
fn spend_scope(scope_type: BudgetScope, scope_id: &str) -> Scope<'_> {
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
/// Projects have no agents of their own: their stop blocks new checkouts.
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
