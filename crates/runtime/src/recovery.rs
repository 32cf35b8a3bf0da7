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
//!
//! With several instances on one database (issue 38) "left by a previous
//! process" means owned by this instance's previous incarnation, by an
//! instance whose lease expired, or by no one; the fleet's sweep
//! (`crate::fleet`) settles a dead instance's runs the same way while the
//! survivors run. A Kubernetes Job outlives its driver: the continuation run
//! reattaches to it (`adapters::k8s`), wherever it is claimed.

use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::{RunErrorCode, RunStatus};
use paperclip_core::model::HeartbeatRun;
use paperclip_store::fleet::instances;
use paperclip_store::runs::follow_up::{self, Handed, CONTINUATIONS};
use paperclip_store::runs::{self, Finish, SessionUpdate};
use paperclip_store::Store;

use crate::fleet::Identity;

/// Settles, at start, the runs this instance's previous incarnation left
/// running, runs of instances whose lease expired, and runs with no owner
/// (left by a binary from before instances); never a live instance's.
pub async fn recover(store: &Store, me: &Identity) -> anyhow::Result<usize> {
    settle_lost(store, me, true).await
}

/// Takes over and settles the running runs whose driver is gone, as seen
/// from `me`: at start (`starting`) its own previous incarnation's too. Of
/// several instances sweeping at once, one takes each run (a conditional
/// UPDATE of its owner) and settles it. The number settled here.
pub async fn settle_lost(store: &Store, me: &Identity, starting: bool) -> anyhow::Result<usize> {
    // A run waiting for its callback has no process here to lose: it keeps
    // waiting (until its deadline) across the restart.
    let remote = paperclip_store::runs::callbacks::awaiting(store).await?;
    let lost = instances::lost_runs(store, &me.id, starting).await?;
    let mut settled = 0;
    for lost in lost.iter().filter(|l| !remote.contains(&l.run_id)) {
        if !instances::take_over(store, &lost.run_id, lost.owner.as_deref(), &me.id).await? {
            continue;
        }
        let run = runs::get(store, &lost.run_id).await?;
        // Its processes can be killed only from the host they ran on.
        let here = match (&lost.owner, &lost.owner_hostname) {
            (None, _) => true,
            (Some(owner), _) if *owner == me.id => true,
            (Some(_), Some(host)) => *host == me.hostname,
            (Some(_), None) => false,
        };
        let from_elsewhere = lost.owner.as_ref().filter(|o| **o != me.id);
        settle(store, &run, here, from_elsewhere.map(String::as_str)).await?;
        settled += 1;
    }
    if settled > 0 || starting {
        runs::reset_orphaned_agents(store).await?;
    }
    Ok(settled)
}

/// Fails one lost run and hands its task on (module doc). `here`: its
/// processes ran on this host; `lost_instance`: the instance it was taken
/// from, when not this one.
async fn settle(
    store: &Store,
    run: &HeartbeatRun,
    here: bool,
    lost_instance: Option<&str>,
) -> anyhow::Result<()> {
    let (killed_group, escaped) = if here {
        let killed_group = match run.process_group_id {
            Some(pgid) => {
                let ticks = runs::process_start_ticks(store, &run.id).await?;
                paperclip_adapters::tree::kill_lost_group(&run.id, pgid as i32, ticks)
            }
            None => false,
        };
        // Descendants that left the group still carry the run's marker.
        (killed_group, paperclip_adapters::tree::kill_run(&run.id))
    } else {
        (false, 0)
    };
    let why = match lost_instance {
        Some(instance) => format!(
            "The control-plane instance running this run ({instance}) stopped; another instance settled it"
        ),
        None => "The control plane restarted while this run was in progress".to_string(),
    };
    let finish = lost_finish(store, run, why).await?;
    let handed = follow_up::finish_lost(store, run, finish, CONTINUATIONS).await?;
    runs::record_recovery(store, &Actor::system(), run).await?;
    tracing::warn!(
        run = %run.id, agent = %run.agent_id, killed_group, escaped, handed = ?handed,
        lost_instance, "failed a run whose driver was gone"
    );
    if let Some(Handed::Blocked) = handed {
        tracing::warn!(run = %run.id, "its task is blocked: continuation budget spent");
    }
    Ok(())
}

async fn lost_finish(store: &Store, run: &HeartbeatRun, why: String) -> anyhow::Result<Finish> {
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
        error: Some(why),
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
