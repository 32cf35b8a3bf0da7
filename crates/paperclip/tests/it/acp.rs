//! The ACP engine end to end: real ACP bridges from npm (`claude-code-acp`
//! driving Claude Code through its SDK, `codex-acp`), pointed at the
//! scripted provider on loopback, working a task through our API, resuming
//! with `session/load` or starting fresh with a summary where it cannot,
//! answering permission requests by policy, and stopping on Stop.
//!
//! Without a bridge on PATH a test is skipped with a message, unless
//! `PAPERCLIP_REQUIRE_AGENT_CLIS=1` (CI), where a missing one is a failure.

use crate::clis::{self, Cli};
use crate::common::{until, TestServer};

use paperclip_scripted_provider::{ScriptedProvider, Turn};
use serde_json::{json, Value};

/// The CLI's test home and config, when its ACP bridge is installed.
fn bridge(kind: &'static str, bin: &str) -> Option<Cli> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(bin).is_file()))
        .unwrap_or(false);
    if !found {
        if std::env::var("PAPERCLIP_REQUIRE_AGENT_CLIS").as_deref() == Ok("1") {
            panic!("`{bin}` is not on PATH and PAPERCLIP_REQUIRE_AGENT_CLIS=1");
        }
        eprintln!("skipping: `{bin}` is not installed (npm install -g it)");
        return None;
    }
    Cli::find(kind)
}

fn curl(step: &str) -> Turn {
    let auth = r#"-H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'Content-Type: application/json'"#;
    let api = r#""$PAPERCLIP_API_URL/api/issues/$PAPERCLIP_TASK_ID"#;
    let command = match step {
        "checkout" => format!(
            r#"curl -sSf -X POST {api}/checkout" {auth} -d "{{\"agentId\":\"$PAPERCLIP_AGENT_ID\",\"expectedStatuses\":[\"todo\"]}}""#
        ),
        "comment" => format!(
            r#"curl -sSf -X POST {api}/comments" {auth} -d '{{"body":"Implemented over ACP: tests pass."}}'"#
        ),
        _ => format!(r#"curl -sSf -X PATCH {api}" {auth} -d '{{"status":"done"}}'"#),
    };
    Turn::Bash { command }
}

fn work_turns() -> Vec<Turn> {
    vec![
        curl("checkout"),
        curl("comment"),
        curl("done"),
        Turn::Answer {
            text: "Finished the task and marked it done.".into(),
        },
    ]
}

struct Company {
    s: TestServer,
    cid: String,
}

impl Company {
    async fn start() -> Company {
        let s = TestServer::start().await;
        let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
        Company { s, cid }
    }

    async fn hire(&self, name: &str, kind: &str, config: Value) -> String {
        let agent = self
            .s
            .ok_post(
                &format!("/api/companies/{}/agents", self.cid),
                json!({ "name": name, "role": "engineer", "adapterType": kind, "adapterConfig": config }),
            )
            .await;
        agent["id"].as_str().unwrap().to_string()
    }

    async fn task(&self, aid: &str, title: &str) -> Value {
        self.s
            .issue(
                &self.cid,
                json!({ "title": title, "status": "todo", "assigneeAgentId": aid }),
            )
            .await
    }

    /// The agent's first `n` runs once none is live, oldest first.
    async fn runs(&self, aid: &str, n: usize) -> Vec<Value> {
        self.s.settled_runs(&self.cid, aid, n, 180).await
    }

    async fn events(&self, run: &Value) -> Vec<Value> {
        let id = run["id"].as_str().unwrap();
        let events = self
            .s
            .ok_get(&format!("/api/heartbeat-runs/{id}/events?limit=1000"))
            .await;
        events.as_array().unwrap().clone()
    }

    async fn log(&self, run: &Value) -> String {
        let id = run["id"].as_str().unwrap();
        self.s
            .ok_get(&format!("/api/heartbeat-runs/{id}/log"))
            .await
            .to_string()
    }

    async fn wake(&self, aid: &str, issue: &Value, reason: &str) {
        self.s
            .ok_post(
                &format!("/api/agents/{aid}/wakeup"),
                json!({ "issueId": issue["id"], "reason": reason }),
            )
            .await;
    }
}

fn has(events: &[Value], kind: &str, text: &str) -> bool {
    events
        .iter()
        .any(|e| e["eventType"] == kind && e["message"].as_str().unwrap_or("").contains(text))
}

/// Claude Code over ACP: checkout, comment, done, each Bash call's
/// permission approved by the default policy; the follow-up loads the
/// session (the model sees the earlier conversation); once the bridge has
/// lost the session, the next run says so and starts fresh, told how the
/// last run ended, and the task goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_over_acp_works_resumes_and_starts_fresh_when_it_cannot_load() {
    let Some(cli) = bridge("claude_local", "claude-code-acp") else {
        return;
    };
    let provider = ScriptedProvider::start(work_turns()).await;
    let c = Company::start().await;
    let mut config = cli.config(&provider);
    config["engine"] = json!("acp");
    let aid = c.hire("Coder", "claude_local", config).await;
    let issue = c.task(&aid, "Add the health endpoint").await;
    let identifier = issue["identifier"].as_str().unwrap().to_string();

    let runs = c.runs(&aid, 1).await;
    let run = &runs[0];
    assert_eq!(run["status"], "succeeded", "{run}");
    let events = c.events(run).await;
    assert!(has(&events, "transcript.init", "session"), "{events:?}");
    assert!(
        has(&events, "transcript.tool_call", "/checkout"),
        "{events:?}"
    );
    assert!(has(&events, "transcript.tool_result", ""), "{events:?}");
    assert!(
        has(&events, "transcript.assistant", "marked it done"),
        "{events:?}"
    );
    assert!(has(&events, "acp.permission", "approved"), "{events:?}");
    let first = &provider.turn_requests()[0];
    assert!(
        first.body.to_string().contains(&identifier),
        "prompt lacks {identifier}"
    );
    assert!(
        first
            .body
            .to_string()
            .contains("How to work as an agent of a Paperclip company"),
        "the Paperclip skill did not reach the model"
    );
    let done = c.s.ok_get(&format!("/api/issues/{identifier}")).await;
    assert_eq!(done["status"], "done", "{done}");
    let comments =
        c.s.ok_get(&format!("/api/issues/{identifier}/comments"))
            .await;
    assert!(
        comments
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["body"] == "Implemented over ACP: tests pass."
                && m["createdByRunId"] == run["id"]),
        "{comments}"
    );
    // claude-code-acp 0.16 sends no usage: none is invented, and the log says so.
    assert!(
        run["usageJson"].is_null() || run["usageJson"]["inputTokens"].is_null(),
        "{run}"
    );
    assert!(c
        .log(run)
        .await
        .contains("reported no token usage over ACP"));
    let session = run["sessionIdAfter"]
        .as_str()
        .expect("a session is saved")
        .to_string();

    // The follow-up loads the session.
    let before = provider.turn_requests().len();
    provider.push([Turn::Answer {
        text: "Checked again; nothing left.".into(),
    }]);
    c.wake(&aid, &issue, "follow_up").await;
    let runs = c.runs(&aid, 2).await;
    let second = &runs[1];
    assert_eq!(second["status"], "succeeded", "{second}");
    assert_eq!(second["sessionIdBefore"], session.as_str());
    assert_eq!(second["sessionIdAfter"], session.as_str());
    assert!(c
        .log(second)
        .await
        .contains(&format!("loaded session {session}")));
    let resumed = provider.turn_requests()[before].body.to_string();
    assert!(
        resumed.contains("Implemented over ACP"),
        "the loaded session lacks the earlier conversation"
    );

    // The bridge lost its sessions: the run says so and starts fresh with
    // a summary of the last run, instead of failing.
    assert!(cli.forget_sessions(), "the bridge stored no session");
    let before = provider.turn_requests().len();
    provider.push([Turn::Answer {
        text: "Started over.".into(),
    }]);
    c.wake(&aid, &issue, "again").await;
    let runs = c.runs(&aid, 3).await;
    let third = &runs[2];
    assert_eq!(third["status"], "succeeded", "{third}");
    let events = c.events(third).await;
    assert!(
        has(&events, "session.reset", "could not resume session"),
        "{events:?}"
    );
    assert!(c.log(third).await.contains("session/load failed"));
    assert_ne!(third["sessionIdAfter"], session.as_str());
    let body = provider.turn_requests()[before].body.to_string();
    assert!(
        body.contains("could not be resumed"),
        "the fresh prompt does not say why"
    );
    assert!(
        body.contains("Checked again; nothing left."),
        "the fresh prompt lacks the last run's outcome"
    );
    assert!(
        !body.contains("Implemented over ACP"),
        "the old conversation came back"
    );
}

/// Permission by policy, and Stop: an `approve-reads` agent with
/// `nonInteractivePermissions: fail` asking to run a command fails
/// `permission_denied` without running it; a run stopped mid-turn is
/// cancelled (`session/cancel` first) and its process group is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acp_permissions_follow_policy_and_stop_cancels() {
    let Some(cli) = bridge("claude_local", "claude-code-acp") else {
        return;
    };
    // One provider per agent: whatever the refused agent does next cannot
    // take the other's turns.
    let provider = ScriptedProvider::start([
        curl("checkout"),
        Turn::Answer {
            text: "Stopped.".into(),
        },
    ])
    .await;
    let c = Company::start().await;
    let mut config = cli.config(&provider);
    config["engine"] = json!("acp");
    config["graceSec"] = json!(3);
    config["permissionMode"] = json!("approve-reads");
    config["acpNonInteractivePermissions"] = json!("fail");
    // A policy the engine does not know is refused, naming the key.
    let mut bad = config.clone();
    bad["permissionMode"] = json!("ask-me");
    let (status, body) = c
        .s
        .post(
            &format!("/api/companies/{}/agents", c.cid),
            json!({ "name": "Bad", "role": "engineer", "adapterType": "claude_local", "adapterConfig": bad }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["details"][0]["path"],
        json!(["adapterConfig", "permissionMode"])
    );
    let careful = c.hire("Careful", "claude_local", config).await;
    let issue = c.task(&careful, "Touch nothing").await;
    let runs = c.runs(&careful, 1).await;
    let run = &runs[0];
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["errorCode"], "permission_denied", "{run}");
    let events = c.events(run).await;
    assert!(
        has(&events, "acp.permission", "(permissionMode approve-reads)"),
        "{events:?}"
    );
    assert!(events
        .iter()
        .any(|e| e["eventType"] == "acp.permission" && e["payload"]["allowed"] == false));
    let issue =
        c.s.ok_get(&format!("/api/issues/{}", issue["id"].as_str().unwrap()))
            .await;
    assert!(
        issue["checkoutRunId"].is_null(),
        "the refused command ran: {issue}"
    );

    // Stop while the model is mid-turn (the next script turn hangs).
    let provider = ScriptedProvider::start([Turn::Hang]).await;
    let mut config = cli.config(&provider);
    config["engine"] = json!("acp");
    config["graceSec"] = json!(3);
    let busy = c.hire("Busy", "claude_local", config).await;
    c.task(&busy, "Long one").await;
    assert!(
        provider
            .wait_for_turns(1, std::time::Duration::from_secs(120))
            .await,
        "the bridge never reached the provider"
    );
    let list =
        c.s.ok_get(&format!(
            "/api/companies/{}/heartbeat-runs?agentId={busy}",
            c.cid
        ))
        .await;
    let run_id = list[0]["id"].as_str().unwrap().to_string();
    let run =
        c.s.ok_post(
            &format!("/api/heartbeat-runs/{run_id}/cancel"),
            json!({ "reason": "changed my mind" }),
        )
        .await;
    assert_eq!(run["status"], "cancelled", "{run}");
    let pgid = run["processGroupId"].as_i64().unwrap() as i32;
    until(15, "the bridge's process group to end", async || {
        // SAFETY: signal 0 only checks for existence.
        let alive = unsafe { libc::killpg(pgid, 0) } == 0 && clis::group_has_live_members(pgid);
        (!alive).then_some(())
    })
    .await;
    let log = until(15, "the cancel in the run log", async || {
        let log = c.log(&run).await;
        log.contains("session/cancel").then_some(log)
    })
    .await;
    assert!(log.contains("asked the agent to end its turn"), "{log}");
}

/// Upstream's retired `acpx_local` JSON, unchanged, runs Codex over ACP
/// here and works the task; Codex reports its context, not billed tokens,
/// and none are invented. Then `codex_local` with `engine: "acp"` and the
/// CLI tests' config: its sandbox bypass becomes the session's
/// `full-access` mode, so its commands reach the API as on the CLI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_over_acp_from_acpx_local_json_and_as_codex_local() {
    let Some(cli) = bridge("codex_local", "codex-acp") else {
        return;
    };
    let provider = ScriptedProvider::start(work_turns()).await;
    let c = Company::start().await;
    let codex = cli.config(&provider);
    // Codex's own sandbox would keep its commands off the network; the CLI
    // tests bypass it with a flag, the bridge reads it from its config.
    let toml = cli.home.join("codex/config.toml");
    let own = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        format!("sandbox_mode = \"danger-full-access\"\n{own}"),
    )
    .unwrap();
    let config = json!({
        "agent": "codex", "mode": "persistent", "model": "gpt-5", "thinkingEffort": "high",
        "permissionMode": "approve-all", "nonInteractivePermissions": "deny",
        "timeoutSec": 300, "graceSec": 5, "env": codex["env"],
    });
    let aid = c.hire("Codex", "acpx_local", config).await;
    let issue = c.task(&aid, "Add the health endpoint").await;
    let runs = c.runs(&aid, 1).await;
    let run = &runs[0];
    assert_eq!(run["status"], "succeeded", "{run}");
    let events = c.events(run).await;
    assert!(
        has(&events, "transcript.tool_call", "/checkout"),
        "{}",
        c.log(run).await
    );
    let issue =
        c.s.ok_get(&format!("/api/issues/{}", issue["id"].as_str().unwrap()))
            .await;
    assert_eq!(issue["status"], "done", "{issue}");
    assert!(run["sessionIdAfter"].is_string(), "{run}");
    let log = c.log(run).await;
    // codex-acp 0.16 reports its context, not billed tokens: none invented.
    assert!(
        run["usageJson"].is_null() || run["usageJson"]["inputTokens"].is_null(),
        "{run}"
    );
    assert!(
        log.contains("reported no token usage over ACP (only its context:"),
        "{log}"
    );
    assert!(
        log.contains("adapterConfig keys acpx_local does not use"),
        "{log}"
    );
    assert!(log.contains("thinkingEffort"), "{log}");

    let Some(cli) = bridge("codex_local", "codex-acp") else {
        return;
    };
    let provider = ScriptedProvider::start(work_turns()).await;
    let mut config = cli.config(&provider);
    config["engine"] = json!("acp");
    let aid = c.hire("Codex 2", "codex_local", config).await;
    let issue = c.task(&aid, "Add the ready endpoint").await;
    let runs = c.runs(&aid, 1).await;
    let run = &runs[0];
    assert_eq!(run["status"], "succeeded", "{run}");
    let log = c.log(run).await;
    assert!(
        log.contains("session mode full-access (session/set_mode)"),
        "{log}"
    );
    let issue =
        c.s.ok_get(&format!("/api/issues/{}", issue["id"].as_str().unwrap()))
            .await;
    assert_eq!(issue["status"], "done", "{issue}");
}

/// Gemini CLI's own ACP mode (`gemini --acp`): it works the task; on the
/// follow-up it either loads the session or (as upstream saw with 0.61:
/// "No previous sessions found") the run says so and starts fresh, told
/// how the last run ended; the task goes on either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_over_acp_works_and_resumes_or_starts_fresh() {
    let Some(cli) = bridge("gemini_local", "gemini") else {
        return;
    };
    let provider = ScriptedProvider::start(work_turns()).await;
    let c = Company::start().await;
    let mut config = cli.config(&provider);
    config["engine"] = json!("acp");
    let aid = c.hire("Gem", "gemini_local", config).await;
    let issue = c.task(&aid, "Add the health endpoint").await;
    let runs = c.runs(&aid, 1).await;
    let run = &runs[0];
    assert_eq!(run["status"], "succeeded", "{run} {}", c.log(run).await);
    let events = c.events(run).await;
    assert!(
        has(&events, "transcript.tool_call", "/checkout"),
        "{events:?}"
    );
    assert!(has(&events, "acp.permission", "approved"), "{events:?}");
    // Beyond the original (whose ACP runs record none): gemini reports the
    // turn's tokens in the prompt answer's `_meta.quota`, with the model.
    let usage = &run["usageJson"];
    assert!(
        usage["inputTokens"].as_u64().unwrap_or(0) > 0
            && usage["outputTokens"].as_u64().unwrap_or(0) > 0,
        "{run}"
    );
    let done =
        c.s.ok_get(&format!("/api/issues/{}", issue["id"].as_str().unwrap()))
            .await;
    assert_eq!(done["status"], "done", "{done}");
    let session = run["sessionIdAfter"]
        .as_str()
        .expect("a session")
        .to_string();

    let before = provider.turn_requests().len();
    provider.push([Turn::Answer {
        text: "Checked again; nothing left.".into(),
    }]);
    c.wake(&aid, &issue, "follow_up").await;
    let runs = c.runs(&aid, 2).await;
    let second = &runs[1];
    assert_eq!(second["status"], "succeeded", "{second}");
    assert_eq!(second["sessionIdBefore"], session.as_str());
    let body = provider.turn_requests()[before].body.to_string();
    if second["sessionIdAfter"] == session.as_str() {
        assert!(c.log(second).await.contains("loaded session"));
        assert!(
            body.contains("Implemented over ACP"),
            "the loaded session lacks the conversation"
        );
    } else {
        let events = c.events(second).await;
        assert!(
            has(&events, "session.reset", "could not resume session"),
            "{events:?}"
        );
        assert!(
            body.contains("could not be resumed"),
            "the fresh prompt does not say why"
        );
        assert!(
            body.contains("Finished the task and marked it done."),
            "no summary of the last run"
        );
    }
}
