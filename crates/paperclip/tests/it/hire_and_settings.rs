//! Hiring checked before it happens, and the company settings page: the
//! environment test says in words what would stop a first run (per adapter
//! type), a hire with a broken config is refused naming the field, and the
//! settings page shows and changes what the company API allows.

use crate::common;

use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

fn check<'a>(report: &'a Value, code: &str) -> Option<&'a Value> {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["code"] == code)
}

async fn test_env(s: &TestServer, cid: &str, kind: &str, config: Value) -> Value {
    s.ok_post(
        &format!("/api/companies/{cid}/adapters/{kind}/test-environment"),
        json!({ "adapterConfig": config }),
    )
    .await
}

/// A port nothing listens on: bound, then released.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn the_environment_test_names_what_would_stop_the_first_run() {
    let s = TestServer::start().await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();

    // claude_local pointed at a directory that is not there.
    let report = test_env(&s, &cid, "claude_local", json!({ "cwd": "/no/such/repo" })).await;
    assert_eq!(report["status"], "fail", "{report}");
    let cwd = check(&report, "invalid_working_directory").expect("cwd check");
    assert_eq!(cwd["level"], "error");
    assert_eq!(
        cwd["message"],
        "Working directory /no/such/repo does not exist"
    );
    assert!(cwd["hint"].as_str().unwrap().contains("change cwd"));

    // A missing CLI is named, with how to install it.
    let report = test_env(
        &s,
        &cid,
        "opencode_local",
        json!({ "command": "no-such-opencode-xyz" }),
    )
    .await;
    assert_eq!(report["status"], "fail", "{report}");
    let missing = check(&report, "adapter_not_installed").expect("install check");
    assert_eq!(
        missing["message"],
        "`no-such-opencode-xyz` is not installed or not on PATH"
    );
    assert!(missing["hint"].as_str().unwrap().contains("opencode-ai"));

    // process: no command is a config error naming the field.
    let report = test_env(&s, &cid, "process", json!({})).await;
    assert_eq!(report["status"], "fail");
    let invalid = check(&report, "invalid_config").expect("config check");
    assert_eq!(invalid["message"], "command: is required");

    // process: a command that is nowhere, and a cwd that is nowhere.
    let report = test_env(
        &s,
        &cid,
        "process",
        json!({ "command": "no-such-command-xyz", "cwd": "/no/such/dir" }),
    )
    .await;
    assert_eq!(report["status"], "fail", "{report}");
    assert_eq!(
        check(&report, "adapter_not_installed").expect("command check")["message"],
        "`no-such-command-xyz` is not installed or not on PATH"
    );
    assert!(check(&report, "invalid_working_directory").is_some());

    // process: a good config passes, saying what it found.
    let dir = s.data_dir.join("repo");
    std::fs::create_dir_all(&dir).unwrap();
    let report = test_env(
        &s,
        &cid,
        "process",
        json!({ "command": "sh", "args": ["-c", "true"], "cwd": dir }),
    )
    .await;
    assert_eq!(report["status"], "pass", "{report}");
    assert!(check(&report, "command_found").unwrap()["message"]
        .as_str()
        .unwrap()
        .ends_with("/sh"));
    assert_eq!(check(&report, "cwd_valid").unwrap()["level"], "info");
    assert!(check(&report, "adapter_not_installed").is_none());

    // http: an endpoint that does not answer is a warning, one that does passes.
    let port = closed_port();
    let report = test_env(
        &s,
        &cid,
        "http",
        json!({ "url": format!("http://127.0.0.1:{port}/wake") }),
    )
    .await;
    assert_eq!(report["status"], "warn", "{report}");
    assert_eq!(
        check(&report, "url_unreachable").unwrap()["message"],
        format!("Cannot connect to 127.0.0.1:{port}")
    );
    let report = test_env(&s, &cid, "http", json!({ "url": s.url("/api/health") })).await;
    assert_eq!(report["status"], "pass", "{report}");
    assert!(check(&report, "url_reachable").is_some());
}

#[tokio::test]
async fn a_hire_with_a_broken_config_is_refused_naming_the_field() {
    let s = TestServer::start().await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let cases = [
        (
            "process",
            json!({ "args": ["x"] }),
            "command",
            "is required",
        ),
        (
            "http",
            json!({ "url": "ftp://example.com" }),
            "url",
            "must be an http or https URL",
        ),
        (
            "claude_local",
            json!({ "cwd": "relative/dir" }),
            "cwd",
            "must be an absolute path",
        ),
    ];
    for (kind, config, field, message) in cases {
        let (status, body) = s
            .post(
                &format!("/api/companies/{cid}/agent-hires"),
                json!({ "name": "Broken", "adapterType": kind, "adapterConfig": config }),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{kind}: {body}");
        let details = body["details"].as_array().expect("details");
        assert!(
            details
                .iter()
                .any(|d| d["path"] == json!(["adapterConfig", field]) && d["message"] == message),
            "{kind}: {body}"
        );
    }
    let agents = s.ok_get(&format!("/api/companies/{cid}/agents")).await;
    assert_eq!(agents, json!([]), "nothing was hired");
    // The same hire with the field filled in goes through, with its budget.
    let hire = s
        .ok_post(
            &format!("/api/companies/{cid}/agent-hires"),
            json!({ "name": "Fixed", "adapterType": "process",
                    "adapterConfig": { "command": "true" }, "budgetMonthlyCents": 2500 }),
        )
        .await;
    assert_eq!(hire["agent"]["name"], "Fixed", "{hire}");
    assert_eq!(hire["agent"]["budgetMonthlyCents"], 2500);
}

#[tokio::test]
async fn the_hire_dialog_offers_each_adapters_fields() {
    let s = TestServer::start().await;
    s.company("Acme").await;
    let html = s.page("/ACM/agents").await;
    for kind in [
        "process",
        "http",
        "claude_local",
        "codex_local",
        "opencode_local",
        "gemini_local",
        "claude_k8s",
        "opencode_k8s",
    ] {
        assert!(
            html.contains(&format!("data-adapter=\"{kind}\"")),
            "{kind} fields missing"
        );
    }
    for key in [
        "command",
        "args",
        "timeoutSec",
        "url",
        "headers",
        "maxTurnsPerRun",
        "modelReasoningEffort",
        "variant",
        "sandbox",
    ] {
        assert!(html.contains(&format!("data-key=\"{key}\"")), "{key}");
    }
    assert!(html.contains("Advanced (JSON)"));
    assert!(html.contains("Check environment"));
    assert!(html.contains("/ui/hire.js"));
    let resp = s.client().get(s.url("/ui/hire.js")).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.text().await.unwrap().contains("P.forms.hire ="));
}

#[tokio::test]
async fn the_settings_page_shows_the_company_and_follows_its_changes() {
    let s = TestServer::start().await;
    let company = s.company("Acme").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let html = s.page("/ACM/company/settings").await;
    assert!(html.contains(&format!("<code id=\"company-id\">{cid}</code>")));
    assert!(html.contains("data-copy=\"#company-id\""));
    assert!(html.contains("value=\"ACM\" readonly"), "prefix shown");
    assert!(html.contains("href=\"/ACM/company/settings\" class=\"active\""));
    // Every company page links to it.
    assert!(s
        .page("/ACM/dashboard")
        .await
        .contains("href=\"/ACM/company/settings\""));

    s.ok_patch(
        &format!("/api/companies/{cid}"),
        json!({ "name": "Acme Robotics", "description": "Builds robots",
                "budgetMonthlyCents": 12345, "requireBoardApprovalForNewAgents": true }),
    )
    .await;
    let html = s.page("/ACM/company/settings").await;
    assert!(html.contains("value=\"Acme Robotics\""));
    assert!(html.contains(">Acme Robotics</option>"), "sidebar switcher");
    assert!(html.contains("Builds robots</textarea>"));
    assert!(html.contains("value=\"123.45\""));
    assert!(html.contains("name=\"requireBoardApprovalForNewAgents\" checked"));

    // An empty name is refused naming the field; the name stays.
    let (status, body) = s
        .patch(&format!("/api/companies/{cid}"), json!({ "name": "" }))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.to_string().contains("name"), "{body}");
    assert!(s
        .page("/ACM/company/settings")
        .await
        .contains("value=\"Acme Robotics\""));
}

#[tokio::test]
async fn a_company_is_archived_and_restored_from_its_settings() {
    let s = TestServer::start().await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let html = s.page("/ACM/company/settings").await;
    assert!(html.contains("Archive company"));
    assert!(!html.contains("Restore company"));
    let archived = s
        .ok_post(&format!("/api/companies/{cid}/archive"), json!({}))
        .await;
    assert_eq!(archived["status"], "archived");
    let html = s.page("/ACM/company/settings").await;
    assert!(html.contains("Restore company"));
    assert!(html.contains("This company is archived"));
    assert!(s
        .actions(&cid)
        .await
        .contains(&"company.archived".to_string()));
    s.ok_patch(
        &format!("/api/companies/{cid}"),
        json!({ "status": "active" }),
    )
    .await;
    assert!(s
        .page("/ACM/company/settings")
        .await
        .contains("Archive company"));
}

/// `tests/browser/hire_and_settings.mjs` in headless Chromium; what it did
/// is then read back through the API.
#[tokio::test(flavor = "multi_thread")]
async fn a_person_hires_through_the_checked_form_and_renames_the_company() {
    if !common::browser::ready() {
        return;
    }
    let s = TestServer::start().await;
    common::browser::run(
        "hire_and_settings",
        &s.base,
        std::time::Duration::from_secs(120),
    )
    .await;
    let companies = s.ok_get("/api/companies").await;
    let company = &companies[0];
    assert_eq!(company["name"], "Globex Corporation");
    assert_eq!(company["budgetMonthlyCents"], 25000);
    let cid = company["id"].as_str().unwrap();
    let agents = s.ok_get(&format!("/api/companies/{cid}/agents")).await;
    let agents = agents.as_array().unwrap();
    assert_eq!(agents.len(), 1, "only the checked hire went through");
    assert_eq!(agents[0]["adapterType"], "process");
    assert_eq!(agents[0]["adapterConfig"], json!({ "command": "true" }));
}
