//! A server started with `KUBECONFIG` at a fresh fake API server, and a
//! Kubernetes agent hired on it.

use serde_json::{json, Value};

use super::common::TestServer;
use super::fake::{self, FakeK8s, Recorded, Script};

pub struct Setup {
    pub s: TestServer,
    pub env: Vec<(String, String)>,
    pub k8s: FakeK8s,
    pub cid: String,
    pub aid: String,
}

/// A server whose environment holds a secret of its own, as a Deployment's
/// would, and a `claude_k8s` agent.
pub async fn setup(script: Script, config: Value) -> Setup {
    setup_kind("claude_k8s", script, config).await
}

pub async fn setup_kind(kind: &str, script: Script, config: Value) -> Setup {
    setup_in(kind, script, config, None, fake::SELF_POD).await
}

/// Like [`setup_kind`], with the server on `data_dir`, as the pod named
/// `hostname` ([`fake::SELF_POD`]: the control plane's pod, with the shared
/// volume; any other name: a control plane outside the cluster).
pub async fn setup_on(
    kind: &str,
    script: Script,
    config: Value,
    data_dir: std::path::PathBuf,
    hostname: &str,
) -> Setup {
    setup_in(kind, script, config, Some(data_dir), hostname).await
}

async fn setup_in(
    kind: &str,
    script: Script,
    config: Value,
    data_dir: Option<std::path::PathBuf>,
    hostname: &str,
) -> Setup {
    let k8s = FakeK8s::start().await;
    k8s.script(script);
    let dir = std::env::temp_dir().join(format!("paperclip-k8s-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = k8s.kubeconfig(&dir);
    let env: Vec<(String, String)> = [
        ("KUBECONFIG", kubeconfig.to_str().unwrap()),
        ("HOSTNAME", hostname),
        ("PAPERCLIP_NAMESPACE", fake::NAMESPACE),
        ("SERVER_ONLY_SECRET", "must-not-reach-a-job"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let s = match data_dir {
        None => TestServer::start_env(&pairs(&env)).await,
        Some(data_dir) => {
            std::fs::create_dir_all(&data_dir).unwrap();
            let database_url = match std::env::var("PAPERCLIP_TEST_PG_URL") {
                Ok(admin) if !admin.is_empty() => {
                    Some(super::common::create_pg_database(&admin).await)
                }
                _ => None,
            };
            let first = TestServer::start_with(data_dir, database_url, &[]).await;
            super::common::restart_keeping_data_env(first, &pairs(&env)).await
        }
    };
    let company = s.company("Acme").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({"name": "Pod Coder", "role": "engineer", "adapterType": kind,
                   "adapterConfig": config}),
        )
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    Setup {
        s,
        env,
        k8s,
        cid,
        aid,
    }
}

/// What a coding agent does with its task through the API, as the
/// scripted provider's turns: check it out, comment `comment`, mark it done.
pub fn work_the_task(comment: &str) -> Vec<paperclip_scripted_provider::Turn> {
    use paperclip_scripted_provider::Turn;
    let auth = r#"-H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'Content-Type: application/json'"#;
    let api = r#""$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID"#;
    vec![
        Turn::Bash {
            command: format!(
                r#"curl -sSf -X POST {api}/checkout" {auth} -d "{{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\"]}}""#
            ),
        },
        Turn::Bash {
            command: format!(
                r#"curl -sSf -X POST {api}/comments" {auth} -d '{{"body":"{comment}"}}'"#
            ),
        },
        Turn::Bash {
            command: format!(r#"curl -sSf -X PATCH {api}" {auth} -d '{{"status":"done"}}'"#),
        },
        Turn::Answer {
            text: "Finished the task and marked it done.".into(),
        },
    ]
}

pub fn pairs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

impl Setup {
    pub async fn assign(&self, title: &str) -> Value {
        self.s
            .issue(
                &self.cid,
                json!({"title": title, "status": "todo", "assigneeAgentId": self.aid}),
            )
            .await
    }

    /// The agent's runs once `n` of them have ended, oldest first.
    pub async fn ended_runs(&self, n: usize) -> Vec<Value> {
        // A coding CLI in a pod on a loaded CI machine (OpenCode starts
        // slowly): a deadline, not a wait.
        self.s.settled_runs(&self.cid, &self.aid, n, 240).await
    }

    pub fn calls(&self, method: &str, path_part: &str) -> Vec<Recorded> {
        self.k8s
            .requests()
            .into_iter()
            .filter(|r| r.method == method && r.path.contains(path_part))
            .collect()
    }
}
