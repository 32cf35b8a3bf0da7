//! What a board sees before and at the first run of a coding agent, without
//! needing the CLIs: the environment test, config validation, the skill
//! document, and a run whose CLI is missing failing with a cause.

use crate::common;

use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

fn check<'a>(report: &'a Value, code: &str) -> Option<&'a Value> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["code"] == code)
}

#[tokio::test]
async fn environment_test_names_a_missing_cli_and_a_bad_cwd() {
    let s = TestServer::start().await;
    let company = s.company("Acme").await;
    let cid = company["id"].as_str().unwrap();
    for kind in ["claude_local", "codex_local", "opencode_local"] {
        let report = s
            .ok_post(
                &format!("/api/companies/{cid}/adapters/{kind}/test-environment"),
                json!({ "adapterConfig": { "command": "no-such-cli-xyz", "cwd": "/no/such/dir" } }),
            )
            .await;
        assert_eq!(report["adapterType"], kind);
        assert_eq!(report["status"], "fail", "{report}");
        assert!(
            check(&report, "adapter_not_installed").is_some(),
            "{report}"
        );
        assert!(
            check(&report, "invalid_working_directory").is_some(),
            "{report}"
        );
        assert!(report["testedAt"].is_string());
    }
    // A CLI that exists and answers --version passes those checks.
    let report = s
        .ok_post(
            &format!("/api/companies/{cid}/adapters/claude_local/test-environment"),
            json!({ "adapterConfig": { "command": "/bin/echo", "cwd": "/tmp" } }),
        )
        .await;
    assert!(check(&report, "command_found").is_some(), "{report}");
    let version = check(&report, "command_version").unwrap()["detail"]
        .as_str()
        .unwrap();
    assert!(version.starts_with("echo"), "{version}");
    assert!(check(&report, "adapter_not_installed").is_none());

    // Invalid config is reported per field; unknown types are a 404.
    let report = s
        .ok_post(
            &format!("/api/companies/{cid}/adapters/claude_local/test-environment"),
            json!({ "adapterConfig": { "effort": "extreme", "maxTurnsPerRun": -1 } }),
        )
        .await;
    assert_eq!(report["status"], "fail");
    let messages: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["message"].as_str().unwrap())
        .collect();
    assert!(
        messages.iter().any(|m| m.starts_with("effort:")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m.starts_with("maxTurnsPerRun:")),
        "{messages:?}"
    );
    let (status, _) = s
        .post(
            &format!("/api/companies/{cid}/adapters/nope_local/test-environment"),
            json!({}),
        )
        .await;
    // Upstream answers an unknown type as a broken rule.
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // Agents without canCreateAgents may not run it.
    let agent = s.agent(cid, "Worker", None).await;
    let token = s.key(agent["id"].as_str().unwrap()).await;
    let (status, _) = s
        .as_agent(
            &token,
            None,
            "POST",
            &format!("/api/companies/{cid}/adapters/claude_local/test-environment"),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn hiring_with_a_bad_config_is_refused_per_field() {
    let s = TestServer::start().await;
    let company = s.company("Acme").await;
    let cid = company["id"].as_str().unwrap();
    let (status, body) = s
        .post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Coder", "adapterType": "opencode_local",
                    "adapterConfig": { "model": "no-provider", "cwd": "relative/dir" } }),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let text = body.to_string();
    assert!(text.contains("model") && text.contains("cwd"), "{body}");
}

#[tokio::test]
async fn the_paperclip_skill_is_served_to_agents_and_written_for_clis() {
    let s = TestServer::start().await;
    let company = s.company("Acme").await;
    let cid = company["id"].as_str().unwrap();
    let agent = s.agent(cid, "Worker", None).await;
    let token = s.key(agent["id"].as_str().unwrap()).await;
    let resp = s
        .client()
        .get(s.url("/api/skills/paperclip"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/markdown"));
    let text = resp.text().await.unwrap();
    assert!(text.starts_with("---\nname: paperclip\n"));
    for must in [
        "X-Paperclip-Run-Id",
        "checkout",
        "Do not retry",
        "heartbeat-context",
        "parentId",
    ] {
        assert!(text.contains(must), "skill lacks {must}");
    }
    let on_disk = std::fs::read_to_string(s.data_dir.join("skills/paperclip/SKILL.md")).unwrap();
    assert_eq!(on_disk, text);
}

#[tokio::test]
async fn a_run_whose_cli_is_missing_fails_before_start_with_the_cause() {
    let s = TestServer::start().await;
    let company = s.company("Acme").await;
    let cid = company["id"].as_str().unwrap();
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Coder", "adapterType": "codex_local",
                    "adapterConfig": { "command": "no-such-codex-xyz" } }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    let issue = s
        .issue(
            cid,
            json!({ "title": "Write it", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let runs = s
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            30,
            |r| {
                r.as_array()
                    .is_some_and(|r| r.len() == 1 && r[0]["status"] == "failed")
            },
        )
        .await;
    let run = &runs[0];
    assert_eq!(run["errorCode"], "adapter_not_installed", "{run}");
    assert!(run["error"].as_str().unwrap().contains("no-such-codex-xyz"));
    assert_eq!(run["issueId"], issue["id"]);
    assert!(run["processPid"].is_null(), "nothing was spawned");
    let agent = s.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(agent["status"], "error");
    // No session was made, and the runtime state shows the failure.
    let sessions = s.ok_get(&format!("/api/agents/{aid}/task-sessions")).await;
    assert_eq!(sessions, json!([]));
    let state = s.ok_get(&format!("/api/agents/{aid}/runtime-state")).await;
    assert_eq!(state["lastRunStatus"], "failed");
    assert!(state["lastError"]
        .as_str()
        .unwrap()
        .contains("not installed"));
    assert_eq!(state["totalCostCents"], 0);
    // Upstream's keys: no adapter state beyond sessions, and none was made;
    // the state began with the agent's first run, and stays put.
    assert_eq!(state["stateJson"], json!({}));
    assert!(state["sessionDisplayId"].is_null() && state["sessionParamsJson"].is_null());
    assert_eq!(state["createdAt"], run["createdAt"], "{state}");
    // Resetting works with or without a task key, and is audited.
    let reset = s
        .ok_post(
            &format!("/api/agents/{aid}/runtime-state/reset-session"),
            json!({}),
        )
        .await;
    assert_eq!(reset["cleared"], 0);
    assert_eq!(reset["createdAt"], state["createdAt"]);
    let (status, _) = s
        .post(
            &format!("/api/agents/{aid}/runtime-state/reset-session"),
            json!({ "taskKey": "" }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(s
        .actions(cid)
        .await
        .contains(&"agent.runtime_state.session_reset".to_string()));
}

#[tokio::test]
async fn a_run_with_a_missing_working_directory_fails_before_start() {
    let s = TestServer::start().await;
    let company = s.company("Acme").await;
    let cid = company["id"].as_str().unwrap();
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Coder", "adapterType": "claude_local",
                    "adapterConfig": { "cwd": "/no/such/repo" } }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    s.issue(
        cid,
        json!({ "title": "Fix it", "status": "todo", "assigneeAgentId": aid }),
    )
    .await;
    let runs = s
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            30,
            |r| {
                r.as_array()
                    .is_some_and(|r| r.len() == 1 && r[0]["status"] == "failed")
            },
        )
        .await;
    assert_eq!(
        runs[0]["errorCode"], "invalid_working_directory",
        "{}",
        runs[0]
    );
    assert!(runs[0]["error"].as_str().unwrap().contains("/no/such/repo"));
    assert!(runs[0]["processPid"].is_null());
}

/// The spec's host confinement settings (enforced with bubblewrap, see
/// `confinement.rs`) are accepted wherever a local agent's config is set
/// (create, PATCH, hire), and refused for an agent that does not run here,
/// which nothing could confine.
#[tokio::test]
async fn confinement_settings_are_accepted_for_local_agents_only() {
    let s = TestServer::start().await;
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let existing = s.agent(&cid, "Existing", None).await;
    let eid = existing["id"].as_str().unwrap();
    let cases = [
        json!({ "filesystemScope": "workspace" }),
        json!({ "filesystemScope": "workspace", "filesystemExtraPaths": ["/opt/toolchains"] }),
        json!({ "networkScope": "deny" }),
        json!({ "networkScope": "allowlist", "networkAllowlist": ["api.anthropic.com"] }),
    ];
    for (i, case) in cases.iter().enumerate() {
        for kind in ["claude_local", "codex_local", "opencode_local", "process"] {
            let mut config = json!({ "command": "true" });
            for (k, v) in case.as_object().unwrap() {
                config[k] = v.clone();
            }
            let created = s
                .ok_post(
                    &format!("/api/companies/{cid}/agents"),
                    json!({ "name": format!("Confined {kind} {i}"), "adapterType": kind,
                            "adapterConfig": config }),
                )
                .await;
            for (k, v) in case.as_object().unwrap() {
                assert_eq!(&created["adapterConfig"][k], v, "{kind}: {created}");
            }
        }
        s.ok_patch(
            &format!("/api/agents/{eid}"),
            json!({ "adapterConfig": case }),
        )
        .await;
        s.ok_post(
            &format!("/api/companies/{cid}/agent-hires"),
            json!({ "name": format!("Hire {i}"), "adapterType": "claude_local",
                    "adapterConfig": case }),
        )
        .await;
        let key = case.as_object().unwrap().keys().next().unwrap().clone();
        let (status, body) = s
            .post(
                &format!("/api/companies/{cid}/agents"),
                json!({ "name": "Remote", "adapterType": "http",
                        "adapterConfig": { "url": "http://127.0.0.1:9/hook", key.clone(): case[&key] } }),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "http {key}: {body}"
        );
        let detail = body["details"]
            .as_array()
            .expect("details")
            .iter()
            .find(|d| d["path"] == json!(["adapterConfig", key]))
            .unwrap_or_else(|| panic!("http {key}: no detail names it: {body}"));
        assert!(
            detail["message"]
                .as_str()
                .unwrap()
                .contains("local processes"),
            "{detail}"
        );
    }
    // Unset (`null`) is the same as absent.
    s.ok_patch(
        &format!("/api/agents/{eid}"),
        json!({ "adapterConfig": { "networkScope": null, "networkAllowlist": null } }),
    )
    .await;
}
