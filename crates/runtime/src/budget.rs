//! Budgets enforced while a run goes. A coding CLI reports its cumulative
//! usage as it works ([`paperclip_adapters::RunSink::usage`]); each report
//! is checked against what the run may still spend: the agent's, its task's
//! project's and its company's monthly budgets less this month's recorded
//! spend, and the agent's optional per-run cap
//! (`runtimeConfig.maxCostCentsPerRun`). The allowance is read once when the
//! run starts; only a report that reaches it goes back to the store (other
//! runs may have spent meanwhile, the board may have raised a budget), and a
//! limit still reached then stops the run through the live-run owner with
//! `budget_exceeded`. The run's cost is recorded once, at its end, from the
//! usage it streamed; that cost event applies the budget's consequences
//! (incident, pause, activity) as any other does.

use std::sync::{Arc, Mutex};

use chrono::Utc;
use paperclip_adapters::UsageSoFar;
use paperclip_core::heartbeat::RunErrorCode;
use paperclip_core::model::{Agent, HeartbeatRun, Issue};
use paperclip_store::runs::budget::{run_limits, RunLimit};
use paperclip_store::Store;
use serde_json::Value;

use crate::live::LiveRuns;

pub(crate) struct RunBudget {
    store: Store,
    live: Arc<LiveRuns>,
    run_id: String,
    company_id: String,
    agent_id: String,
    project_id: Option<String>,
    per_run_cap: Option<u64>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The limits as last read; `None` when reading them failed, so the
    /// next priced report reads them again instead of running unchecked.
    limits: Option<Vec<RunLimit>>,
    /// The run's latest priced cost, in cents.
    cents: u64,
    /// A store re-check is in flight; reports meanwhile only update `cents`.
    checking: bool,
    stopped: bool,
}

/// Which limit a cost reaches, worded for the run's error.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reached {
    pub scope: &'static str,
    pub message: String,
}

impl RunBudget {
    /// Reads the run's limits (a handful of queries, once per run).
    pub(crate) async fn start(
        store: &Store,
        live: &Arc<LiveRuns>,
        run: &HeartbeatRun,
        agent: &Agent,
        issue: Option<&Issue>,
    ) -> RunBudget {
        let project_id = issue.and_then(|i| i.project_id.clone());
        let limits = match run_limits(
            store,
            &run.company_id,
            &agent.id,
            project_id.as_deref(),
            Utc::now(),
        )
        .await
        {
            Ok(limits) => Some(limits),
            Err(err) => {
                tracing::warn!(run = %run.id, error = %err, "reading the run's budgets failed; retried on its first cost");
                None
            }
        };
        RunBudget {
            store: store.clone(),
            live: live.clone(),
            run_id: run.id.clone(),
            company_id: run.company_id.clone(),
            agent_id: agent.id.clone(),
            project_id,
            per_run_cap: per_run_cap(&agent.runtime_config),
            state: Mutex::new(State {
                limits,
                ..State::default()
            }),
        }
    }

    /// One usage report. Cheap unless the cost reaches a limit; a model
    /// without a price cannot reach one (its tokens are recorded at the end).
    pub(crate) fn observe(self: &Arc<Self>, usage: &UsageSoFar) {
        let Some(cents) = usage.cost_cents() else {
            return;
        };
        let mut state = self.state.lock().expect("budget lock");
        state.cents = state.cents.max(cents);
        // A run that has reported its end is over either way; its cost
        // event (recorded next) applies the monthly budgets' stop.
        if state.stopped || usage.finished {
            return;
        }
        // The per-run cap needs no store: it is this run's own figure.
        if let Some(reached) = cap_reached(self.per_run_cap, state.cents) {
            state.stopped = true;
            drop(state);
            self.stop(reached);
            return;
        }
        let suspect = match &state.limits {
            Some(limits) => first_reached(limits, state.cents).is_some(),
            None => true,
        };
        if !suspect || state.checking {
            return;
        }
        state.checking = true;
        drop(state);
        let this = self.clone();
        tokio::spawn(async move { this.recheck().await });
    }

    /// Reads the limits again and stops the run if its cost still reaches
    /// one; reports that arrived meanwhile are judged on the fresh figures.
    async fn recheck(self: Arc<Self>) {
        let fresh = run_limits(
            &self.store,
            &self.company_id,
            &self.agent_id,
            self.project_id.as_deref(),
            Utc::now(),
        )
        .await;
        let reached = {
            let mut state = self.state.lock().expect("budget lock");
            state.checking = false;
            match fresh {
                Ok(limits) => {
                    let reached = first_reached(&limits, state.cents);
                    state.limits = Some(limits);
                    state.stopped |= reached.is_some();
                    reached
                }
                Err(err) => {
                    tracing::warn!(run = %self.run_id, error = %err, "re-reading the run's budgets failed");
                    None
                }
            }
        };
        if let Some(reached) = reached {
            self.stop(reached);
        }
    }

    fn stop(&self, reached: Reached) {
        tracing::info!(run = %self.run_id, scope = reached.scope, "stopping a run at its budget");
        self.live.stop_with_code(
            &self.run_id,
            &reached.message,
            Some(RunErrorCode::BudgetExceeded),
        );
    }
}

/// `runtimeConfig.maxCostCentsPerRun`: a positive whole number of cents;
/// anything else sets no cap (the config is free-form, read leniently).
pub(crate) fn per_run_cap(runtime_config: &Value) -> Option<u64> {
    runtime_config
        .get("maxCostCentsPerRun")
        .and_then(Value::as_f64)
        .filter(|c| c.is_finite() && *c >= 1.0)
        .map(|c| c.floor() as u64)
}

fn cap_reached(cap: Option<u64>, cents: u64) -> Option<Reached> {
    let cap = cap?;
    (cents >= cap).then(|| Reached {
        scope: "per-run",
        message: format!(
            "Budget exceeded: this run's cost {} reached the agent's per-run cap of {} (runtimeConfig.maxCostCentsPerRun)",
            usd(cents as i64),
            usd(cap as i64)
        ),
    })
}

/// The first monthly limit (agent, project, company) that this run's cost,
/// added to the month's recorded spend, reaches: the 100 % that
/// `budgets::enforce_in` stops at.
pub(crate) fn first_reached(limits: &[RunLimit], run_cents: u64) -> Option<Reached> {
    let run = i64::try_from(run_cents).unwrap_or(i64::MAX);
    limits.iter().find_map(|l| {
        let total = l.spent_cents.saturating_add(run);
        (paperclip_core::budget::level(total, l.budget_cents)
            == paperclip_core::budget::Level::Hard)
            .then(|| Reached {
                scope: l.scope_type.as_str(),
                message: format!(
                    "Budget exceeded: the {} monthly budget of {} is reached ({} spent this month before this run + {} by this run)",
                    l.scope_type,
                    usd(l.budget_cents),
                    usd(l.spent_cents),
                    usd(run)
                ),
            })
    })
}

fn usd(cents: i64) -> String {
    format!("${}.{:02}", cents / 100, cents % 100)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limit(scope_type: &'static str, budget: i64, spent: i64) -> RunLimit {
        use paperclip_core::stored::Stored;
        let scope_type = paperclip_core::budget::BudgetScope::from_stored(scope_type).unwrap();
        RunLimit {
            scope_type,
            scope_id: "x".into(),
            budget_cents: budget,
            spent_cents: spent,
        }
    }

    #[test]
    fn a_limit_is_reached_at_its_hard_threshold_counting_this_run() {
        let limits = [limit("agent", 50, 10), limit("company", 1000, 900)];
        assert_eq!(first_reached(&limits, 39), None);
        let at = first_reached(&limits, 40).unwrap();
        assert_eq!(at.scope, "agent");
        assert_eq!(
            at.message,
            "Budget exceeded: the agent monthly budget of $0.50 is reached ($0.10 spent this month before this run + $0.40 by this run)"
        );
        let company = first_reached(&[limit("company", 1000, 990)], 10).unwrap();
        assert_eq!(company.scope, "company");
        assert_eq!(first_reached(&[], u64::MAX), None);
    }

    #[test]
    fn the_per_run_cap_is_read_leniently() {
        assert_eq!(per_run_cap(&json!({ "maxCostCentsPerRun": 25 })), Some(25));
        assert_eq!(per_run_cap(&json!({ "maxCostCentsPerRun": 2.9 })), Some(2));
        for none in [
            json!({}),
            json!({ "maxCostCentsPerRun": 0 }),
            json!({ "maxCostCentsPerRun": -4 }),
            json!({ "maxCostCentsPerRun": "10" }),
        ] {
            assert_eq!(per_run_cap(&none), None, "{none}");
        }
        assert!(cap_reached(Some(25), 24).is_none());
        let at = cap_reached(Some(25), 31).unwrap();
        assert_eq!(at.scope, "per-run");
        assert!(
            at.message.contains("$0.31") && at.message.contains("$0.25"),
            "{}",
            at.message
        );
    }
}
