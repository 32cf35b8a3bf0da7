//! `claude_k8s` and `opencode_k8s`: the local coding CLIs run as one
//! Kubernetes Job per run. Config, command line, stream parsing, failure
//! classes and sessions are the local twin's ([`crate::cli`]); this module
//! adds where the process runs.
//!
//! Invariants:
//! - **Env allow-list.** A Job gets the run's `PAPERCLIP_*` variables, the
//!   config's `env`, and of the control plane's own container only the
//!   names in [`spec::inheritable`]: never its database URL or signing key.
//! - **Fail closed.** No Job is created unless the API answered that no Job
//!   of this agent is running.
//! - A Job this process created is deleted when its run ends (cancel
//!   included), unless `retainJobs` or the run could not see its end.

pub mod config;
mod envtest;
mod follow;
mod job;
pub mod logs;
mod pod;
pub mod selfpod;
pub mod spec;
mod worktree;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::cli::{CliAdapter, CliKind, RunSpec};
use crate::config::describe;
use crate::environment::Report;
use crate::{
    Adapter, BoxFuture, Capabilities, ConfigError, ErrorCode, Invocation, Outcome, RunLimits,
    RunSink, Stream,
};
pub use envtest::RBAC;
use logs::Timings;
use selfpod::Cluster;

pub struct K8sAdapter<K: CliKind> {
    kind: &'static str,
    cli: CliAdapter<K>,
    cluster: Arc<Cluster>,
    timings: Timings,
    /// Agents of this process with a run at the guard or with a Job: one
    /// each, so any other live Job of the agent was left by a dead process.
    active: Arc<Mutex<HashSet<String>>>,
}

impl<K: CliKind> K8sAdapter<K> {
    pub fn new(kind: &'static str, cli: K) -> K8sAdapter<K> {
        K8sAdapter {
            kind,
            cli: CliAdapter::named(cli, kind),
            cluster: Arc::new(Cluster::default()),
            timings: Timings::default(),
            active: Arc::default(),
        }
    }

    /// Other poll intervals and bounds (tests run them in milliseconds).
    pub fn with_timings(mut self, timings: Timings) -> K8sAdapter<K> {
        self.timings = timings;
        self
    }

    /// The main container's name: the CLI's.
    fn container(&self) -> &'static str {
        if self.kind == "opencode_k8s" {
            "opencode"
        } else {
            "claude"
        }
    }

    fn parse(
        &self,
        config: &Value,
    ) -> Result<(crate::cli::CliConfig, K::Extra, config::K8sConfig), Vec<ConfigError>> {
        let local = self.cli.parse_config(config);
        let k8s = config::parse(config);
        match (local, k8s) {
            (Ok((mut cli, extra)), Ok(k8s)) => {
                // A Job needs time to be scheduled and torn down: upstream's
                // default grace is a minute.
                if config.get("graceSec").is_none_or(Value::is_null) {
                    cli.grace = Duration::from_secs(60);
                }
                Ok((cli, extra, k8s))
            }
            (a, b) => Err(a
                .err()
                .into_iter()
                .flatten()
                .chain(b.err().into_iter().flatten())
                .collect()),
        }
    }

    async fn run(&self, inv: Invocation, sink: Arc<dyn RunSink>) -> Outcome {
        let (cli, extra, kcfg) = match self.parse(&inv.config) {
            Ok(parsed) => parsed,
            Err(errors) => return Outcome::failed(ErrorCode::SpawnFailed, describe(&errors)),
        };
        let kubeconfig = kcfg.kubeconfig.as_deref();
        let (client, pod) = match self.cluster.client(kubeconfig).await {
            Ok(client) => match self.cluster.self_pod(kubeconfig).await {
                Ok(pod) => (client, pod),
                Err(e) => return Outcome::failed(ErrorCode::K8sUnavailable, e),
            },
            Err(e) => return Outcome::failed(ErrorCode::K8sUnavailable, e),
        };
        // A task's worktree (made by the server before the run) is where the
        // Job works, or the run does not start.
        let worktree = worktree::bound(&inv.env);
        if let Some(dir) = &worktree {
            if let Err(why) = worktree::reachable(dir, &pod) {
                return Outcome::failed(ErrorCode::InvalidWorkingDirectory, why);
            }
            if let Some(note) = worktree::git_note(dir) {
                sink.log(Stream::System, &format!("[paperclip] {note}\n"));
            }
        }
        let namespace = kcfg.namespace.clone().unwrap_or(pod.namespace.clone());
        let Some(image) = kcfg.image.clone().or(pod.image.clone()) else {
            return Outcome::failed(
                ErrorCode::K8sUnavailable,
                "no image for the Job: the control plane is not running in a pod of this \
                 cluster, so set adapterConfig.image",
            );
        };
        let prompt = inv.prompt.clone().unwrap_or_default();
        // Paths the CLI is handed (skills) live on the shared volume, which
        // the Job mounts where the control plane does.
        let scratch = inv
            .default_cwd
            .parent()
            .unwrap_or(&inv.default_cwd)
            .join(".paperclip")
            .join(&inv.agent_id)
            .join(self.kind);
        let skills = inv
            .skills_dir
            .as_deref()
            .filter(|_| std::fs::create_dir_all(&scratch).is_ok());
        // The task's worktree, else the agent's workspace when it is on the
        // shared volume (a control plane in the cluster), else the volume's
        // root.
        let cwd = worktree
            .or_else(|| cli.cwd.clone())
            .or_else(|| {
                (pod.pvc_claim.is_some() && inv.default_cwd.starts_with(spec::SHARED_MOUNT))
                    .then(|| inv.default_cwd.clone())
            })
            .map(|c| c.display().to_string())
            .unwrap_or_else(|| spec::SHARED_MOUNT.to_string());
        // Made here, as this uid, on the volume the Job mounts: a working
        // directory the container runtime has to create would be root's.
        let below_mount =
            Path::new(&cwd).starts_with(spec::SHARED_MOUNT) && cwd != spec::SHARED_MOUNT;
        if pod.pvc_claim.is_some() && below_mount {
            let _ = std::fs::create_dir_all(&cwd);
        }
        let run = RunSpec {
            config: &cli,
            extra: &extra,
            prompt: &prompt,
            session_id: inv.session_id.as_deref(),
            cwd: Path::new(&cwd),
            skills_dir: skills,
            scratch: &scratch,
        };
        let built = match self.cli.cli().build(&run) {
            Ok(built) => built,
            Err(e) => {
                return Outcome::failed(
                    ErrorCode::SpawnFailed,
                    format!("preparing the {} run failed: {e}", self.kind),
                )
            }
        };
        let env = job_env(self.kind, &pod, &kcfg, &built.env, &cli.env, &inv.env);
        let mut kcfg = kcfg;
        // Without placement of its own a Job goes where the control plane may.
        if kcfg.node_selector.is_empty() && kcfg.tolerations.is_empty() {
            kcfg.node_selector = pod.node_selector.clone();
            kcfg.tolerations = pod.tolerations.clone();
        }
        let secret_env = paperclip_core::company_secret::resolved_names(&inv.config);
        let input = spec::JobInput {
            adapter_type: self.kind,
            container: self.container(),
            agent_id: &inv.agent_id,
            agent_name: &inv.agent_name,
            run_id: &inv.run_id,
            company_id: &inv.company_id,
            task_id: inv.env.get("PAPERCLIP_TASK_ID").map(String::as_str),
            namespace: &namespace,
            image: &image,
            config: &kcfg,
            pod: &pod,
            env: &env,
            secret_env: &secret_env,
            program: &cli.command,
            args: &built.args,
            working_dir: &cwd,
            prompt: &prompt,
            active_deadline: cli.timeout.map(|t| t.as_secs().max(1) as i64),
        };
        let spec = match spec::build(&input) {
            Ok(spec) => spec,
            Err(e) => {
                return Outcome::failed(
                    ErrorCode::K8sJobCreateFailed,
                    format!("the Job could not be described: {e}"),
                )
            }
        };
        let ctx = job::JobRun {
            client,
            namespace,
            kind: self.kind,
            container: self.container(),
            agent_id: inv.agent_id.clone(),
            run_id: inv.run_id.clone(),
            timings: self.timings,
            active: self.active.clone(),
            sink: sink.clone(),
            retain: kcfg.retain_jobs,
            reattach: kcfg.reattach,
            task_id: inv.env.get("PAPERCLIP_TASK_ID").cloned(),
            deadline: cli.timeout.map(|t| t + cli.grace),
            memory_limit: kcfg.resources.limits_memory.clone(),
        };
        let billing = self.cli.billing_of(&billing_env(&env, &pod, &kcfg));
        let (tap, parser) = self.cli.tap(&cli, sink.clone(), billing);
        let ended = ctx.drive(spec, tap, &inv.cancel).await;
        match ended {
            job::Ended::Outcome(outcome) => outcome,
            job::Ended::Exited { code, stderr } => self.cli.settle(
                &cli,
                code,
                stderr,
                &parser,
                inv.session_id.is_some(),
                billing,
            ),
            job::Ended::Gone { job } => {
                let finished = parser.lock().unwrap().summary().completed;
                let mut out =
                    self.cli
                        .settle(&cli, None, None, &parser, inv.session_id.is_some(), billing);
                if !finished {
                    // Its usage and session stay: the tokens were spent.
                    out.status = crate::OutcomeStatus::Failed;
                    out.error_code = Some(ErrorCode::K8sJobDeletedExternally);
                    out.error = Some(job::deleted_outside(&job));
                    out.exit_code = None;
                }
                out
            }
        }
    }
}

/// The Job's literal variables, lowest precedence first: the allow-listed
/// part of the control plane's container, the CLI's own, the config's
/// `env`, the run's `PAPERCLIP_*` (which a config cannot override), the API
/// URL as the cluster reaches it, and `HOME` on the shared volume.
/// What the Job's CLI sees of its credentials, for who pays: its literal
/// variables, and those it inherits from the control plane by reference (a
/// key in a Secret is there, though its value is not read here). A key
/// that only an `envFrom` Secret holds cannot be seen: such a run reads as
/// its CLI's login.
fn billing_env(
    env: &BTreeMap<String, String>,
    pod: &selfpod::SelfPod,
    kcfg: &config::K8sConfig,
) -> BTreeMap<String, String> {
    let mut seen = env.clone();
    for var in &pod.env_value_from {
        if spec::inheritable(&var.name, &kcfg.inherit_env) && !seen.contains_key(&var.name) {
            seen.insert(var.name.clone(), "(from a Secret)".into());
        }
    }
    seen
}

fn job_env(
    kind: &str,
    pod: &selfpod::SelfPod,
    kcfg: &config::K8sConfig,
    cli_env: &BTreeMap<String, String>,
    config_env: &BTreeMap<String, String>,
    run_env: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = pod
        .env_literal
        .iter()
        .filter(|(k, _)| spec::inheritable(k, &kcfg.inherit_env))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // Root in a sandbox is the local twin's concern; a Job runs as uid 1000.
    env.extend(
        cli_env
            .iter()
            .filter(|(k, _)| k.as_str() != "IS_SANDBOX")
            .map(|(k, v)| (k.clone(), v.clone())),
    );
    env.extend(crate::process::merged_env(run_env, config_env));
    // The server's own URL is a loopback address, wrong inside another pod.
    if let Some(url) = config_env
        .get("PAPERCLIP_API_URL")
        .or_else(|| pod.env_literal.get("PAPERCLIP_API_URL"))
    {
        env.insert("PAPERCLIP_API_URL".into(), url.clone());
    }
    env.insert("HOME".into(), spec::SHARED_MOUNT.into());
    if kind == "opencode_k8s" {
        env.insert("OPENCODE_DISABLE_PROJECT_CONFIG".into(), "true".into());
    }
    env
}

impl<K: CliKind> Adapter for K8sAdapter<K> {
    fn kind(&self) -> &'static str {
        self.kind
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            cancellable: true,
            async_callback: false,
            sessions: true,
            needs_prompt: true,
        }
    }

    fn validate_config(&self, config: &Value) -> Result<(), Vec<ConfigError>> {
        self.parse(config).map(|_| ())
    }

    fn known_keys(&self) -> crate::config::KnownKeys {
        config::known_keys(self.kind, &self.cli.cli().known_keys().read)
    }

    fn known_models(&self) -> Vec<crate::models::Model> {
        self.cli.cli().known_models()
    }

    /// The known list only: the Job's CLI is in an image, not on this
    /// server, so asking the local one would describe another machine.
    fn models<'a>(&'a self, _config: &'a Value) -> BoxFuture<'a, Vec<crate::models::Model>> {
        Box::pin(async move { self.known_models() })
    }

    fn limits(&self, config: &Value) -> RunLimits {
        self.parse(config)
            .map(|(c, _, _)| RunLimits {
                // Scheduling and pulling an image come on top of the CLI's time.
                timeout: c.timeout.map(|t| t + self.timings.pod_wait),
                grace: c.grace,
                callback: None,
            })
            .unwrap_or_default()
    }

    fn invoke<'a>(
        &'a self,
        invocation: Invocation,
        sink: Arc<dyn RunSink>,
    ) -> BoxFuture<'a, Outcome> {
        crate::config::note_ignored(&self.known_keys(), self.kind, &invocation.config, &*sink);
        Box::pin(async move {
            let outcome = self.run(invocation, sink.clone()).await;
            if let Some(error) = &outcome.error {
                sink.log(Stream::System, &format!("[paperclip] {error}\n"));
            }
            outcome
        })
    }

    fn test_environment<'a>(
        &'a self,
        config: &'a Value,
        _default_cwd: &'a Path,
    ) -> BoxFuture<'a, Report> {
        Box::pin(envtest::run(self, config))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_job_env_is_an_allow_list_with_run_variables_on_top() {
        let pod = selfpod::SelfPod {
            env_literal: BTreeMap::from([
                (
                    "PAPERCLIP_API_URL".into(),
                    "http://paperclip.ns.svc:3100".into(),
                ),
                ("DATABASE_URL".into(), "postgres://secret".into()),
                ("PAPERCLIP_SECRET".into(), "signing".into()),
                ("PAPERCLIP_SECRETS_MASTER_KEY".into(), "k".repeat(64)),
                ("PAPERCLIP_DEPLOYMENT_MODE".into(), "authenticated".into()),
                ("TZ".into(), "UTC".into()),
                ("EXTRA".into(), "x".into()),
            ]),
            ..Default::default()
        };
        // A config naming the server's own secrets still does not get them.
        let kcfg = config::parse(&serde_json::json!({
            "inheritEnv": ["EXTRA", "DATABASE_URL", "PAPERCLIP_SECRETS_MASTER_KEY", "PAPERCLIP_SECRET"]
        }))
        .unwrap();
        let config_env = BTreeMap::from([
            ("HOME".into(), "/tmp".into()),
            ("PAPERCLIP_RUN_ID".into(), "forged".into()),
            ("MY_TOKEN".into(), "t".into()),
        ]);
        let run_env = BTreeMap::from([
            ("PAPERCLIP_RUN_ID".into(), "run-1".into()),
            ("PAPERCLIP_API_URL".into(), "http://127.0.0.1:3100".into()),
        ]);
        let cli_env = BTreeMap::from([("IS_SANDBOX".into(), "1".into())]);
        let env = job_env("opencode_k8s", &pod, &kcfg, &cli_env, &config_env, &run_env);
        assert_eq!(env.get("DATABASE_URL"), None);
        assert_eq!(env.get("PAPERCLIP_SECRET"), None);
        assert_eq!(env.get("PAPERCLIP_SECRETS_MASTER_KEY"), None);
        assert_eq!(env.get("PAPERCLIP_DEPLOYMENT_MODE"), None);
        assert_eq!(env.get("IS_SANDBOX"), None);
        assert_eq!(env["TZ"], "UTC");
        assert_eq!(env["EXTRA"], "x");
        assert_eq!(env["MY_TOKEN"], "t");
        assert_eq!(env["PAPERCLIP_RUN_ID"], "run-1");
        assert_eq!(env["PAPERCLIP_API_URL"], "http://paperclip.ns.svc:3100");
        assert_eq!(env["HOME"], "/paperclip");
        assert_eq!(env["OPENCODE_DISABLE_PROJECT_CONFIG"], "true");
    }
}
