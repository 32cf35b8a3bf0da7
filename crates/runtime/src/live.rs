//! The one owner of live runs in this process.
//!
//! A run is entered here *before* the database claim is attempted, so from
//! the moment a run can be `running` in the database until its outcome is
//! recorded, a cancel finds it here and its token. The executor checks the
//! token before it spawns anything, so a run stopped while it is being
//! prepared never starts its process. A stop waits on the entry's settle
//! signal (sent when the entry is dropped, after the outcome is recorded),
//! not on the database.

use paperclip_core::heartbeat::{RunErrorCode, RunStatus};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use paperclip_adapters::{CancellationToken, ErrorCode};
use paperclip_core::actor::Actor;
use paperclip_core::model::HeartbeatRun;
use paperclip_store::runs::{self, Finish};
use serde_json::json;
use tokio::sync::watch;

use crate::Runtime;

/// How long a stop waits for a run to settle before answering with the run
/// as it is (still stopping). Past the usual grace: a process that ignores
/// TERM is killed at the end of its grace.
const SETTLE_BOUND: Duration = Duration::from_secs(30);

#[derive(Default)]
pub(crate) struct LiveRuns {
    runs: Mutex<HashMap<String, Entry>>,
}

/// Why a run was stopped, and the `errorCode` it records when the stop
/// is not a plain cancel (a budget).
type Reason = Arc<Mutex<Option<(String, Option<RunErrorCode>)>>>;

struct Entry {
    /// The processes the run's adapter spawned (pid and start time in clock
    /// ticks, so a reused pid is not taken for the run's), newest last.
    processes: Vec<(u32, Option<i64>)>,
    cancel: CancellationToken,
    stop_now: CancellationToken,
    reason: Reason,
    settled: watch::Receiver<bool>,
    abandon: CancellationToken,
    finishing: Arc<AtomicBool>,
    /// The run's redaction set once prepared, so a value the server hands
    /// the run later (a granted secret) is redacted from its output too.
    redactor: Option<crate::redact::Redactor>,
}

/// The executor's hold on a live run. Dropping it removes the run from the
/// owner and wakes everyone waiting for it to settle, on every path out
/// (recorded, claim lost, handed to an async callback, an error).
pub(crate) struct LiveRun {
    owner: Arc<LiveRuns>,
    run_id: String,
    pub(crate) cancel: CancellationToken,
    /// Cancelled before `cancel` by a stop that skips the grace.
    pub(crate) stop_now: CancellationToken,
    reason: Reason,
    settled: watch::Sender<bool>,
    /// Cancelled when this instance must let go of the run without
    /// recording anything: another instance took it over, or it was
    /// settled through another instance. Its driver is dropped.
    pub(crate) abandon: CancellationToken,
    /// Set once the run's end is being recorded: it is not abandoned then.
    finishing: Arc<AtomicBool>,
}

/// What a stop got back: a way to wait until the run's driver let go of it.
pub(crate) struct Stopping(watch::Receiver<bool>);

impl LiveRuns {
    /// Enters a run about to be claimed. `None` if it is already owned (two
    /// dispatch passes racing over the same queued row).
    pub(crate) fn enter(self: &Arc<Self>, run_id: &str) -> Option<LiveRun> {
        let mut runs = self.runs.lock().expect("live runs lock");
        if runs.contains_key(run_id) {
            return None;
        }
        let cancel = CancellationToken::new();
        let stop_now = CancellationToken::new();
        let reason = Arc::new(Mutex::new(None));
        let (settled, watcher) = watch::channel(false);
        let abandon = CancellationToken::new();
        let finishing = Arc::new(AtomicBool::new(false));
        runs.insert(
            run_id.to_string(),
            Entry {
                processes: Vec::new(),
                cancel: cancel.clone(),
                stop_now: stop_now.clone(),
                reason: reason.clone(),
                settled: watcher,
                abandon: abandon.clone(),
                finishing: finishing.clone(),
                redactor: None,
            },
        );
        Some(LiveRun {
            owner: self.clone(),
            run_id: run_id.to_string(),
            cancel,
            stop_now,
            reason,
            settled,
            abandon,
            finishing,
        })
    }

    /// Adds `value` to a live run's redaction set; false if this process
    /// does not drive the run or it is not prepared yet.
    pub(crate) fn redact(&self, run_id: &str, value: &str) -> bool {
        let runs = self.runs.lock().expect("live runs lock");
        match runs.get(run_id).and_then(|e| e.redactor.as_ref()) {
            Some(r) => {
                r.add(value);
                true
            }
            None => false,
        }
    }

    /// Cancels a run owned here; `None` if this process does not drive it.
    /// The first reason given wins: it is what the run records.
    pub(crate) fn stop(&self, run_id: &str, reason: &str) -> Option<Stopping> {
        self.stop_with_code(run_id, reason, None)
    }

    /// [`LiveRuns::stop`] recording `code` as the run's `errorCode`; such a
    /// stop (a budget) also skips the process's grace: waiting is spending.
    pub(crate) fn stop_with_code(
        &self,
        run_id: &str,
        reason: &str,
        code: Option<RunErrorCode>,
    ) -> Option<Stopping> {
        let runs = self.runs.lock().expect("live runs lock");
        let entry = runs.get(run_id)?;
        entry
            .reason
            .lock()
            .expect("reason lock")
            .get_or_insert_with(|| (reason.to_string(), code));
        if code.is_some() {
            entry.stop_now.cancel();
        }
        entry.cancel.cancel();
        Some(Stopping(entry.settled.clone()))
    }

    /// Lets go of a run this instance drives without recording anything (its
    /// row is another instance's now); `false` if it is not here or its end
    /// is already being recorded.
    pub(crate) fn abandon(&self, run_id: &str) -> bool {
        let runs = self.runs.lock().expect("live runs lock");
        match runs.get(run_id) {
            Some(entry) if !entry.finishing.load(Ordering::SeqCst) => {
                entry.abandon.cancel();
                true
            }
            _ => false,
        }
    }

    pub(crate) fn ids(&self) -> Vec<String> {
        let runs = self.runs.lock().expect("live runs lock");
        runs.keys().cloned().collect()
    }

    /// Records a process the run's adapter just spawned. Its descendants
    /// belong to the run too, whatever their environment says.
    pub(crate) fn process_started(&self, run_id: &str, pid: u32, start_ticks: Option<i64>) {
        let mut runs = self.runs.lock().expect("live runs lock");
        if let Some(entry) = runs.get_mut(run_id) {
            // A run that respawns (retries, sessions) keeps a few at most;
            // a pid already recorded is replaced (a reuse, or a repeat).
            entry.processes.retain(|(p, _)| *p != pid);
            if entry.processes.len() >= MAX_PROCESSES_PER_RUN {
                entry.processes.remove(0);
            }
            entry.processes.push((pid, start_ticks));
        }
    }

    /// Every live run with the processes its adapter spawned.
    pub(crate) fn processes(&self) -> Vec<RunProcesses> {
        let runs = self.runs.lock().expect("live runs lock");
        runs.iter()
            .map(|(id, entry)| RunProcesses {
                run_id: id.clone(),
                roots: entry.processes.clone(),
            })
            .collect()
    }
}

/// Spawned processes remembered per run; older ones are forgotten first
/// (their run's tree still holds any process they started only while they live).
const MAX_PROCESSES_PER_RUN: usize = 16;

/// A live run and the processes its adapter spawned for it (the roots of its
/// process tree): pid and start time in clock ticks (`None`: unread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunProcesses {
    pub run_id: String,
    pub roots: Vec<(u32, Option<i64>)>,
}

impl LiveRun {
    /// Hands the run's redaction set to the owner (see [`LiveRuns::redact`]).
    pub(crate) fn set_redactor(&self, redactor: crate::redact::Redactor) {
        let mut runs = self.owner.runs.lock().expect("live runs lock");
        if let Some(entry) = runs.get_mut(&self.run_id) {
            entry.redactor = Some(redactor);
        }
    }

    /// Says the run's end is being recorded from now on: the run is no
    /// longer abandoned, whatever another instance does.
    pub(crate) fn finishing(&self) {
        self.finishing.store(true, Ordering::SeqCst);
    }

    /// Why the run was stopped, if it was.
    pub(crate) fn stop_reason(&self) -> Option<String> {
        let reason = self.reason.lock().expect("reason lock");
        reason.as_ref().map(|(text, _)| text.clone())
    }

    /// The `errorCode` the stop asked for, if not a plain cancel.
    pub(crate) fn stop_code(&self) -> Option<RunErrorCode> {
        let reason = self.reason.lock().expect("reason lock");
        reason.as_ref().and_then(|(_, code)| *code)
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        self.owner
            .runs
            .lock()
            .expect("live runs lock")
            .remove(&self.run_id);
        let _ = self.settled.send(true);
    }
}

impl Stopping {
    /// Waits until the run has settled or `bound` passed; `true` if settled.
    pub(crate) async fn settled(mut self, bound: Duration) -> bool {
        // A dropped sender means the entry is gone too: settled either way.
        tokio::time::timeout(bound, self.0.wait_for(|done| *done))
            .await
            .is_ok()
    }
}

impl Runtime {
    /// Cancels a run: a queued run never starts; a running one has its process
    /// stopped (TERM, then KILL after the grace) and is recorded `cancelled`.
    /// Returns the run once it has settled (or after a bound, still stopping).
    pub async fn cancel_run(
        &self,
        actor: &Actor,
        run_id: &str,
        reason: &str,
    ) -> paperclip_store::Result<HeartbeatRun> {
        let store = &self.inner.store;
        let mut run = runs::get(store, run_id).await?;
        if run.status == RunStatus::Queued {
            if let Some(run) = runs::cancel_queued(store, actor, run_id, reason).await? {
                self.publish_run(&run, "heartbeat.run.finished");
                return Ok(run);
            }
            // Claimed meanwhile; the claim entered it here first.
            run = runs::get(store, run_id).await?;
        }
        if run.status != RunStatus::Running {
            return Err(paperclip_store::Error::conflict(
                "Run is not active",
                Some(json!({ "runId": run.id, "status": run.status })),
            ));
        }
        if let Some(stopping) = self.inner.live.stop(run_id, reason) {
            stopping.settled(SETTLE_BOUND).await;
            return runs::get(store, run_id).await;
        }
        // Running in the database but not owned here: nothing in this process
        // drives it (an async HTTP run waiting for its callback, or a run left
        // by a server that is gone). Its persisted state is all there is:
        // record the stop, and stop any process on this host carrying its id.
        let id = run_id.to_string();
        let _ = tokio::task::spawn_blocking(move || paperclip_adapters::tree::kill_run(&id)).await;
        let finish = Finish {
            status: RunStatus::Cancelled,
            error: Some(reason.to_string()),
            error_code: Some(ErrorCode::Cancelled.as_str().into()),
            ..Finish::new(RunStatus::Failed)
        };
        if let Some(run) = runs::finish(store, run_id, finish).await? {
            self.publish_run(&run, "heartbeat.run.finished");
            self.kick();
        }
        runs::get(store, run_id).await
    }

    /// Stops all work of an agent (pause, terminate, delete): queued runs are
    /// cancelled and running ones stopped, all at once.
    pub async fn stop_agent(
        &self,
        actor: &Actor,
        agent_id: &str,
        reason: &str,
    ) -> paperclip_store::Result<()> {
        let store = &self.inner.store;
        let queued = runs::queued_for_agent(store, agent_id).await?;
        for run_id in &queued {
            if let Some(run) = runs::cancel_queued(store, actor, run_id, reason).await? {
                self.publish_run(&run, "heartbeat.run.finished");
            }
        }
        let running = runs::running_for_agent(store, agent_id).await?;
        let stops = running.iter().map(|id| self.cancel_run(actor, id, reason));
        for result in join_all(stops).await {
            match result {
                // It ended on its own between the list and the stop.
                Ok(_) | Err(paperclip_store::Error::Conflict { .. }) => {}
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }

    /// A budget hard stop: every agent's runs stop at once.
    pub(crate) async fn stop_agents(&self, agent_ids: &[String], reason: &str) {
        let actor = Actor::system();
        let stops = agent_ids
            .iter()
            .map(|agent| self.stop_agent(&actor, agent, reason));
        for (agent, result) in agent_ids.iter().zip(join_all(stops).await) {
            if let Err(err) = result {
                tracing::warn!(agent = %agent, error = %err, "stopping an agent's runs failed");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_owned_once_and_released_on_drop() {
        let live = Arc::new(LiveRuns::default());
        let run = live.enter("r1").expect("entered");
        assert!(live.enter("r1").is_none());
        assert_eq!(live.ids(), vec!["r1".to_string()]);
        drop(run);
        assert!(live.ids().is_empty());
        assert!(live.stop("r1", "x").is_none());
    }

    #[test]
    fn a_runs_spawned_processes_are_known_while_it_is_live() {
        let live = Arc::new(LiveRuns::default());
        let run = live.enter("r1").unwrap();
        assert_eq!(live.processes()[0].roots, vec![]);
        live.process_started("r1", 42, Some(7));
        live.process_started("r1", 43, None);
        live.process_started("r1", 42, Some(9));
        live.process_started("gone", 44, None);
        let procs = live.processes();
        assert_eq!(procs.len(), 1);
        assert_eq!(procs[0].run_id, "r1");
        assert_eq!(procs[0].roots, vec![(43, None), (42, Some(9))]);
        drop(run);
        assert!(live.processes().is_empty());
    }

    #[tokio::test]
    async fn a_stop_cancels_the_token_and_waits_for_the_drop() {
        let live = Arc::new(LiveRuns::default());
        let run = live.enter("r1").unwrap();
        let stopping = live.stop("r1", "paused").unwrap();
        assert!(run.cancel.is_cancelled());
        live.stop("r1", "later reason");
        assert_eq!(run.stop_reason().as_deref(), Some("paused"));
        let waiter = tokio::spawn(stopping.settled(Duration::from_secs(5)));
        drop(run);
        assert!(waiter.await.unwrap());
    }

    #[tokio::test]
    async fn waiting_is_bounded() {
        let live = Arc::new(LiveRuns::default());
        let _run = live.enter("r1").unwrap();
        let stopping = live.stop("r1", "x").unwrap();
        assert!(!stopping.settled(Duration::from_millis(20)).await);
    }
}
