//! Upstream's heartbeat-run keys for things we do one way only, answered
//! with the value that says which way (issue 40: an unchanged client of the
//! original reads them on every run).

use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunUpstreamKeys {
    /// Upstream's `legacy` mode: the server invokes the agent's adapter for
    /// the run itself (the only mode we have).
    pub runtime_mode: &'static str,
    /// Why that mode: `direct_adapter`, always.
    pub runtime_mode_reason: &'static str,
    pub runtime_mode_resolver_version: Option<String>,
    pub runtime_mode_resolved_at: Option<String>,
    /// We do not hash run logs: null.
    pub log_sha256: Option<String>,
    /// A run here is never mirrored from another system.
    pub external_run_id: Option<String>,
    /// Upstream's retry counters: a retry here is a new run linked by
    /// `retryOfRunId`, so none are ever scheduled on the run itself.
    pub process_loss_retry_count: i64,
    pub scheduled_retry_at: Option<String>,
    pub scheduled_retry_attempt: i64,
    pub scheduled_retry_reason: Option<String>,
    /// Upstream's suggested next step for a stuck run: none here.
    pub next_action: Option<String>,
}

impl Default for RunUpstreamKeys {
    fn default() -> Self {
        RunUpstreamKeys {
            runtime_mode: "legacy",
            runtime_mode_reason: "direct_adapter",
            runtime_mode_resolver_version: None,
            runtime_mode_resolved_at: None,
            log_sha256: None,
            external_run_id: None,
            process_loss_retry_count: 0,
            scheduled_retry_at: None,
            scheduled_retry_attempt: 0,
            scheduled_retry_reason: None,
            next_action: None,
        }
    }
}
