//! Restart recovery. A run left `running` by a previous server process has
//! lost its driver: its output can no longer be read and its outcome never
//! recorded. Such runs become `failed` with `errorCode=control_plane_restart`
//! (any orphaned process group, and descendants that left it, are killed first), agents left `running` return
//! to idle, and queued wakes are kept: the executor runs them as usual.

use paperclip_core::actor::Actor;
use paperclip_store::runs::{self, Finish};
use paperclip_store::Store;

pub async fn recover(store: &Store) -> anyhow::Result<usize> {
    let stale = runs::running(store).await?;
    for run in &stale {
        if let Some(pgid) = run.process_group_id.filter(|g| *g > 1) {
            // SAFETY: killpg only sends a signal; a group that is gone yields ESRCH.
            unsafe {
                libc::killpg(pgid as libc::pid_t, libc::SIGKILL);
            }
        }
        // Descendants that left the group still carry the run's id.
        paperclip_adapters::tree::kill_run(&run.id);
        let finish = Finish {
            status: "failed".into(),
            error: Some("The control plane restarted while this run was in progress".into()),
            error_code: Some("control_plane_restart".into()),
            stdout_excerpt: run.stdout_excerpt.clone(),
            stderr_excerpt: run.stderr_excerpt.clone(),
            log_store: run.log_store.clone().or(Some("local_file".into())),
            log_ref: run
                .log_ref
                .clone()
                .or(Some(format!("{}/{}.ndjson", run.company_id, run.id))),
            log_bytes: run.log_bytes,
            ..Finish::default()
        };
        runs::finish(store, &run.id, finish).await?;
        paperclip_store::runs::record_recovery(store, &Actor::system(), run).await?;
        tracing::warn!(run = %run.id, agent = %run.agent_id, "failed a run left running by the previous process");
    }
    runs::reset_orphaned_agents(store).await?;
    Ok(stale.len())
}
