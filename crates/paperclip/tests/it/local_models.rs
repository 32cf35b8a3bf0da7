//! Local models, first-class (issue 39): the scripted provider poses as
//! Ollama (found through `PAPERCLIP_OLLAMA_URL`) and as an OpenAI-compatible
//! server added by URL. The routes of `/model-servers` (bad input, keys
//! never answered, activity), the environment check of an agent on a local
//! model, and, in the browser, a hire through the form that works a task
//! with the real `pi` and costs $0 on the costs page, apart from paid spend.

use crate::clis::Cli;
use crate::common::{self, until, TestServer};

use std::time::Duration;

use paperclip_scripted_provider::{ScriptedProvider, Turn, TurnUsage};
use reqwest::StatusCode;
use serde_json::{json, Value};

fn checks(report: &Value) -> Vec<(String, String)> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["code"].as_str().unwrap().to_string(),
                c["level"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn has(report: &Value, code: &str, level: &str) -> bool {
    checks(report).iter().any(|(c, l)| c == code && l == level)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_servers_are_listed_added_keyed_and_checked() {
    let ollama = ScriptedProvider::start([]).await;
    ollama.serve_models(&["qwen3:8b", "gemma:2b"]);
    ollama.without_tools(&["gemma:2b"]);
    let studio = ScriptedProvider::start([]).await;
    studio.serve_openai_models(&["qwen2.5-coder-7b"]);
    let s = TestServer::start_env(&[("PAPERCLIP_OLLAMA_URL", &ollama.base_url())]).await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let base = format!("/api/companies/{cid}/model-servers");

    // Ollama as detected, with its models.
    let list = s.ok_get(&base).await;
    assert_eq!(list["ollamaUrl"], ollama.base_url());
    let detected = &list["servers"][0];
    assert_eq!(detected["id"], "detected-ollama");
    assert_eq!(detected["detected"], true);
    assert_eq!(detected["reachable"], true, "{list}");
    let names: Vec<&str> = detected["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["qwen3:8b", "gemma:2b"]);

    // Bad input.
    let (st, body) = s
        .post(&base, json!({ "name": "LM", "baseUrl": "localhost:1234" }))
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["details"][0]["path"], json!(["baseUrl"]), "{body}");
    let (st, _) = s
        .post(
            &base,
            json!({ "name": " ", "baseUrl": "http://127.0.0.1:1" }),
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    let (st, body) = s
        .post(&base, json!({ "name": "LM", "baseUrl": "http://127.0.0.1:1", "price": { "inputPerMillionUsd": -1, "outputPerMillionUsd": 0 } }))
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{body}");
    let (st, _) = s
        .post(
            &base,
            json!({ "name": "LM", "baseUrl": "http://127.0.0.1:1", "kind": "gpt" }),
        )
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "an unknown kind is refused");

    // An OpenAI-compatible server with a key: the key never comes back.
    let key = "sk-lmstudio-very-secret";
    let (st, made) = s
        .post(
            &base,
            json!({ "name": "LM Studio", "baseUrl": format!("{}/v1/", studio.base_url()), "apiKey": key,
                    "price": { "inputPerMillionUsd": 0.5, "outputPerMillionUsd": 1.5 } }),
        )
        .await;
    assert_eq!(st, StatusCode::CREATED, "{made}");
    assert!(!made.to_string().contains(key));
    assert_eq!(
        made["baseUrl"],
        studio.base_url(),
        "the /v1 is the API's, not the server's"
    );
    assert_eq!(made["providerKey"], "lm-studio");
    assert_eq!(made["hasApiKey"], true);
    let sid = made["id"].as_str().unwrap().to_string();
    let (st, _) = s
        .post(
            &base,
            json!({ "name": "LM Studio", "baseUrl": "http://127.0.0.1:2" }),
        )
        .await;
    assert_eq!(st, StatusCode::CONFLICT);
    let list = s.ok_get(&base).await;
    assert!(!list.to_string().contains(key));
    let added = list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == sid.as_str())
        .unwrap();
    assert_eq!(added["reachable"], true, "{added}");
    assert_eq!(added["models"][0]["id"], "qwen2.5-coder-7b");
    let secrets = s.ok_get(&format!("/api/companies/{cid}/secrets")).await;
    assert!(
        secrets
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["name"] == "API key of model server LM Studio"),
        "{secrets}"
    );

    // 404, 422.
    let nobody = "00000000-0000-4000-8000-000000000000";
    let (st, _) = s
        .patch(&format!("{base}/{nobody}"), json!({ "name": "X" }))
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = s.delete(&format!("{base}/{nobody}")).await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, _) = s
        .patch(&format!("{base}/detected-ollama"), json!({ "name": "X" }))
        .await;
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY);
    let other = s.company("Other").await["id"].as_str().unwrap().to_string();
    let (st, _) = s
        .patch(
            &format!("/api/companies/{other}/model-servers/{sid}"),
            json!({ "name": "X" }),
        )
        .await;
    assert_eq!(
        st,
        StatusCode::NOT_FOUND,
        "another company's server is not found"
    );
    let updated = s
        .ok_patch(
            &format!("{base}/{sid}"),
            json!({ "apiKey": "sk-rotated-secret" }),
        )
        .await;
    assert!(!updated.to_string().contains("sk-rotated-secret"));

    // Built configs: Pi on the detected Ollama at $0; LM Studio's key is a
    // reference to its secret; a type without custom providers is refused.
    let q = |server: &str, extra: &str| format!("{base}/{server}/agent-config?{extra}");
    let hire = s.ok_get(&q("detected-ollama", "model=qwen3:8b")).await;
    assert_eq!(hire["adapterType"], "pi_local");
    let pi = hire["adapterConfig"].clone();
    assert_eq!(pi["model"], "ollama/qwen3:8b");
    let providers: Value =
        serde_json::from_str(pi["env"]["PAPERCLIP_PI_PROVIDERS"].as_str().unwrap()).unwrap();
    assert_eq!(
        providers["ollama"]["baseUrl"],
        format!("{}/v1", ollama.base_url())
    );
    assert_eq!(providers["ollama"]["models"][0]["cost"]["input"], 0.0);
    let lm = s
        .ok_get(&q(&sid, "model=qwen2.5-coder-7b&adapterType=pi_local"))
        .await;
    assert!(!lm.to_string().contains("sk-rotated-secret"));
    assert_eq!(
        lm["adapterConfig"]["env"]["LOCAL_MODEL_API_KEY"]["type"],
        "secret_ref"
    );
    let (st, _) = s
        .get(&q(
            "detected-ollama",
            "model=qwen3:8b&adapterType=claude_local",
        ))
        .await;
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY);
    let (st, _) = s.get(&q("detected-ollama", "")).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);

    // The environment check pings the server, finds the model, knows
    // whether it can call tools and runs a one-token completion.
    let env_check = async |config: &Value| {
        s.ok_post(
            &format!("/api/companies/{cid}/adapters/pi_local/test-environment"),
            json!({ "adapterConfig": config }),
        )
        .await
    };
    let report = env_check(&pi).await;
    assert!(
        has(&report, "local_model_server_reachable", "info"),
        "{report}"
    );
    assert!(has(&report, "local_model_probe_passed", "info"), "{report}");
    let mut small = pi.clone();
    small["model"] = json!("ollama/gemma:2b");
    let report = env_check(&small).await;
    assert!(has(&report, "local_model_no_tools", "error"), "{report}");
    assert_eq!(report["status"], "fail");
    let words = report["checks"].to_string();
    assert!(words.contains("gemma:2b cannot call tools"), "{words}");
    let mut missing = pi.clone();
    missing["model"] = json!("ollama/llama3");
    let report = env_check(&missing).await;
    assert!(has(&report, "local_model_not_listed", "error"), "{report}");
    let report = env_check(&lm["adapterConfig"]).await;
    assert!(has(&report, "local_model_probe_passed", "info"), "{report}");
    // A model the server refuses at completion time fails with its words.
    ollama.serve_models(&["qwen3:8b"]);
    let report = env_check(&small).await;
    assert!(has(&report, "local_model_not_listed", "error"), "{report}");
    drop(studio);
    let report = env_check(&lm["adapterConfig"]).await;
    assert!(
        has(&report, "local_model_server_unreachable", "error"),
        "{report}"
    );

    // Every mutation has its activity row; none carries a key.
    s.ok_patch(&format!("{base}/{sid}"), json!({ "name": "LM Studio 2" }))
        .await;
    let (st, _) = s.delete(&format!("{base}/{sid}")).await;
    assert_eq!(st, StatusCode::OK);
    let actions = s.actions(&cid).await;
    for a in [
        "model_server.created",
        "model_server.updated",
        "model_server.deleted",
        "secret.created",
        "secret.rotated",
    ] {
        assert!(actions.iter().any(|x| x == a), "{a} in {actions:?}");
    }
    let activity = s
        .ok_get(&format!("/api/companies/{cid}/activity?limit=100"))
        .await
        .to_string();
    assert!(!activity.contains(key) && !activity.contains("sk-rotated-secret"));
}

/// The scripted work of an agent: checkout, comment, done, answer.
fn work_turns() -> Vec<Turn> {
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
                r#"curl -sSf -X POST {api}/comments" {auth} -d '{{"body":"Done on a local model."}}'"#
            ),
        },
        Turn::Bash {
            command: format!(r#"curl -sSf -X PATCH {api}" {auth} -d '{{"status":"done"}}'"#),
        },
        Turn::Answer {
            text: "Finished locally.".into(),
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_model_hired_through_the_form_works_a_task_at_zero_cost() {
    if !common::browser::ready() {
        return;
    }
    let Some(cli) = Cli::find("pi_local") else {
        return;
    };
    let provider = ScriptedProvider::start(work_turns()).await;
    provider.serve_models(&["qwen3:8b", "phi:1b"]);
    provider.report_usage(TurnUsage {
        input_tokens: 1200,
        cached_input_tokens: 0,
        output_tokens: 40,
    });
    let home = cli.home.display().to_string();
    let s = TestServer::start_env(&[
        ("PAPERCLIP_OLLAMA_URL", &provider.base_url()),
        ("HOME", &home),
    ])
    .await;
    let out = common::browser::run("localmodels", &s.base, Duration::from_secs(150)).await;
    assert!(out.contains("step: the costs page shows"), "{out}");

    // What the page showed, from the API: one run, on Ollama, $0 with tokens.
    let companies = s.ok_get("/api/companies").await;
    let cid = companies[0]["id"].as_str().unwrap().to_string();
    let agents = s.ok_get(&format!("/api/companies/{cid}/agents")).await;
    let agent = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["adapterType"] == "pi_local")
        .unwrap()
        .clone();
    let aid = agent["id"].as_str().unwrap().to_string();
    let runs = s.runs_of(&cid, &aid).await;
    assert_eq!(runs[0]["status"], "succeeded", "{runs:?}");
    assert_eq!(runs[0]["usageJson"]["provider"], "ollama");
    let split = s
        .ok_get(&format!("/api/companies/{cid}/costs/local-models"))
        .await;
    assert_eq!(split["local"]["costCents"], 0, "{split}");
    assert!(
        split["local"]["inputTokens"].as_i64().unwrap() >= 1200,
        "{split}"
    );
    assert_eq!(split["paid"]["costCents"], 250, "{split}");

    // A model the server no longer has: the run fails in seconds, coded.
    let hire = s
        .ok_get(&format!(
            "/api/companies/{cid}/model-servers/detected-ollama/agent-config?model=phi:1b"
        ))
        .await;
    provider.serve_models(&["qwen3:8b"]);
    let gone = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Phi", "role": "engineer", "adapterType": "pi_local",
                    "adapterConfig": hire["adapterConfig"] }),
        )
        .await;
    let gid = gone["id"].as_str().unwrap().to_string();
    s.issue(
        &cid,
        json!({ "title": "Try the small model", "status": "todo", "assigneeAgentId": gid }),
    )
    .await;
    let run = until(60, "the run on a removed model to end", async || {
        let runs = s.runs_of(&cid, &gid).await;
        runs.first()
            .filter(|r| r["status"] != "queued" && r["status"] != "running")
            .cloned()
    })
    .await;
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["errorCode"], "model_unavailable", "{run}");
    let at = |k: &str| {
        chrono::DateTime::parse_from_rfc3339(run[k].as_str().unwrap())
            .unwrap()
            .timestamp()
    };
    assert!(at("finishedAt") - at("startedAt") < 30, "{run}");
}

/// OpenCode hired on the detected Ollama through the built config: its
/// provider (in `OPENCODE_CONFIG_CONTENT`) and the Paperclip skill both
/// reach the real `opencode`, which works a task; its tokens are counted
/// under `ollama` at $0, as local spend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opencode_agent_on_the_detected_ollama_works_a_task_at_zero_cost() {
    let Some(cli) = Cli::find("opencode_local") else {
        return;
    };
    let provider = ScriptedProvider::start(work_turns()).await;
    provider.serve_models(&["qwen3:8b"]);
    provider.report_usage(TurnUsage {
        input_tokens: 900,
        cached_input_tokens: 0,
        output_tokens: 30,
    });
    let s = TestServer::start_env(&[("PAPERCLIP_OLLAMA_URL", &provider.base_url())]).await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let hire = s
        .ok_get(&format!(
            "/api/companies/{cid}/model-servers/detected-ollama/agent-config?adapterType=opencode_local&model=qwen3:8b"
        ))
        .await;
    assert_eq!(hire["adapterType"], "opencode_local", "{hire}");
    let mut config = hire["adapterConfig"].clone();
    // OpenCode's state in a home of the test's own; its settings file there
    // is merged by OpenCode under the hire's config.
    let home = cli.home.display().to_string();
    let settings = cli.home.join("config/opencode");
    std::fs::create_dir_all(&settings).unwrap();
    std::fs::write(
        settings.join("opencode.json"),
        json!({ "autoupdate": false, "share": "disabled" }).to_string(),
    )
    .unwrap();
    for (k, v) in [
        ("HOME", home.clone()),
        ("XDG_CONFIG_HOME", format!("{home}/config")),
        ("XDG_DATA_HOME", format!("{home}/data")),
        ("XDG_STATE_HOME", format!("{home}/state")),
    ] {
        config["env"][k] = json!(v);
    }
    config["timeoutSec"] = json!(120);
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Qwen", "role": "engineer", "adapterType": "opencode_local",
                    "adapterConfig": config }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let issue = s
        .issue(
            &cid,
            json!({ "title": "Work it locally", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let run = until(240, "the opencode run to end", async || {
        let runs = s.runs_of(&cid, &aid).await;
        runs.first()
            .filter(|r| r["status"] != "queued" && r["status"] != "running")
            .cloned()
    })
    .await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let identifier = issue["identifier"].as_str().unwrap();
    let done = s.ok_get(&format!("/api/issues/{identifier}")).await;
    assert_eq!(done["status"], "done", "{done}");
    let comments = s
        .ok_get(&format!("/api/issues/{identifier}/comments"))
        .await;
    assert!(
        comments.to_string().contains("Done on a local model."),
        "{comments}"
    );
    // The hire's provider and the adapter's instructions both applied.
    let first = &provider.turn_requests()[0];
    assert_eq!(first.body["model"], "qwen3:8b");
    assert!(
        first
            .body
            .to_string()
            .contains("How to work as an agent of a Paperclip company"),
        "the Paperclip skill is not in the model request"
    );

    let usage = &run["usageJson"];
    assert_eq!(usage["provider"], "ollama", "{usage}");
    assert_eq!(usage["costUsd"], 0.0, "{usage}");
    let split = s
        .wait_for(
            &format!("/api/companies/{cid}/costs/local-models"),
            20,
            |b| b["local"]["inputTokens"].as_i64() >= Some(900),
        )
        .await;
    assert_eq!(split["local"]["costCents"], 0, "{split}");
    assert_eq!(split["paid"]["inputTokens"], 0, "{split}");
    let ollama = &split["providers"][0];
    assert_eq!(ollama["provider"], "ollama", "{split}");
    assert_eq!(ollama["local"], true, "{split}");
    assert_eq!(ollama["unpricedEventCount"], 0, "priced at $0: {split}");
}
