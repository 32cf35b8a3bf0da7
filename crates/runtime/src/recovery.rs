//! Restart recovery. A run left `running` by a previous server process has
//! lost its driver: its output can no longer be read and its outcome never
//! recorded. Each such run is settled once:
//! - its processes are killed, but only provably its own: the stored process
//!   group only if its leader still has the recorded start time (or carries
//!   the run's marker), plus any process carrying the run's marker;
//! - the run becomes `failed` with `errorCode=control_plane_restart`, keeping
//!   the CLI session it had reported, so the task's session resumes;
//! - its task is handed to a continuation run of the same agent, which holds
//!   the checkout, or blocked once the continuation budget is spent
//!   (`paperclip_store::runs::follow_up`).
//!
//! Agents left `running` return to idle, and queued wakes are kept: the
//! executor runs them as usual.

use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::{RunErrorCode, RunStatus};
use paperclip_core::model::HeartbeatRun;
use paperclip_store::runs::follow_up::{self, Handed, CONTINUATIONS};
use paperclip_store::runs::{self, Finish, SessionUpdate};
use paperclip_store::Store;

pub async fn recover(store: &Store) -> anyhow::Result<usize> {
    // A run waiting for its callback has no process here to lose: it keeps
    // waiting (until its deadline) across the restart.
    let remote = paperclip_store::runs::callbacks::awaiting(store).await?;
    let stale: Vec<HeartbeatRun> = runs::running(store)
        .await?
        .into_iter()
        .filter(|r| !remote.contains(&r.id))
        .collect();
    for run in &stale {
        let killed_group = match run.process_group_id {
            Some(pgid) => {
                let ticks = runs::process_start_ticks(store, &run.id).await?;
                paperclip_adapters::tree::kill_lost_group(&run.id, pgid as i32, ticks)
            }
            None => false,
        };
        // Descendants that left the group still carry the run's marker.
        let escaped = paperclip_adapters::tree::kill_run(&run.id);
        let finish = lost_finish(store, run).await?;
        let handed = follow_up::finish_lost(store, run, finish, CONTINUATIONS).await?;
        runs::record_recovery(store, &Actor::system(), run).await?;
        tracing::warn!(
            run = %run.id, agent = %run.agent_id, killed_group, escaped, handed = ?handed,
            "failed a run left running by the previous process"
        );
        if let Some(Handed::Blocked) = handed {
            tracing::warn!(run = %run.id, "its task is blocked: continuation budget spent");
        }
    }
    runs::reset_orphaned_agents(store).await?;
    Ok(stale.len())
}

async fn lost_finish(store: &Store, run: &HeartbeatRun) -> anyhow::Result<Finish> {
    let session = runs::last_session_seen(store, &run.id).await?;
    let session_update = match (&session, &run.issue_id) {
        (Some(id), Some(task)) => {
            let agent = paperclip_store::org::agents::get(store, &run.agent_id).await?;
            Some(SessionUpdate {
                adapter_type: agent.adapter_type,
                task_key: task.clone(),
                session_id: Some(id.clone()),
                error: None,
            })
        }
        _ => None,
    };
    Ok(Finish {
        status: RunStatus::Failed,
        error: Some("The control plane restarted while this run was in progress".into()),
        error_code: Some(RunErrorCode::ControlPlaneRestart.as_str().into()),
        stdout_excerpt: run.stdout_excerpt.clone(),
        stderr_excerpt: run.stderr_excerpt.clone(),
        log_store: run.log_store.clone().or(Some("local_file".into())),
        log_ref: run
            .log_ref
            .clone()
            .or(Some(format!("{}/{}.ndjson", run.company_id, run.id))),
        log_bytes: run.log_bytes,
        session_id_before: run.session_id_before.clone(),
        session_id_after: session,
        session: session_update,
        ..Finish::new(RunStatus::Failed)
    })
}
