//! `pi_local` on a local model server: the real `pi` against the scripted
//! provider posing as Ollama, configured with the original's JSON unchanged
//! (its `PAPERCLIP_PI_PROVIDERS` workaround). The generic CLI tests
//! (`coding_agents.rs`) cover work, resume, cancel and overflow.

use crate::clis::Cli;
use crate::common::TestServer;

use paperclip_scripted_provider::{ScriptedProvider, Turn};
use serde_json::{json, Value};

/// The original's `PAPERCLIP_PI_PROVIDERS` text: one OpenAI-compatible
/// provider at `base` with `models` (id, per-million `cost` table).
pub fn providers(name: &str, base: &str, models: &[(&str, Value)]) -> String {
    let models: Vec<Value> = models
        .iter()
        .map(|(id, cost)| json!({ "id": id, "cost": cost }))
        .collect();
    json!({ name: { "baseUrl": format!("{base}/v1"), "api": "openai-completions",
                    "apiKey": "{env:OLLAMA_KEY}", "models": models } })
    .to_string()
}

/// Three agents hired with the original's pi_local JSON on one Ollama: one
/// on a model that cannot call tools, one on a model the server does not
/// have, one on a free model that works its task. The first two fail in
/// seconds with their codes and words; the third's tokens count at $0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pi_on_ollama_free_tokens_and_refused_models() {
    let Some(cli) = Cli::find("pi_local") else {
        return;
    };
    let provider = ScriptedProvider::start([
        Turn::Bash {
            command: "echo providers=${PAPERCLIP_PI_PROVIDERS:-absent}".into(),
        },
        Turn::Bash {
            command: r#"curl -sSf -X POST "$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID/checkout" -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'Content-Type: application/json' -d "{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\"]}""#.into(),
        },
        Turn::Bash {
            command: r#"curl -sSf -X PATCH "$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID" -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'Content-Type: application/json' -d '{"status":"done"}'"#.into(),
        },
        Turn::Answer {
            text: "Done, locally.".into(),
        },
    ])
    .await;
    provider.serve_models(&["qwen3:8b", "gemma:2b"]);
    provider.without_tools(&["gemma:2b"]);
    let s = TestServer::start().await;
    let company = s.company("Acme").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let free = json!({ "input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0 });
    let listed = providers(
        "ollama",
        &provider.base_url(),
        &[("qwen3:8b", free.clone()), ("gemma:2b", free)],
    );
    let home = cli.home.display().to_string();
    let hire = async |name: &str, model: &str| {
        // The original's hire form's keys, as it saves them.
        let config = json!({
            "model": model, "timeoutSec": 0, "graceSec": 20, "command": "pi",
            "instructionsFilePath": "", "extraArgs": [], "bootstrapPromptTemplate": "",
            "env": { "HOME": home, "PI_OFFLINE": "1", "OLLAMA_KEY": "sk-local-test",
                     "PAPERCLIP_PI_PROVIDERS": listed },
        });
        let agent = s
            .ok_post(
                &format!("/api/companies/{cid}/agents"),
                json!({ "name": name, "role": "engineer", "adapterType": "pi_local", "adapterConfig": config }),
            )
            .await;
        let aid = agent["id"].as_str().unwrap().to_string();
        s.issue(
            &cid,
            json!({ "title": format!("Task for {name}"), "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
        aid
    };
    let small = hire("Small", "ollama/gemma:2b").await;
    let missing = hire("Missing", "ollama/llama3").await;
    let local = hire("Local", "ollama/qwen3:8b").await;

    let finished = async |aid: &str| {
        let runs = s
            .wait_for(
                &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
                120,
                |r| {
                    r.as_array().is_some_and(|r| {
                        !r.is_empty() && r[0]["status"] != "queued" && r[0]["status"] != "running"
                    })
                },
            )
            .await;
        runs[0].clone()
    };
    // The agents have no run timeout: a refused model must end the run by
    // itself (pi would otherwise retry on), so `finished`'s deadline is the
    // bound; how fast it ends is for a benchmark, not a test.
    let run = finished(&small).await;
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["errorCode"], "model_tool_use_unsupported", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(
        error.starts_with("The model gemma:2b cannot call tools, which an agent needs to work a task. Pick a larger model or one tuned for tool use."),
        "{error}"
    );

    let run = finished(&missing).await;
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["errorCode"], "model_unavailable", "{run}");
    assert!(
        run["error"]
            .as_str()
            .unwrap()
            .contains("try pulling it first"),
        "{run}"
    );

    let run = finished(&local).await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let usage = &run["usageJson"];
    assert!(usage["inputTokens"].as_u64().unwrap() > 0, "{usage}");
    assert_eq!(usage["provider"], "ollama", "{usage}");
    assert_eq!(usage["costUsd"], 0.0, "free, not unknown: {usage}");
    // The providers JSON (it may hold keys) never reached Pi's process.
    let events = s
        .ok_get(&format!(
            "/api/heartbeat-runs/{}/events?limit=1000",
            run["id"].as_str().unwrap()
        ))
        .await;
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["eventType"] == "transcript.tool_result"
                && e["message"]
                    .as_str()
                    .is_some_and(|o| o.contains("providers=absent"))),
        "{events}"
    );
    let costs = s
        .wait_for(&format!("/api/companies/{cid}/costs/by-agent"), 20, |c| {
            c.as_array()
                .unwrap()
                .iter()
                .any(|row| row["agentId"] == local.as_str())
        })
        .await;
    let row = costs
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["agentId"] == local.as_str())
        .unwrap();
    assert_eq!(row["costCents"], 0, "{row}");
    assert_eq!(row["unpricedEventCount"], 0, "{row}");
    assert!(row["inputTokens"].as_i64().unwrap() > 0, "{row}");
    let task = s
        .ok_get(&format!(
            "/api/companies/{cid}/issues?assigneeAgentId={local}"
        ))
        .await;
    assert_eq!(task[0]["status"], "done", "{task}");
    // Pi asked for exactly the listed model, with its tools offered.
    let asked: Vec<String> = provider
        .requests()
        .iter()
        .filter_map(|r| r.body["model"].as_str().map(String::from))
        .collect();
    assert!(asked.iter().any(|m| m == "gemma:2b"), "{asked:?}");
    assert!(asked.iter().any(|m| m == "llama3"), "{asked:?}");
}
