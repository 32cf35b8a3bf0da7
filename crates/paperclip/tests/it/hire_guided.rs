//! Guided agent setup: the environment check reads the real command before
//! it says Ready (a script that is not there, not readable or broken fails
//! naming it; the bundled example agent passes, dry-run and not run), the
//! server says which coding CLIs it has, names are unique among live agents
//! as upstream has them, and a pending hire is approved from the board's
//! pages (`tests/browser/hire_guided.mjs`).

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

async fn test_env(s: &TestServer, cid: &str, config: Value) -> Value {
    s.ok_post(
        &format!("/api/companies/{cid}/adapters/process/test-environment"),
        json!({ "adapterConfig": config, "agentName": "Writer" }),
    )
    .await
}

#[tokio::test]
async fn the_process_check_reads_the_script_without_running_it() {
    let s = TestServer::start().await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let dir = s.data_dir.join("agents");
    std::fs::create_dir_all(&dir).unwrap();

    // The review's case: `sh` is found, the script is not.
    let missing = dir.join("reveiw-agent.sh");
    let report = test_env(&s, &cid, json!({ "command": "sh", "args": [missing] })).await;
    assert_eq!(report["status"], "fail", "{report}");
    let line = check(&report, "script_missing").expect("script check");
    assert_eq!(
        line["message"],
        format!("Script {} does not exist", missing.display())
    );
    assert!(line["hint"].as_str().unwrap().contains("Fix the argument"));
    // No cwd: the hire's own workspace, named by the name typed.
    let cwd = check(&report, "cwd_default").unwrap()["message"]
        .as_str()
        .unwrap();
    assert!(cwd.contains("Writer gets its own workspace"), "{cwd}");
    assert!(!cwd.contains("new-agent"), "{cwd}");

    // A relative path is looked up from the working directory.
    std::fs::write(dir.join("ok.sh"), "echo ran > ran.txt\n").unwrap();
    let report = test_env(
        &s,
        &cid,
        json!({ "command": "sh", "args": ["ok.sh"], "cwd": dir }),
    )
    .await;
    assert_eq!(report["status"], "pass", "{report}");
    let dry = check(&report, "script_syntax_ok").expect("dry run");
    assert!(
        dry["message"].as_str().unwrap().contains("`sh -n`"),
        "{dry}"
    );
    assert!(!dir.join("ran.txt").exists(), "the check ran the script");

    // A script the shell cannot parse fails, saying where.
    std::fs::write(dir.join("broken.sh"), "if [ x ]; then\n  echo\n").unwrap();
    let report = test_env(
        &s,
        &cid,
        json!({ "command": "sh", "args": ["broken.sh"], "cwd": dir }),
    )
    .await;
    assert_eq!(report["status"], "fail", "{report}");
    assert!(check(&report, "script_syntax_error").is_some(), "{report}");

    // A command given as a path must be executable.
    let report = test_env(&s, &cid, json!({ "command": dir.join("ok.sh") })).await;
    assert_eq!(report["status"], "fail", "{report}");
    let line = check(&report, "command_not_executable").expect("exec check");
    assert!(line["hint"].as_str().unwrap().contains("chmod +x"));

    // The bundled example agent, as the detection offers it, passes.
    let found = s
        .ok_get(&format!("/api/companies/{cid}/adapters/detect"))
        .await;
    let example = &found["exampleAgent"];
    assert_eq!(example["exists"], true, "{found}");
    let path = example["path"].as_str().unwrap();
    assert!(path.ends_with("/examples/example-agent.sh"), "{path}");
    let report = test_env(
        &s,
        &cid,
        json!({ "command": example["command"], "args": example["args"] }),
    )
    .await;
    assert_eq!(report["status"], "pass", "{report}");
    assert!(
        check(&report, "script_found").is_some() && check(&report, "script_syntax_ok").is_some()
    );
}

#[tokio::test]
async fn the_server_lists_its_coding_clis_to_the_board_only() {
    let s = TestServer::start().await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let found = s
        .ok_get(&format!("/api/companies/{cid}/adapters/detect"))
        .await;
    let clis = found["clis"].as_array().unwrap();
    let kinds: Vec<&str> = clis
        .iter()
        .map(|c| c["adapterType"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "claude_local",
            "codex_local",
            "opencode_local",
            "gemini_local",
            "pi_local"
        ]
    );
    let required = std::env::var("PAPERCLIP_REQUIRE_AGENT_CLIS").as_deref() == Ok("1");
    for c in clis {
        let auth = &c["auth"];
        assert!(
            auth["ready"].is_boolean() && auth["message"].is_string(),
            "{c}"
        );
        if c["installed"] == true {
            let version = c["version"].as_str().unwrap_or_default();
            assert!(version.chars().any(|ch| ch.is_ascii_digit()), "{c}");
            assert!(c["path"]
                .as_str()
                .unwrap()
                .ends_with(c["command"].as_str().unwrap()));
        } else {
            assert!(!required, "{} is not on PATH: {c}", c["command"]);
            assert!(c["version"].is_null() && c["path"].is_null());
        }
    }
    assert!(found["workspaceRoot"]
        .as_str()
        .unwrap()
        .ends_with("/workspaces"));

    let agent = s.agent(&cid, "Worker", None).await;
    let token = s.key(agent["id"].as_str().unwrap()).await;
    let (status, _) = s
        .as_agent(
            &token,
            None,
            "GET",
            &format!("/api/companies/{cid}/adapters/detect"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = s
        .get("/api/companies/no-such-company/adapters/detect")
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

/// Upstream's rule: a new agent whose name is taken (by url key, among
/// agents not terminated) is given the next free "Name N"; a rename onto a
/// taken name is a 409.
#[tokio::test]
async fn agent_names_are_unique_among_live_agents_as_upstream_has_them() {
    let s = TestServer::start().await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let first = s.agent(&cid, "Builder", None).await;
    let second = s.agent(&cid, "builder!", None).await;
    assert_eq!(second["name"], "builder! 2");
    assert_eq!(second["urlKey"], "builder-2");
    let third = s.agent(&cid, "Builder", None).await;
    assert_eq!(third["name"], "Builder 3");
    // A hire waiting for approval holds its name too.
    s.ok_patch(
        &format!("/api/companies/{cid}"),
        json!({ "requireBoardApprovalForNewAgents": true }),
    )
    .await;
    let hire = s
        .ok_post(
            &format!("/api/companies/{cid}/agent-hires"),
            json!({ "name": "Builder", "adapterType": "process", "adapterConfig": { "command": "true" } }),
        )
        .await;
    assert_eq!(hire["agent"]["name"], "Builder 4");
    assert_eq!(hire["approval"]["payload"]["name"], "Builder 4");

    let id3 = third["id"].as_str().unwrap();
    let (status, body) = s
        .patch(&format!("/api/agents/{id3}"), json!({ "name": "BUILDER" }))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("An agent named BUILDER already exists"),
        "{body}"
    );
    // Its own name in other letters is no conflict.
    let renamed = s
        .ok_patch(
            &format!("/api/agents/{id3}"),
            json!({ "name": "builder 3" }),
        )
        .await;
    assert_eq!(renamed["name"], "builder 3");

    // A terminated agent's name is free again.
    let id1 = first["id"].as_str().unwrap();
    s.ok_post(&format!("/api/agents/{id1}/terminate"), json!({}))
        .await;
    let again = s.agent(&cid, "Builder", None).await;
    assert_eq!(again["name"], "Builder");
    assert_ne!(
        again["urlKey"], "builder",
        "the terminated agent keeps its url key"
    );

    // The CLI's --assignee Builder names the live one.
    let context = common::cli::context_file(&s);
    let issue = common::cli::ok(
        &s.base,
        &context,
        &[
            "issue",
            "create",
            "Write the plan",
            "--company",
            &cid,
            "--assignee",
            "Builder",
        ],
    );
    let issues = s.ok_get(&format!("/api/companies/{cid}/issues")).await;
    let created = issues
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["title"] == "Write the plan")
        .unwrap_or_else(|| panic!("no issue; the CLI said {issue}"));
    assert_eq!(created["assigneeAgentId"], again["id"]);
}

/// `tests/browser/hire_guided.mjs`: presets, detection, the check refusing
/// a missing script, and a pending hire approved from its page's inbox.
#[tokio::test(flavor = "multi_thread")]
async fn a_person_hires_from_a_preset_and_approves_a_pending_hire_inline() {
    if !common::browser::ready() {
        return;
    }
    let s = TestServer::start().await;
    let cid = s.company("Guided").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ceo = s.agent(&cid, "Casey", None).await;
    s.ok_patch(
        &format!("/api/companies/{cid}"),
        json!({ "requireBoardApprovalForNewAgents": true }),
    )
    .await;
    let pending = s
        .ok_post(
            &format!("/api/companies/{cid}/agent-hires"),
            json!({ "name": "Pending Pat", "adapterType": "claude_local", "reportsTo": ceo["id"],
                "adapterConfig": {} }),
        )
        .await;
    assert_eq!(pending["agent"]["status"], "pending_approval");
    common::browser::run("hire_guided", &s.base, std::time::Duration::from_secs(120)).await;

    let pat = s
        .ok_get(&format!(
            "/api/agents/{}",
            pending["agent"]["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(pat["status"], "idle", "approved from the inbox");
    let agents = s.ok_get(&format!("/api/companies/{cid}/agents")).await;
    let scout = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "Scout")
        .expect("Scout was hired");
    assert_eq!(scout["status"], "pending_approval");
    assert_eq!(scout["adapterType"], "process");
    let script = scout["adapterConfig"]["args"][0].as_str().unwrap();
    assert!(
        script.ends_with("/examples/example-agent.sh") && std::path::Path::new(script).is_file(),
        "{scout}"
    );
}
