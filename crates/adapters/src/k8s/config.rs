//! The Kubernetes fields of a `claude_k8s` / `opencode_k8s` config, on top
//! of the local twin's (model, env, extraArgs, timeoutSec, ...).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::cli::CLI_KEYS;
use crate::config::{Fields, KnownKeys};
use crate::ConfigError;

/// The fields [`parse`] reads (`resources` nested, or flat as the UI stores
/// its dotted keys).
pub const K8S_KEYS: &[&str] = &[
    "namespace",
    "image",
    "imagePullPolicy",
    "kubeconfig",
    "serviceAccountName",
    "resources",
    "resources.requests.cpu",
    "resources.requests.memory",
    "resources.limits.cpu",
    "resources.limits.memory",
    "nodeSelector",
    "tolerations",
    "labels",
    "ttlSecondsAfterFinished",
    "retainJobs",
    "reattachOrphanedJobs",
    "inheritEnv",
    "inheritEnvFrom",
    "initImage",
];

/// The keys of `claude_k8s` / `opencode_k8s` (`kind`): the CLI's (`cli`:
/// those its local twin's dialect reads), the Job's, and, accepted unused,
/// those the upstream plugins define that have no effect here:
/// `bootstrapPromptTemplate` and `paperclipSkillSync` (see
/// [`crate::cli::LOCAL_UPSTREAM_UNUSED`]), `secretRef` (a Secret the
/// plugins' environment test looks for; here credentials come by `env`
/// references and `inheritEnv`), and OpenCode's `dangerouslySkipPermissions`.
/// The opencode plugin's per-agent database volume (`agentDbMode`,
/// `agentDbStorageClass`, `agentDbStorageCapacity`) is deliberately not
/// known: OpenCode's database lives in HOME on the shared volume here, so
/// a setting asking for a volume would silently do nothing; it is refused.
/// So are the confinement keys, by [`Fields::refuse_confinement`], saying
/// why.
pub fn known_keys(kind: &str, cli: &[&'static str]) -> KnownKeys {
    let mut unused = vec!["bootstrapPromptTemplate", "paperclipSkillSync", "secretRef"];
    if kind == "opencode_k8s" {
        unused.push("dangerouslySkipPermissions");
    }
    KnownKeys::new(CLI_KEYS, &unused)
        .with(cli, &[])
        .with(K8S_KEYS, &[])
}

#[derive(Debug, Clone, PartialEq)]
pub struct Resources {
    pub requests_cpu: String,
    pub requests_memory: String,
    pub limits_cpu: String,
    pub limits_memory: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct K8sConfig {
    /// Defaults to the control plane's own namespace.
    pub namespace: Option<String>,
    /// Defaults to the control plane's own image.
    pub image: Option<String>,
    pub image_pull_policy: String,
    /// A kubeconfig file; otherwise `KUBECONFIG`, then the in-cluster account.
    pub kubeconfig: Option<String>,
    pub service_account: Option<String>,
    pub resources: Resources,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Value>,
    pub labels: BTreeMap<String, String>,
    pub ttl_seconds: i64,
    pub retain_jobs: bool,
    /// A live Job of the same task left by a restarted control plane is
    /// followed to its end instead of deleted and started again.
    pub reattach: bool,
    /// More variable names of the control plane's container a Job inherits.
    pub inherit_env: Vec<String>,
    /// Pass the control plane's `envFrom` sources (whole Secrets and
    /// ConfigMaps, by reference) to the Job. Unset: passed when the Job runs
    /// in the control plane's namespace, the only one those names resolve
    /// in. `false` opts out; `true` passes them to any namespace.
    pub inherit_env_from: Option<bool>,
    pub init_image: String,
}

pub fn parse(config: &Value) -> Result<K8sConfig, Vec<ConfigError>> {
    let mut f = Fields::new(config)?;
    let non_empty = |s: Option<String>| s.filter(|s| !s.trim().is_empty());
    let namespace = non_empty(f.string("namespace"));
    let image = non_empty(f.string("image"));
    let image_pull_policy =
        non_empty(f.string("imagePullPolicy")).unwrap_or_else(|| "IfNotPresent".into());
    if !["Always", "IfNotPresent", "Never"].contains(&image_pull_policy.as_str()) {
        f.error(
            &["imagePullPolicy"],
            "must be one of Always, IfNotPresent, Never",
        );
    }
    let kubeconfig = non_empty(f.string("kubeconfig"));
    let service_account = non_empty(f.string("serviceAccountName"));
    let resources = Resources {
        requests_cpu: resource(&mut f, "requests", "cpu", "1000m"),
        requests_memory: resource(&mut f, "requests", "memory", "2Gi"),
        limits_cpu: resource(&mut f, "limits", "cpu", "4000m"),
        limits_memory: resource(&mut f, "limits", "memory", "8Gi"),
    };
    let node_selector = key_values(&mut f, "nodeSelector");
    let labels = key_values(&mut f, "labels");
    let tolerations = match f.get("tolerations") {
        None => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(Value::String(s)) if s.trim().is_empty() => Vec::new(),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Array(items)) => items,
            _ => {
                f.error(&["tolerations"], "must be a JSON array of tolerations");
                Vec::new()
            }
        },
        Some(_) => {
            f.error(&["tolerations"], "must be an array of tolerations");
            Vec::new()
        }
    };
    let ttl_seconds = f.non_negative("ttlSecondsAfterFinished", 300.0) as i64;
    let retain_jobs = f.bool("retainJobs", false);
    let reattach = f.bool("reattachOrphanedJobs", true);
    let inherit_env = f.string_list("inheritEnv");
    let inherit_env_from = match f.get("inheritEnvFrom") {
        None | Some(Value::Null) => None,
        Some(_) => Some(f.bool("inheritEnvFrom", true)),
    };
    let init_image = non_empty(f.string("initImage")).unwrap_or_else(|| "busybox:1.36".into());
    f.finish(K8sConfig {
        namespace,
        image,
        image_pull_policy,
        kubeconfig,
        service_account,
        resources,
        node_selector,
        tolerations,
        labels,
        ttl_seconds,
        retain_jobs,
        reattach,
        inherit_env,
        inherit_env_from,
        init_image,
    })
}

/// `resources.<kind>.<name>`, nested or as the flat dotted key the UI
/// stores (which wins).
fn resource(f: &mut Fields<'_>, kind: &str, name: &str, default: &str) -> String {
    let flat = format!("resources.{kind}.{name}");
    if let Some(v) = f.get(&flat) {
        return quantity(v).unwrap_or_else(|| default.to_string());
    }
    f.get("resources")
        .and_then(|r| r.get(kind))
        .and_then(|k| k.get(name))
        .and_then(quantity)
        .unwrap_or_else(|| default.to_string())
}

fn quantity(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// An object of strings, the same as a JSON string, or `key=value` lines
/// (blank lines and `#` comments skipped).
fn key_values(f: &mut Fields<'_>, key: &str) -> BTreeMap<String, String> {
    let from_object = |m: &serde_json::Map<String, Value>| {
        m.iter()
            .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
            .collect()
    };
    match f.get(key) {
        None => BTreeMap::new(),
        Some(Value::Object(m)) => from_object(m),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => from_object(&m),
            _ => s
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .filter(|(k, _)| !k.is_empty())
                .collect(),
        },
        Some(_) => {
            f.error(&[key], "must be an object of strings or key=value lines");
            BTreeMap::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn k8s_keys_are_known_and_the_db_volume_is_named() {
        use crate::Adapter;
        let claude = crate::k8s::K8sAdapter::new("claude_k8s", crate::cli::claude::Claude);
        crate::config::assert_keys(
            &claude,
            json!({
                "model": "claude-sonnet-4-5", "effort": "low", "maxTurnsPerRun": 10,
                "dangerouslySkipPermissions": true, "extraArgs": [], "env": {}, "timeoutSec": 60,
                "graceSec": 30, "cwd": "/paperclip/w", "promptTemplate": "x",
                "namespace": "agents", "image": "img", "imagePullPolicy": "Always",
                "kubeconfig": "/k", "serviceAccountName": "sa", "nodeSelector": "a=b",
                "tolerations": [], "labels": {}, "ttlSecondsAfterFinished": 60,
                "retainJobs": true, "reattachOrphanedJobs": true, "inheritEnv": ["X"],
                "inheritEnvFrom": true, "initImage": "busybox", "resources.limits.memory": "1Gi",
                "resources": { "requests": { "cpu": "1" } }, "secretRef": "s",
                "bootstrapPromptTemplate": "b",
            }),
            "chrome",
        );
        let opencode = crate::k8s::K8sAdapter::new("opencode_k8s", crate::cli::opencode::OpenCode);
        crate::config::assert_keys(
            &opencode,
            json!({
                "model": "anthropic/claude-sonnet-4-5", "variant": "high", "namespace": "agents",
                "dangerouslySkipPermissions": true, "resources.requests.cpu": "500m",
            }),
            "agentDbMode",
        );
        // Not a key of the Job's: refused by validation, saying why.
        assert!(!opencode.known_keys().knows("filesystemScope"));
        assert!(!opencode.known_keys().knows("agentDbStorageClass"));
    }

    #[test]
    fn defaults_match_the_contract() {
        let c = parse(&json!({})).unwrap();
        assert_eq!(c.image_pull_policy, "IfNotPresent");
        assert_eq!(c.ttl_seconds, 300);
        assert!(!c.retain_jobs && c.inherit_env_from.is_none());
        assert_eq!(
            c.resources,
            Resources {
                requests_cpu: "1000m".into(),
                requests_memory: "2Gi".into(),
                limits_cpu: "4000m".into(),
                limits_memory: "8Gi".into(),
            }
        );
    }

    #[test]
    fn flat_dotted_resource_keys_win_over_nested_ones() {
        let c = parse(&json!({
            "resources": {"limits": {"memory": "12Gi", "cpu": "2"}},
            "resources.limits.memory": "16Gi",
        }))
        .unwrap();
        assert_eq!(c.resources.limits_memory, "16Gi");
        assert_eq!(c.resources.limits_cpu, "2");
    }

    #[test]
    fn labels_read_the_same_from_lines_json_text_or_an_object() {
        let want = BTreeMap::from([("team".into(), "a".into()), ("env".into(), "prod".into())]);
        for given in [
            json!("team=a\n# c\nbad\n=x\nenv=prod"),
            json!("{\"team\":\"a\",\"env\":\"prod\"}"),
            json!({"team": "a", "env": "prod", "n": 1}),
        ] {
            assert_eq!(parse(&json!({ "labels": given })).unwrap().labels, want);
            assert_eq!(
                parse(&json!({ "nodeSelector": given }))
                    .unwrap()
                    .node_selector,
                want
            );
        }
    }

    #[test]
    fn tolerations_must_be_an_array() {
        let t = json!([{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]);
        assert_eq!(
            parse(&json!({ "tolerations": t }))
                .unwrap()
                .tolerations
                .len(),
            1
        );
        assert_eq!(
            parse(&json!({ "tolerations": t.to_string() }))
                .unwrap()
                .tolerations
                .len(),
            1
        );
        let errors = parse(&json!({"tolerations": "gpu"})).unwrap_err();
        assert_eq!(errors[0].path, vec!["tolerations".to_string()]);
        assert!(parse(&json!({"imagePullPolicy": "Sometimes"})).is_err());
    }
}
