//! What a running run may still spend. The enforcement in [`crate::money::budgets`]
//! acts when a cost event is recorded, after the spend; a coding CLI's run
//! records its cost once, at its end. The runtime reads these limits when a
//! run starts and again when the run's streamed cost reaches one, and stops
//! the run there; the cost event recorded at the run's end then applies the
//! usual consequences (incident, pause, activity) through the same rules.

use chrono::{DateTime, Utc};
use paperclip_core::budget::{month_window, BudgetScope};

use crate::engine::row::RowExt;
use crate::money::spend::{spend_on, Scope};
use crate::{Result, Store};

/// A monthly budget a run spends against, as it stood when read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunLimit {
    pub scope_type: BudgetScope,
    pub scope_id: String,
    pub budget_cents: i64,
    /// Recorded spend of the scope this UTC month (other runs' included).
    pub spent_cents: i64,
}

impl RunLimit {
    /// What is left before the hard stop (100 %); never negative.
    pub fn remaining_cents(&self) -> i64 {
        (self.budget_cents - self.spent_cents).max(0)
    }
}

/// The hard limits a run of `agent_id` (on a task of `project_id`) spends
/// against this month. A scope without a budget is left out, and so is one
/// whose stop the board overrode this month (resuming an agent paused for
/// budget): [`crate::money::budgets`] does not stop those again either. Reads only,
/// outside any transaction: at most five queries, whatever the scopes.
pub async fn run_limits(
    store: &Store,
    company_id: &str,
    agent_id: &str,
    project_id: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Vec<RunLimit>> {
    let (start, end, month) = month_window(now);
    let row = crate::engine::db::query(
        "SELECT COALESCE((SELECT budget_monthly_cents FROM companies WHERE id = $1), 0) AS company, \
         COALESCE((SELECT budget_monthly_cents FROM agents WHERE id = $2 AND company_id = $1), 0) AS agent, \
         COALESCE((SELECT budget_monthly_cents FROM projects WHERE id = $3 AND company_id = $1), 0) AS project",
    )
    .bind(company_id)
    .bind(agent_id)
    .bind(project_id)
    .fetch_one(store.pool())
    .await?;
    let budget = |col: &str| -> Result<i64> { Ok(row.int(col)?) };
    let mut scopes: Vec<(BudgetScope, String, i64)> = Vec::new();
    scopes.push((BudgetScope::Agent, agent_id.to_string(), budget("agent")?));
    if let Some(project) = project_id {
        scopes.push((
            BudgetScope::Project,
            project.to_string(),
            budget("project")?,
        ));
    }
    scopes.push((
        BudgetScope::Company,
        company_id.to_string(),
        budget("company")?,
    ));
    scopes.retain(|(_, _, cents)| *cents > 0);
    if scopes.is_empty() {
        return Ok(Vec::new());
    }
    let overridden = crate::engine::db::query(
        "SELECT scope_type, scope_id FROM budget_incidents WHERE company_id = $1 AND kind = 'hard' \
         AND window_month = $2 AND resolution = 'override'",
    )
    .bind(company_id)
    .bind(&month)
    .fetch_all(store.pool())
    .await?
    .iter()
    .map(|r| Ok((r.stored("scope_type")?, r.text("scope_id")?)))
    .collect::<Result<Vec<(BudgetScope, String)>>>()?;
    let mut limits = Vec::new();
    for (scope_type, scope_id, budget_cents) in scopes {
        if overridden
            .iter()
            .any(|(t, id)| *t == scope_type && *id == scope_id)
        {
            continue;
        }
        let scope = match scope_type {
            BudgetScope::Agent => Scope::Agent(&scope_id),
            BudgetScope::Project => Scope::Project(&scope_id),
            BudgetScope::Company => Scope::Company,
        };
        let spent_cents = spend_on(store.pool(), company_id, scope, &start, &end).await?;
        limits.push(RunLimit {
            scope_type,
            scope_id,
            budget_cents,
            spent_cents,
        });
    }
    Ok(limits)
}
