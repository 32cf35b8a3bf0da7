//! The hire form's environment test for a Kubernetes agent: the API answers,
//! the namespace exists, this service account may do every call a run
//! makes, and the shared volume is ReadWriteMany.

use k8s_openapi::api::authorization::v1::SelfSubjectAccessReview;
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim};
use kube::api::PostParams;
use kube::Api;
use serde_json::{json, Value};

use super::selfpod::CALL_TIMEOUT;
use super::K8sAdapter;
use crate::cli::CliKind;
use crate::environment::{config_checks, Check, Level, Report};

/// Every (verb, group, resource) a run or this test calls, with its check
/// code. `deploy/` grants exactly these; a test holds the two equal.
/// Creating SelfSubjectAccessReviews is not listed: every authenticated
/// account may (the default `system:basic-user` binding).
pub const RBAC: &[(&str, &str, &str, &str)] = &[
    ("create", "batch", "jobs", "k8s_rbac_job_create"),
    ("get", "batch", "jobs", "k8s_rbac_job_get"),
    ("list", "batch", "jobs", "k8s_rbac_job_list"),
    ("delete", "batch", "jobs", "k8s_rbac_job_delete"),
    ("get", "", "pods", "k8s_rbac_pod_get"),
    ("list", "", "pods", "k8s_rbac_pod_list"),
    ("get", "", "pods/log", "k8s_rbac_pod_log"),
    ("create", "", "secrets", "k8s_rbac_secret_create"),
    ("delete", "", "secrets", "k8s_rbac_secret_delete"),
    ("patch", "", "secrets", "k8s_rbac_secret_patch"),
    ("get", "", "persistentvolumeclaims", "k8s_rbac_pvc_get"),
    ("get", "", "namespaces", "k8s_rbac_namespace_get"),
];

pub(crate) async fn run<K: CliKind>(adapter: &K8sAdapter<K>, config: &Value) -> Report {
    let kind = adapter.kind;
    let kcfg = match adapter.parse(config) {
        Ok((_, _, k)) => k,
        Err(errors) => return Report::new(kind, config_checks(Err(errors))),
    };
    let mut checks = config_checks(Ok(()));
    let kubeconfig = kcfg.kubeconfig.as_deref();
    let reached = match adapter.cluster.client(kubeconfig).await {
        Ok(client) => adapter
            .cluster
            .self_pod(kubeconfig)
            .await
            .map(|pod| (client, pod)),
        Err(e) => Err(e),
    };
    let (client, pod) = match reached {
        Ok(ok) => ok,
        Err(e) => {
            checks.push(
                Check::new("k8s_api_unreachable", Level::Error, "The Kubernetes API cannot be reached")
                    .detail(e)
                    .hint("Run the control plane in the cluster with a service account, or set KUBECONFIG / adapterConfig.kubeconfig"),
            );
            return Report::new(kind, checks);
        }
    };
    checks.push(Check::new(
        "k8s_api_reachable",
        Level::Info,
        match &pod.name {
            Some(name) => format!(
                "Kubernetes API reachable; this control plane is pod {}/{name}",
                pod.namespace
            ),
            None => "Kubernetes API reachable; the control plane runs outside the cluster".into(),
        },
    ));
    let ns = kcfg.namespace.clone().unwrap_or(pod.namespace.clone());
    if pod.name.is_some() && ns == pod.namespace {
        checks.push(Check::new(
            "k8s_namespace_exists",
            Level::Info,
            format!("Namespace {ns} (this pod's)"),
        ));
    } else {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        match tokio::time::timeout(CALL_TIMEOUT, namespaces.get(&ns)).await {
            Ok(Ok(_)) => checks.push(Check::new(
                "k8s_namespace_exists",
                Level::Info,
                format!("Namespace {ns} exists"),
            )),
            Ok(Err(e)) => checks.push(
                Check::new(
                    "k8s_namespace_check_failed",
                    Level::Warn,
                    format!("Namespace {ns} could not be read"),
                )
                .detail(e.to_string()),
            ),
            Err(_) => checks.push(Check::new(
                "k8s_namespace_check_failed",
                Level::Warn,
                format!("Namespace {ns}: no answer"),
            )),
        }
    }
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    for (verb, group, resource, code) in RBAC {
        let (resource, sub) = match resource.split_once('/') {
            Some((r, s)) => (r, Some(s)),
            None => (*resource, None),
        };
        let review: SelfSubjectAccessReview = serde_json::from_value(json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {
                "namespace": ns, "verb": verb, "group": group,
                "resource": resource, "subresource": sub,
            }},
        }))
        .expect("a valid review");
        let what = format!(
            "{verb} {}{resource}{} in {ns}",
            if group.is_empty() {
                String::new()
            } else {
                format!("{group}/")
            },
            sub.map(|s| format!("/{s}")).unwrap_or_default()
        );
        match tokio::time::timeout(CALL_TIMEOUT, reviews.create(&PostParams::default(), &review)).await {
            Ok(Ok(r)) if r.status.as_ref().is_some_and(|s| s.allowed) => {
                checks.push(Check::new(code, Level::Info, format!("Allowed: {what}")))
            }
            Ok(Ok(r)) => checks.push(
                Check::new(code, Level::Error, format!("Not allowed: {what}"))
                    .detail(r.status.and_then(|s| s.reason).unwrap_or_default())
                    .hint("Grant it in the control plane's Role (deploy/helm/paperclip/templates/rbac.yaml)"),
            ),
            Ok(Err(e)) => checks.push(
                Check::new(code, Level::Warn, format!("Could not check: {what}")).detail(e.to_string()),
            ),
            Err(_) => checks.push(Check::new(code, Level::Warn, format!("Could not check: {what} (no answer)"))),
        }
    }
    match &pod.pvc_claim {
        None => checks.push(
            Check::new("k8s_pvc_not_detected", Level::Warn, "No shared volume is mounted at /paperclip")
                .hint("Mount a ReadWriteMany PersistentVolumeClaim at /paperclip so Jobs share sessions and workspaces"),
        ),
        Some(claim) => {
            let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), &pod.namespace);
            match tokio::time::timeout(CALL_TIMEOUT, pvcs.get(claim)).await {
                Ok(Ok(pvc)) => {
                    let modes = pvc.spec.and_then(|s| s.access_modes).unwrap_or_default();
                    if modes.iter().any(|m| m == "ReadWriteMany") {
                        checks.push(Check::new("k8s_pvc_rwx", Level::Info, format!("Shared volume {claim} is ReadWriteMany")));
                    } else {
                        checks.push(
                            Check::new("k8s_pvc_not_rwx", Level::Warn, format!("Shared volume {claim} is not ReadWriteMany ({})", modes.join(", ")))
                                .hint("Jobs on other nodes cannot mount it; use a ReadWriteMany storage class"),
                        );
                    }
                }
                Ok(Err(e)) => checks.push(
                    Check::new("k8s_pvc_check_failed", Level::Warn, format!("Shared volume {claim} could not be read")).detail(e.to_string()),
                ),
                Err(_) => checks.push(Check::new("k8s_pvc_check_failed", Level::Warn, format!("Shared volume {claim}: no answer"))),
            }
        }
    }
    Report::new(kind, checks)
}
