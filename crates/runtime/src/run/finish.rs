//! How a run ends, as its row records it: a pure mapping from what the
//! adapter reported, the sink's totals and a stop to a store `Finish`.

use paperclip_adapters::{ErrorCode, Outcome, OutcomeStatus};
use paperclip_core::heartbeat::{RunErrorCode, RunStatus};
use paperclip_store::runs::{Finish, SessionUpdate};

use crate::redact::Redactor;
use crate::sink::Stats;

/// What the adapter reported, and whether it rejected the saved session
/// (the run then went on with a fresh one).
pub(crate) struct Ended {
    pub outcome: Outcome,
    pub rejected: bool,
}

/// A stop of the run from outside, if any: its reason and the code it asked
/// for (a budget), when not a plain cancel.
#[derive(Default)]
pub(crate) struct Stop {
    pub reason: Option<String>,
    pub code: Option<RunErrorCode>,
}

/// What the plan contributes to the run's end.
pub(crate) struct FinishPlan<'a> {
    pub adapter_type: &'a str,
    /// The task the session is kept for (`None`: no session is kept).
    pub task_key: Option<&'a str>,
    pub session_before: Option<&'a str>,
    pub log_store: &'a str,
    pub redactor: &'a Redactor,
}

/// The run's end; `None` while it is pending (a callback finishes it).
pub(crate) fn finish(ended: Ended, stats: Stats, stop: Stop, plan: &FinishPlan) -> Option<Finish> {
    let Ended { outcome, rejected } = ended;
    let status = run_status(outcome.status)?;
    let cancelled = outcome.status == OutcomeStatus::Cancelled;
    let error = match (cancelled, stop.reason) {
        (true, Some(reason)) => Some(reason),
        _ => outcome.error.as_deref().map(|e| plan.redactor.apply(e)),
    };
    // A stop with a code of its own (a budget) is not a plain cancel.
    let error_code = match (cancelled, stop.code) {
        (true, Some(code)) => Some(code.as_str().to_string()),
        _ => outcome.error_code.map(|c| c.as_str().to_string()),
    };
    Some(Finish {
        status,
        error,
        error_code,
        exit_code: outcome.exit_code.map(i64::from),
        signal: outcome.signal.clone(),
        usage: outcome.usage.as_ref().map(|u| plan.redactor.apply_json(u)),
        result: outcome.result.as_ref().map(|r| plan.redactor.apply_json(r)),
        stdout_excerpt: stats.stdout_excerpt,
        stderr_excerpt: stats.stderr_excerpt,
        log_store: Some(plan.log_store.to_string()),
        log_ref: stats.log_ref,
        log_bytes: stats.log_bytes as i64,
        session_id_before: plan.session_before.map(str::to_string),
        session_id_after: outcome.session_id.clone(),
        session: session_update(&outcome, rejected, plan),
    })
}

fn run_status(status: OutcomeStatus) -> Option<RunStatus> {
    match status {
        OutcomeStatus::Succeeded => Some(RunStatus::Succeeded),
        OutcomeStatus::Failed => Some(RunStatus::Failed),
        OutcomeStatus::Cancelled => Some(RunStatus::Cancelled),
        OutcomeStatus::TimedOut => Some(RunStatus::TimedOut),
        OutcomeStatus::Pending => None,
    }
}

/// The task's session after the run: kept, or forgotten when it cannot be
/// resumed. An overflowed session fails every resume the same way, so the
/// next run starts fresh; the row remembers why, for its prompt.
fn session_update(outcome: &Outcome, rejected: bool, plan: &FinishPlan) -> Option<SessionUpdate> {
    let task_key = plan.task_key?;
    let overflowed = outcome.error_code == Some(ErrorCode::ContextWindowExceeded);
    let forget =
        rejected || overflowed || outcome.error_code == Some(ErrorCode::ResumeSessionInvalid);
    (outcome.session_id.is_some() || forget).then(|| SessionUpdate {
        adapter_type: plan.adapter_type.to_string(),
        task_key: task_key.to_string(),
        session_id: outcome.session_id.clone().filter(|_| !overflowed),
        error: overflowed.then(|| crate::notes::OVERFLOWED.as_str().to_string()),
    })
}

/// A run that failed before its adapter ran.
fn failed(code: &str, error: String) -> Finish {
    Finish {
        status: RunStatus::Failed,
        error: Some(error),
        error_code: Some(code.to_string()),
        ..Finish::new(RunStatus::Failed)
    }
}

/// A run failed before its adapter ran, with one of the adapters' codes.
pub(crate) fn adapter_failed(code: ErrorCode, error: String) -> Finish {
    failed(code.as_str(), error)
}

/// A run the control plane failed (see [`RunErrorCode`]).
pub(crate) fn failed_by(code: RunErrorCode, error: String) -> Finish {
    failed(code.as_str(), error)
}

/// A run stopped before its process could start.
pub(crate) fn stopped_before_start(reason: Option<String>) -> Finish {
    Finish {
        status: RunStatus::Cancelled,
        error: Some(reason.unwrap_or_else(|| "cancelled before start".into())),
        error_code: Some(ErrorCode::Cancelled.as_str().to_string()),
        ..Finish::new(RunStatus::Failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SECRET: &str = "sk-TOPSECRET-1";

    fn outcome(status: OutcomeStatus, code: Option<ErrorCode>) -> Outcome {
        Outcome {
            status,
            exit_code: Some(1),
            signal: None,
            error: Some(format!("failed with {SECRET}")),
            error_code: code,
            usage: Some(json!({ "apiKey": SECRET })),
            result: None,
            session_id: Some("s-2".into()),
        }
    }

    fn stats() -> Stats {
        Stats {
            stdout_excerpt: Some("some output".into()),
            stderr_excerpt: None,
            log_ref: Some("r-1".into()),
            log_bytes: 42,
        }
    }

    fn end(outcome: Outcome, stop: Stop, task_key: Option<&str>) -> Option<Finish> {
        let redactor = Redactor::new([SECRET.to_string()]);
        let plan = FinishPlan {
            adapter_type: "test-adapter",
            task_key,
            session_before: Some("s-1"),
            log_store: "test-store",
            redactor: &redactor,
        };
        let ended = Ended {
            outcome,
            rejected: false,
        };
        finish(ended, stats(), stop, &plan)
    }

    #[test]
    fn a_failure_keeps_the_adapters_code_redacted_and_the_new_session() {
        let code = Some(ErrorCode::NonzeroExit);
        let done = end(
            outcome(OutcomeStatus::Failed, code),
            Stop::default(),
            Some("t-1"),
        );
        let done = done.expect("not pending");
        assert_eq!(done.status, RunStatus::Failed);
        assert_eq!(
            done.error_code.as_deref(),
            Some(ErrorCode::NonzeroExit.as_str())
        );
        assert!(!done.error.unwrap().contains(SECRET));
        assert!(!done.usage.unwrap().to_string().contains(SECRET));
        assert_eq!((done.exit_code, done.log_bytes), (Some(1), 42));
        assert_eq!(done.session_id_before.as_deref(), Some("s-1"));
        let session = done.session.expect("session kept");
        assert_eq!(session.session_id.as_deref(), Some("s-2"));
        assert_eq!(session.error, None);
    }

    #[test]
    fn a_stop_with_a_code_names_its_reason_and_code() {
        let stop = Stop {
            reason: Some("Budget reached".into()),
            code: Some(RunErrorCode::BudgetExceeded),
        };
        let code = Some(ErrorCode::Cancelled);
        let done = end(outcome(OutcomeStatus::Cancelled, code), stop, None).unwrap();
        assert_eq!(done.status, RunStatus::Cancelled);
        assert_eq!(done.error.as_deref(), Some("Budget reached"));
        assert_eq!(
            done.error_code.as_deref(),
            Some(RunErrorCode::BudgetExceeded.as_str())
        );
        assert!(done.session.is_none(), "no task, no session");
    }

    #[test]
    fn an_overflowed_session_is_forgotten_with_its_reason() {
        let code = Some(ErrorCode::ContextWindowExceeded);
        let done = end(
            outcome(OutcomeStatus::Failed, code),
            Stop::default(),
            Some("t-1"),
        );
        let session = done.unwrap().session.expect("session forgotten");
        assert_eq!(session.session_id, None);
        assert_eq!(
            session.error.as_deref(),
            Some(crate::notes::OVERFLOWED.as_str())
        );
    }

    #[test]
    fn a_pending_run_has_no_end_yet() {
        let pending = outcome(OutcomeStatus::Pending, None);
        assert!(end(pending, Stop::default(), None).is_none());
    }

    #[test]
    fn a_stop_before_start_is_a_cancel() {
        let done = stopped_before_start(None);
        assert_eq!(done.status, RunStatus::Cancelled);
        assert_eq!(
            done.error_code.as_deref(),
            Some(ErrorCode::Cancelled.as_str())
        );
        let code = RunErrorCode::InvalidConfig;
        assert_eq!(
            failed_by(code, "bad config".into()).error_code.as_deref(),
            Some(code.as_str())
        );
    }
}
