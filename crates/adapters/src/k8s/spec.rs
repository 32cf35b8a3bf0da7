//! The Job a run becomes: its name, labels, environment, security context,
//! volumes and prompt delivery. Pure: no client, no clock, so every rule of
//! the contract is a unit test here.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::config::K8sConfig;
use super::selfpod::SelfPod;

/// Prompts above this many UTF-8 bytes go through a Secret: an env value
/// that large would push the pod spec toward the API server's object limit.
pub const PROMPT_ENV_LIMIT: usize = 256 * 1024;
/// Where the shared volume is mounted, in the control plane and in Jobs;
/// HOME points there so a CLI's sessions survive from one Job to the next.
pub const SHARED_MOUNT: &str = "/paperclip";
pub const PROMPT_DIR: &str = "/tmp/prompt";
pub const INIT_CONTAINER: &str = "write-prompt";
pub const MANAGED_BY: &str = "paperclip";

pub const LABEL_AGENT: &str = "paperclip.io/agent-id";
pub const LABEL_RUN: &str = "paperclip.io/run-id";
pub const LABEL_COMPANY: &str = "paperclip.io/company-id";
pub const LABEL_ADAPTER: &str = "paperclip.io/adapter-type";
/// The task a Job works on: a restarted control plane's continuation of that
/// task reattaches to the Job instead of starting another.
pub const LABEL_TASK: &str = "paperclip.io/task-id";
/// The agent's name, for a person reading `kubectl describe`: an
/// annotation, since a name is not a valid label value.
pub const ANNOTATION_AGENT_NAME: &str = "paperclip.io/agent-name";

/// Variables of the control plane's own container a Job may inherit (as a
/// literal or as the same `valueFrom` reference): locale, proxies, CA
/// bundles and the model providers' credentials and endpoints. Everything
/// else the server has (its database URL, signing secret, cloud keys) stays
/// with the server; a Job that needs more names it in `env` or `inheritEnv`.
const INHERITED: &[&str] = &[
    "TZ",
    "LANG",
    "LANGUAGE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
];

/// The control plane's own secrets and settings: never copied into a Job,
/// even when a config's `inheritEnv` names them.
const NEVER: &[&str] = &["DATABASE_URL", "PAPERCLIP_SECRETS_MASTER_KEY"];

pub fn inheritable(name: &str, extra: &[String]) -> bool {
    if NEVER.contains(&name) || (name.starts_with("PAPERCLIP_") && !INHERITED.contains(&name)) {
        return false;
    }
    INHERITED.contains(&name) || name.starts_with("LC_") || extra.iter().any(|e| e == name)
}

/// `ac-<agent>-<run>-<hash>` (claude) or `agent-opencode-...`: a DNS label of
/// at most 63 characters whose hash, over the raw ids, keeps two runs with a
/// common prefix apart.
pub fn job_name(adapter_type: &str, agent_id: &str, run_id: &str) -> String {
    let prefix = if adapter_type == "opencode_k8s" {
        "agent-opencode"
    } else {
        "ac"
    };
    let hash = Sha256::digest(format!("{agent_id}:{run_id}").as_bytes());
    let hex: String = hash.iter().take(3).map(|b| format!("{b:02x}")).collect();
    format!("{prefix}-{}-{}-{hex}", slug(agent_id), slug(run_id))
}

fn slug(id: &str) -> String {
    let s: String = id
        .to_ascii_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(16)
        .collect();
    s.trim_matches('-').to_string()
}

/// A label value the API server accepts: `[A-Za-z0-9._-]`, at most 63
/// characters, starting and ending alphanumeric; `None` when nothing is left.
pub fn label_value(raw: &str) -> Option<String> {
    let kept: String = raw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .take(63)
        .collect();
    let trimmed = kept.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

pub fn system_labels(
    adapter_type: &str,
    agent_id: &str,
    run_id: &str,
    company_id: &str,
) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([
        (
            "app.kubernetes.io/managed-by".to_string(),
            MANAGED_BY.to_string(),
        ),
        (
            "app.kubernetes.io/component".to_string(),
            "agent-job".to_string(),
        ),
    ]);
    for (key, value) in [
        (LABEL_AGENT, agent_id),
        (LABEL_RUN, run_id),
        (LABEL_COMPANY, company_id),
        (LABEL_ADAPTER, adapter_type),
    ] {
        if let Some(v) = label_value(value) {
            labels.insert(key.to_string(), v);
        }
    }
    labels
}

/// The selector of the running Jobs of one agent (the concurrency guard).
pub fn agent_selector(adapter_type: &str, agent_id: &str) -> String {
    format!(
        "{LABEL_AGENT}={},{LABEL_ADAPTER}={adapter_type}",
        label_value(agent_id).unwrap_or_default()
    )
}

/// Single-quotes `arg` for `sh -c`.
pub fn shell_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', "'\\''"))
}

/// Everything one Job is made of, decided by the adapter before building.
pub struct JobInput<'a> {
    pub adapter_type: &'a str,
    /// The main container's name (`claude`, `opencode`).
    pub container: &'a str,
    pub agent_id: &'a str,
    pub agent_name: &'a str,
    pub run_id: &'a str,
    pub company_id: &'a str,
    pub task_id: Option<&'a str>,
    pub namespace: &'a str,
    pub image: &'a str,
    pub config: &'a K8sConfig,
    pub pod: &'a SelfPod,
    /// Literal variables, final (allow-list, run variables and forced ones applied).
    pub env: &'a BTreeMap<String, String>,
    /// Variables holding a company secret's value whatever their name: kept
    /// in the run's Secret with the credential-shaped ones.
    pub secret_env: &'a std::collections::BTreeSet<String>,
    /// The program and its arguments; the prompt arrives on stdin.
    pub program: &'a str,
    pub args: &'a [String],
    pub working_dir: &'a str,
    pub prompt: &'a str,
    pub active_deadline: Option<i64>,
}

/// The Job and, for a large prompt, the Secret to create before it.
pub struct Built {
    pub name: String,
    pub job: Job,
    pub prompt_secret: Option<Secret>,
    /// `<job>-env`: the credential-shaped variables, referenced by the Job.
    pub env_secret: Option<Secret>,
}

impl Built {
    /// The Secrets to create before the Job and delete after it.
    pub fn secrets(&self) -> impl Iterator<Item = &Secret> {
        self.env_secret.iter().chain(self.prompt_secret.iter())
    }
}

pub fn build(input: &JobInput<'_>) -> Result<Built, serde_json::Error> {
    let cfg = input.config;
    let name = job_name(input.adapter_type, input.agent_id, input.run_id);
    let mut labels = system_labels(
        input.adapter_type,
        input.agent_id,
        input.run_id,
        input.company_id,
    );
    if let Some(task) = input.task_id.and_then(label_value) {
        labels.insert(LABEL_TASK.to_string(), task);
    }
    // A user label may add, never override what the guard and cleanup
    // select Jobs by.
    for (k, v) in &cfg.labels {
        if k.starts_with("paperclip.io/") || k.starts_with("app.kubernetes.io/") {
            continue;
        }
        if let Some(v) = label_value(v) {
            labels.insert(k.clone(), v);
        }
    }
    let large = input.prompt.len() > PROMPT_ENV_LIMIT;
    let secret_name = format!("{name}-prompt");
    let container_sc = json!({
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": false,
        "runAsNonRoot": true,
        "runAsUser": 1000,
        "allowPrivilegeEscalation": false,
    });

    let mut init_mounts = vec![json!({"name": "prompt", "mountPath": PROMPT_DIR})];
    let mut volumes = vec![json!({"name": "prompt", "emptyDir": {}})];
    let (init_cmd, init_env) = if large {
        init_mounts.push(
            json!({"name": "prompt-secret", "mountPath": "/tmp/prompt-secret", "readOnly": true}),
        );
        volumes.push(json!({"name": "prompt-secret",
            "secret": {"secretName": secret_name, "optional": false}}));
        (
            format!("cp /tmp/prompt-secret/prompt.txt {PROMPT_DIR}/prompt.txt"),
            json!([]),
        )
    } else {
        // printf, not echo: busybox echo stops at a literal `\c`.
        (
            format!("printf '%s' \"$PROMPT_CONTENT\" > {PROMPT_DIR}/prompt.txt"),
            json!([{"name": "PROMPT_CONTENT", "value": input.prompt}]),
        )
    };

    let mut mounts = vec![json!({"name": "prompt", "mountPath": PROMPT_DIR})];
    if let Some(claim) = &input.pod.pvc_claim {
        volumes.push(json!({"name": "data", "persistentVolumeClaim": {"claimName": claim}}));
        mounts.push(json!({"name": "data", "mountPath": SHARED_MOUNT}));
    }
    for v in &input.pod.secret_volumes {
        let mut secret = json!({"secretName": v.secret_name, "optional": true});
        if let Some(mode) = v.default_mode {
            secret["defaultMode"] = json!(mode);
        }
        volumes.push(json!({"name": v.volume_name, "secret": secret}));
        mounts.push(json!({"name": v.volume_name, "mountPath": v.mount_path, "readOnly": true}));
    }

    // Credential-shaped values (the run's key, provider keys) go into a
    // per-run Secret, so reading the Job does not reveal them.
    let env_secret_name = format!("{name}-env");
    let mut secret_env = BTreeMap::new();
    let mut env: Vec<Value> = input
        .env
        .iter()
        .map(|(k, v)| {
            if paperclip_core::secrets::is_secret_name(k) || input.secret_env.contains(k) {
                secret_env.insert(k.clone(), v.clone());
                json!({"name": k, "valueFrom": {"secretKeyRef": {"name": env_secret_name, "key": k}}})
            } else {
                json!({"name": k, "value": v})
            }
        })
        .collect();
    // A literal wins over an inherited reference of the same name.
    for var in &input.pod.env_value_from {
        if !input.env.contains_key(&var.name) && inheritable(&var.name, &cfg.inherit_env) {
            env.push(serde_json::to_value(var)?);
        }
    }
    // The control plane's envFrom sources (how a Deployment commonly hands
    // over provider credentials) by reference: the Job names the same
    // Secrets and ConfigMaps, no value is copied. By default only in the
    // control plane's namespace, the one those names resolve in.
    let env_from = cfg
        .inherit_env_from
        .unwrap_or(input.namespace == input.pod.namespace)
        && !input.pod.env_from.is_empty();
    if env_from {
        // A whole source cannot be filtered, but `env` beats `envFrom`: the
        // server's own secrets, should a source hold them, read empty.
        for name in NEVER {
            if !env.iter().any(|e| e["name"] == *name) {
                env.push(json!({"name": name, "value": ""}));
            }
        }
    }

    let command = std::iter::once(input.program.to_string())
        .chain(input.args.iter().map(|a| shell_quote(a)))
        .collect::<Vec<_>>()
        .join(" ");
    let mut main = json!({
        "name": input.container,
        "image": input.image,
        "imagePullPolicy": cfg.image_pull_policy,
        "workingDir": input.working_dir,
        "command": ["sh", "-c", format!("cat {PROMPT_DIR}/prompt.txt | {command}")],
        "env": env,
        "volumeMounts": mounts,
        "securityContext": container_sc,
        "resources": {
            "requests": {"cpu": cfg.resources.requests_cpu, "memory": cfg.resources.requests_memory},
            "limits": {"cpu": cfg.resources.limits_cpu, "memory": cfg.resources.limits_memory},
        },
    });
    if env_from {
        main["envFrom"] = serde_json::to_value(&input.pod.env_from)?;
    }

    let mut pod_spec = json!({
        "restartPolicy": "Never",
        "securityContext": {
            "runAsNonRoot": true, "runAsUser": 1000, "runAsGroup": 1000,
            "fsGroup": 1000, "fsGroupChangePolicy": "OnRootMismatch",
        },
        "initContainers": [{
            "name": INIT_CONTAINER,
            "image": cfg.init_image,
            "imagePullPolicy": "IfNotPresent",
            "command": ["sh", "-c", init_cmd],
            "env": init_env,
            "volumeMounts": init_mounts,
            "securityContext": container_sc,
            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"},
                          "limits": {"cpu": "100m", "memory": "64Mi"}},
        }],
        "containers": [main],
        "volumes": volumes,
    });
    let spec_obj = pod_spec.as_object_mut().expect("object");
    if let Some(sa) = &cfg.service_account {
        spec_obj.insert("serviceAccountName".into(), json!(sa));
    }
    if !input.pod.image_pull_secrets.is_empty() {
        let names: Vec<Value> = input
            .pod
            .image_pull_secrets
            .iter()
            .map(|n| json!({"name": n}))
            .collect();
        spec_obj.insert("imagePullSecrets".into(), Value::Array(names));
    }
    if let Some(dns) = &input.pod.dns_config {
        spec_obj.insert("dnsConfig".into(), dns.clone());
    }
    if !cfg.node_selector.is_empty() {
        spec_obj.insert("nodeSelector".into(), json!(cfg.node_selector));
    }
    if !cfg.tolerations.is_empty() {
        spec_obj.insert("tolerations".into(), Value::Array(cfg.tolerations.clone()));
    }

    let mut job_spec = Map::new();
    job_spec.insert("backoffLimit".into(), json!(0));
    if let Some(deadline) = input.active_deadline {
        job_spec.insert("activeDeadlineSeconds".into(), json!(deadline));
    }
    // retainJobs keeps a finished Job for inspection, so no TTL removes it.
    if !cfg.retain_jobs {
        job_spec.insert("ttlSecondsAfterFinished".into(), json!(cfg.ttl_seconds));
    }
    let annotations = json!({
        LABEL_ADAPTER: input.adapter_type,
        ANNOTATION_AGENT_NAME: input.agent_name,
    });
    job_spec.insert(
        "template".into(),
        json!({"metadata": {"labels": labels, "annotations": annotations}, "spec": pod_spec}),
    );
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": input.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": job_spec,
    });
    let secret = |name: &str, data: Value| {
        serde_json::from_value::<Secret>(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": input.namespace, "labels": labels},
            "type": "Opaque",
            "stringData": data,
        }))
    };
    let prompt_secret = large
        .then(|| secret(&secret_name, json!({"prompt.txt": input.prompt})))
        .transpose()?;
    let env_secret = (!secret_env.is_empty())
        .then(|| secret(&env_secret_name, json!(secret_env)))
        .transpose()?;
    Ok(Built {
        name,
        job: serde_json::from_value(job)?,
        prompt_secret,
        env_secret,
    })
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
