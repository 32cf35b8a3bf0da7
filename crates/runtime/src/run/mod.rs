//! A run as a pipeline: [`prepare`] loads and checks it into a plan,
//! [`invoke`] hands it to its adapter, [`finish`] maps how it ended to what
//! its row records. [`prompt`], [`secrets`], [`env`] and [`wake`] are the
//! plan's parts.

mod env;
pub(crate) mod finish;
mod invoke;
mod prepare;
pub(crate) mod prompt;
mod secrets;
mod wake;
mod workspace;
mod workspace_end;
pub(crate) mod workspace_ops;
mod workspace_setup;

use anyhow::Context;
use std::collections::BTreeMap;
use std::sync::Arc;

use paperclip_adapters::Adapter;
use paperclip_core::heartbeat::{RunErrorCode, RunStatus};
use paperclip_core::model::HeartbeatRun;
use paperclip_store::runs::Finish;
use paperclip_store::Store;
use tracing::field::Empty;
use tracing::Instrument;

use crate::live::LiveRun;
use crate::sink::{RunSinkImpl, SinkDeps};
use crate::tokens::RunTokens;
use crate::vault::Vault;
use finish::{FinishPlan, Stop};
pub(crate) use invoke::Dirs;
use prepare::{Prepared, RunPlan};

/// What a run is driven with.
pub(crate) struct RunDeps<'a> {
    pub store: &'a Store,
    pub adapters: &'a BTreeMap<&'static str, Arc<dyn Adapter>>,
    pub vault: &'a Vault,
    pub tokens: &'a RunTokens,
    /// Base URL agents call back on (`PAPERCLIP_API_URL`).
    pub api_url: &'a str,
    pub sink: SinkDeps,
    pub dirs: Dirs,
    /// Git for execution workspaces, serialized per repository.
    pub workspaces: &'a crate::workspace::Workspaces,
}

/// Drives a claimed run to its end; `Ok(None)` when it continues
/// asynchronously (a callback finishes it). An error is the server's.
///
/// The run is one tracing span (exported over OTLP when configured) with
/// its phases as children; only ids, the adapter type and the status go in
/// it, never the prompt, the env or the output.
pub(crate) async fn drive(
    deps: &RunDeps<'_>,
    run: &HeartbeatRun,
    live: &LiveRun,
) -> anyhow::Result<Option<Finish>> {
    let span = tracing::info_span!(
        "run",
        otel.status_code = Empty,
        paperclip.run_id = %run.id,
        paperclip.agent_id = %run.agent_id,
        paperclip.company_id = %run.company_id,
        paperclip.invocation_source = %run.invocation_source,
        paperclip.adapter_type = Empty,
        paperclip.run_status = Empty,
    );
    let ended = drive_in(deps, run, live, &span)
        .instrument(span.clone())
        .await;
    match &ended {
        Ok(Some(finish)) => {
            span.record("paperclip.run_status", finish.status.as_str());
            if finish.status != RunStatus::Succeeded {
                span.record("otel.status_code", "error");
            }
        }
        // Still running: a callback will finish it.
        Ok(None) => {
            span.record("paperclip.run_status", RunStatus::Running.as_str());
        }
        Err(_) => {
            span.record("otel.status_code", "error");
        }
    }
    ended
}

async fn drive_in(
    deps: &RunDeps<'_>,
    run: &HeartbeatRun,
    live: &LiveRun,
    span: &tracing::Span,
) -> anyhow::Result<Option<Finish>> {
    let mut plan = match prepare::prepare(deps, run)
        .instrument(tracing::info_span!("prepare"))
        .await
        .context("Could not prepare the run (its agent, task or session)")?
    {
        Prepared::Ready(plan) => plan,
        Prepared::Refused(finish) => return Ok(Some(*finish)),
    };
    span.record("paperclip.adapter_type", plan.agent.adapter_type.as_str());
    let bound = match workspace::bind(deps, run, &plan.agent.adapter_type, plan.issue.as_ref())
        .instrument(tracing::info_span!("workspace"))
        .await
    {
        Ok(bound) => bound,
        Err(why) => {
            let why = format!("Cannot start in the task's workspace: {why}");
            return Ok(Some(finish::failed_by(RunErrorCode::SetupFailed, why)));
        }
    };
    if let Some(bound) = &bound {
        workspace::apply(bound, &mut plan);
    }
    // The last moment a stop can prevent the process: after this the
    // adapter checks the token itself and, once spawned, kills the tree.
    if live.cancel.is_cancelled() {
        return Ok(Some(finish::stopped_before_start(live.stop_reason())));
    }
    // A compaction run sends only the CLI's command; answers wait for the next run.
    let prompt = match prompt::compaction(run, &plan.agent.adapter_type) {
        Some(_) => plan.prompt.take(),
        None => crate::notes::with_answers(deps.store, run, plan.prompt.take()).await,
    };
    let live_runs = &deps.sink.live;
    let issue = plan.issue.as_ref();
    let budget =
        crate::budget::RunBudget::start(deps.store, live_runs, run, &plan.agent, issue).await;
    let redactor = plan.redactor.clone();
    live.set_redactor(redactor.clone());
    let sink = Arc::new(
        RunSinkImpl::new(deps.sink.clone(), run.clone(), redactor, budget)
            .context("Could not open the run's log in the data directory")?,
    );
    let mut invocation = invoke::invocation(&mut plan, run, prompt, live, &deps.dirs);
    crate::agent_skills::apply(deps.store, &plan.agent, &mut invocation, &*sink).await;
    if let Some(bound) = &bound {
        workspace::apply_to_invocation(bound, &mut invocation);
    }
    let adapter = plan.adapter.clone();
    let ended = invoke::invoke_with_fresh_retry(&*adapter, invocation, sink.clone())
        .instrument(tracing::info_span!("invoke"))
        .await;
    let finishing = tracing::info_span!("finish");
    let stats = sink.close().instrument(finishing.clone()).await;
    if let Some(bound) = &bound {
        workspace_end::record(deps, run, bound, &plan.agent.name)
            .instrument(finishing.clone())
            .await;
    }
    let stop = Stop {
        reason: live.stop_reason(),
        code: live.stop_code(),
    };
    let done = finishing.in_scope(|| finish::finish(ended, stats, stop, &finish_plan(&plan, deps)));
    drop(finishing);
    match done {
        Some(done) => Ok(Some(done)),
        None => {
            // Bounded even if the adapter named no bound: a run must end.
            let wait = plan
                .limits
                .callback
                .unwrap_or(crate::callbacks::DEFAULT_WAIT);
            crate::callbacks::awaiting(deps.store, run, wait).await?;
            Ok(None)
        }
    }
}

fn finish_plan<'a>(plan: &'a RunPlan, deps: &'a RunDeps<'_>) -> FinishPlan<'a> {
    FinishPlan {
        adapter_type: &plan.agent.adapter_type,
        task_key: plan.session.task_key.as_deref(),
        session_before: plan.session.saved.as_deref(),
        log_store: deps.sink.logs.kind(),
        redactor: &plan.redactor,
    }
}
