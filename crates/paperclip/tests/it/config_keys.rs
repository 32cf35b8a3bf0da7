//! Unknown adapter-config keys (issue 38): a create or update that sets a
//! key its adapter type neither reads nor accepts from upstream is a 422
//! naming the key and the type, and writes nothing; upstream's own keys are
//! accepted; a config stored before the rule keeps working, and the keys a
//! run does not use are said in its log.

use crate::common;

use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// The 422 names each of `keys` (and only those) for `kind`, in the message
/// and as `adapterConfig.<key>` details.
fn refused(status: StatusCode, body: &Value, kind: &str, keys: &[&str]) {
    assert_eq!(status, 422, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(error.contains(kind), "{error}");
    let details = body["details"].as_array().unwrap();
    let mut named: Vec<&str> = details
        .iter()
        .filter(|d| d["code"] == "unrecognized_keys")
        .map(|d| {
            assert_eq!(d["path"][0], "adapterConfig", "{d}");
            let message = d["message"].as_str().unwrap();
            assert!(
                message.starts_with(&format!("unknown key for {kind}; known keys: ")),
                "{message}"
            );
            d["path"][1].as_str().unwrap()
        })
        .collect();
    named.sort_unstable();
    assert_eq!(named, keys, "{body}");
    for key in keys {
        assert!(error.contains(key), "{error}");
    }
}

#[tokio::test]
async fn unknown_config_keys_are_refused_and_upstreams_accepted() {
    let s = TestServer::start().await;
    let cid = s.company("Keys Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agents = format!("/api/companies/{cid}/agents");
    let count = async || s.ok_get(&agents).await.as_array().unwrap().len();

    // What upstream's hire form builds for claude_local, with its engine
    // and workspace keys, which this server accepts without using.
    let claude = s
        .ok_post(
            &agents,
            json!({ "name": "Coder", "adapterType": "claude_local", "adapterConfig": {
                "cwd": "/tmp", "model": "claude-sonnet-4-5", "effort": "high", "chrome": true,
                "timeoutSec": 0, "graceSec": 15, "maxTurnsPerRun": 300,
                "dangerouslySkipPermissions": true, "env": { "MY_OWN_NAME": "x" },
                "extraArgs": ["--verbose"], "engine": "cli",
                "workspaceStrategy": { "type": "git_worktree" },
            } }),
        )
        .await;
    let claude_id = claude["id"].as_str().unwrap().to_string();
    // The opencode plugin's own keys, its database volume excepted.
    let k8s = s
        .ok_post(
            &agents,
            json!({ "name": "Pod", "adapterType": "opencode_k8s", "adapterConfig": {
                "model": "anthropic/claude-sonnet-4-5", "variant": "high",
                "namespace": "agents", "dangerouslySkipPermissions": true,
                "resources.limits.memory": "4Gi", "ttlSecondsAfterFinished": 60,
                "secretRef": "paperclip-secrets",
            } }),
        )
        .await;
    let k8s_id = k8s["id"].as_str().unwrap().to_string();
    let agents_before = count().await;
    let actions_before = s.actions(&cid).await;

    // Creates: the example on the local CLI and on its Kubernetes
    // twin, and a hire through agent-hires.
    let (status, body) = s
        .post(
            &agents,
            json!({ "name": "Local", "adapterType": "opencode_local", "adapterConfig": {
                "model": "anthropic/claude-sonnet-4-5", "agentDbMode": "dedicated_pvc",
            } }),
        )
        .await;
    refused(status, &body, "opencode_local", &["agentDbMode"]);
    let (status, body) = s
        .post(
            &agents,
            json!({ "name": "Pvc", "adapterType": "opencode_k8s", "adapterConfig": {
                "model": "anthropic/claude-sonnet-4-5", "agentDbMode": "dedicated_pvc",
                "agentDbStorageClass": "nfs", "namespace": "agents",
            } }),
        )
        .await;
    refused(
        status,
        &body,
        "opencode_k8s",
        &["agentDbMode", "agentDbStorageClass"],
    );
    let (status, body) = s
        .post(
            &format!("/api/companies/{cid}/agent-hires"),
            json!({ "name": "Hired", "adapterType": "claude_local", "adapterConfig": {
                "model": "claude-sonnet-4-5", "customKnob": 7,
            } }),
        )
        .await;
    refused(status, &body, "claude_local", &["customKnob"]);

    // Updates: a merge, a replace, and a type change that keeps the config
    // (Codex has no `effort`, `maxTurnsPerRun`, `chrome`, ...).
    let claude_before =
        s.ok_get(&format!("/api/agents/{claude_id}")).await["adapterConfig"].clone();
    let k8s_before = s.ok_get(&format!("/api/agents/{k8s_id}")).await["adapterConfig"].clone();
    let (status, body) = s
        .patch(
            &format!("/api/agents/{claude_id}"),
            json!({ "adapterConfig": { "model": "claude-opus-4-6", "customKnob": 1 } }),
        )
        .await;
    refused(status, &body, "claude_local", &["customKnob"]);
    let (status, body) = s
        .patch(
            &format!("/api/agents/{claude_id}"),
            json!({ "adapterType": "codex_local" }),
        )
        .await;
    refused(
        status,
        &body,
        "codex_local",
        &[
            "chrome",
            "dangerouslySkipPermissions",
            "effort",
            "maxTurnsPerRun",
        ],
    );
    let (status, body) = s
        .patch(
            &format!("/api/agents/{k8s_id}"),
            json!({ "adapterConfig": { "agentDbMode": "ephemeral", "model": "openai/gpt-5" },
                    "replaceAdapterConfig": true }),
        )
        .await;
    refused(status, &body, "opencode_k8s", &["agentDbMode"]);

    // Nothing was written by any of them.
    let claude_after = s.ok_get(&format!("/api/agents/{claude_id}")).await;
    assert_eq!(claude_after["adapterConfig"], claude_before);
    assert_eq!(claude_after["adapterType"], "claude_local");
    let k8s_after = s.ok_get(&format!("/api/agents/{k8s_id}")).await;
    assert_eq!(k8s_after["adapterConfig"], k8s_before);
    assert_eq!(count().await, agents_before);
    assert_eq!(s.actions(&cid).await, actions_before);

    // Known keys still save.
    let saved = s
        .ok_patch(
            &format!("/api/agents/{k8s_id}"),
            json!({ "adapterConfig": { "retainJobs": true, "bootstrapPromptTemplate": "Hi" } }),
        )
        .await;
    assert_eq!(saved["adapterConfig"]["retainJobs"], true);
    assert_eq!(saved["adapterConfig"]["namespace"], "agents");

    // A config stored before the rule, with a key nobody knows: updates that
    // leave that key alone work, the agent runs, and its log names what the
    // run does not use; saving the whole config back (as the board's form
    // does) names the key.
    let runner = s
        .script_agent(
            &cid,
            "Runner",
            "echo ran\n",
            json!({ "instructionsFilePath": "/tmp/AGENTS.md" }),
        )
        .await;
    let runner_id = runner["id"].as_str().unwrap().to_string();
    let mut legacy = runner["adapterConfig"].clone();
    legacy["legacyKnob"] = json!(3);
    plant_config(&s, &runner_id, &legacy).await;
    let renamed = s
        .ok_patch(
            &format!("/api/agents/{runner_id}"),
            json!({ "title": "Old hand" }),
        )
        .await;
    assert_eq!(renamed["adapterConfig"]["legacyKnob"], 3);
    let merged = s
        .ok_patch(
            &format!("/api/agents/{runner_id}"),
            json!({ "adapterConfig": { "graceSec": 3 } }),
        )
        .await;
    assert_eq!(merged["adapterConfig"]["legacyKnob"], 3);
    assert_eq!(merged["adapterConfig"]["graceSec"], 3);
    let mut whole = merged["adapterConfig"].clone();
    whole["timeoutSec"] = json!(30);
    let (status, body) = s
        .patch(
            &format!("/api/agents/{runner_id}"),
            json!({ "adapterType": "process", "adapterConfig": whole,
                    "replaceAdapterConfig": true }),
        )
        .await;
    refused(status, &body, "process", &["legacyKnob"]);

    let run = s.wake(&runner_id, json!({})).await;
    let run_id = run["id"].as_str().unwrap().to_string();
    s.wait_for(&format!("/api/heartbeat-runs/{run_id}"), 30, |r| {
        r["status"] == "succeeded"
    })
    .await;
    let log = s
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/log"))
        .await
        .to_string();
    let note = log
        .split("\\n")
        .find(|l| l.contains("adapterConfig keys process does not use"))
        .unwrap_or_else(|| panic!("no note of unused keys in {log}"));
    assert!(
        note.contains("legacyKnob") && note.contains("instructionsFilePath"),
        "{note}"
    );
    assert!(!note.contains("graceSec"), "{note}");
}

/// Writes `config` as the agent's stored adapter config behind the server's
/// back: data from before keys were checked.
async fn plant_config(s: &TestServer, agent_id: &str, config: &Value) {
    let postgres = s.database_url.is_some();
    let db = common::database(&common::database_url(&s.data_dir, &s.database_url)).await;
    let value = if postgres { "CAST($1 AS JSONB)" } else { "$1" };
    let sql = format!("UPDATE agents SET adapter_config = {value} WHERE id = $2");
    let done = sqlx::query(&common::bound_as_text(&sql, postgres))
        .bind(config.to_string())
        .bind(agent_id)
        .execute(&db)
        .await
        .unwrap();
    assert_eq!(done.rows_affected(), 1);
    db.close().await;
}

/// `tests/browser/config_keys.mjs`: the board's config form, saving a
/// config that holds a key from before the rule, shows the refusal beside
/// the config; without the key the save goes through.
#[tokio::test(flavor = "multi_thread")]
async fn the_config_form_shows_a_refused_key_beside_the_config() {
    if !common::browser::ready() {
        return;
    }
    let s = TestServer::start().await;
    let cid = s.company("Form Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = s
        .script_agent(&cid, "Legacy", "echo ran\n", json!({}))
        .await;
    let id = agent["id"].as_str().unwrap().to_string();
    let mut legacy = agent["adapterConfig"].clone();
    legacy["legacyKnob"] = json!(3);
    plant_config(&s, &id, &legacy).await;
    common::browser::run("config_keys", &s.base, std::time::Duration::from_secs(120)).await;
    let after = s.ok_get(&format!("/api/agents/{id}")).await;
    assert!(
        after["adapterConfig"].get("legacyKnob").is_none(),
        "{after}"
    );
    assert_eq!(after["adapterConfig"]["command"], "sh");
}
