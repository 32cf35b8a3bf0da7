//! The coding-agent CLIs (`claude_local`, `codex_local`, `opencode_local`):
//! one adapter shape, three dialects. [`CliAdapter`] owns what they share
//! (config, working directory, the process, cancel and timeout, turning
//! output into transcript events, failure classes, session resume); each
//! [`CliKind`] says how to build its command line and read its output.

#[cfg(test)]
mod billing_tests;
pub mod catalog;
pub mod classify;
pub mod claude;
pub mod codex;
pub mod gemini;
pub mod opencode;
pub mod pi;
pub mod pricing;
pub mod quota;
mod run;
mod skill_index;
use run::ParseTap;
pub mod stream;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use paperclip_core::billing::BillingType;
use serde_json::Value;

use crate::config::{Fields, KnownKeys, CONFINEMENT_KEYS};
use crate::environment::Report;
use crate::models::{DetectedModel, Model};
use crate::process::{self, Exit};
use crate::{
    Adapter, BoxFuture, Capabilities, ConfigError, Invocation, Outcome, RunLimits, RunSink,
};
use stream::{Lines, StreamParser, Summary};

/// The top-level config keys every CLI adapter reads, local or in a
/// Kubernetes Job (upstream's names; `args` is upstream's older name of
/// `extraArgs`, read when `extraArgs` is empty, as upstream does).
pub const CLI_KEYS: &[&str] = &[
    "command",
    "cwd",
    "env",
    "model",
    "extraArgs",
    "args",
    "instructionsFilePath",
    "timeoutSec",
    "graceSec",
    "promptTemplate",
];

/// Keys upstream defines for all its local CLI adapters that ours accept
/// without using them (a run's log names any that is set):
/// `bootstrapPromptTemplate` (deprecated upstream: a first-run prompt; ours
/// is `promptTemplate`), `paperclipSkillSync` (upstream's skill picks; the
/// Paperclip skill is always given here), `workspaceStrategy` and
/// `workspaceRuntime` (a task of a project with a repository gets its own
/// worktree here whatever they say), `instructionsBundleMode`,
/// `instructionsRootPath`, `instructionsEntryFile` and `agentsMdPath`
/// (upstream's server-managed instructions bundle; ours is
/// `instructionsFilePath`), `managedAiConnection` (upstream's stored
/// provider login), `helloProbeTimeoutSec` (upstream's environment test
/// runs a hello prompt; ours does not).
pub const LOCAL_UPSTREAM_UNUSED: &[&str] = &[
    "bootstrapPromptTemplate",
    "paperclipSkillSync",
    "workspaceStrategy",
    "workspaceRuntime",
    "instructionsBundleMode",
    "instructionsRootPath",
    "instructionsEntryFile",
    "agentsMdPath",
    "managedAiConnection",
    "helloProbeTimeoutSec",
];

/// Upstream's engine choice for Claude and Codex (`engine`: `cli`, `acp` or
/// `auto`) and its ACP engine's settings, with their older `acp`-prefixed
/// names, and its Bubblewrap path (`filesystemSandboxCommand`). A kind with
/// an ACP command ([`CliKind::acp_command`]) reads the engine's keys
/// (`crate::acp::settings::KEYS`); the rest stay accepted and unused
/// (confinement finds `bwrap` on PATH).
pub const ENGINE_UPSTREAM_UNUSED: &[&str] = &[
    "engine",
    "agentCommand",
    "mode",
    "stateDir",
    "permissionMode",
    "nonInteractivePermissions",
    "warmHandleIdleMs",
    "acpAgentCommand",
    "acpMode",
    "acpStateDir",
    "acpPermissionMode",
    "acpNonInteractivePermissions",
    "acpWarmHandleIdleMs",
    "filesystemSandboxCommand",
];

/// Config keys every CLI adapter understands (upstream's names).
#[derive(Debug, Clone)]
pub struct CliConfig {
    pub command: String,
    pub cwd: Option<PathBuf>,
    pub env: BTreeMap<String, String>,
    pub model: Option<String>,
    /// Extra arguments appended to the generated ones.
    pub extra_args: Vec<String>,
    /// The agent's own instructions (AGENTS.md-style), handed to the CLI.
    pub instructions_file: Option<PathBuf>,
    pub timeout: Option<Duration>,
    pub grace: Duration,
}

/// One run's inputs as a [`CliKind`] sees them.
pub struct RunSpec<'a, E> {
    pub config: &'a CliConfig,
    pub extra: &'a E,
    pub prompt: &'a str,
    pub session_id: Option<&'a str>,
    pub cwd: &'a Path,
    /// Directory with one folder per skill (`paperclip/SKILL.md`).
    pub skills_dir: Option<&'a Path>,
    /// A scratch directory for generated files (per agent, outside the repo).
    pub scratch: &'a Path,
}

/// The command line for one run.
pub struct Built {
    pub args: Vec<String>,
    /// Whether the prompt goes on stdin (otherwise it is in `args`).
    pub prompt_on_stdin: bool,
    /// Environment on top of the config's `env` (lower precedence than it).
    pub env: BTreeMap<String, String>,
    /// Lines for the run log explaining choices made (e.g. IS_SANDBOX).
    pub notes: Vec<String>,
}

/// What [`CliKind::prepare`] set up for one run, beyond its command line.
#[derive(Debug, Default)]
pub struct Prepared {
    /// Lines for the run log.
    pub notes: Vec<String>,
    /// Removed once the process has exited (files written for this run only).
    pub remove_after: Vec<PathBuf>,
    /// The session the run works in, when it is chosen before the run rather
    /// than reported by the CLI (a session file named up front).
    pub session_id: Option<String>,
}

pub trait CliKind: Clone + Send + Sync + 'static {
    type Extra: Send + Sync;
    fn kind(&self) -> &'static str;
    fn default_command(&self) -> &'static str;
    /// Which provider bills the usage (`anthropic`, `openai`, ...).
    fn provider(&self, model: Option<&str>) -> &'static str;
    /// Who pays for a run with the child's environment `env` (upstream's
    /// rule for this CLI): by default no one knows.
    fn billing_type(&self, _env: &BTreeMap<String, String>) -> BillingType {
        BillingType::Unknown
    }
    fn parse_extra(&self, f: &mut Fields<'_>) -> Self::Extra;
    /// The keys [`CliKind::parse_extra`] reads, and those upstream defines
    /// for this CLI's `*_local` type that it accepts without using, beyond
    /// [`CLI_KEYS`] and [`LOCAL_UPSTREAM_UNUSED`].
    fn known_keys(&self) -> KnownKeys;
    fn build(&self, run: &RunSpec<'_, Self::Extra>) -> std::io::Result<Built>;
    fn parser(&self) -> Box<dyn StreamParser>;
    /// Whether a failure text says the CLI would not resume the session.
    fn resume_rejected(&self, text: &str) -> bool;
    /// Fills in what the CLI does not report itself (its model, a cost).
    fn complete(&self, _summary: &mut Summary, _config: &CliConfig) {}
    /// The last say before the spawn, over the child's whole environment
    /// (the config's `env` merged in): take out what only the adapter reads,
    /// write files for this run only. `Err` ends the run with that outcome.
    fn prepare(
        &self,
        _run: &RunSpec<'_, Self::Extra>,
        _args: &[String],
        _env: &mut BTreeMap<String, String>,
    ) -> Result<Prepared, Box<Outcome>> {
        Ok(Prepared::default())
    }
    /// The models the hire form offers for this CLI: by default
    /// [`catalog::models`] for this kind (empty for a kind it does not know).
    fn models<'a>(&'a self, config: &'a CliConfig) -> BoxFuture<'a, Vec<Model>> {
        catalog::models(self.kind(), config)
    }
    /// The fallback list behind [`CliKind::models`], known without asking.
    fn known_models(&self) -> Vec<Model> {
        catalog::known_models(self.kind())
    }
    /// The model the CLI picks with no `model` set (its settings file under
    /// the agent's `HOME`, an environment variable): by default
    /// [`catalog::detect`] for this kind.
    fn detect_model<'a>(&'a self, config: &'a CliConfig) -> BoxFuture<'a, Option<DetectedModel>> {
        catalog::detect(self.kind(), config)
    }
    /// The agent's ACP bridge command line, for `engine: "acp"` (`None`: no
    /// ACP engine for this CLI, and the engine keys stay unused).
    fn acp_command(&self) -> Option<&'static str> {
        None
    }
}

pub struct CliAdapter<K: CliKind> {
    kind: K,
    /// The adapter type failures are reported under (a Kubernetes twin's
    /// own, not the local CLI's).
    name: &'static str,
}

impl<K: CliKind> CliAdapter<K> {
    pub fn new(kind: K) -> CliAdapter<K> {
        let name = kind.kind();
        CliAdapter { kind, name }
    }

    /// Who pays for a run whose CLI sees `env` (a Job's, judged by the
    /// Kubernetes twin).
    pub(crate) fn billing_of(&self, env: &BTreeMap<String, String>) -> BillingType {
        self.kind.billing_type(env)
    }

    pub(crate) fn named(kind: K, name: &'static str) -> CliAdapter<K> {
        CliAdapter { kind, name }
    }

    fn parse(&self, config: &Value) -> Result<(CliConfig, K::Extra), Vec<ConfigError>> {
        let mut f = Fields::new(config)?;
        let command = f
            .string("command")
            .filter(|c| !c.trim().is_empty())
            .unwrap_or_else(|| self.kind.default_command().to_string());
        let cwd = f.string("cwd").filter(|s| !s.is_empty()).map(PathBuf::from);
        if let Some(cwd) = &cwd {
            if !cwd.is_absolute() {
                f.error(&["cwd"], "must be an absolute path");
            }
        }
        let env = f.string_map("env");
        let model = f.string("model").filter(|s| !s.trim().is_empty());
        let mut extra_args = f.string_list("extraArgs");
        if extra_args.is_empty() {
            extra_args = f.string_list("args");
        }
        let instructions_file = f
            .string("instructionsFilePath")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from);
        // A Kubernetes twin's agent runs in a pod, which bwrap cannot wrap.
        if self.name == self.kind.kind() {
            crate::confine::parse(&mut f);
        } else {
            f.refuse_confinement();
        }
        let timeout = f.non_negative("timeoutSec", 0.0);
        let grace = f.non_negative("graceSec", 20.0);
        if let Some(t) = f.get("promptTemplate") {
            match t.as_str().map(paperclip_template_check) {
                Some(Ok(())) => {}
                Some(Err(e)) => f.error(&["promptTemplate"], e),
                None => f.error(&["promptTemplate"], "must be a string"),
            }
        }
        let extra = self.kind.parse_extra(&mut f);
        if !self.acp_keys().is_empty() {
            crate::acp::Settings::read(&mut f);
        }
        f.finish((
            CliConfig {
                command,
                cwd,
                env,
                model,
                extra_args,
                instructions_file,
                timeout: (timeout > 0.0).then(|| Duration::from_secs_f64(timeout)),
                grace: Duration::from_secs_f64(grace),
            },
            extra,
        ))
    }
}

/// Templates are checked by the server against the catalog; here only the
/// syntax that would break rendering is refused.
fn paperclip_template_check(t: &str) -> Result<(), String> {
    let opens = t.matches("{{").count();
    let closes = t.matches("}}").count();
    if opens != closes {
        return Err("has an unclosed {{".into());
    }
    Ok(())
}

impl<K: CliKind> Adapter for CliAdapter<K> {
    fn kind(&self) -> &'static str {
        self.kind.kind()
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

    fn known_keys(&self) -> KnownKeys {
        let own = self.kind.known_keys();
        KnownKeys::new(CLI_KEYS, LOCAL_UPSTREAM_UNUSED)
            .with(CONFINEMENT_KEYS, &[])
            .with(&own.read, &own.unused)
            .with(self.acp_keys(), &[])
    }

    fn limits(&self, config: &Value) -> RunLimits {
        self.parse(config)
            .map(|(c, _)| RunLimits {
                timeout: c.timeout,
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
        crate::config::note_ignored(&self.known_keys(), self.name, &invocation.config, &*sink);
        if crate::acp::chosen(self.kind.acp_command(), &invocation, &*sink) {
            return Box::pin(crate::acp::run(self, invocation, sink));
        }
        Box::pin(self.run(invocation, sink))
    }

    fn test_environment<'a>(
        &'a self,
        config: &'a Value,
        default_cwd: &'a Path,
    ) -> BoxFuture<'a, Report> {
        Box::pin(self.probe(config, default_cwd))
    }

    fn models<'a>(&'a self, config: &'a Value) -> BoxFuture<'a, Vec<Model>> {
        Box::pin(async move { self.kind.models(&self.lenient(config)).await })
    }

    fn known_models(&self) -> Vec<Model> {
        self.kind.known_models()
    }

    fn detect_model<'a>(&'a self, config: &'a Value) -> BoxFuture<'a, Option<DetectedModel>> {
        Box::pin(async move { self.kind.detect_model(&self.lenient(config)).await })
    }
}

impl<K: CliKind> CliAdapter<K> {
    fn acp_keys(&self) -> &'static [&'static str] {
        // A Kubernetes twin runs the CLI in its pod: no ACP engine there.
        match self.kind.acp_command() {
            Some(_) if self.name == self.kind.kind() => crate::acp::settings::KEYS,
            _ => &[],
        }
    }

    /// The config to list or detect models with: the one given when it is
    /// valid, else the defaults with its `env` (a form asks before its
    /// config is complete, and pi_local's is not valid without a model).
    fn lenient(&self, config: &Value) -> CliConfig {
        if let Ok((cfg, _)) = self.parse(config) {
            return cfg;
        }
        let env = Fields::new(config)
            .map(|mut f| f.string_map("env"))
            .unwrap_or_default();
        CliConfig {
            command: self.kind.default_command().to_string(),
            cwd: None,
            env,
            model: None,
            extra_args: Vec::new(),
            instructions_file: None,
            timeout: None,
            grace: Duration::from_secs(20),
        }
    }
}

pub(crate) type SharedParser = Arc<Mutex<Box<dyn StreamParser>>>;

/// What the Kubernetes twins (`crate::k8s`) share with the local adapters:
/// the same config, command line, stream parsing and judgement of the end.
impl<K: CliKind> CliAdapter<K> {
    pub(crate) fn cli(&self) -> &K {
        &self.kind
    }

    pub(crate) fn parse_config(
        &self,
        config: &Value,
    ) -> Result<(CliConfig, K::Extra), Vec<ConfigError>> {
        self.parse(config)
    }

    /// A line-by-line parser of the CLI's stdout that reports transcript
    /// items and usage to `sink` as they arrive; the shared parser is read
    /// for the summary once the output is over.
    pub(crate) fn tap(
        &self,
        cfg: &CliConfig,
        sink: Arc<dyn RunSink>,
        billing: BillingType,
    ) -> (Box<dyn process::Tap>, SharedParser) {
        let parser = Arc::new(Mutex::new(self.kind.parser()));
        let tap = ParseTap {
            lines: Lines::default(),
            parser: parser.clone(),
            sink,
            kind: self.kind.clone(),
            config: cfg.clone(),
            billing,
            reported: None,
        };
        (Box::new(tap), parser)
    }

    /// The outcome of a CLI that exited with `code` (a remote process: no
    /// local signal), judged exactly as a local run's.
    pub(crate) fn settle(
        &self,
        cfg: &CliConfig,
        code: Option<i32>,
        stderr_tail: Option<String>,
        parser: &Mutex<Box<dyn StreamParser>>,
        resumed: bool,
        billing: BillingType,
    ) -> Outcome {
        use std::os::unix::process::ExitStatusExt;
        let mut summary = parser.lock().unwrap().summary();
        self.kind.complete(&mut summary, cfg);
        // No exit code (the pod was removed before it was read): a CLI that
        // reported its own clean end finished; anything else reads as killed.
        let code = code.or_else(|| (summary.completed && summary.error.is_none()).then_some(0));
        let raw = code.map(|c| (c & 0xff) << 8).unwrap_or(9);
        let exit = Exit {
            status: std::process::ExitStatus::from_raw(raw),
            stopped: None,
            stderr_tail,
        };
        let mut out = self.outcome(cfg, Ok(exit), summary, resumed);
        out.signal = None;
        stamp_billing(&mut out, billing);
        out
    }
}

/// Whether `env` sets `key` to something (upstream ignores a blank value).
pub(crate) fn is_set(env: &BTreeMap<String, String>, key: &str) -> bool {
    env.get(key).is_some_and(|v| !v.trim().is_empty())
}

/// Records who pays on the run's usage, where the cost event is made from.
pub(crate) fn stamp_billing(out: &mut Outcome, billing: BillingType) {
    if let Some(Value::Object(usage)) = &mut out.usage {
        usage.insert("billingType".into(), billing.as_str().into());
    }
}
