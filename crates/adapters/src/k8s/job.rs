//! One run's Job against the API: the concurrency guard, creation, waiting
//! for the pod, following its log while watching the Job, and cleanup.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use tokio_util::sync::CancellationToken;

use super::logs::Timings;
use super::pod::{main_end, oom_words, pod_state, MainEnd, PodState};
use super::selfpod::CALL_TIMEOUT;
use super::spec::{self, Built, LABEL_RUN, LABEL_TASK};
use crate::process::Tap;
use crate::{ErrorCode, Outcome, OutcomeStatus, Stream};

pub(crate) struct JobRun {
    pub client: Client,
    pub namespace: String,
    pub kind: &'static str,
    pub container: &'static str,
    pub agent_id: String,
    pub run_id: String,
    pub timings: Timings,
    /// Agents with a run at the guard or with a Job, in this process.
    pub active: Arc<Mutex<HashSet<String>>>,
    pub sink: Arc<dyn crate::RunSink>,
    pub retain: bool,
    pub reattach: bool,
    pub task_id: Option<String>,
    /// `timeoutSec + graceSec`: the Job's own deadline plus time to report it.
    pub deadline: Option<Duration>,
    /// The config's memory limit, when the pod does not say its own.
    pub memory_limit: String,
}

pub(crate) enum Ended {
    /// Decided here (guard, scheduling, cancel, timeout, mismatch).
    Outcome(Outcome),
    /// The CLI ran to its end in the pod: judged like a local exit.
    Exited {
        code: Option<i32>,
        stderr: Option<String>,
    },
    /// The Job and its pod vanished before their end was read, and this
    /// process did not delete them: judged by the CLI's output, which may
    /// have reached its end (a TTL), else deleted outside Paperclip.
    Gone { job: String },
}

/// Why a run whose Job vanished failed, and what to do.
pub(crate) fn deleted_outside(job: &str) -> String {
    format!(
        "Job {job} was deleted outside Paperclip before it finished (Paperclip did not cancel it; its pod is gone with its work in progress): someone ran kubectl delete, or a cleanup policy or another controller removed it. Find who in the cluster's audit log or events, keep Jobs labelled app.kubernetes.io/managed-by=paperclip out of such cleanups, then retry the run"
    )
}

/// Why the Job's pod will not run its CLI.
enum NoPod {
    Cancelled,
    Broken(String),
    /// The Job itself is gone (404) while its pod was awaited.
    Gone,
}

enum Completion {
    Succeeded,
    Failed {
        deadline: bool,
    },
    /// Deleted (TTL, by hand) before a terminal state was read.
    Gone,
    TimedOut,
    Cancelled,
    /// Could not be read, and still not terminal after the bounded re-check.
    Mismatch,
}

fn fail(code: ErrorCode, message: impl Into<String>) -> Ended {
    Ended::Outcome(Outcome::failed(code, message))
}

pub(super) async fn timed<T>(
    f: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, String> {
    match tokio::time::timeout(CALL_TIMEOUT, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {}s", CALL_TIMEOUT.as_secs())),
    }
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.is_not_found())
}

pub(crate) fn terminal(job: &Job) -> Option<(bool, Option<String>)> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    // Only Complete/Failed: from 1.31 SuccessCriteriaMet/FailureTarget come
    // first, while the pod may still be terminating.
    conditions
        .iter()
        .find(|c| c.status == "True" && (c.type_ == "Complete" || c.type_ == "Failed"))
        .map(|c| (c.type_ == "Complete", c.reason.clone()))
}

impl JobRun {
    pub(super) fn log(&self, stream: Stream, text: &str) {
        self.sink.log(stream, &format!("[paperclip] {text}\n"));
    }

    fn jobs(&self) -> Api<Job> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    pub(super) fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    /// One run of an agent at a time in this process holds its claim from
    /// before the guard reads the API until its Job is gone, so two runs of
    /// one agent cannot both find no Job and both create one.
    pub async fn drive(
        &self,
        built: Built,
        tap: Box<dyn Tap>,
        cancel: &CancellationToken,
    ) -> Ended {
        if !self.active.lock().unwrap().insert(self.agent_id.clone()) {
            return fail(
                ErrorCode::K8sConcurrentRunBlocked,
                "Concurrent run blocked: another run of this agent has a Job",
            );
        }
        let ended = self.claimed(built, tap, cancel).await;
        self.active.lock().unwrap().remove(&self.agent_id);
        ended
    }

    async fn claimed(
        &self,
        built: Built,
        mut tap: Box<dyn Tap>,
        cancel: &CancellationToken,
    ) -> Ended {
        let reattach = match self.guard().await {
            Ok(reattach) => reattach,
            Err(ended) => return ended,
        };
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        let name = reattach.clone().unwrap_or(built.name.clone());
        // A reattached Job's Secrets are the ones its first run made.
        let secret_names: Vec<String> = match &reattach {
            Some(_) => vec![format!("{name}-env"), format!("{name}-prompt")],
            None => built
                .secrets()
                .filter_map(|s| s.metadata.name.clone())
                .collect(),
        };
        match &reattach {
            Some(job) => self.log(
                Stream::System,
                &format!("Reattaching to orphaned Job {job}: a previous control plane started it for this task"),
            ),
            None => {
                for secret in built.secrets() {
                    if let Err(e) = timed(secrets.create(&PostParams::default(), secret)).await {
                        let which = secret.metadata.name.clone().unwrap_or_default();
                        self.delete_secrets(&secret_names).await;
                        let code = if which.ends_with("-prompt") {
                            ErrorCode::K8sPromptSecretCreateFailed
                        } else {
                            ErrorCode::K8sJobCreateFailed
                        };
                        return fail(code, format!("creating the Secret {which} failed: {e}"));
                    }
                }
            }
        }
        let job = reattach.is_none().then_some(&built.job);
        let owned = if job.is_some() {
            secret_names.clone()
        } else {
            Vec::new()
        };
        let ended = self.created(&name, job, &owned, &mut *tap, cancel).await;
        self.delete_secrets(&secret_names).await;
        ended
    }

    async fn delete_secrets(&self, names: &[String]) {
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        for name in names {
            let _ = timed(secrets.delete(name, &DeleteParams::background())).await;
        }
    }

    /// One Job per agent. A live Job of another run this process does not
    /// drive was left by a dead process and is removed; one of a run this
    /// process drives blocks. Any failure to read the list refuses the run.
    /// Returns the Job to reattach to, if a dead run left one for this task.
    async fn guard(&self) -> Result<Option<String>, Ended> {
        let selector = spec::agent_selector(self.kind, &self.agent_id);
        let list = timed(self.jobs().list(&ListParams::default().labels(&selector)))
            .await
            .map_err(|e| {
                self.log(
                    Stream::Stderr,
                    &format!("Concurrency guard failed: unable to list jobs: {e}"),
                );
                fail(
                    ErrorCode::K8sConcurrencyGuardUnreachable,
                    format!(
                        "Concurrency guard unreachable: cannot list the agent's Jobs in namespace {} ({e}); no Job was started",
                        self.namespace
                    ),
                )
            })?;
        let live: Vec<&Job> = list
            .items
            .iter()
            .filter(|j| terminal(j).is_none())
            .collect();
        let run_of = |j: &Job| {
            j.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(LABEL_RUN))
                .cloned()
                .unwrap_or_default()
        };
        let name_of = |j: &Job| j.metadata.name.clone().unwrap_or_default();
        // This process drives no other run of the agent (the claim), so a
        // live Job of another run was left by a process that is gone.
        let mine = spec::label_value(&self.run_id).unwrap_or_default();
        let (blocking, orphans): (Vec<&Job>, Vec<&Job>) =
            live.into_iter().partition(|j| run_of(j) == mine);
        if !blocking.is_empty() {
            let names: Vec<String> = blocking.iter().map(|j| name_of(j)).collect();
            return Err(fail(
                ErrorCode::K8sConcurrentRunBlocked,
                format!(
                    "Concurrent run blocked: Job {} is still running for this agent",
                    names.join(", ")
                ),
            ));
        }
        let task = self.task_id.as_deref().and_then(spec::label_value);
        let same_task = |j: &Job| {
            task.is_some()
                && j.metadata.labels.as_ref().and_then(|l| l.get(LABEL_TASK)) == task.as_ref()
        };
        let adopted = orphans
            .iter()
            .find(|j| self.reattach && same_task(j))
            .map(|j| name_of(j));
        let orphans: Vec<&Job> = orphans
            .into_iter()
            .filter(|j| Some(name_of(j)) != adopted)
            .collect();
        if !orphans.is_empty() {
            let names: Vec<String> = orphans.iter().map(|j| name_of(j)).collect();
            self.log(
                Stream::System,
                &format!(
                    "Cleaning up {} orphaned K8s Job(s) from previous run(s): {}",
                    names.len(),
                    names.join(", ")
                ),
            );
            for n in names {
                let _ = timed(self.jobs().delete(&n, &DeleteParams::background())).await;
            }
        }
        Ok(adopted)
    }

    /// Creates `job` (unless reattaching to `name`) and drives it to its end.
    async fn created(
        &self,
        name: &str,
        job: Option<&Job>,
        owned: &[String],
        tap: &mut dyn Tap,
        cancel: &CancellationToken,
    ) -> Ended {
        if let Some(job) = job {
            let created = match timed(self.jobs().create(&PostParams::default(), job)).await {
                Ok(created) => created,
                Err(e) => {
                    return fail(
                        ErrorCode::K8sJobCreateFailed,
                        format!(
                            "creating Job {name} in namespace {} failed: {e}",
                            self.namespace
                        ),
                    )
                }
            };
            for secret in owned {
                self.own_secret(name, secret, &created).await;
            }
            let deadline = job
                .spec
                .as_ref()
                .and_then(|s| s.active_deadline_seconds)
                .map(|d| format!("{d}s"))
                .unwrap_or_else(|| "none".into());
            self.log(
                Stream::System,
                &format!(
                    "Created K8s Job: {name} in namespace {} (deadline: {deadline})",
                    self.namespace
                ),
            );
        }
        let how = if job.is_some() {
            "created"
        } else {
            "reattached"
        };
        self.sink.event(
            "k8s.job",
            "info",
            &format!("Job {name} {how}"),
            serde_json::json!({"job": name, "namespace": self.namespace, "reattached": job.is_none()}),
        );
        let pod = tokio::select! {
            pod = self.wait_pod(name) => pod,
            _ = cancel.cancelled() => Err(NoPod::Cancelled),
        };
        let pod = match pod {
            Ok(pod) => pod,
            Err(NoPod::Gone) => return Ended::Gone { job: name.into() },
            Err(why) => {
                self.delete_job(name).await;
                return match why {
                    NoPod::Broken(message) => fail(ErrorCode::K8sPodScheduleFailed, message),
                    _ => Ended::Outcome(cancelled()),
                };
            }
        };
        self.log(Stream::System, &format!("Pod {pod} is running"));
        let stop = CancellationToken::new();
        let got_output = Arc::new(Mutex::new(false));
        let (completion, ()) = tokio::join!(
            async {
                let c = self.completion(name, cancel).await;
                stop.cancel();
                c
            },
            self.follow(&pod, tap, &stop, cancel, got_output.clone()),
        );
        if matches!(completion, Completion::Cancelled) {
            self.delete_job(name).await;
            return Ended::Outcome(cancelled());
        }
        if !*got_output.lock().unwrap() {
            self.log(
                Stream::System,
                "Log stream returned empty — reading pod logs directly...",
            );
            let params = LogParams {
                container: Some(self.container.into()),
                ..LogParams::default()
            };
            if let Ok(text) = timed(self.pods().logs(&pod, &params)).await {
                self.sink.log(Stream::Stdout, &text);
                tap.text(&text);
            }
        }
        tap.end();
        let end = self.main_end(name).await;
        let code = end.as_ref().map(|e| e.exit_code);
        match completion {
            Completion::Mismatch => {
                self.log(
                    Stream::System,
                    &format!(
                        "Retaining job {name} (state mismatch — the run could not see its end)"
                    ),
                );
                fail(
                    ErrorCode::K8sJobStateMismatch,
                    format!(
                        "Job {name} did not complete cleanly (log stream ended before job reached terminal state); it is kept so no second Job starts beside it"
                    ),
                )
            }
            Completion::TimedOut | Completion::Failed { deadline: true } => {
                self.cleanup(name).await;
                let secs = self.deadline.map(|d| d.as_secs()).unwrap_or_default();
                Ended::Outcome(Outcome {
                    exit_code: code,
                    ..Outcome::ended(
                        OutcomeStatus::TimedOut,
                        ErrorCode::Timeout,
                        format!("Job {name} timed out (timeoutSec + graceSec = {secs}s)"),
                    )
                })
            }
            _ if end.as_ref().is_some_and(|e| e.oom) => {
                self.cleanup(name).await;
                let limit = end
                    .and_then(|e| e.memory_limit)
                    .unwrap_or_else(|| self.memory_limit.clone());
                let code = code.unwrap_or(137);
                Ended::Outcome(Outcome {
                    exit_code: Some(code),
                    ..Outcome::failed(
                        ErrorCode::K8sOomKilled,
                        oom_words(self.container, code, &limit),
                    )
                })
            }
            // Nothing left to delete, nor an exit code to read.
            Completion::Gone if code.is_none() => Ended::Gone { job: name.into() },
            _ => {
                self.cleanup(name).await;
                Ended::Exited { code, stderr: None }
            }
        }
    }

    /// Makes the Job its Secret's owner, so the garbage collector removes
    /// the Secret with the Job if this process dies before it deletes it.
    /// Best effort: the run does not depend on it.
    async fn own_secret(&self, name: &str, secret: &str, job: &Job) {
        let Some(uid) = job.metadata.uid.clone() else {
            return;
        };
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        let patch = serde_json::json!({"metadata": {"ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": uid,
            // true would need update on jobs/finalizers where the API server
            // enforces owner-reference permissions.
            "controller": true, "blockOwnerDeletion": false,
        }]}});
        let params = PatchParams::default();
        if let Err(e) = timed(secrets.patch(secret, &params, &Patch::Merge(&patch))).await {
            self.log(
                Stream::Stderr,
                &format!("Warning: could not make Job {name} the owner of Secret {secret}: {e}"),
            );
        }
    }

    async fn cleanup(&self, name: &str) {
        if self.retain {
            self.log(
                Stream::System,
                &format!("Retaining job {name} for debugging (retainJobs=true)"),
            );
        } else {
            self.delete_job(name).await;
        }
    }

    async fn delete_job(&self, name: &str) {
        match timed(self.jobs().delete(name, &DeleteParams::background())).await {
            Ok(_) => {}
            Err(e) if e.contains("404") || e.contains("not found") => {}
            Err(e) => self.log(
                Stream::Stderr,
                &format!("Warning: failed to cleanup job {name}: {e}"),
            ),
        }
    }

    /// The pod of the Job once its CLI runs; `Err` when it never will, with
    /// the cause and what to do.
    async fn wait_pod(&self, job: &str) -> Result<String, NoPod> {
        let started = Instant::now();
        let params = ListParams::default().labels(&format!("job-name={job}"));
        let mut last = String::new();
        loop {
            if let Ok(list) = timed(self.pods().list(&params)).await {
                // No pod: the controller has not made it yet, or the Job
                // itself was deleted.
                if list.items.is_empty() {
                    if let Ok(Err(e)) =
                        tokio::time::timeout(CALL_TIMEOUT, self.jobs().get(job)).await
                    {
                        if is_not_found(&e) {
                            return Err(NoPod::Gone);
                        }
                    }
                }
                if let Some(pod) = list.items.first() {
                    let name = pod.metadata.name.clone().unwrap_or_default();
                    match pod_state(pod, self.container) {
                        PodState::Running => return Ok(name),
                        PodState::Broken(why) => return Err(NoPod::Broken(why)),
                        PodState::Waiting(now) => {
                            if now != last {
                                self.log(Stream::System, &format!("Pod {name}: {now}"));
                                last = now;
                            }
                        }
                    }
                }
            }
            if started.elapsed() >= self.timings.pod_wait {
                return Err(NoPod::Broken(format!(
                    "Timed out waiting for pod to be scheduled ({}s); check the cluster's capacity and the Job's events (kubectl describe job {job})",
                    self.timings.pod_wait.as_secs()
                )));
            }
            tokio::time::sleep(self.timings.poll).await;
        }
    }

    /// Polls the Job to a terminal state, logging a keepalive while it
    /// runs. A read that fails is retried for `recheck` before the run gives
    /// up on seeing the end.
    async fn completion(&self, name: &str, cancel: &CancellationToken) -> Completion {
        let started = Instant::now();
        let mut last_keepalive = Instant::now();
        let mut failing_since: Option<Instant> = None;
        loop {
            match tokio::time::timeout(CALL_TIMEOUT, self.jobs().get(name)).await {
                Ok(Ok(job)) => {
                    failing_since = None;
                    match terminal(&job) {
                        Some((true, _)) => return Completion::Succeeded,
                        Some((false, reason)) => {
                            return Completion::Failed {
                                deadline: reason.as_deref() == Some("DeadlineExceeded"),
                            }
                        }
                        None => {}
                    }
                }
                Ok(Err(e)) if is_not_found(&e) => return Completion::Gone,
                Ok(Err(e)) => {
                    self.log(
                        Stream::Stderr,
                        &format!("transient error checking job status: {e}"),
                    );
                    failing_since.get_or_insert_with(Instant::now);
                }
                Err(_) => {
                    failing_since.get_or_insert_with(Instant::now);
                }
            }
            if failing_since.is_some_and(|t| t.elapsed() >= self.timings.recheck) {
                return Completion::Mismatch;
            }
            if self.deadline.is_some_and(|d| started.elapsed() >= d) {
                return Completion::TimedOut;
            }
            if last_keepalive.elapsed() >= self.timings.keepalive {
                last_keepalive = Instant::now();
                self.log(
                    Stream::System,
                    &format!(
                        "keepalive — job {name} running ({}s)",
                        started.elapsed().as_secs()
                    ),
                );
            }
            tokio::select! {
                _ = tokio::time::sleep(self.timings.poll) => {}
                _ = cancel.cancelled() => return Completion::Cancelled,
            }
        }
    }

    async fn main_end(&self, job: &str) -> Option<MainEnd> {
        let params = ListParams::default().labels(&format!("job-name={job}"));
        let list = timed(self.pods().list(&params)).await.ok()?;
        list.items.iter().find_map(|p| main_end(p, self.container))
    }
}

fn cancelled() -> Outcome {
    Outcome::ended(OutcomeStatus::Cancelled, ErrorCode::Cancelled, "cancelled")
}
