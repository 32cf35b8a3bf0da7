//! The hire dialog's field tables: for each adapter type, the keys its
//! adapter reads, each with its label, input kind and help. The server
//! validates the same keys, so a field here that an adapter does not read
//! would be a silent no-op.

use paperclip_core::agent::AgentRole;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Text,
    Number,
    /// One string per line: a JSON array of strings.
    Lines,
    /// `NAME=value` per line: a JSON object of strings.
    Pairs,
    Bool,
    /// A JSON value typed as text.
    Json,
    Multiline,
    Choice(&'static [&'static str]),
}

pub(super) struct Field {
    pub(super) key: &'static str,
    pub(super) label: &'static str,
    pub(super) kind: Kind,
    pub(super) required: bool,
    pub(super) help: &'static str,
    pub(super) placeholder: &'static str,
}

const fn f(
    key: &'static str,
    label: &'static str,
    kind: Kind,
    help: &'static str,
    placeholder: &'static str,
) -> Field {
    Field {
        key,
        label,
        kind,
        required: false,
        help,
        placeholder,
    }
}

const fn req(
    key: &'static str,
    label: &'static str,
    help: &'static str,
    ph: &'static str,
) -> Field {
    Field {
        key,
        label,
        kind: Kind::Text,
        required: true,
        help,
        placeholder: ph,
    }
}

const CWD: Field = f(
    "cwd",
    "Working directory",
    Kind::Text,
    "Absolute path the agent works in (its repository). Empty: the agent's own workspace.",
    "/home/me/repo",
);
const ENV: Field = f(
    "env",
    "Environment",
    Kind::Pairs,
    "NAME=value per line, added to the run's environment.",
    "ANTHROPIC_API_KEY=…",
);
const PROMPT: Field = f(
    "promptTemplate",
    "Prompt template",
    Kind::Multiline,
    "What the agent is told each run; {{variables}} as on the agent page. Empty: the default prompt.",
    "",
);
const MODEL: Field = f(
    "model",
    "Model",
    Kind::Text,
    "Empty: the CLI's default model.",
    "",
);
const INSTRUCTIONS: Field = f(
    "instructionsFilePath",
    "Instructions file",
    Kind::Text,
    "Path of an AGENTS.md-style file with the agent's own instructions.",
    "",
);
const EXTRA_ARGS: Field = f(
    "extraArgs",
    "Extra arguments",
    Kind::Lines,
    "One per line, appended to the generated command line.",
    "",
);
const CLI_TIMEOUT: Field = f(
    "timeoutSec",
    "Timeout (seconds)",
    Kind::Number,
    "A run is stopped after this long; 0 or empty: no limit.",
    "0",
);
const CLI_GRACE: Field = f(
    "graceSec",
    "Stop grace (seconds)",
    Kind::Number,
    "Between asking the CLI to stop and killing it. Default 20.",
    "20",
);

const fn command(default: &'static str) -> Field {
    f(
        "command",
        "Command",
        Kind::Text,
        "The CLI to run: a name on PATH or a full path. Empty: the default.",
        default,
    )
}

const PROCESS: &[Field] = &[
    req(
        "command",
        "Command",
        "The program to run each heartbeat: a name on PATH or a path.",
        "/usr/local/bin/my-agent",
    ),
    f("args", "Arguments", Kind::Lines, "One per line.", ""),
    CWD,
    ENV,
    f(
        "timeoutSec",
        "Timeout (seconds)",
        Kind::Number,
        "A run is stopped after this long; 0: no limit. Default 600.",
        "600",
    ),
    f(
        "graceSec",
        "Stop grace (seconds)",
        Kind::Number,
        "Between TERM and KILL when a run is stopped. Default 10.",
        "10",
    ),
    PROMPT,
];

const HTTP: &[Field] = &[
    req(
        "url",
        "URL",
        "The agent's endpoint (http or https); each heartbeat is a request to it.",
        "https://agents.example.com/wake",
    ),
    f(
        "method",
        "Method",
        Kind::Choice(&["POST", "PUT", "PATCH", "GET"]),
        "Default POST.",
        "",
    ),
    f(
        "headers",
        "Headers",
        Kind::Pairs,
        "Name=value per line.",
        "Authorization=Bearer …",
    ),
    f(
        "timeoutMs",
        "Timeout (ms)",
        Kind::Number,
        "How long to wait for the answer; 0: no limit. Default 30000.",
        "30000",
    ),
    f(
        "payloadTemplate",
        "Payload template (JSON)",
        Kind::Json,
        "The request body, with {{run.id}}-style variables. Empty: run, agent, company and context.",
        "",
    ),
    f(
        "async",
        "Finishes by callback",
        Kind::Bool,
        "A 202 answer hands the run off; the agent reports its end to the callback route.",
        "",
    ),
    f(
        "callbackTimeoutSec",
        "Callback timeout (seconds)",
        Kind::Number,
        "How long a handed-off run may wait for its callback. Default 3600.",
        "3600",
    ),
    f(
        "forwardAuth",
        "Send the run's API key",
        Kind::Bool,
        "As a bearer token, so the agent can call Paperclip back.",
        "",
    ),
];

const CLAUDE_EFFORT: Field = f(
    "effort",
    "Effort",
    Kind::Choice(&["low", "medium", "high", "xhigh", "max"]),
    "Reasoning effort. Empty: the CLI's default.",
    "",
);
const CLAUDE_MAX_TURNS: Field = f(
    "maxTurnsPerRun",
    "Max turns per run",
    Kind::Number,
    "A positive whole number. Empty: no limit.",
    "",
);
const CLAUDE_SKIP_PERMISSIONS: Field = f(
    "dangerouslySkipPermissions",
    "Skip permission prompts",
    Kind::Bool,
    "Lets the CLI run tools without asking; nobody is there to answer.",
    "",
);

const CLAUDE: &[Field] = &[
    CWD,
    MODEL,
    CLAUDE_EFFORT,
    CLAUDE_MAX_TURNS,
    CLAUDE_SKIP_PERMISSIONS,
    command("claude"),
    INSTRUCTIONS,
    EXTRA_ARGS,
    ENV,
    CLI_TIMEOUT,
    CLI_GRACE,
    PROMPT,
];

const CODEX: &[Field] = &[
    CWD,
    MODEL,
    f(
        "modelReasoningEffort",
        "Reasoning effort",
        Kind::Choice(&["minimal", "low", "medium", "high"]),
        "Empty: the CLI's default.",
        "",
    ),
    f(
        "search",
        "Web search",
        Kind::Bool,
        "Lets the agent search the web.",
        "",
    ),
    f(
        "dangerouslyBypassApprovalsAndSandbox",
        "Bypass approvals and sandbox",
        Kind::Bool,
        "Runs commands without Codex's sandbox or prompts.",
        "",
    ),
    f(
        "configOverrides",
        "Config overrides",
        Kind::Pairs,
        "dotted.key=value per line, passed as -c.",
        "",
    ),
    command("codex"),
    INSTRUCTIONS,
    EXTRA_ARGS,
    ENV,
    CLI_TIMEOUT,
    CLI_GRACE,
    PROMPT,
];

const OPENCODE: &[Field] = &[
    CWD,
    f(
        "model",
        "Model",
        Kind::Text,
        "provider/model, e.g. anthropic/claude-sonnet-4-5. Empty: OpenCode's default.",
        "anthropic/claude-sonnet-4-5",
    ),
    f(
        "variant",
        "Variant",
        Kind::Text,
        "The model variant, if the provider has them.",
        "",
    ),
    command("opencode"),
    INSTRUCTIONS,
    EXTRA_ARGS,
    ENV,
    CLI_TIMEOUT,
    CLI_GRACE,
    PROMPT,
];

const GEMINI: &[Field] = &[
    CWD,
    f(
        "model",
        "Model",
        Kind::Text,
        "A Gemini model id, e.g. gemini-2.5-pro. Empty or auto: the CLI chooses.",
        "gemini-2.5-flash",
    ),
    f(
        "sandbox",
        "Sandbox",
        Kind::Bool,
        "Runs tools in Gemini's container sandbox (needs Docker or Podman).",
        "",
    ),
    command("gemini"),
    INSTRUCTIONS,
    EXTRA_ARGS,
    ENV,
    CLI_TIMEOUT,
    CLI_GRACE,
    PROMPT,
];

/// A Kubernetes agent's fields: its CLI's (given), then where its Job runs;
/// every Job field defaults to the control plane's own pod (namespace,
/// image, pull secrets, placement).
macro_rules! k8s_adapter {
    ($($cli:expr),* $(,)?) => {
        &[
            $($cli,)*
            f("namespace", "Namespace", Kind::Text, "Where Jobs run. Empty: the control plane's namespace.", ""),
            f("image", "Image", Kind::Text, "The Job's image, with the CLI installed. Empty: the control plane's image.", ""),
            f("imagePullPolicy", "Image pull policy", Kind::Choice(&["IfNotPresent", "Always", "Never"]), "Default IfNotPresent.", ""),
            f("serviceAccountName", "Service account", Kind::Text, "The Job pod's account. Empty: the namespace's default.", ""),
            f("resources.requests.cpu", "CPU request", Kind::Text, "Default 1000m.", "1000m"),
            f("resources.requests.memory", "Memory request", Kind::Text, "Default 2Gi.", "2Gi"),
            f("resources.limits.cpu", "CPU limit", Kind::Text, "Default 4000m.", "4000m"),
            f("resources.limits.memory", "Memory limit", Kind::Text, "Default 8Gi.", "8Gi"),
            f("nodeSelector", "Node selector", Kind::Pairs, "key=value per line. Empty: the control plane's.", "pool=agents"),
            f("tolerations", "Tolerations (JSON)", Kind::Json, "A JSON array of tolerations.", ""),
            f("labels", "Extra labels", Kind::Pairs, "key=value per line, added to the Job (paperclip.io/* are kept).", ""),
            f("ttlSecondsAfterFinished", "Keep finished Jobs (seconds)", Kind::Number, "Kubernetes removes a finished Job after this. Default 300.", "300"),
            f("retainJobs", "Retain Jobs", Kind::Bool, "Keep finished Jobs for debugging (no TTL, no delete).", ""),
            f("reattachOrphanedJobs", "Reattach after a restart", Kind::Bool, "On by default: a restarted control plane follows the task's running Job instead of starting another.", ""),
            f("inheritEnv", "Inherited variables", Kind::Lines, "More names of the control plane's own variables a Job may get (one per line).", ""),
            f("inheritEnvFrom", "envFrom in any namespace", Kind::Bool, "Jobs in the control plane's namespace always get its envFrom Secrets and ConfigMaps by reference (no value copied; false in the config opts out). Check to pass them to Jobs in another namespace too.", ""),
            f("kubeconfig", "Kubeconfig file", Kind::Text, "Outside the cluster. Empty: KUBECONFIG, then the pod's service account.", ""),
            EXTRA_ARGS,
            ENV,
            CLI_TIMEOUT,
            PROMPT,
        ]
    };
}

const CLAUDE_K8S: &[Field] = k8s_adapter!(
    MODEL,
    CLAUDE_EFFORT,
    CLAUDE_MAX_TURNS,
    CLAUDE_SKIP_PERMISSIONS,
);

const OPENCODE_K8S: &[Field] = k8s_adapter!(f(
    "model",
    "Model",
    Kind::Text,
    "provider/model, e.g. anthropic/claude-sonnet-4-5. Empty: OpenCode's default.",
    "anthropic/claude-sonnet-4-5",
));

/// Adapter types in the order offered, with a one-line description, their
/// fields, and how many of those are shown before "More options".
pub(super) const ADAPTERS: &[(&str, &str, &[Field], usize)] = &[
    ("claude_local", "Claude Code on this machine", CLAUDE, 5),
    ("codex_local", "Codex CLI on this machine", CODEX, 5),
    ("opencode_local", "OpenCode on this machine", OPENCODE, 3),
    ("gemini_local", "Gemini CLI on this machine", GEMINI, 3),
    (
        "claude_k8s",
        "Claude Code as a Kubernetes Job",
        CLAUDE_K8S,
        3,
    ),
    (
        "opencode_k8s",
        "OpenCode as a Kubernetes Job",
        OPENCODE_K8S,
        3,
    ),
    ("process", "Any local command", PROCESS, 3),
    ("http", "An agent behind an HTTP endpoint", HTTP, 3),
];

pub(super) const ROLES: [AgentRole; 12] = [
    AgentRole::Engineer,
    AgentRole::Ceo,
    AgentRole::Cto,
    AgentRole::Cmo,
    AgentRole::Cfo,
    AgentRole::Security,
    AgentRole::Designer,
    AgentRole::Pm,
    AgentRole::Qa,
    AgentRole::Devops,
    AgentRole::Researcher,
    AgentRole::General,
];
