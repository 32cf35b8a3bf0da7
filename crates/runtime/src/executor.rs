//! The run executor: claims queued runs, invokes adapters, records outcomes.

use paperclip_core::heartbeat::RunStatus;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use paperclip_adapters::{Adapter, ErrorCode, Invocation, Outcome, OutcomeStatus, RunSink, Stream};
use paperclip_core::heartbeat::HeartbeatPolicy;
use paperclip_core::model::{Agent, HeartbeatRun};
use paperclip_store::runs::{self, Finish, SessionUpdate};
use paperclip_store::{Store, StoreEvent};
use serde_json::{json, Value};
use tokio::sync::{broadcast, Notify};

use crate::hub::Hub;
use crate::live::{LiveRun, LiveRuns};
use crate::logs::{LocalFileLogStore, RunLogStore};
use crate::next::{Capacity, Queued};
use crate::redact::{is_secret_name, Redactor};
use crate::sink::RunSinkImpl;
use crate::tokens::{ttl_secs, RunTokens};

/// How often queued runs are looked for even without a commit signal: the
/// backstop for a missed signal, not the normal path.
const POLL: Duration = Duration::from_secs(2);
/// How many of a task's latest comments a run that lost its session is shown.
const SO_FAR_COMMENTS: i64 = 5;

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
}

impl Runtime {
    /// Builds the runtime without starting its loops (the server's tests of
    /// auth use this); [`Runtime::start`] starts them.
    pub fn new(config: RuntimeConfig) -> Runtime {
        let logs = Arc::new(LocalFileLogStore::new(config.data_dir.join("run-logs")));
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
            }),
        }
    }

    /// Recovers what a previous process left, then starts the executor, the
    /// commit-event bridge and the timer scheduler.
    pub async fn start(&self) -> anyhow::Result<()> {
        crate::skills::install(&self.skills_dir())?;
        crate::recovery::recover(&self.inner.store).await?;
        let bridge = self.clone();
        let events = self.inner.store.subscribe();
        tokio::spawn(async move { bridge.bridge(events).await });
        let executor = self.clone();
        tokio::spawn(async move { executor.executor_loop().await });
        let (store, clock) = (self.inner.store.clone(), self.inner.routine_clock.clone());
        tokio::spawn(async move { crate::scheduler::run(store, clock).await });
        let (store, clock) = (self.inner.store.clone(), self.inner.routine_clock.clone());
        tokio::spawn(async move { crate::routines::run(store, clock).await });
        let (store, logs, live, clock) = (
            self.inner.store.clone(),
            self.inner.logs.clone(),
            self.inner.live.clone(),
            self.inner.routine_clock.clone(),
        );
        tokio::spawn(async move { crate::log_retention::run(store, logs, live, clock).await });
        self.kick();
        Ok(())
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
                Ok(StoreEvent::AgentsStopped { agent_ids, reason }) => {
                    let this = self.clone();
                    tokio::spawn(async move { this.stop_agents(&agent_ids, &reason).await });
                }
                // Missed signals are recovered by the executor's poll.
                Err(broadcast::error::RecvError::Lagged(_)) => self.kick(),
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    async fn executor_loop(&self) {
        loop {
            tokio::select! {
                _ = self.inner.kick.notified() => {}
                _ = tokio::time::sleep(POLL) => {}
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
        for agent in paperclip_store::agents::briefs(&self.inner.store, &ids).await? {
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
            // Owned before it can be `running`: a stop from here on finds it.
            let Some(live) = self.inner.live.enter(run_id) else {
                continue;
            };
            if let Some(run) = runs::claim(&self.inner.store, run_id).await? {
                self.publish_run(&run, "heartbeat.run.started");
                self.publish_agent(&run.agent_id).await;
                let this = self.clone();
                tokio::spawn(async move { this.execute(run, live).await });
            }
        }
        Ok(())
    }

    /// Drives a claimed run to its recorded outcome. `live` is released only
    /// after the outcome is recorded, so a stop that waits on it returns a
    /// settled run.
    async fn execute(&self, run: HeartbeatRun, live: LiveRun) {
        let outcome = match self.prepare_and_invoke(&run, &live).await {
            Ok(Some(finish)) => finish,
            // Handed off to an async callback: the run stays running.
            Ok(None) => return,
            Err(err) => Finish {
                status: RunStatus::Failed,
                error: Some(format!("{err:#}")),
                error_code: Some("spawn_failed".into()),
                ..Finish::new(RunStatus::Failed)
            },
        };
        let mut recorded = runs::finish(&self.inner.store, &run.id, outcome).await;
        if let Err(err) = &recorded {
            // A run left `running` would hold back every later wake of its
            // agent; record at least that it failed, without its output.
            tracing::error!(run = %run.id, error = %err, "recording the end of a run failed");
            let bare = failure(
                "outcome_not_recorded",
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

    /// Runs the adapter; `Ok(None)` when the run continues asynchronously.
    async fn prepare_and_invoke(
        &self,
        run: &HeartbeatRun,
        live: &LiveRun,
    ) -> anyhow::Result<Option<Finish>> {
        let store = &self.inner.store;
        let agent = paperclip_store::agents::get(store, &run.agent_id).await?;
        let company = paperclip_store::companies::get(store, &run.company_id).await?;
        let issue = match &run.issue_id {
            Some(id) => paperclip_store::issues::get(store, id).await.ok(),
            None => None,
        };
        let Some(adapter) = self.adapter(&agent.adapter_type) else {
            return Ok(Some(failure(
                "adapter_not_installed",
                format!("No adapter for type {:?}", agent.adapter_type),
            )));
        };
        // Secret references become values here, in a copy only the adapter
        // sees; the values join the run's redaction below.
        let (config, resolved) =
            match crate::secret_env::resolve(store, &self.inner.vault, &agent).await {
                Ok(found) => found,
                Err(why) => {
                    return Ok(Some(failure(
                        "secret_unavailable",
                        format!("Cannot start: {why}"),
                    )))
                }
            };
        if let Err(errors) = adapter.validate_config(&config) {
            let list: Vec<String> = errors
                .iter()
                .map(|e| format!("{}: {}", e.path.join("."), e.message))
                .collect();
            return Ok(Some(failure(
                "invalid_config",
                format!("Invalid adapter config: {}", list.join("; ")),
            )));
        }
        let limits = adapter.limits(&config);
        let token =
            self.inner
                .tokens
                .mint(&agent.id, &agent.company_id, &run.id, ttl_secs(&limits));
        let env = crate::outcome::run_env(&self.inner.api_url, &agent, run, &token);
        let mut secrets = vec![token.clone()];
        secrets.extend(resolved);
        if let Some(extra) = agent.adapter_config.get("env").and_then(Value::as_object) {
            for (k, v) in extra {
                let value = v
                    .as_str()
                    .or_else(|| v.get("value").and_then(Value::as_str));
                if let (true, Some(v)) = (is_secret_name(k), value) {
                    secrets.push(v.to_string());
                }
            }
        }
        // What the API hides elsewhere in the config (headers, keys) stays
        // out of the run's output too.
        let (_, secret_paths) = paperclip_core::secrets::redact_config(&agent.adapter_config);
        for path in secret_paths.iter().filter(|p| p[0] != "env") {
            if let Some(v) = paperclip_core::secrets::get_path(&agent.adapter_config, path)
                .and_then(Value::as_str)
            {
                secrets.push(v.to_string());
            }
        }
        // A coding CLI may be handed its provider key from the server's own
        // environment (adapters::child_env); its value is a secret as well.
        for name in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"] {
            if let Ok(value) = std::env::var(name) {
                secrets.push(value);
            }
        }
        let redactor = Redactor::new(secrets);
        let caps = adapter.capabilities();
        let mut values =
            template_values(&self.inner.api_url, &company, &agent, run, issue.as_ref());
        if let Some(comments) = self.wake_comments(run).await {
            values.insert("wake.comments", comments);
        }
        let prompt = match agent
            .adapter_config
            .get("promptTemplate")
            .and_then(Value::as_str)
        {
            Some(t) => Some(paperclip_core::template::render(t, &values)),
            None if caps.needs_prompt => Some(paperclip_core::template::default_prompt(&values)),
            None => None,
        };
        // Sessions are per task; a run without a task starts fresh.
        let task_key = run.issue_id.clone().filter(|_| caps.sessions);
        let saved = match &task_key {
            Some(key) => {
                paperclip_store::sessions::find(store, &agent.id, &agent.adapter_type, key).await?
            }
            None => None,
        };
        let so_far = match (&run.issue_id, crate::notes::overflow_reset(saved.as_ref())) {
            (Some(issue), true) => self.task_so_far(issue).await,
            _ => None,
        };
        let prompt = crate::notes::with_notes(prompt, run, saved.as_ref(), so_far.as_deref());
        let saved_session = saved.and_then(|s| s.session_display_id);
        // The last moment a stop can prevent the process: after this the
        // adapter checks the token itself and, once spawned, kills the tree.
        if live.cancel.is_cancelled() {
            return Ok(Some(stopped_before_start(live.stop_reason())));
        }
        let prompt = crate::notes::with_answers(store, run, prompt).await;
        let budget =
            crate::budget::RunBudget::start(store, &self.inner.live, run, &agent, issue.as_ref())
                .await;
        let sink = Arc::new(RunSinkImpl::new(
            self.inner.clone(),
            run.clone(),
            redactor,
            budget,
        )?);
        let invocation = Invocation {
            run_id: run.id.clone(),
            agent_id: agent.id.clone(),
            company_id: agent.company_id.clone(),
            config,
            env,
            prompt,
            context: run.context_snapshot.clone(),
            default_cwd: self.workspace_dir(&agent.id),
            cancel: live.cancel.clone(),
            stop_now: live.stop_now.clone(),
            session_id: saved_session.clone(),
            skills_dir: Some(self.skills_dir()),
        };
        let (outcome, rejected) =
            invoke_with_fresh_retry(&*adapter, invocation, sink.clone()).await;
        let stats = sink.close().await;
        if outcome.status == OutcomeStatus::Pending {
            // Bounded even if the adapter named no bound: a run must end.
            let wait = limits.callback.unwrap_or(crate::callbacks::DEFAULT_WAIT);
            crate::callbacks::awaiting(store, run, wait).await?;
            return Ok(None);
        }
        let cancel_reason = live.stop_reason();
        let status = match outcome.status {
            OutcomeStatus::Succeeded => RunStatus::Succeeded,
            OutcomeStatus::Failed => RunStatus::Failed,
            OutcomeStatus::Cancelled => RunStatus::Cancelled,
            OutcomeStatus::TimedOut => RunStatus::TimedOut,
            OutcomeStatus::Pending => unreachable!("handled above"),
        };
        let error = match (outcome.status, cancel_reason) {
            (OutcomeStatus::Cancelled, Some(reason)) => Some(reason),
            _ => outcome.error.map(|e| sink.redact(&e)),
        };
        Ok(Some(Finish {
            status,
            error,
            // A stop with a code of its own (a budget) is not a plain cancel.
            error_code: match (outcome.status, live.stop_code()) {
                (OutcomeStatus::Cancelled, Some(code)) => Some(code.to_string()),
                _ => outcome.error_code.map(|c| c.as_str().to_string()),
            },
            exit_code: outcome.exit_code.map(i64::from),
            signal: outcome.signal,
            usage: outcome.usage.map(|u| sink.redact_json(&u)),
            result: outcome.result.map(|r| sink.redact_json(&r)),
            stdout_excerpt: stats.stdout_excerpt,
            stderr_excerpt: stats.stderr_excerpt,
            log_store: Some(self.inner.logs.kind().to_string()),
            log_ref: stats.log_ref,
            log_bytes: stats.log_bytes as i64,
            session_id_before: saved_session,
            session_id_after: outcome.session_id.clone(),
            session: task_key.and_then(|task_key| {
                // An overflowed session fails every resume the same way, so the
                // next run starts fresh; the row remembers why, for its prompt.
                let overflowed = outcome.error_code == Some(ErrorCode::ContextWindowExceeded);
                let forget = rejected
                    || overflowed
                    || outcome.error_code == Some(ErrorCode::ResumeSessionInvalid);
                (outcome.session_id.is_some() || forget).then(|| SessionUpdate {
                    adapter_type: agent.adapter_type.clone(),
                    task_key,
                    session_id: outcome.session_id.clone().filter(|_| !overflowed),
                    error: overflowed.then(|| crate::notes::OVERFLOWED.to_string()),
                })
            }),
        }))
    }

    /// The comments this run was woken for, oldest first: exactly the ids
    /// its wakes collected, so a comment folded into a queued run is not
    /// lost and one delivered to an earlier run is not repeated.
    async fn wake_comments(&self, run: &HeartbeatRun) -> Option<String> {
        let store = &self.inner.store;
        let issue_id = run.issue_id.as_deref()?;
        let mut list = Vec::new();
        for id in wake_comment_ids(run) {
            // A comment deleted since the wake is no longer news.
            if let Ok(c) = paperclip_store::comments::get(store, issue_id, &id).await {
                list.push(c);
            }
        }
        if list.is_empty() {
            return None;
        }
        let mut names: HashMap<String, String> = HashMap::new();
        let mut out = String::new();
        for c in list {
            let author = match &c.author_agent_id {
                Some(id) => match names.get(id) {
                    Some(n) => n.clone(),
                    None => {
                        let n = paperclip_store::agents::get(store, id)
                            .await
                            .map(|a| a.name)
                            .unwrap_or_else(|_| "an agent".into());
                        names.insert(id.clone(), n.clone());
                        n
                    }
                },
                None => "the board".into(),
            };
            out.push_str(&format!("- {author}: {}\n", c.body.trim()));
        }
        Some(out)
    }

    /// The task's latest comments, oldest first and each cut short: what a
    /// run that lost its session is told of the work so far.
    async fn task_so_far(&self, issue_id: &str) -> Option<String> {
        let store = &self.inner.store;
        let mut latest = paperclip_store::comments::list(
            store,
            issue_id,
            None,
            paperclip_store::comments::Order::Desc,
            SO_FAR_COMMENTS,
        )
        .await
        .ok()?;
        latest.reverse();
        let lines: Vec<String> = latest
            .iter()
            .map(|c| {
                let who = if c.author_agent_id.is_some() {
                    "an agent"
                } else {
                    "the board"
                };
                let body: String = c.body.trim().chars().take(300).collect();
                format!("- {who}: {body}")
            })
            .collect();
        (!lines.is_empty()).then(|| lines.join("\n") + "\n")
    }

    pub(crate) fn publish_run(&self, run: &HeartbeatRun, kind: &str) {
        publish_run(&self.inner.hub, run, kind);
    }

    pub(crate) async fn publish_agent(&self, agent_id: &str) {
        if let Ok(agent) = paperclip_store::agents::get(&self.inner.store, agent_id).await {
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

/// Invokes the adapter; when it refuses to resume the saved session, says so
/// in the run, and runs once more with a fresh session. Returns the outcome
/// and whether the saved session was rejected.
async fn invoke_with_fresh_retry(
    adapter: &dyn Adapter,
    invocation: Invocation,
    sink: Arc<RunSinkImpl>,
) -> (Outcome, bool) {
    let resumed = invocation.session_id.clone();
    let outcome = adapter.invoke(invocation.clone(), sink.clone()).await;
    let Some(session) = resumed else {
        return (outcome, false);
    };
    if outcome.error_code != Some(ErrorCode::ResumeSessionInvalid)
        || invocation.cancel.is_cancelled()
    {
        return (outcome, false);
    }
    let message =
        format!("the saved session {session} could not be resumed; starting a fresh session");
    sink.log(Stream::System, &format!("{message}\n"));
    sink.event(
        "session.reset",
        "warn",
        &message,
        json!({ "sessionId": session, "errorCode": "resume_session_invalid", "error": outcome.error }),
    );
    let fresh = Invocation {
        session_id: None,
        ..invocation
    };
    (adapter.invoke(fresh, sink).await, true)
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

fn stopped_before_start(reason: Option<String>) -> Finish {
    Finish {
        status: RunStatus::Cancelled,
        error: Some(reason.unwrap_or_else(|| "cancelled before start".into())),
        error_code: Some("cancelled".into()),
        ..Finish::new(RunStatus::Failed)
    }
}

fn failure(code: &str, error: String) -> Finish {
    Finish {
        status: RunStatus::Failed,
        error: Some(error),
        error_code: Some(code.into()),
        ..Finish::new(RunStatus::Failed)
    }
}

fn template_values<'a>(
    api_url: &str,
    company: &paperclip_core::model::Company,
    agent: &Agent,
    run: &HeartbeatRun,
    issue: Option<&paperclip_core::model::Issue>,
) -> BTreeMap<&'a str, String> {
    let mut v = BTreeMap::new();
    v.insert("company.id", company.id.clone());
    v.insert("company.name", company.name.clone());
    v.insert("company.issuePrefix", company.issue_prefix.clone());
    v.insert("agent.id", agent.id.clone());
    v.insert("agent.name", agent.name.clone());
    v.insert("agent.role", agent.role.to_string());
    v.insert("agent.title", agent.title.clone().unwrap_or_default());
    v.insert("agent.urlKey", agent.url_key.clone());
    v.insert("run.id", run.id.clone());
    v.insert("run.source", run.invocation_source.clone());
    v.insert(
        "run.triggerDetail",
        run.trigger_detail.clone().unwrap_or_default(),
    );
    v.insert(
        "heartbeat.reason",
        run.wake_reason.clone().unwrap_or_default(),
    );
    v.insert("api.url", api_url.to_string());
    if let Some(issue) = issue {
        v.insert("task.id", issue.id.clone());
        v.insert("task.identifier", issue.identifier.clone());
        v.insert("task.title", issue.title.clone());
        v.insert("task.status", issue.status.to_string());
        v.insert(
            "task.description",
            issue.description.clone().unwrap_or_default(),
        );
    }
    let payload = run
        .context_snapshot
        .get("payload")
        .cloned()
        .unwrap_or(Value::Null);
    if let Some(c) = payload.get("commentId").and_then(Value::as_str) {
        v.insert("wake.commentId", c.to_string());
    }
    if !payload.is_null() {
        v.insert("wake.payloadJson", payload.to_string());
    }
    if let Some(a) = payload.get("approvalId").and_then(Value::as_str) {
        v.insert("approval.id", a.to_string());
    }
    if let Some(s) = payload.get("approvalStatus").and_then(Value::as_str) {
        v.insert("approval.status", s.to_string());
    }
    v
}

/// Every comment the run's wakes carried (`commentIds`, oldest first); a run
/// queued before that list existed has its one `payload.commentId`.
pub(crate) fn wake_comment_ids(run: &HeartbeatRun) -> Vec<String> {
    let ctx = &run.context_snapshot;
    match ctx.get("commentIds").and_then(Value::as_array) {
        Some(ids) => ids
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        None => ctx
            .pointer("/payload/commentId")
            .and_then(Value::as_str)
            .map(|c| vec![c.to_string()])
            .unwrap_or_default(),
    }
}
