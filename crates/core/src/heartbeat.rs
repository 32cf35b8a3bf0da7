//! Heartbeat policy (`runtimeConfig.heartbeat`) and the wake rules that
//! decide, without I/O, whether a wake may produce a run.

use serde_json::Value;

use crate::agent::AgentStatus;

/// Where a heartbeat run is in its life. Queued and running runs are live;
/// the other four are final.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Queued,
    Running,
    Succeeded,
    Failed,
    Cancelled,
    TimedOut,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::Succeeded => "succeeded",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::TimedOut => "timed_out",
        }
    }

    pub fn is_live(self) -> bool {
        matches!(self, RunStatus::Queued | RunStatus::Running)
    }
}

/// The `errorCode` of a run the control plane itself ended, before or
/// after its adapter ran, or stopped from outside (an adapter's own codes
/// are `paperclip_adapters::ErrorCode`). Stored and sent as [`as_str`];
/// [`parse`] reads it back, and refuses a value it does not know.
///
/// [`as_str`]: RunErrorCode::as_str
/// [`parse`]: RunErrorCode::parse
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RunErrorCode {
    /// A secret the agent's config references could not be resolved.
    SecretUnavailable,
    /// The adapter rejected the agent's config.
    InvalidConfig,
    /// The server could not prepare or hand off the run (its database or
    /// its log storage failed, the agent was deleted): not the agent's fault.
    SetupFailed,
    /// The run ended but its outcome could not be written.
    OutcomeNotRecorded,
    /// Stopped while it ran: a budget it draws on was reached.
    BudgetExceeded,
    /// An asynchronous run whose callback never came before its deadline
    /// (ends `timed_out`).
    CallbackTimeout,
    /// Left running by a server process that is gone; failed on restart.
    ControlPlaneRestart,
}

impl RunErrorCode {
    pub const ALL: [RunErrorCode; 7] = [
        RunErrorCode::SecretUnavailable,
        RunErrorCode::InvalidConfig,
        RunErrorCode::SetupFailed,
        RunErrorCode::OutcomeNotRecorded,
        RunErrorCode::BudgetExceeded,
        RunErrorCode::CallbackTimeout,
        RunErrorCode::ControlPlaneRestart,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            RunErrorCode::SecretUnavailable => "secret_unavailable",
            RunErrorCode::InvalidConfig => "invalid_config",
            RunErrorCode::SetupFailed => "run_setup_failed",
            RunErrorCode::OutcomeNotRecorded => "outcome_not_recorded",
            RunErrorCode::BudgetExceeded => "budget_exceeded",
            RunErrorCode::CallbackTimeout => "callback_timeout",
            RunErrorCode::ControlPlaneRestart => "control_plane_restart",
        }
    }

    /// The code `text` names; an unknown one is an error, never a default.
    pub fn parse(text: &str) -> Result<RunErrorCode, UnknownRunErrorCode> {
        RunErrorCode::ALL
            .into_iter()
            .find(|code| code.as_str() == text)
            .ok_or_else(|| UnknownRunErrorCode(text.to_string()))
    }
}

impl std::fmt::Display for RunErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RunErrorCode {
    type Err = UnknownRunErrorCode;

    fn from_str(text: &str) -> Result<RunErrorCode, UnknownRunErrorCode> {
        RunErrorCode::parse(text)
    }
}

/// A run `errorCode` that is not a [`RunErrorCode`] (the text it had).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRunErrorCode(pub String);

impl std::fmt::Display for UnknownRunErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown run error code {:?}", self.0)
    }
}

impl std::error::Error for UnknownRunErrorCode {}

/// Where a wake came from.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum WakeSource {
    Timer,
    Assignment,
    OnDemand,
    Automation,
}

impl WakeSource {
    pub const ALL: [WakeSource; 4] = [
        WakeSource::Timer,
        WakeSource::Assignment,
        WakeSource::OnDemand,
        WakeSource::Automation,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WakeSource::Timer => "timer",
            WakeSource::Assignment => "assignment",
            WakeSource::OnDemand => "on_demand",
            WakeSource::Automation => "automation",
        }
    }

    pub fn parse(s: &str) -> Option<WakeSource> {
        WakeSource::ALL.into_iter().find(|w| w.as_str() == s)
    }
}

/// What became of a wake request: `skipped` (with its [`WakeSkipReason`]),
/// or served by a run, `queued` (it made the run) or `coalesced` (folded into
/// one already waiting), then `claimed` when that run starts and
/// `completed`, `failed` or `cancelled` when it ends.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum WakeStatus {
    Queued,
    Coalesced,
    Skipped,
    Claimed,
    Completed,
    Failed,
    Cancelled,
}

impl WakeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            WakeStatus::Queued => "queued",
            WakeStatus::Coalesced => "coalesced",
            WakeStatus::Skipped => "skipped",
            WakeStatus::Claimed => "claimed",
            WakeStatus::Completed => "completed",
            WakeStatus::Failed => "failed",
            WakeStatus::Cancelled => "cancelled",
        }
    }
}

/// Why a wake produced no run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum WakeSkipReason {
    /// Paused by a budget's hard stop.
    BudgetBlocked,
    AgentPaused,
    AgentTerminated,
    /// A hire still waiting for the board.
    AgentPendingApproval,
    /// The heartbeat policy turns this source of wakes off.
    DisabledByPolicy,
    /// A timer wake with nothing to do.
    NoWork,
    /// An agent's own action does not wake it.
    SelfWake,
    /// Agents kept waking each other on the task; the board releases it.
    LoopHeld,
}

impl WakeSkipReason {
    pub fn as_str(self) -> &'static str {
        match self {
            WakeSkipReason::BudgetBlocked => "budget_blocked",
            WakeSkipReason::AgentPaused => "agent_paused",
            WakeSkipReason::AgentTerminated => "agent_terminated",
            WakeSkipReason::AgentPendingApproval => "agent_pending_approval",
            WakeSkipReason::DisabledByPolicy => "disabled_by_policy",
            WakeSkipReason::NoWork => "no_work",
            WakeSkipReason::SelfWake => "self_wake",
            WakeSkipReason::LoopHeld => "loop_held",
        }
    }
}

/// The agent's heartbeat policy with upstream's defaults and clamps applied.
#[derive(Debug, Clone, PartialEq)]
pub struct HeartbeatPolicy {
    /// Timer heartbeats on; other wakes do not depend on it.
    pub enabled: bool,
    /// Seconds between timer heartbeats, at least 30.
    pub interval_sec: u64,
    pub wake_on_assignment: bool,
    pub wake_on_on_demand: bool,
    pub wake_on_automation: bool,
    /// Minimum seconds between the end of one timer run and the next timer wake.
    pub cooldown_sec: u64,
    /// Runs of this agent that may execute at once, 1..=50. Default 1, so
    /// wakes that arrive during a run coalesce into one follow-up run.
    pub max_concurrent_runs: u32,
    /// Timer wakes run even with nothing to do (a planner on a schedule).
    /// Off by default: an idle timer wake is recorded as skipped, `no_work`.
    pub wake_when_idle: bool,
}

pub const MIN_INTERVAL_SEC: u64 = 30;

impl HeartbeatPolicy {
    pub fn from_runtime_config(runtime_config: &Value) -> HeartbeatPolicy {
        let hb = runtime_config
            .get("heartbeat")
            .cloned()
            .unwrap_or(Value::Null);
        let flag =
            |key: &str, default: bool| hb.get(key).and_then(Value::as_bool).unwrap_or(default);
        let num = |key: &str| hb.get(key).and_then(Value::as_f64);
        HeartbeatPolicy {
            enabled: flag("enabled", false),
            interval_sec: num("intervalSec")
                .map_or(300, |n| n.max(0.0) as u64)
                .max(MIN_INTERVAL_SEC),
            wake_on_assignment: flag("wakeOnAssignment", true),
            wake_on_on_demand: flag("wakeOnOnDemand", true),
            wake_on_automation: flag("wakeOnAutomation", true),
            cooldown_sec: num("cooldownSec").map_or(0, |n| n.max(0.0) as u64),
            max_concurrent_runs: num("maxConcurrentRuns").map_or(1, |n| n.clamp(1.0, 50.0) as u32),
            wake_when_idle: flag("wakeWhenIdle", false),
        }
    }

    pub fn allows(&self, source: WakeSource) -> bool {
        match source {
            WakeSource::Timer => self.enabled,
            WakeSource::Assignment => self.wake_on_assignment,
            WakeSource::OnDemand => self.wake_on_on_demand,
            WakeSource::Automation => self.wake_on_automation,
        }
    }
}

/// Whether a timer wake needs the agent's inbox looked at: only then is
/// "nothing to do" a reason to skip it.
pub fn wants_work_check(policy: &HeartbeatPolicy, source: WakeSource) -> bool {
    source == WakeSource::Timer && !policy.wake_when_idle
}

/// Why a wake produces no run, if it does not. `idle` says the agent was
/// found with nothing to act on (checked only where [`wants_work_check`]).
pub fn skip_reason(
    status: AgentStatus,
    pause_reason: Option<&str>,
    policy: &HeartbeatPolicy,
    source: WakeSource,
    idle: bool,
) -> Option<WakeSkipReason> {
    match status {
        AgentStatus::Paused if pause_reason == Some("budget") => {
            Some(WakeSkipReason::BudgetBlocked)
        }
        AgentStatus::Paused => Some(WakeSkipReason::AgentPaused),
        AgentStatus::Terminated => Some(WakeSkipReason::AgentTerminated),
        AgentStatus::PendingApproval => Some(WakeSkipReason::AgentPendingApproval),
        _ if !policy.allows(source) => Some(WakeSkipReason::DisabledByPolicy),
        _ if idle && wants_work_check(policy, source) => Some(WakeSkipReason::NoWork),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn run_error_codes_round_trip_and_unknown_ones_are_refused() {
        // Each code is stored and sent as its text: the text of every one is
        // fixed (the wire carries it), distinct, and parses back to it.
        let texts: Vec<&str> = RunErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            texts,
            [
                "secret_unavailable",
                "invalid_config",
                "run_setup_failed",
                "outcome_not_recorded",
                "budget_exceeded",
                "callback_timeout",
                "control_plane_restart",
            ]
        );
        for code in RunErrorCode::ALL {
            assert_eq!(RunErrorCode::parse(code.as_str()), Ok(code));
            assert_eq!(code.as_str().parse::<RunErrorCode>(), Ok(code));
            assert_eq!(code.to_string(), code.as_str());
        }
        for unknown in [
            "",
            "RUN_SETUP_FAILED",
            "run_setup_failed ",
            "nonzero_exit",
            "setup_failed",
        ] {
            assert_eq!(
                unknown.parse::<RunErrorCode>(),
                Err(UnknownRunErrorCode(unknown.to_string()))
            );
        }
    }

    #[test]
    fn defaults_and_clamps() {
        let p = HeartbeatPolicy::from_runtime_config(&json!({}));
        assert!(!p.enabled && p.wake_on_assignment && p.wake_on_on_demand);
        assert_eq!(p.max_concurrent_runs, 1);
        assert_eq!(p.interval_sec, 300);
        let p = HeartbeatPolicy::from_runtime_config(
            &json!({ "heartbeat": { "enabled": true, "intervalSec": 5, "maxConcurrentRuns": 500 } }),
        );
        assert_eq!(p.interval_sec, MIN_INTERVAL_SEC);
        assert_eq!(p.max_concurrent_runs, 50);
        let p = HeartbeatPolicy::from_runtime_config(
            &json!({ "heartbeat": { "maxConcurrentRuns": 0 } }),
        );
        assert_eq!(p.max_concurrent_runs, 1);
    }

    #[test]
    fn idle_timer_wakes_are_skipped_unless_the_agent_wants_them() {
        let on = json!({ "heartbeat": { "enabled": true } });
        let p = HeartbeatPolicy::from_runtime_config(&on);
        assert_eq!(
            skip_reason(AgentStatus::Idle, None, &p, WakeSource::Timer, true),
            Some(WakeSkipReason::NoWork)
        );
        assert_eq!(
            skip_reason(AgentStatus::Idle, None, &p, WakeSource::Timer, false),
            None
        );
        // Only timer wakes are judged by the inbox: a wake with a cause runs.
        assert_eq!(
            skip_reason(AgentStatus::Idle, None, &p, WakeSource::OnDemand, true),
            None
        );
        let planner = HeartbeatPolicy::from_runtime_config(
            &json!({ "heartbeat": { "enabled": true, "wakeWhenIdle": true } }),
        );
        assert!(!wants_work_check(&planner, WakeSource::Timer));
        assert_eq!(
            skip_reason(AgentStatus::Idle, None, &planner, WakeSource::Timer, true),
            None
        );
    }

    #[test]
    fn paused_terminated_and_disabled_agents_get_no_runs() {
        let p = HeartbeatPolicy::from_runtime_config(
            &json!({ "heartbeat": { "wakeOnAssignment": false } }),
        );
        assert_eq!(
            skip_reason(AgentStatus::Paused, None, &p, WakeSource::OnDemand, false),
            Some(WakeSkipReason::AgentPaused)
        );
        assert_eq!(
            skip_reason(
                AgentStatus::Terminated,
                None,
                &p,
                WakeSource::OnDemand,
                false
            ),
            Some(WakeSkipReason::AgentTerminated)
        );
        assert_eq!(
            skip_reason(AgentStatus::Idle, None, &p, WakeSource::Assignment, false),
            Some(WakeSkipReason::DisabledByPolicy)
        );
        assert_eq!(
            skip_reason(AgentStatus::Idle, None, &p, WakeSource::Timer, false),
            Some(WakeSkipReason::DisabledByPolicy)
        );
        assert_eq!(
            skip_reason(AgentStatus::Running, None, &p, WakeSource::OnDemand, false),
            None
        );
        assert_eq!(
            skip_reason(AgentStatus::Error, None, &p, WakeSource::OnDemand, false),
            None
        );
        assert_eq!(
            skip_reason(
                AgentStatus::Paused,
                Some("budget"),
                &p,
                WakeSource::OnDemand,
                false
            ),
            Some(WakeSkipReason::BudgetBlocked)
        );
    }
}
