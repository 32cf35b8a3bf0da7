//! `gemini_local` beyond the generic coding-agent tests (`coding_agents.rs`
//! runs those for it): the real `gemini` CLI against the scripted provider's
//! Gemini API, refused for a usage limit and for a missing key, and the
//! original's own `gemini_local` configs accepted unchanged.

use crate::clis::Cli;
use crate::common::{until, TestServer};

use chrono::{DateTime, Utc};
use paperclip_scripted_provider::{ScriptedProvider, Turn};
use serde_json::{json, Value};

/// What the original's hire form saves for a Gemini agent
/// (`buildGeminiLocalConfig` in `@paperclipai/adapter-gemini-local`): its
/// defaults, and with the ACP engine chosen and every field filled.
fn upstream_configs() -> [Value; 2] {
    [
        json!({ "model": "auto", "timeoutSec": 0, "graceSec": 15, "sandbox": true }),
        json!({
            "cwd": "/tmp", "instructionsFilePath": "/tmp/AGENTS.md", "engine": "acp",
            "agentCommand": "gemini --acp", "mode": "persistent",
            "nonInteractivePermissions": "deny", "stateDir": "/tmp/gemini-acp",
            "warmHandleIdleMs": 0, "model": "gemini-2.5-pro", "timeoutSec": 0, "graceSec": 15,
            "env": { "GEMINI_API_KEY": "AIza-not-a-key" }, "sandbox": false,
            "command": "gemini", "extraArgs": ["--debug"],
        }),
    ]
}

/// One server, three agents: a usage limit is `rate_limited` and holds the
/// agent until the time Google named; a missing key is `auth_required` in
/// seconds; the original's configs are saved as sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_usage_limit_missing_key_and_upstream_configs() {
    let Some(cli) = Cli::find("gemini_local") else {
        return;
    };
    let provider = ScriptedProvider::start([Turn::Error {
        status: 429,
        message: "You exceeded your current quota, please check your plan and billing details. \
                  Please retry in 3600s."
            .into(),
    }])
    .await;
    let s = TestServer::start().await;
    let cid = s.company("Gemini Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let hire = async |name: &str, config: Value| {
        let path = format!("/api/companies/{cid}/agents");
        let body = json!({ "name": name, "role": "engineer", "adapterType": "gemini_local",
                           "adapterConfig": config });
        let agent = s.ok_post(&path, body).await;
        // Saved as sent; the API shows `env` values redacted.
        let (mut saved, mut sent) = (agent["adapterConfig"].clone(), config.clone());
        let names = |c: &mut Value| {
            c.as_object_mut()
                .unwrap()
                .remove("env")
                .map(|e| e.as_object().unwrap().keys().cloned().collect::<Vec<_>>())
        };
        assert_eq!(names(&mut saved), names(&mut sent));
        assert_eq!(saved, sent);
        agent["id"].as_str().unwrap().to_string()
    };
    for (i, config) in upstream_configs().into_iter().enumerate() {
        hire(&format!("Upstream {i}"), config).await;
    }
    let limited = hire("Limited", cli.config(&provider)).await;
    let mut keyless = cli.config(&provider);
    keyless["env"]
        .as_object_mut()
        .unwrap()
        .remove("GEMINI_API_KEY");
    let keyless = hire("Keyless", keyless).await;

    let asked_at = Utc::now();
    for agent in [&limited, &keyless] {
        s.issue(
            &cid,
            json!({ "title": "Needs the model", "status": "todo", "assigneeAgentId": agent }),
        )
        .await;
    }
    let ended = async |agent: &str| {
        until(90, "the gemini run to end", async || {
            let runs = s.runs_of(&cid, agent).await;
            runs.first()
                .filter(|r| r["status"] != "queued" && r["status"] != "running")
                .cloned()
        })
        .await
    };
    let run = ended(&limited).await;
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["errorCode"], "rate_limited", "{run}");
    assert!(
        run["error"].as_str().unwrap().contains("retry"),
        "the reset time is said: {run}"
    );
    let agent = s.ok_get(&format!("/api/agents/{limited}")).await;
    assert_eq!(
        agent["status"], "idle",
        "a usage limit is not the agent's error"
    );
    let until_at: DateTime<Utc> = agent["usageLimitedUntil"]
        .as_str()
        .expect("the limit is recorded")
        .parse()
        .unwrap();
    let wait = (until_at - asked_at).num_seconds();
    assert!(
        (3500..=3700).contains(&wait),
        "held {wait}s, not the hour Google named"
    );
    assert_eq!(provider.turn_requests().len(), 1, "gemini gave up at once");

    let run = ended(&keyless).await;
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["errorCode"], "auth_required", "{run}");
    // Gemini names the variable on the line before its last; the run's
    // stderr excerpt keeps both.
    let stderr = run["stderrExcerpt"].as_str().unwrap();
    assert!(stderr.contains("GEMINI_API_KEY"), "{run}");
}
