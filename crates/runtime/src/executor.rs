//! The run executor: claims queued runs, invokes adapters, records outcomes.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use paperclip_adapters::Adapter;
use paperclip_core::heartbeat::{HeartbeatPolicy, RunErrorCode};
use paperclip_core::model::HeartbeatRun;
use paperclip_store::runs;
use paperclip_store::{Store, StoreEvent};
use serde_json::json;
use tokio::sync::{broadcast, Notify};

use crate::hub::Hub;
use crate::live::{LiveRun, LiveRuns};
use crate::logs::{LocalFileLogStore, RunLogStore};
use crate::next::{Capacity, Queued};
use crate::run::finish::failed_by;
use crate::sink::SinkDeps;
use crate::tokens::RunTokens;

/// How often queued runs are looked for even without a commit signal: the
/// backstop for a missed signal, not the normal path.
const POLL: Duration = Duration::from_secs(2);

pub struct RuntimeConfig {
    pub store: Store,
    pub data_dir: PathBuf,
    /// Base URL agents use to call back (`PAPERCLIP_API_URL`).
    pub api_url: String,
    pub token_secret: Vec<u8>,
    /// The master key of company secrets, for resolving agents' references.
    pub vault: Arc<crate::vault::Vault>,
}

#[derive(Clone)]
pub struct Runtime {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Store,
    pub(crate) hub: Arc<Hub>,
    adapters: BTreeMap<&'static str, Arc<dyn Adapter>>,
    pub(crate) logs: Arc<dyn RunLogStore>,
    tokens: RunTokens,
    api_url: String,
    data_dir: PathBuf,
    pub(crate) live: Arc<LiveRuns>,
    kick: Notify,
    vault: Arc<crate::vault::Vault>,
    routine_clock: Arc<crate::routines::Clock>,
    pub(crate) workspaces: Arc<crate::workspace::Workspaces>,
    /// The process's life, given by [`Runtime::start`]: loops and runs are
    /// spawned on it and stop on it.
    lifecycle: std::sync::OnceLock<crate::Lifecycle>,
    /// How this instance takes part in a fleet (set before the start) and
    /// who it is (from the start on).
    fleet: std::sync::Mutex<crate::fleet::FleetSettings>,
    identity: std::sync::OnceLock<crate::fleet::Identity>,
}

impl Runtime {
    /// Builds the runtime without starting its loops (the server's tests of
    /// auth use this); [`Runtime::start`] starts them.
    pub fn new(config: RuntimeConfig) -> Runtime {
        let logs = crate::logs::for_store(
            &config.store,
            LocalFileLogStore::new(config.data_dir.join("run-logs")),
        );
        Runtime {
            inner: Arc::new(Inner {
                store: config.store,
                hub: Arc::new(Hub::new()),
                adapters: paperclip_adapters::registry(),
                logs,
                tokens: RunTokens::new(&config.token_secret),
                api_url: config.api_url,
                data_dir: config.data_dir,
                live: Arc::new(LiveRuns::default()),
                kick: Notify::new(),
                vault: config.vault,
                routine_clock: Default::default(),
                workspaces: Default::default(),
                lifecycle: Default::default(),
                fleet: Default::default(),
                identity: Default::default(),
            }),
        }
    }

    /// Recovers what a previous process left, then starts the executor, the
    /// commit-event bridge, the timer scheduler, the routine ticker and the
    /// run-log retention sweep, every one on `lifecycle`'s tracker. On its
    /// shutdown the loops stop, no run is claimed any more and the runs in
    /// flight are dropped (their process trees killed) without recording an
    /// end: their rows stay `running` for the next start's recovery, exactly
    /// as after a crash.
    pub async fn start(&self, lifecycle: &crate::Lifecycle) -> anyhow::Result<()> {
        if self.inner.lifecycle.set(lifecycle.clone()).is_err() {
            anyhow::bail!("the runtime was already started");
        }
        crate::skills::install(&self.skills_dir())?;
        let settings = self.inner.fleet.lock().expect("fleet settings").clone();
        let me = crate::fleet::identity(&self.inner.data_dir, settings.id.as_deref())?;
        paperclip_store::fleet::instances::register(
            &self.inner.store,
            &paperclip_store::fleet::Instance {
                id: me.id.clone(),
                incarnation: me.incarnation.clone(),
                hostname: me.hostname.clone(),
                pid: std::process::id() as i64,
                version: env!("CARGO_PKG_VERSION").into(),
                started_at: String::new(),
                renewed_at: String::new(),
                lease_expires_at: String::new(),
                stopped_at: None,
            },
            settings.lease,
        )
        .await?;
        let _ = self.inner.identity.set(me.clone());
        crate::recovery::recover(&self.inner.store, &me).await?;
        // Listening on the bus before anything is claimed or served.
        if let Some(bus) =
            crate::fleet::bus::connect(&self.inner.store, self.inner.hub.clone(), me.id.clone())
                .await?
        {
            lifecycle.spawn_until_stopped(bus);
        }
        // Not dropped at shutdown: it gives the lease up on its way out.
        lifecycle.spawn(crate::fleet::lease::run(self.clone(), me, settings.lease));
        crate::workspace_life::recover(&self.inner.store).await?;
        let bridge = self.clone();
        let events = self.inner.store.subscribe();
        lifecycle.spawn_until_stopped(async move { bridge.bridge(events).await });
        // The executor loop stops between passes (never in the middle of a
        // claim): it ends on its own once the token is cancelled.
        let executor = self.clone();
        lifecycle.spawn(async move { executor.executor_loop().await });
        let (store, clock) = (self.inner.store.clone(), self.inner.routine_clock.clone());
        lifecycle.spawn_until_stopped(async move { crate::scheduler::run(store, clock).await });
        let (store, clock) = (self.inner.store.clone(), self.inner.routine_clock.clone());
        lifecycle.spawn_until_stopped(async move { crate::routines::run(store, clock).await });
        let (store, logs, live, clock) = (
            self.inner.store.clone(),
            self.inner.logs.clone(),
            self.inner.live.clone(),
            self.inner.routine_clock.clone(),
        );
        lifecycle.spawn_until_stopped(async move {
            crate::log_retention::run(store, logs, live, clock).await
        });
        let (store, workspaces, clock) = (
            self.inner.store.clone(),
            self.inner.workspaces.clone(),
            self.inner.routine_clock.clone(),
        );
        let sweep_lease = crate::workspace_life::sweep_lease(&self.inner.data_dir)?;
        let holder = self
            .inner
            .identity
            .get()
            .map(|i| i.id.clone())
            .unwrap_or_default();
        lifecycle.spawn_until_stopped(async move {
            crate::workspace_life::run(store, workspaces, clock, sweep_lease, holder).await
        });
        self.kick();
        Ok(())
    }

    /// Spawns `task` on the lifecycle's tracker (a plain task before
    /// [`Runtime::start`]).
    fn spawn_tracked<F>(&self, task: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        match self.inner.lifecycle.get() {
            Some(lifecycle) => drop(lifecycle.spawn(task)),
            None => drop(tokio::spawn(task)),
        }
    }

    /// How this instance takes part in a fleet; before [`Runtime::start`].
    pub fn set_fleet(&self, settings: crate::fleet::FleetSettings) {
        *self.inner.fleet.lock().expect("fleet settings") = settings;
    }

    /// Who this instance is, once started.
    pub fn instance(&self) -> Option<&crate::fleet::Identity> {
        self.inner.identity.get()
    }

    /// The process's life (a fresh one before [`Runtime::start`]).
    pub(crate) fn lifecycle(&self) -> crate::Lifecycle {
        self.inner.lifecycle.get().cloned().unwrap_or_default()
    }

    /// Whether the process is draining or shutting down: nothing new is
    /// claimed (another instance takes the queue).
    fn stopping(&self) -> bool {
        self.inner.lifecycle.get().is_some_and(|l| l.is_draining())
    }

    /// The URL agents call back on (`PAPERCLIP_API_URL`).
    pub fn api_url(&self) -> &str {
        &self.inner.api_url
    }

    /// The time routines run on (the system's unless `--test-clock`).
    pub fn routine_clock(&self) -> &Arc<crate::routines::Clock> {
        &self.inner.routine_clock
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.inner.hub
    }

    pub fn tokens(&self) -> &RunTokens {
        &self.inner.tokens
    }

    /// Adds a value the server handed a live run of this process (a granted
    /// secret) to that run's redaction set; false when not driven here.
    pub fn redact_in_run(&self, run_id: &str, value: &str) -> bool {
        self.inner.live.redact(run_id, value)
    }

    /// Ids of the runs whose processes may be alive right now. The server
    /// uses it to recognise a request coming from inside a run.
    pub fn live_run_ids(&self) -> Vec<String> {
        self.inner.live.ids()
    }

    /// The live runs with the processes their adapters spawned (the roots
    /// of each run's process tree), kept as they are spawned: the server
    /// finds a socket's owner among these trees only.
    pub fn live_run_processes(&self) -> Vec<crate::live::RunProcesses> {
        self.inner.live.processes()
    }

    /// The company secrets' master key: the server seals values with it.
    pub fn vault(&self) -> &Arc<crate::vault::Vault> {
        &self.inner.vault
    }

    pub fn logs(&self) -> &Arc<dyn RunLogStore> {
        &self.inner.logs
    }

    /// The most a run's log keeps on disk (`--run-log-max-bytes`): its
    /// first half and its last part, with a marker line between.
    pub fn set_run_log_max_bytes(&self, bytes: u64) {
        self.inner.logs.set_max_bytes(bytes);
    }

    /// One run log retention pass at the routines' clock's time (the sweep
    /// also runs on its own every hour); the number of logs removed.
    pub async fn sweep_run_logs(&self) -> anyhow::Result<usize> {
        let now = self.inner.routine_clock.now();
        crate::log_retention::sweep(&self.inner.store, &*self.inner.logs, &self.inner.live, now)
            .await
    }

    /// One workspace retention pass at the routines' clock's time (the
    /// sweep also runs on its own every hour); the number closed.
    pub async fn sweep_workspaces(&self) -> anyhow::Result<usize> {
        let now = self.inner.routine_clock.now();
        crate::workspace_life::sweep(&self.inner.store, &self.inner.workspaces, now).await
    }

    /// Git for execution workspaces (the one per-repository lock owner).
    pub fn workspaces(&self) -> &crate::workspace::Workspaces {
        &self.inner.workspaces
    }

    pub fn adapter(&self, kind: &str) -> Option<Arc<dyn Adapter>> {
        self.inner.adapters.get(kind).cloned()
    }

    /// Where the skills handed to coding CLIs live (`paperclip/SKILL.md`).
    pub fn skills_dir(&self) -> PathBuf {
        self.inner.data_dir.join("skills")
    }

    /// The default working directory of an agent's runs.
    pub fn workspace_dir(&self, agent_id: &str) -> PathBuf {
        self.inner.data_dir.join("workspaces").join(agent_id)
    }

    /// Wakes the executor to look for queued runs now.
    pub fn kick(&self) {
        self.inner.kick.notify_one();
    }

    async fn bridge(&self, mut events: broadcast::Receiver<StoreEvent>) {
        loop {
            match events.recv().await {
                Ok(StoreEvent::Activity(entry)) => self.inner.hub.publish_activity(&entry),
                Ok(StoreEvent::RunQueued {
                    company_id,
                    agent_id,
                    run_id,
                }) => {
                    self.inner.hub.publish(
                        &company_id,
                        "heartbeat.run.queued",
                        "heartbeat_run",
                        &run_id,
                        json!({ "runId": run_id, "agentId": agent_id, "status": "queued" }),
                    );
                    self.kick();
                }
                // A transaction unblocked queued runs (a budget raised, an
                // approval decided, a card created or resolved).
                Ok(StoreEvent::RunsMayStart) => self.kick(),
                Ok(StoreEvent::AgentsStopped { agent_ids, reason }) => {
                    let this = self.clone();
                    self.spawn_tracked(async move { this.stop_agents(&agent_ids, &reason).await });
                }
                // Missed signals are recovered by the executor's poll.
                Err(broadcast::error::RecvError::Lagged(_)) => self.kick(),
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    async fn executor_loop(&self) {
        let stop = self.inner.lifecycle.get().cloned().unwrap_or_default();
        loop {
            tokio::select! {
                _ = self.inner.kick.notified() => {}
                _ = tokio::time::sleep(POLL) => {}
                _ = stop.stopping() => return,
            }
            if let Err(err) = self.expire_callbacks().await {
                tracing::error!(error = %err, "timing out overdue callbacks failed");
            }
            if let Err(err) = self.dispatch().await {
                tracing::error!(error = %err, "dispatching queued runs failed");
            }
        }
    }

    /// Starts every queued run whose agent has a free slot.
    async fn dispatch(&self) -> anyhow::Result<()> {
        let queued = runs::queued(&self.inner.store, 500).await?;
        let mut running: HashMap<String, u32> = HashMap::new();
        for (run, running_count) in &queued {
            running
                .entry(run.agent_id.clone())
                .or_insert(u32::try_from(*running_count).unwrap_or(u32::MAX));
        }
        // Every agent with queued runs, in one query. An agent that is gone
        // (deleted meanwhile) gets no limit, so it starts nothing.
        let ids: Vec<&str> = running.keys().map(String::as_str).collect();
        let mut limits: HashMap<String, u32> = HashMap::new();
        for agent in paperclip_store::org::agents::briefs(&self.inner.store, &ids).await? {
            let policy = HeartbeatPolicy::from_runtime_config(&agent.runtime_config);
            // Under a provider's usage limit the agent's runs wait (kept,
            // not failed); the poll starts them once it lifts.
            let slots = if agent.usage_limited_until.is_some() {
                0
            } else {
                policy.max_concurrent_runs
            };
            limits.insert(agent.id, slots);
        }
        let queue: Vec<Queued> = queued
            .iter()
            .map(|(run, _)| Queued {
                run_id: &run.id,
                agent_id: &run.agent_id,
            })
            .collect();
        let capacity = Capacity {
            running: &running,
            max_concurrent: &limits,
            global_free: None,
        };
        for run_id in crate::next::runs_to_start(&queue, &capacity) {
            if self.stopping() {
                break;
            }
            // Owned before it can be `running`: a stop from here on finds it.
            let Some(live) = self.inner.live.enter(run_id) else {
                continue;
            };
            let Some(me) = self.inner.identity.get() else {
                break;
            };
            if let Some(run) = runs::claim(&self.inner.store, run_id, &me.id).await? {
                self.publish_run(&run, "heartbeat.run.started");
                self.publish_agent(&run.agent_id).await;
                self.spawn_run(run, live);
            }
        }
        Ok(())
    }

    /// Drives `run` on the lifecycle's tracker. At shutdown the drive is
    /// dropped where it is: the adapter's process tree is killed (the
    /// process adapter's `TreeGuard`) and no end is recorded, so the row
    /// stays `running` and the next start's recovery fails it with
    /// `control_plane_restart` and continues its task, as after a crash. An
    /// end already being recorded either commits (recovery skips the run)
    /// or rolls back (recovery settles it): never both, never neither.
    fn spawn_run(&self, run: HeartbeatRun, live: LiveRun) {
        let this = self.clone();
        let stop = self.inner.lifecycle.get().cloned().unwrap_or_default();
        self.spawn_tracked(async move {
            let id = run.id.clone();
            let abandon = live.abandon.clone();
            tokio::select! {
                _ = this.execute(run, live) => {}
                _ = stop.stopping() => {
                    tracing::warn!(run = %id, "shutdown interrupted the run; it is recovered by the next start or another instance");
                }
                _ = abandon.cancelled() => {
                    tracing::warn!(run = %id, "let go of the run: another instance settled or took it over");
                }
            }
        });
    }

    /// Drives a claimed run to its recorded outcome. `live` is released only
    /// after the outcome is recorded, so a stop that waits on it returns a
    /// settled run.
    async fn execute(&self, run: HeartbeatRun, live: LiveRun) {
        let outcome = match crate::run::drive(&self.run_deps(&run.agent_id), &run, &live).await {
            Ok(Some(finish)) => finish,
            // Handed off to an async callback: the run stays running.
            Ok(None) => return,
            // The server's failure (its database, its logs), not the agent's.
            Err(err) => failed_by(RunErrorCode::SetupFailed, format!("{err:#}")),
        };
        live.finishing();
        let mut recorded = runs::finish(&self.inner.store, &run.id, outcome).await;
        if let Err(err) = &recorded {
            // A run left `running` would hold back every later wake of its
            // agent; record at least that it failed, without its output.
            tracing::error!(run = %run.id, error = %err, "recording the end of a run failed");
            let bare = failed_by(
                RunErrorCode::OutcomeNotRecorded,
                format!("the run ended but its outcome could not be recorded: {err}"),
            );
            recorded = runs::finish(&self.inner.store, &run.id, bare).await;
        }
        match recorded {
            Ok(Some(done)) => {
                self.publish_run(&done, "heartbeat.run.finished");
                self.publish_agent(&done.agent_id).await;
                self.report_usage(&done).await;
            }
            Ok(None) => {}
            Err(err) => {
                tracing::error!(run = %run.id, error = %err, "recording the end of a run failed twice")
            }
        }
        drop(live);
        self.kick();
    }

    /// What [`crate::run::drive`] drives a run of `agent_id` with.
    fn run_deps(&self, agent_id: &str) -> crate::run::RunDeps<'_> {
        let inner = &self.inner;
        crate::run::RunDeps {
            store: &inner.store,
            adapters: &inner.adapters,
            vault: &inner.vault,
            tokens: &inner.tokens,
            api_url: &inner.api_url,
            sink: SinkDeps {
                store: inner.store.clone(),
                hub: inner.hub.clone(),
                logs: inner.logs.clone(),
                live: inner.live.clone(),
            },
            dirs: crate::run::Dirs {
                workspace: self.workspace_dir(agent_id),
                skills: self.skills_dir(),
                worktrees: self.inner.data_dir.join("worktrees"),
            },
            workspaces: &inner.workspaces,
        }
    }

    pub(crate) fn publish_run(&self, run: &HeartbeatRun, kind: &str) {
        publish_run(&self.inner.hub, run, kind);
    }

    pub(crate) async fn publish_agent(&self, agent_id: &str) {
        if let Ok(agent) = paperclip_store::org::agents::get(&self.inner.store, agent_id).await {
            self.inner.hub.publish(
                &agent.company_id,
                "agent.status.changed",
                "agent",
                &agent.id,
                json!({ "agentId": agent.id, "status": agent.status, "errorReason": agent.error_reason }),
            );
        }
    }
}

pub(crate) fn publish_run(hub: &Hub, run: &HeartbeatRun, kind: &str) {
    let payload = json!({
        "runId": run.id,
        "agentId": run.agent_id,
        "status": run.status,
        "issueId": run.issue_id,
        "errorCode": run.error_code,
        "error": run.error,
    });
    hub.publish(
        &run.company_id,
        kind,
        "heartbeat_run",
        &run.id,
        payload.clone(),
    );
    hub.publish(
        &run.company_id,
        "heartbeat.run.status",
        "heartbeat_run",
        &run.id,
        payload,
    );
}
