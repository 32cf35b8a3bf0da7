//! `deploy/` against the code: the Role grants exactly the calls the
//! Kubernetes adapters make, and the manifests are valid Kubernetes objects
//! (each document read into its k8s-openapi type).

use std::collections::BTreeSet;
use std::path::PathBuf;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding};
use serde_json::Value;

fn deploy(path: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy");
    std::fs::read_to_string(root.join(path)).unwrap()
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
    for probe in [&main.readiness_probe, &main.liveness_probe] {
        let command = probe
            .as_ref()
            .unwrap()
            .exec
            .as_ref()
            .unwrap()
            .command
            .clone()
            .unwrap();
        assert!(
            command.iter().any(|c| c.ends_with("/api/health")),
            "{command:?}"
        );
    }
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
