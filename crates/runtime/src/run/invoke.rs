//! Invoking the adapter: the invocation a plan makes, and one retry with a
//! fresh session when the saved one cannot be resumed.

use std::path::PathBuf;
use std::sync::Arc;

use paperclip_adapters::{Adapter, ErrorCode, Invocation, Outcome, RunSink, Stream};
use paperclip_core::model::HeartbeatRun;
use serde_json::json;

use super::finish::Ended;
use super::prepare::RunPlan;
use crate::live::LiveRun;
use crate::sink::RunSinkImpl;

/// Where a run works and finds its skills.
pub(crate) struct Dirs {
    pub workspace: PathBuf,
    pub skills: PathBuf,
    /// Where tasks' worktrees are made: `<worktrees>/<company>/<task>`,
    /// outside every repository.
    pub worktrees: PathBuf,
}

/// The invocation handed to the adapter; the plan's config and env move in.
pub(crate) fn invocation(
    plan: &mut RunPlan,
    run: &HeartbeatRun,
    prompt: Option<String>,
    live: &LiveRun,
    dirs: &Dirs,
) -> Invocation {
    Invocation {
        run_id: run.id.clone(),
        agent_id: plan.agent.id.clone(),
        agent_name: plan.agent.name.clone(),
        company_id: plan.agent.company_id.clone(),
        config: std::mem::take(&mut plan.config),
        env: std::mem::take(&mut plan.env),
        prompt,
        context: run.context_snapshot.clone(),
        default_cwd: dirs.workspace.clone(),
        cancel: live.cancel.clone(),
        stop_now: live.stop_now.clone(),
        session_id: plan.session.saved.clone(),
        skills_dir: Some(dirs.skills.clone()),
    }
}

/// Invokes the adapter; when it refuses to resume the saved session, says so
/// in the run, and runs once more with a fresh session. Returns the outcome
/// and whether the saved session was rejected.
pub(crate) async fn invoke_with_fresh_retry(
    adapter: &dyn Adapter,
    invocation: Invocation,
    sink: Arc<RunSinkImpl>,
) -> Ended {
    let resumed = invocation.session_id.clone();
    let outcome = adapter.invoke(invocation.clone(), sink.clone()).await;
    let Some(session) = resumed else {
        return kept(outcome);
    };
    if outcome.error_code != Some(ErrorCode::ResumeSessionInvalid)
        || invocation.cancel.is_cancelled()
    {
        return kept(outcome);
    }
    let message =
        format!("the saved session {session} could not be resumed; starting a fresh session");
    sink.log(Stream::System, &format!("{message}\n"));
    let code = ErrorCode::ResumeSessionInvalid.as_str();
    let payload = json!({ "sessionId": session, "errorCode": code, "error": outcome.error });
    sink.event("session.reset", "warn", &message, payload);
    let fresh = Invocation {
        session_id: None,
        ..invocation
    };
    Ended {
        outcome: adapter.invoke(fresh, sink).await,
        rejected: true,
    }
}

fn kept(outcome: Outcome) -> Ended {
    Ended {
        outcome,
        rejected: false,
    }
}
