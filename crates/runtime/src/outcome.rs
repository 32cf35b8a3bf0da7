//! Where a run's end goes besides its row: an asynchronous completion, usage
//! as a cost event.

use paperclip_core::actor::Actor;
use paperclip_core::model::HeartbeatRun;
use paperclip_store::runs::{self, Finish};
use serde_json::{json, Value};

use crate::Runtime;

impl Runtime {
    /// Completes a run that an HTTP agent finished asynchronously.
    pub async fn complete_async(
        &self,
        run_id: &str,
        finish: Finish,
    ) -> paperclip_store::Result<HeartbeatRun> {
        match runs::finish(&self.inner.store, run_id, finish).await? {
            Some(run) => {
                self.publish_run(&run, "heartbeat.run.finished");
                self.publish_agent(&run.agent_id).await;
                self.report_usage(&run).await;
                self.kick();
                Ok(run)
            }
            None => {
                let run = runs::get(&self.inner.store, run_id).await?;
                Err(paperclip_store::Error::conflict(
                    "Run is not active",
                    Some(json!({ "runId": run.id, "status": run.status })),
                ))
            }
        }
    }

    /// A run's reported usage becomes a cost event of its agent and issue
    /// (which also enforces budgets). Usage without tokens or price is ignored.
    /// A coding CLI's usage is its own final totals, or, for a run stopped
    /// before it printed them (a budget stop), the sum its turns streamed:
    /// either way one event per run.
    pub(crate) async fn report_usage(&self, run: &HeartbeatRun) {
        let Some(usage) = &run.usage_json else { return };
        let int = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| usage.get(*k).and_then(Value::as_u64))
        };
        let text = |k: &str| usage.get(k).and_then(Value::as_str).map(str::to_string);
        // Upstream's ledger reading: an adapter's `api`/`subscription`
        // or a ledger word; anything else is `unknown`.
        let billing_type = paperclip_core::billing::BillingType::from_report(
            usage.get("billingType").and_then(Value::as_str),
        );
        let priced = int(&["costCents"]).or_else(|| {
            usage
                .get("costUsd")
                .and_then(Value::as_f64)
                .map(paperclip_adapters::usd_to_cents)
        });
        let cost_cents = billing_type.billed_cents(priced);
        let input = int(&["inputTokens", "input_tokens"]);
        let output = int(&["outputTokens", "output_tokens"]);
        if priced.is_none() && input.is_none() && output.is_none() {
            return;
        }
        let store = &self.inner.store;
        let issue = match &run.issue_id {
            Some(id) => paperclip_store::issues::get(store, id).await.ok(),
            None => None,
        };
        let event = paperclip_core::input::NewCostEvent {
            agent_id: Some(run.agent_id.clone()),
            issue_id: run.issue_id.clone(),
            project_id: issue.as_ref().and_then(|i| i.project_id.clone()),
            goal_id: issue.as_ref().and_then(|i| i.goal_id.clone()),
            heartbeat_run_id: Some(run.id.clone()),
            billing_code: None,
            billing_type: Some(billing_type),
            provider: text("provider"),
            model: text("model"),
            input_tokens: input,
            cached_input_tokens: int(&["cachedInputTokens", "cached_input_tokens"]),
            output_tokens: output,
            cost_cents,
            occurred_at: None,
        };
        if let Err(err) = paperclip_store::money::costs::record(
            store,
            &Actor::system(),
            &run.company_id,
            event,
            None,
        )
        .await
        {
            tracing::warn!(run = %run.id, error = %err, "recording a run's usage as a cost failed");
        }
    }
}
