//! Secrets stay in the server: secret-named values of an agent's config are
//! write-only. Every route, page and live event shows the placeholder, a
//! config sent back as it was read keeps the stored value, and the run still
//! gets the real one.

use crate::common;

use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

const REDACTED: &str = "[REDACTED]";

fn secret(label: &str) -> String {
    format!("sk-{label}-{}", uuid::Uuid::new_v4().simple())
}

/// The company's SSE stream, read in the background into one string.
struct LiveCapture {
    text: std::sync::Arc<std::sync::Mutex<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl LiveCapture {
    async fn start(server: &TestServer, cid: &str) -> LiveCapture {
        let mut resp = server
            .client()
            .get(server.url(&format!("/api/companies/{cid}/events")))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = text.clone();
        let task = tokio::spawn(async move {
            while let Ok(Some(chunk)) = resp.chunk().await {
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk));
            }
        });
        LiveCapture { text, task }
    }

    /// Everything seen once `marker` has arrived.
    async fn until(self, marker: &str) -> String {
        let text = self.text.clone();
        let seen = common::until(
            20,
            &format!("the live stream to carry {marker}"),
            async || {
                let seen = text.lock().unwrap().clone();
                seen.contains(marker).then_some(seen)
            },
        )
        .await;
        self.task.abort();
        seen
    }
}

fn assert_clean(what: &str, text: &str, secrets: &[String]) {
    for s in secrets {
        assert!(!text.contains(s.as_str()), "{what} leaks {s}: {text}");
    }
}

/// Waits until the agent has `n` finished runs; returns the newest.
async fn nth_run_done(server: &TestServer, cid: &str, aid: &str, n: usize) -> Value {
    let runs = server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            30,
            |runs| {
                runs.as_array().is_some_and(|r| {
                    r.len() == n
                        && r.iter().all(|x| {
                            !["queued", "running"].contains(&x["status"].as_str().unwrap())
                        })
                })
            },
        )
        .await;
    let newest = runs[0].clone();
    assert_eq!(newest["status"], "succeeded", "{newest}");
    newest
}

async fn run_once(server: &TestServer, cid: &str, aid: &str, n: usize) -> Value {
    let (status, body) = server
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    assert!(status.is_success(), "wakeup: {status} {body}");
    nth_run_done(server, cid, aid, n).await
}

#[tokio::test]
async fn secret_values_appear_in_no_response_page_or_live_event() {
    let s = TestServer::start().await;
    let company = s.company("Vault Co").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let prefix = company["issuePrefix"].as_str().unwrap().to_string();
    let live = LiveCapture::start(&s, &cid).await;
    let created = secret("created");
    let patched = secret("patched");
    let bound = secret("bound");
    let hired = secret("hired");
    let proposed = secret("proposed");
    let header = secret("header");
    let all = [
        created.clone(),
        patched.clone(),
        bound.clone(),
        hired.clone(),
        proposed.clone(),
        header.clone(),
    ];

    // Hired directly, with the secret in its env; the run echoes its env.
    let script = "echo \"key=$MY_API_KEY token=$GITHUB_TOKEN\"\nenv\n";
    let echo = s
        .script_agent(
            &cid,
            "Echo",
            script,
            json!({ "env": { "MY_API_KEY": created, "REGION": "eu" } }),
        )
        .await;
    assert_clean("create response", &echo.to_string(), &all);
    assert_eq!(echo["adapterConfig"]["env"]["MY_API_KEY"], REDACTED);
    assert_eq!(echo["adapterConfig"]["env"]["REGION"], "eu");
    let eid = echo["id"].as_str().unwrap().to_string();

    // A new value through PATCH, one in upstream's `{type: plain}` form, and
    // a secret-named key outside `env` (nested: a process agent knows no
    // such key of its own, and unknown keys are refused).
    let after = s
        .ok_patch(
            &format!("/api/agents/{eid}"),
            json!({ "adapterConfig": {
                "env": {
                    "MY_API_KEY": patched,
                    "GITHUB_TOKEN": { "type": "plain", "value": bound },
                    "REGION": "eu",
                },
                "paperclipSkillSync": { "authHeader": header },
            } }),
        )
        .await;
    assert_clean("patch response", &after.to_string(), &all);
    assert_eq!(after["adapterConfig"]["env"]["MY_API_KEY"], REDACTED);
    assert_eq!(
        after["adapterConfig"]["env"]["GITHUB_TOKEN"],
        json!({ "type": "plain", "value": REDACTED })
    );
    assert_eq!(
        after["adapterConfig"]["paperclipSkillSync"]["authHeader"],
        REDACTED
    );

    // Hires behind the board: through agent-hires and through an approval
    // whose payload describes the agent.
    s.ok_patch(
        &format!("/api/companies/{cid}"),
        json!({ "requireBoardApprovalForNewAgents": true }),
    )
    .await;
    let hire = s
        .ok_post(
            &format!("/api/companies/{cid}/agent-hires"),
            json!({ "name": "Hired", "adapterType": "process",
                "adapterConfig": { "command": "true", "env": { "OPENAI_API_KEY": hired } } }),
        )
        .await;
    assert_clean("hire response", &hire.to_string(), &all);
    assert_eq!(
        hire["approval"]["payload"]["adapterConfig"]["env"]["OPENAI_API_KEY"],
        REDACTED
    );
    let proposal = s
        .ok_post(
            &format!("/api/companies/{cid}/approvals"),
            json!({ "type": "hire_agent", "payload": { "name": "Proposed", "adapterType": "process",
                "adapterConfig": { "command": "true", "env": { "ANTHROPIC_API_KEY": proposed } } } }),
        )
        .await;
    assert_clean("approval response", &proposal.to_string(), &all);
    for approval in [&hire["approval"], &proposal] {
        let decided = s
            .ok_post(
                &format!(
                    "/api/approvals/{}/approve",
                    approval["id"].as_str().unwrap()
                ),
                json!({}),
            )
            .await;
        assert_clean("approve response", &decided.to_string(), &all);
    }

    let run = run_once(&s, &cid, &eid, 1).await;
    let run_id = run["id"].as_str().unwrap().to_string();
    let log = s.ok_get(&format!("/api/heartbeat-runs/{run_id}/log")).await;
    assert!(
        log.to_string().contains("key=[REDACTED] token=[REDACTED]"),
        "the run saw values and its log hid them: {log}"
    );

    // A goal marks the end of the changes on the live stream.
    s.ok_post(
        &format!("/api/companies/{cid}/goals"),
        json!({ "title": "end-of-changes" }),
    )
    .await;
    let live = live.until("end-of-changes").await;
    assert!(live.contains("agent.updated"), "{live}");
    assert_clean("live events", &live, &all);

    // Every read, as the board and as an agent of the company.
    let reader = s.agent(&cid, "Reader", None).await;
    let reader_key = s.key(reader["id"].as_str().unwrap()).await;
    let agents = s.ok_get(&format!("/api/companies/{cid}/agents")).await;
    let approvals = s.ok_get(&format!("/api/companies/{cid}/approvals")).await;
    let mut paths = vec![
        format!("/api/companies/{cid}/agents"),
        format!("/api/companies/{cid}/org"),
        format!("/api/companies/{cid}/approvals"),
        format!("/api/companies/{cid}/activity?limit=1000"),
        format!("/api/companies/{cid}/dashboard"),
        format!("/api/companies/{cid}/heartbeat-runs"),
        format!("/api/companies/{cid}/live-runs"),
        format!("/api/companies/{cid}/agent-configurations"),
        format!("/api/heartbeat-runs/{run_id}"),
        format!("/api/heartbeat-runs/{run_id}/events"),
        format!("/api/heartbeat-runs/{run_id}/log"),
    ];
    for agent in agents.as_array().unwrap() {
        let id = agent["id"].as_str().unwrap();
        paths.push(format!("/api/agents/{id}"));
        paths.push(format!("/api/agents/{id}/configuration"));
        let revisions = s
            .ok_get(&format!("/api/agents/{id}/config-revisions"))
            .await;
        paths.push(format!("/api/agents/{id}/config-revisions"));
        for r in revisions.as_array().unwrap() {
            paths.push(format!(
                "/api/agents/{id}/config-revisions/{}",
                r["id"].as_str().unwrap()
            ));
        }
    }
    for approval in approvals.as_array().unwrap() {
        paths.push(format!(
            "/api/approvals/{}",
            approval["id"].as_str().unwrap()
        ));
    }
    assert_eq!(agents.as_array().unwrap().len(), 4);
    assert_eq!(approvals.as_array().unwrap().len(), 2);
    for path in &paths {
        let (status, body) = s.get(path).await;
        assert!(status.is_success(), "GET {path} -> {status}: {body}");
        assert_clean(&format!("board GET {path}"), &body.to_string(), &all);
        let (status, body) = s.as_agent(&reader_key, None, "GET", path, None).await;
        if status.is_success() {
            assert_clean(&format!("agent GET {path}"), &body.to_string(), &all);
        }
    }
    let (status, me) = s
        .as_agent(&reader_key, None, "GET", "/api/agents/me", None)
        .await;
    assert_eq!(status, 200);
    assert_clean("agents/me", &me.to_string(), &all);
    let (status, seen) = s
        .as_agent(
            &reader_key,
            None,
            "GET",
            &format!("/api/agents/{eid}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "an agent reads its colleagues: {seen}");
    assert_eq!(seen["adapterConfig"]["env"]["MY_API_KEY"], REDACTED);

    let mut pages = vec![
        format!("/{prefix}/dashboard"),
        format!("/{prefix}/agents"),
        format!("/{prefix}/org"),
        format!("/{prefix}/approvals"),
        format!("/{prefix}/activity"),
    ];
    for agent in agents.as_array().unwrap() {
        pages.push(format!(
            "/{prefix}/agents/{}",
            agent["urlKey"].as_str().unwrap()
        ));
    }
    for page in &pages {
        let resp = s.client().get(s.url(page)).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{page}");
        assert_clean(page, &resp.text().await.unwrap(), &all);
    }
    let resp = s
        .client()
        .get(s.url(&format!(
            "/{prefix}/agents/{}",
            echo["urlKey"].as_str().unwrap()
        )))
        .send()
        .await
        .unwrap();
    assert!(
        resp.text().await.unwrap().contains(REDACTED),
        "the agent page shows the placeholder where the secret is"
    );
}

#[tokio::test]
async fn a_round_tripped_placeholder_keeps_the_value_the_run_gets() {
    let s = TestServer::start().await;
    let cid = s.company("Keep Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = s.data_dir.join("seen-key");
    let script = format!("printf '%s' \"$MY_API_KEY\" > '{}'\n", out.display());
    let first = secret("first");
    let second = secret("second");
    let agent = s
        .script_agent(
            &cid,
            "Keeper",
            &script,
            json!({ "env": { "MY_API_KEY": first, "REGION": "eu" } }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let seen = || std::fs::read_to_string(&out).unwrap_or_default();

    // The config as read, sent back with one unrelated change.
    let read = s.ok_get(&format!("/api/agents/{aid}")).await;
    let mut config = read["adapterConfig"].clone();
    assert_eq!(config["env"]["MY_API_KEY"], REDACTED);
    config["timeoutSec"] = json!(60);
    let saved = s
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "adapterConfig": config }),
        )
        .await;
    assert_eq!(saved["adapterConfig"]["env"]["MY_API_KEY"], REDACTED);
    assert_eq!(saved["adapterConfig"]["timeoutSec"], 60);
    run_once(&s, &cid, &aid, 1).await;
    assert_eq!(
        seen(),
        first,
        "the run got the stored value, not the placeholder"
    );

    // Also when the whole config is replaced, and in the `{type: plain}` form.
    let saved = s
        .ok_patch(
            &format!("/api/agents/{aid}"),
            json!({ "replaceAdapterConfig": true, "adapterConfig": saved["adapterConfig"] }),
        )
        .await;
    let mut config = saved["adapterConfig"].clone();
    config["env"]["MY_API_KEY"] = json!({ "type": "plain", "value": REDACTED });
    s.ok_patch(
        &format!("/api/agents/{aid}"),
        json!({ "adapterConfig": config }),
    )
    .await;
    run_once(&s, &cid, &aid, 2).await;
    assert_eq!(seen(), first);

    // A new value replaces it; a rollback keeps the current one.
    let mut config = saved["adapterConfig"].clone();
    config["env"]["MY_API_KEY"] = json!(second);
    s.ok_patch(
        &format!("/api/agents/{aid}"),
        json!({ "adapterConfig": config }),
    )
    .await;
    run_once(&s, &cid, &aid, 3).await;
    assert_eq!(seen(), second);
    let revisions = s
        .ok_get(&format!("/api/agents/{aid}/config-revisions"))
        .await;
    let oldest = revisions.as_array().unwrap().last().unwrap().clone();
    assert_eq!(oldest["adapterConfig"]["env"]["MY_API_KEY"], REDACTED);
    s.ok_post(
        &format!(
            "/api/agents/{aid}/config-revisions/{}/rollback",
            oldest["id"].as_str().unwrap()
        ),
        json!({}),
    )
    .await;
    run_once(&s, &cid, &aid, 4).await;
    assert_eq!(seen(), second);
    assert_clean(
        "revisions",
        &s.ok_get(&format!("/api/agents/{aid}/config-revisions"))
            .await
            .to_string(),
        &[first.clone(), second.clone()],
    );

    // Leaving the key out removes it.
    s.ok_patch(
        &format!("/api/agents/{aid}"),
        json!({ "adapterConfig": { "env": { "REGION": "eu" } } }),
    )
    .await;
    let read = s.ok_get(&format!("/api/agents/{aid}")).await;
    assert!(
        read["adapterConfig"]["env"].get("MY_API_KEY").is_none(),
        "{read}"
    );
    run_once(&s, &cid, &aid, 5).await;
    assert_eq!(seen(), "");

    // A placeholder with nothing stored behind it is refused, not stored.
    let (status, body) = s
        .patch(
            &format!("/api/agents/{aid}"),
            json!({ "adapterConfig": { "env": { "MY_API_KEY": REDACTED } } }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("adapterConfig.env.MY_API_KEY"),
        "{body}"
    );
    let (status, body) = s
        .post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Copy", "adapterType": "process",
                "adapterConfig": { "command": "true", "env": { "MY_API_KEY": REDACTED } } }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
}

#[tokio::test]
async fn a_hire_resubmitted_as_read_keeps_the_secret_its_agent_runs_with() {
    let s = TestServer::start().await;
    let cid = s.company("Hire Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = s.data_dir.join("hire-key");
    let script = s.data_dir.join("hire.sh");
    std::fs::write(
        &script,
        format!("printf '%s' \"$MY_API_KEY\" > '{}'\n", out.display()),
    )
    .unwrap();
    let value = secret("hire");
    let approval = s
        .ok_post(
            &format!("/api/companies/{cid}/approvals"),
            json!({ "type": "hire_agent", "payload": { "name": "Draft", "adapterType": "process",
                "adapterConfig": { "command": "sh", "args": [script.to_str().unwrap()],
                    "env": { "MY_API_KEY": value } } } }),
        )
        .await;
    let id = approval["id"].as_str().unwrap().to_string();
    s.ok_post(
        &format!("/api/approvals/{id}/request-revision"),
        json!({ "decisionNote": "rename it" }),
    )
    .await;
    let mut payload = s.ok_get(&format!("/api/approvals/{id}")).await["payload"].clone();
    assert_eq!(payload["adapterConfig"]["env"]["MY_API_KEY"], REDACTED);
    payload["name"] = json!("Final");
    let resubmitted = s
        .ok_post(
            &format!("/api/approvals/{id}/resubmit"),
            json!({ "payload": payload }),
        )
        .await;
    assert_clean(
        "resubmit response",
        &resubmitted.to_string(),
        &[value.clone()],
    );
    let approved = s
        .ok_post(&format!("/api/approvals/{id}/approve"), json!({}))
        .await;
    let aid = approved["payload"]["agentId"].as_str().unwrap().to_string();
    let agent = s.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(agent["name"], "Final");
    assert_eq!(agent["adapterConfig"]["env"]["MY_API_KEY"], REDACTED);
    run_once(&s, &cid, &aid, 1).await;
    assert_eq!(std::fs::read_to_string(&out).unwrap(), value);
}
