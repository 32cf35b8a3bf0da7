//! The Kubernetes client and what the control plane learns about its own
//! pod: the shared volume at `/paperclip`, its image, pull secrets, DNS, env
//! and placement, which Jobs copy. Both are cached for the process: the pod
//! does not change under a running server.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::core::v1::{EnvFromSource, EnvVar, Pod};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use serde_json::Value;

use super::spec::SHARED_MOUNT;

/// A call to the API that does not answer within this is an error: the
/// client itself has no response timeout (a log stream may last hours).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug, Clone, PartialEq)]
pub struct SecretVolume {
    pub volume_name: String,
    pub secret_name: String,
    pub mount_path: String,
    pub default_mode: Option<i32>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SelfPod {
    /// `None` out of cluster (no pod of ours found): Jobs then need an
    /// `image` in their config and get no shared volume.
    pub name: Option<String>,
    pub namespace: String,
    pub image: Option<String>,
    pub pvc_claim: Option<String>,
    pub secret_volumes: Vec<SecretVolume>,
    pub env_literal: BTreeMap<String, String>,
    pub env_value_from: Vec<EnvVar>,
    pub env_from: Vec<EnvFromSource>,
    pub image_pull_secrets: Vec<String>,
    pub dns_config: Option<Value>,
    pub node_selector: BTreeMap<String, String>,
    pub tolerations: Vec<Value>,
}

impl SelfPod {
    /// Reads what a Job copies from the control plane's pod spec. The main
    /// container is the one named `paperclip`, else the first.
    pub fn from_pod(pod: &Pod, namespace: &str) -> Result<SelfPod, String> {
        let spec = pod
            .spec
            .as_ref()
            .ok_or("the control plane's pod has no spec")?;
        let main = spec
            .containers
            .iter()
            .find(|c| c.name == "paperclip")
            .or_else(|| spec.containers.first())
            .ok_or("the control plane's pod has no container")?;
        let image = main
            .image
            .clone()
            .filter(|i| !i.is_empty())
            .ok_or("the control plane's container has no image")?;
        let volumes = spec.volumes.clone().unwrap_or_default();
        let volume = |name: &str| volumes.iter().find(|v| v.name == name);
        let mounts = main.volume_mounts.clone().unwrap_or_default();
        let pvc_claim = mounts
            .iter()
            .find(|m| m.mount_path.trim_end_matches('/') == SHARED_MOUNT)
            .and_then(|m| volume(&m.name))
            .and_then(|v| v.persistent_volume_claim.as_ref())
            .map(|c| c.claim_name.clone());
        let secret_volumes = mounts
            .iter()
            .filter_map(|m| {
                let secret = volume(&m.name)?.secret.as_ref()?;
                Some(SecretVolume {
                    volume_name: m.name.clone(),
                    secret_name: secret.secret_name.clone()?,
                    mount_path: m.mount_path.clone(),
                    default_mode: secret.default_mode,
                })
            })
            .collect();
        let mut env_literal = BTreeMap::new();
        let mut env_value_from = Vec::new();
        for var in main.env.clone().unwrap_or_default() {
            match (&var.value, &var.value_from) {
                (_, Some(_)) => env_value_from.push(var),
                (Some(v), None) if !v.is_empty() => {
                    env_literal.insert(var.name.clone(), v.clone());
                }
                _ => {}
            }
        }
        Ok(SelfPod {
            name: pod.metadata.name.clone(),
            namespace: namespace.to_string(),
            image: Some(image),
            pvc_claim,
            secret_volumes,
            env_literal,
            env_value_from,
            env_from: main.env_from.clone().unwrap_or_default(),
            image_pull_secrets: spec
                .image_pull_secrets
                .iter()
                .flatten()
                .map(|s| s.name.clone())
                .filter(|n| !n.is_empty())
                .collect(),
            dns_config: spec
                .dns_config
                .as_ref()
                .and_then(|d| serde_json::to_value(d).ok()),
            node_selector: spec.node_selector.clone().unwrap_or_default(),
            tolerations: spec
                .tolerations
                .iter()
                .flatten()
                .filter_map(|t| serde_json::to_value(t).ok())
                .collect(),
        })
    }
}

/// Clients per kubeconfig (`""`: the inferred one) and the pod read through
/// each, for the life of the process.
#[derive(Default)]
pub struct Cluster {
    clients: Mutex<HashMap<String, Client>>,
    pods: Mutex<HashMap<String, SelfPod>>,
}

impl Cluster {
    pub async fn client(&self, kubeconfig: Option<&str>) -> Result<Client, String> {
        let key = kubeconfig.unwrap_or_default().to_string();
        if let Some(c) = self.clients.lock().unwrap().get(&key) {
            return Ok(c.clone());
        }
        let mut config = match kubeconfig {
            Some(path) => {
                let file = Kubeconfig::read_from(path)
                    .map_err(|e| format!("cannot read kubeconfig {path}: {e}"))?;
                Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
                    .await
                    .map_err(|e| format!("kubeconfig {path}: {e}"))?
            }
            // KUBECONFIG, ~/.kube/config, then the pod's service account.
            None => Config::infer()
                .await
                .map_err(|e| format!("no Kubernetes configuration found: {e}"))?,
        };
        config.connect_timeout = Some(Duration::from_secs(10));
        let client = Client::try_from(config)
            .map_err(|e| format!("cannot build a Kubernetes client: {e}"))?;
        self.clients.lock().unwrap().insert(key, client.clone());
        Ok(client)
    }

    /// The control plane's pod, read once. Out of cluster (no `HOSTNAME`, or
    /// no pod of that name) it is an empty description in the client's
    /// default namespace; an API that does not answer is an error.
    pub async fn self_pod(&self, kubeconfig: Option<&str>) -> Result<SelfPod, String> {
        let key = kubeconfig.unwrap_or_default().to_string();
        if let Some(p) = self.pods.lock().unwrap().get(&key) {
            return Ok(p.clone());
        }
        let client = self.client(kubeconfig).await?;
        let namespace = own_namespace().unwrap_or_else(|| client.default_namespace().to_string());
        let pod = match std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()) {
            None => SelfPod {
                namespace,
                ..SelfPod::default()
            },
            Some(host) => {
                let pods: Api<Pod> = Api::namespaced(client, &namespace);
                match tokio::time::timeout(CALL_TIMEOUT, pods.get_opt(&host)).await {
                    Err(_) => return Err("the Kubernetes API did not answer".into()),
                    Ok(Err(e)) => {
                        return Err(format!(
                            "reading the control plane's pod {namespace}/{host} failed: {e}"
                        ))
                    }
                    Ok(Ok(None)) => SelfPod {
                        namespace,
                        ..SelfPod::default()
                    },
                    Ok(Ok(Some(pod))) => SelfPod::from_pod(&pod, &namespace)?,
                }
            }
        };
        self.pods.lock().unwrap().insert(key, pod.clone());
        Ok(pod)
    }
}

/// `PAPERCLIP_NAMESPACE`, `POD_NAMESPACE`, then the service account's file.
fn own_namespace() -> Option<String> {
    ["PAPERCLIP_NAMESPACE", "POD_NAMESPACE"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        .or_else(|| {
            std::fs::read_to_string("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
                .ok()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn fixture() -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "paperclip-0", "namespace": "paperclip"},
            "spec": {
                "imagePullSecrets": [{"name": "regcred"}, {"name": ""}],
                "dnsConfig": {"nameservers": ["10.0.0.10"], "options": [{"name": "ndots", "value": "2"}]},
                "nodeSelector": {"pool": "agents"},
                "containers": [
                    {"name": "sidecar", "image": "proxy:1"},
                    {"name": "paperclip", "image": "ghcr.io/example/paperclip:1.0.0",
                     "env": [
                        {"name": "PAPERCLIP_API_URL", "value": "http://paperclip.paperclip.svc:3100"},
                        {"name": "EMPTY", "value": ""},
                        {"name": "ANTHROPIC_API_KEY", "valueFrom": {"secretKeyRef": {"name": "paperclip-secrets", "key": "ANTHROPIC_API_KEY"}}},
                        {"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": "paperclip-db", "key": "url"}}}
                     ],
                     "envFrom": [{"secretRef": {"name": "paperclip-bulk"}}],
                     "volumeMounts": [{"name": "data", "mountPath": "/paperclip"},
                                      {"name": "creds", "mountPath": "/etc/creds", "readOnly": true}]}
                ],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "paperclip-data"}},
                            {"name": "creds", "secret": {"secretName": "git-creds", "defaultMode": 256}}]
            }
        }))
        .unwrap()
    }

    #[test]
    fn the_pod_is_read_from_its_paperclip_container() {
        let p = SelfPod::from_pod(&fixture(), "paperclip").unwrap();
        assert_eq!(p.image.as_deref(), Some("ghcr.io/example/paperclip:1.0.0"));
        assert_eq!(p.pvc_claim.as_deref(), Some("paperclip-data"));
        assert_eq!(
            p.secret_volumes,
            vec![SecretVolume {
                volume_name: "creds".into(),
                secret_name: "git-creds".into(),
                mount_path: "/etc/creds".into(),
                default_mode: Some(256),
            }]
        );
        assert_eq!(
            p.env_literal.keys().collect::<Vec<_>>(),
            vec!["PAPERCLIP_API_URL"]
        );
        let refs: Vec<&str> = p.env_value_from.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(refs, vec!["ANTHROPIC_API_KEY", "DATABASE_URL"]);
        assert_eq!(p.env_from.len(), 1);
        assert_eq!(p.image_pull_secrets, vec!["regcred".to_string()]);
        assert_eq!(
            p.dns_config.as_ref().unwrap()["nameservers"][0],
            "10.0.0.10"
        );
        assert_eq!(p.node_selector["pool"], "agents");
    }
}
