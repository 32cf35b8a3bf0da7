//! Upstream's adapter routes on upstream's shapes: the registry, a type's
//! config schema, the models a type offers and the model its CLI would pick,
//! the configuration notes for hiring agents, who may call each, and the
//! upstream CLI's `adapter` commands against them. The server runs with a
//! HOME holding each CLI's settings, a fake `opencode` on its PATH, an
//! OpenAI-compatible model list and the scripted provider's Gemini model
//! list on loopback, so nothing leaves the machine.

use crate::common;

use std::path::Path;

use common::upstream::{upstream_cli, Cli};
use common::TestServer;
use paperclip_scripted_provider::ScriptedProvider;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// Upstream's `ConfigFieldSchema` keys and `AdapterEnvironmentCheck` keys.
const FIELD_KEYS: &[&str] = &[
    "key", "label", "type", "options", "default", "hint", "required", "group", "meta",
];
const FIELD_TYPES: &[&str] = &["text", "select", "toggle", "number", "textarea", "combobox"];
const CHECK_KEYS: &[&str] = &["code", "level", "message", "detail", "hint"];

fn keys(v: &Value) -> Vec<&str> {
    let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    k.sort_unstable();
    k
}

/// A CLI's settings where each CLI keeps them, under `home`, and a fake
/// `opencode` that lists two models, in `bin`.
fn cli_home(home: &Path, bin: &Path) {
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::write(
        home.join(".claude/settings.json"),
        r#"{"model":"claude-sonnet-4-6"}"#,
    )
    .unwrap();
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    std::fs::write(
        home.join(".codex/config.toml"),
        "model = \"gpt-5.4\"\nmodel_provider = \"openai\"\n[profiles.other]\nmodel = \"o3\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(home.join(".config/opencode")).unwrap();
    std::fs::write(
        home.join(".config/opencode/opencode.jsonc"),
        "{\n  // mine\n  \"model\": \"fakeprov/alpha\"\n}\n",
    )
    .unwrap();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    std::fs::write(
        home.join(".gemini/settings.json"),
        r#"{"model":{"name":"gemini-2.5-flash-lite"}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(home.join(".pi/agent")).unwrap();
    std::fs::write(
        home.join(".pi/agent/settings.json"),
        r#"{"defaultProvider":"ollama","defaultModel":"qwen3:8b"}"#,
    )
    .unwrap();
    std::fs::create_dir_all(bin).unwrap();
    let fake = bin.join("opencode");
    std::fs::write(
        &fake,
        "#!/bin/sh\n[ \"$1\" = models ] || exit 2\nprintf 'fakeprov/beta\\nfakeprov/alpha\\n'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `GET /v1/models` in the OpenAI shape, as a provider with a key answers.
async fn model_list_server() -> String {
    use axum::routing::get;
    let app = axum::Router::new().route(
        "/v1/models",
        get(|| async {
            axum::Json(json!({ "object": "list", "data": [
                { "id": "provider-model-1", "object": "model" },
                { "id": "gpt-5.4", "object": "model" }
            ]}))
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    format!("http://{addr}/v1")
}

#[tokio::test]
async fn adapter_routes_answer_in_upstreams_shapes_and_permissions() {
    let dir = std::env::temp_dir().join(format!("pc-adapter-routes-{}", uuid::Uuid::new_v4()));
    let (home, bin) = (dir.join("home"), dir.join("bin"));
    cli_home(&home, &bin);
    let openai = model_list_server().await;
    // Google's model list for gemini_local (with the key); pi_local's
    // custom providers as the original reads them from the server's env.
    let google = ScriptedProvider::start([]).await;
    let pi_providers = json!({ "ollama": { "baseUrl": "http://127.0.0.1:9/v1",
        "api": "openai-completions", "apiKey": "none",
        "models": [{ "id": "qwen3:8b" }, { "id": "gemma:2b" }] } })
    .to_string();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let s = TestServer::start_env(&[
        ("HOME", home.to_str().unwrap()),
        ("PATH", &path),
        ("OPENAI_API_KEY", "sk-test-not-a-real-key"),
        ("OPENAI_BASE_URL", &openai),
        ("GEMINI_API_KEY", "gemini-test-not-a-real-key"),
        ("GOOGLE_GEMINI_BASE_URL", &google.base_url()),
        ("PAPERCLIP_PI_PROVIDERS", &pi_providers),
    ])
    .await;
    let company = s.company("Acme").await;
    let cid = company["id"].as_str().unwrap();

    // The registry: every type, sorted, with upstream's fields only.
    let (status, list) = s.get("/api/adapters").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let list = list.as_array().unwrap();
    let types: Vec<&str> = list.iter().map(|a| a["type"].as_str().unwrap()).collect();
    let mut sorted = types.clone();
    sorted.sort_unstable();
    assert_eq!(types, sorted);
    for t in [
        "claude_local",
        "codex_local",
        "opencode_local",
        "process",
        "http",
    ] {
        assert!(types.contains(&t), "{t} in {types:?}");
    }
    for a in list {
        assert_eq!(
            keys(a),
            [
                "capabilities",
                "disabled",
                "label",
                "loaded",
                "modelsCount",
                "overridePaused",
                "source",
                "type"
            ],
            "{a}"
        );
        assert_eq!(
            keys(&a["capabilities"]),
            [
                "requiresMaterializedRuntimeSkills",
                "supportsAcp",
                "supportsInstructionsBundle",
                "supportsLocalAgentJwt",
                "supportsSkills"
            ]
        );
        assert_eq!(a["source"], "builtin");
        assert_eq!(a["loaded"], true);
    }
    let claude = s.ok_get("/api/adapters/claude_local").await;
    assert!(claude["modelsCount"].as_u64().unwrap() > 0, "{claude}");
    assert_eq!(s.ok_get("/api/adapters/process").await["modelsCount"], 0);
    let (status, err) = s.get("/api/adapters/nope_local").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(err["error"], "Adapter \"nope_local\" is not registered.");

    // Built-in adapters are not removed, reloaded or reinstalled.
    let (status, err) = s.delete("/api/adapters/claude_local").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    let (status, _) = s.post("/api/adapters/claude_local/reload", json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = s
        .post("/api/adapters/nope_local/reinstall", json!({}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let paused = s
        .ok_patch(
            "/api/adapters/codex_local/override",
            json!({ "paused": true }),
        )
        .await;
    assert_eq!(
        paused,
        json!({ "type": "codex_local", "paused": true, "changed": false })
    );
    let (status, _) = s
        .patch("/api/adapters/codex_local/override", json!({}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // Config schemas: upstream's field shape; required keys marked; the
    // model field offers the type's models.
    let schema = s.ok_get("/api/adapters/process/config-schema").await;
    assert_eq!(keys(&schema), ["fields"]);
    for f in schema["fields"].as_array().unwrap() {
        assert!(keys(f).iter().all(|k| FIELD_KEYS.contains(k)), "{f}");
        assert!(FIELD_TYPES.contains(&f["type"].as_str().unwrap()), "{f}");
    }
    let command = schema["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == "command");
    assert_eq!(command.unwrap()["required"], true);
    let schema = s.ok_get("/api/adapters/claude_local/config-schema").await;
    let model = schema["fields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == "model")
        .unwrap();
    assert_eq!(model["type"], "combobox");
    assert!(model["options"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["value"] == "claude-sonnet-4-6"));
    let (status, _) = s.get("/api/adapters/nope_local/config-schema").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Models: opencode's from `opencode models`, codex's from its provider
    // (with the known list after), none for process; an unknown type is 422.
    let models = |kind: &str| format!("/api/companies/{cid}/adapters/{kind}/models");
    let oc = s.ok_get(&models("opencode_local")).await;
    assert_eq!(
        oc,
        json!([{ "id": "fakeprov/alpha", "label": "fakeprov/alpha" }, { "id": "fakeprov/beta", "label": "fakeprov/beta" }])
    );
    let codex = s
        .ok_get(&format!("{}?refresh=true", models("codex_local")))
        .await;
    let ids: Vec<&str> = codex
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(&ids[..2], ["provider-model-1", "gpt-5.4"], "{ids:?}");
    assert_eq!(
        ids.iter().filter(|i| **i == "gpt-5.4").count(),
        1,
        "deduplicated: {ids:?}"
    );
    for m in codex.as_array().unwrap() {
        assert_eq!(keys(m), ["id", "label"]);
    }
    assert_eq!(s.ok_get(&models("process")).await, json!([]));
    let (status, err) = s.get(&models("nope_local")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(err["error"], "Unknown adapter type: nope_local");
    let (status, _) = s
        .get(&format!("{}?environmentId=e1", models("codex_local")))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Detect-model reads each CLI's own settings in the server's HOME.
    let detect = |kind: &str| format!("/api/companies/{cid}/adapters/{kind}/detect-model");
    let found = s.ok_get(&detect("claude_local")).await;
    assert_eq!(found["model"], "claude-sonnet-4-6");
    assert_eq!(found["provider"], "anthropic");
    assert!(
        found["source"]
            .as_str()
            .unwrap()
            .ends_with(".claude/settings.json"),
        "{found}"
    );
    assert_eq!(keys(&found), ["model", "provider", "source"]);
    let found = s.ok_get(&detect("codex_local")).await;
    assert_eq!(
        (found["model"].as_str(), found["provider"].as_str()),
        (Some("gpt-5.4"), Some("openai"))
    );
    let found = s.ok_get(&detect("opencode_local")).await;
    assert_eq!(
        (found["model"].as_str(), found["provider"].as_str()),
        (Some("fakeprov/alpha"), Some("fakeprov"))
    );
    assert_eq!(s.ok_get(&detect("process")).await, Value::Null);

    // Gemini: Google's list (generating models only) before the known one,
    // the model from the home's settings; Pi: the declared providers' ids,
    // the default from its settings.
    let gemini = s.ok_get(&models("gemini_local")).await;
    let ids: Vec<&str> = gemini
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        &ids[..4],
        [
            "gemini-2.5-flash",
            "gemini-2.5-pro",
            "gemini-2.5-flash-preview-09-2025",
            "auto"
        ],
        "{ids:?}"
    );
    assert!(!ids.contains(&"text-embedding-004"), "{ids:?}");
    assert_eq!(ids.len(), 9, "the known list after, deduplicated: {ids:?}");
    assert!(google.requests().iter().any(|r| r.path == "/v1beta/models"));
    let found = s.ok_get(&detect("gemini_local")).await;
    assert_eq!(
        (found["model"].as_str(), found["provider"].as_str()),
        (Some("gemini-2.5-flash-lite"), Some("google"))
    );
    assert!(
        found["source"]
            .as_str()
            .unwrap()
            .ends_with(".gemini/settings.json"),
        "{found}"
    );
    let pi = s.ok_get(&models("pi_local")).await;
    let ids: Vec<&str> = pi
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(&ids[..2], ["ollama/qwen3:8b", "ollama/gemma:2b"], "{ids:?}");
    let found = s.ok_get(&detect("pi_local")).await;
    assert_eq!(
        (found["model"].as_str(), found["provider"].as_str()),
        (Some("ollama/qwen3:8b"), Some("ollama"))
    );
    let (status, _) = s.get(&detect("nope_local")).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // Test-environment keeps upstream's result shape; testCredentials only
    // take upstream's provider key names.
    let report = s
        .ok_post(
            &format!("/api/companies/{cid}/adapters/codex_local/test-environment"),
            json!({ "adapterConfig": {}, "testCredentials": { "OPENAI_API_KEY": "sk-probe" } }),
        )
        .await;
    assert_eq!(
        keys(&report),
        ["adapterType", "checks", "status", "testedAt"]
    );
    assert!(["pass", "warn", "fail"].contains(&report["status"].as_str().unwrap()));
    for c in report["checks"].as_array().unwrap() {
        assert!(keys(c).iter().all(|k| CHECK_KEYS.contains(k)), "{c}");
        assert!(["info", "warn", "error"].contains(&c["level"].as_str().unwrap()));
    }
    assert!(
        !report.to_string().contains("sk-probe"),
        "a credential is never echoed"
    );
    let (status, err) = s
        .post(
            &format!("/api/companies/{cid}/adapters/codex_local/test-environment"),
            json!({ "testCredentials": { "PATH": "/tmp" } }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(
        err["details"][0]["path"],
        json!(["testCredentials", "PATH"])
    );

    // The configuration notes for agents that hire.
    let (status, index) = s.get("/api/llms/agent-configuration.txt").await;
    assert_eq!(status, StatusCode::OK);
    assert!(index
        .as_str()
        .unwrap()
        .contains("/api/llms/agent-configuration/claude_local.txt"));
    let (status, doc) = s.get("/api/llms/agent-configuration/codex_local.txt").await;
    assert_eq!(status, StatusCode::OK);
    let doc = doc.as_str().unwrap();
    assert!(
        doc.starts_with("# codex_local agent configuration"),
        "{doc}"
    );
    assert!(
        doc.contains("- modelReasoningEffort (select, optional)"),
        "{doc}"
    );
    let (status, _) = s.get("/api/llms/agent-configuration/nope_local.txt").await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Agents: their company's models and detection, not the registry;
    // test-environment and the notes only with canCreateAgents; another
    // company's routes not at all.
    let worker = s.agent(cid, "Worker", None).await;
    let wid = worker["id"].as_str().unwrap();
    let token = s.key(wid).await;
    let as_agent = |path: String| {
        let (s, token) = (&s, &token);
        async move { s.as_agent(token, None, "GET", &path, None).await.0 }
    };
    assert_eq!(as_agent(models("claude_local")).await, StatusCode::OK);
    assert_eq!(as_agent(detect("claude_local")).await, StatusCode::OK);
    assert_eq!(
        as_agent("/api/adapters".into()).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        as_agent("/api/adapters/claude_local/config-schema".into()).await,
        StatusCode::FORBIDDEN
    );
    let notes = "/api/llms/agent-configuration/process.txt".to_string();
    assert_eq!(as_agent(notes.clone()).await, StatusCode::FORBIDDEN);
    let test_env = format!("/api/companies/{cid}/adapters/process/test-environment");
    let body = json!({ "adapterConfig": { "command": "true" } });
    let (status, _) = s
        .as_agent(&token, None, "POST", &test_env, Some(body.clone()))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    s.ok_patch(
        &format!("/api/agents/{wid}/permissions"),
        json!({ "canCreateAgents": true, "canAssignTasks": false }),
    )
    .await;
    assert_eq!(as_agent(notes).await, StatusCode::OK);
    let (status, report) = s
        .as_agent(&token, None, "POST", &test_env, Some(body))
        .await;
    assert_eq!(status, StatusCode::OK, "{report}");
    assert_eq!(report["adapterType"], "process");
    let other = s.company("Other").await;
    let oid = other["id"].as_str().unwrap();
    let foreign = format!("/api/companies/{oid}/adapters/claude_local/models");
    assert_eq!(as_agent(foreign).await, StatusCode::FORBIDDEN);

    // The upstream CLI's adapter commands, where it is installed.
    if let Some(path) = upstream_cli() {
        let cli = Cli::new(path, &s);
        let listed = cli.ok(&["adapter", "list", "--json"]).await.json();
        assert_eq!(listed.as_array().unwrap().len(), list.len());
        let got = cli.ok(&["adapter", "get", "http", "--json"]).await.json();
        assert_eq!(got["type"], "http");
        let schema = cli
            .ok(&["adapter", "config-schema", "http", "--json"])
            .await
            .json();
        assert!(schema["fields"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["key"] == "url" && f["required"] == true));
        let oc = cli
            .ok(&["adapter", "models", "opencode_local", "-C", cid, "--json"])
            .await
            .json();
        assert_eq!(oc.as_array().unwrap().len(), 2);
        let found = cli
            .ok(&[
                "adapter",
                "detect-model",
                "claude_local",
                "-C",
                cid,
                "--json",
            ])
            .await
            .json();
        assert_eq!(found["model"], "claude-sonnet-4-6");
        let report = cli
            .ok(&[
                "adapter",
                "test-environment",
                "process",
                "-C",
                cid,
                "--payload-json",
                r#"{"adapterConfig":{"command":"true"}}"#,
                "--json",
            ])
            .await
            .json();
        assert_eq!(report["adapterType"], "process");
    }
    std::fs::remove_dir_all(&dir).ok();
}
