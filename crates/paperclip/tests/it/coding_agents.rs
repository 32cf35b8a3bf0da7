//! The coding-agent adapters end to end: the real `claude`, `codex` and
//! `opencode` CLIs (installed by `.ci/run` from npm), pointed at the scripted
//! provider on loopback, working a real issue through our API with curl.
//!
//! Without a CLI on PATH its tests are skipped with a message, unless
//! `PAPERCLIP_REQUIRE_AGENT_CLIS=1` (CI), where a missing CLI is a failure.

use crate::clis;
use crate::common;

use std::time::Duration;

use clis::Cli;
use common::{until, TestServer};
use paperclip_scripted_provider::{ScriptedProvider, Turn};
use serde_json::{json, Value};

/// The shell steps of a well-behaved agent: checkout, comment, done.
fn work_turns(kind: &str) -> Vec<Turn> {
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
                r#"curl -sSf -X POST {api}/comments" {auth} -d '{{"body":"Implemented by {kind}: tests pass."}}'"#
            ),
        },
        Turn::Bash {
            command: format!(r#"curl -sSf -X PATCH {api}" {auth} -d '{{"status":"done"}}'"#),
        },
        Turn::Answer {
            text: "Finished the task and marked it done.".into(),
        },
    ]
}

struct Setup {
    s: TestServer,
    provider: ScriptedProvider,
    cli: Cli,
    cid: String,
    prefix: String,
    aid: String,
}

async fn setup(kind: &'static str, turns: Vec<Turn>, extra: Value) -> Option<Setup> {
    let cli = Cli::find(kind)?;
    let provider = ScriptedProvider::start(turns).await;
    let s = TestServer::start().await;
    let company = s.company("Acme").await;
    let cid = company["id"].as_str().unwrap().to_string();
    let mut config = cli.config(&provider);
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            config[k] = v;
        }
    }
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Coder", "role": "engineer", "adapterType": kind, "adapterConfig": config }),
        )
        .await;
    Some(Setup {
        prefix: company["issuePrefix"].as_str().unwrap().to_string(),
        aid: agent["id"].as_str().unwrap().to_string(),
        s,
        provider,
        cli,
        cid,
    })
}

impl Setup {
    async fn runs_until(&self, n: usize, secs: u64) -> Vec<Value> {
        self.s.settled_runs(&self.cid, &self.aid, n, secs).await
    }

    /// The agent's runs, newest first.
    async fn runs_of_agent(&self) -> Vec<Value> {
        let path = format!(
            "/api/companies/{}/heartbeat-runs?agentId={}",
            self.cid, self.aid
        );
        self.s.ok_get(&path).await.as_array().unwrap().clone()
    }

    async fn events(&self, run_id: &str) -> Vec<Value> {
        self.s
            .ok_get(&format!("/api/heartbeat-runs/{run_id}/events?limit=1000"))
            .await
            .as_array()
            .unwrap()
            .clone()
    }
}

/// A wake on an assigned issue: the CLI checks out, comments and finishes
/// through our API; usage and cost are recorded; the session is saved and the
/// next wake on the same issue resumes it with the earlier conversation.
async fn works_an_issue_and_resumes_its_session(kind: &'static str) {
    let Some(t) = setup(kind, work_turns(kind), json!({})).await else {
        return;
    };
    let issue =
        t.s.issue(
            &t.cid,
            json!({ "title": "Add the health endpoint", "description": "Make `/health` answer 200.",
                    "status": "todo", "assigneeAgentId": t.aid }),
        )
        .await;
    let identifier = issue["identifier"].as_str().unwrap().to_string();
    assert_eq!(identifier, format!("{}-1", t.prefix));
    let runs = t.runs_until(1, 180).await;
    let run = &runs[0];
    assert_eq!(run["status"], "succeeded", "{run}");
    let events = t.events(run["id"].as_str().unwrap()).await;
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["eventType"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"transcript.tool_call"), "{types:?}");
    assert!(types.contains(&"transcript.tool_result"), "{types:?}");
    assert!(types.contains(&"transcript.assistant"), "{types:?}");
    assert!(
        events
            .iter()
            .any(|e| e["eventType"] == "transcript.tool_call"
                && e["message"].as_str().unwrap().contains("/checkout")),
        "no checkout step in {events:?}"
    );
    // The prompt named the task by identifier.
    let first = &t.provider.turn_requests()[0];
    assert!(
        first.body.to_string().contains(&identifier),
        "prompt lacks {identifier}"
    );
    // The Paperclip skill reached the model the way this CLI loads skills.
    assert!(
        first
            .body
            .to_string()
            .contains("How to work as an agent of a Paperclip company"),
        "the Paperclip skill is not in the model request"
    );

    let issue = t.s.ok_get(&format!("/api/issues/{identifier}")).await;
    assert_eq!(issue["status"], "done", "{issue}");
    let comments =
        t.s.ok_get(&format!("/api/issues/{identifier}/comments"))
            .await;
    let mine: Vec<&Value> = comments
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["authorAgentId"] == t.aid.as_str())
        .collect();
    assert_eq!(mine.len(), 1, "{comments}");
    assert_eq!(
        mine[0]["body"],
        format!("Implemented by {kind}: tests pass.")
    );
    assert_eq!(mine[0]["createdByRunId"], run["id"]);

    let usage = &run["usageJson"];
    assert!(usage["inputTokens"].as_u64().unwrap() > 0, "{usage}");
    assert!(usage["outputTokens"].as_u64().unwrap() > 0, "{usage}");
    // The cost event is written just after the run's end is committed.
    let costs =
        t.s.wait_for(&format!("/api/companies/{}/cost-events", t.cid), 20, |c| {
            !c.as_array().unwrap().is_empty()
        })
        .await;
    let costs = costs.as_array().unwrap();
    assert_eq!(costs.len(), 1, "{costs:?}");
    assert_eq!(costs[0]["agentId"], t.aid.as_str());
    assert_eq!(costs[0]["issueId"], issue["id"]);
    assert_eq!(costs[0]["heartbeatRunId"], run["id"]);
    assert!(
        costs[0]["costCents"].as_i64().is_some(),
        "priced: {:?}",
        costs[0]
    );
    // Who pays: claude, codex and gemini run here on an API key (metered);
    // opencode and pi reach many providers and record no billing type.
    let billed = match kind {
        "claude_local" | "codex_local" | "gemini_local" => "metered_api",
        _ => "unknown",
    };
    assert_eq!(usage["billingType"], billed, "{usage}");
    let by_agent =
        t.s.ok_get(&format!("/api/companies/{}/costs/by-agent", t.cid))
            .await;
    let row = &by_agent[0];
    assert_eq!(row["agentId"], t.aid.as_str(), "{by_agent}");
    assert_eq!(
        row["apiRunCount"],
        i64::from(billed == "metered_api"),
        "{row}"
    );
    assert_eq!(row["subscriptionRunCount"], 0, "{row}");
    assert_eq!(row["subscriptionInputTokens"], 0, "{row}");
    let by_provider =
        t.s.ok_get(&format!("/api/companies/{}/costs/by-provider", t.cid))
            .await;
    assert_eq!(by_provider[0]["billingType"], billed, "{by_provider}");

    let session = run["sessionIdAfter"]
        .as_str()
        .expect("a session was saved")
        .to_string();
    let sessions =
        t.s.ok_get(&format!("/api/agents/{}/task-sessions", t.aid))
            .await;
    assert_eq!(sessions.as_array().unwrap().len(), 1, "{sessions}");
    assert_eq!(sessions[0]["taskKey"], issue["id"]);
    assert_eq!(sessions[0]["sessionDisplayId"], session.as_str());
    assert_eq!(sessions[0]["adapterType"], kind);

    // Second wake on the same issue resumes the same conversation.
    let before = t.provider.turn_requests().len();
    t.provider.push([Turn::Answer {
        text: "Checked again; nothing left.".into(),
    }]);
    t.s.ok_post(
        &format!("/api/agents/{}/wakeup", t.aid),
        json!({ "issueId": issue["id"], "reason": "follow_up" }),
    )
    .await;
    let runs = t.runs_until(2, 180).await;
    let second = &runs[1];
    assert_eq!(second["status"], "succeeded", "{second}");
    assert_eq!(second["sessionIdBefore"], session.as_str());
    let requests = t.provider.turn_requests();
    let resumed = &requests[before..];
    assert!(!resumed.is_empty());
    assert!(
        resumed[0].body.to_string().contains("Implemented by"),
        "the resumed request lacks the earlier conversation"
    );
    let state =
        t.s.ok_get(&format!("/api/agents/{}/runtime-state", t.aid))
            .await;
    assert_eq!(state["lastRunStatus"], "succeeded");
    assert!(state["totalInputTokens"].as_i64().unwrap() > 0);
    // Upstream's view of the newest task session.
    assert_eq!(state["sessionDisplayId"], session.as_str());
    assert_eq!(state["sessionParamsJson"], json!({ "sessionId": session }));

    // A session the CLI no longer knows is reset and the run starts fresh.
    assert!(t.cli.forget_sessions(), "the CLI stored no session");
    {
        t.provider.push([Turn::Answer {
            text: "Fresh start.".into(),
        }]);
        t.s.ok_post(
            &format!("/api/agents/{}/wakeup", t.aid),
            json!({ "issueId": issue["id"], "reason": "again" }),
        )
        .await;
        let runs = t.runs_until(3, 180).await;
        let third = &runs[2];
        assert_eq!(third["status"], "succeeded", "{third}");
        let events = t.events(third["id"].as_str().unwrap()).await;
        assert!(
            events.iter().any(|e| e["eventType"] == "session.reset"),
            "{events:?}"
        );
        assert_ne!(third["sessionIdAfter"], third["sessionIdBefore"]);
        let sessions =
            t.s.ok_get(&format!("/api/agents/{}/task-sessions", t.aid))
                .await;
        assert_eq!(sessions[0]["sessionDisplayId"], third["sessionIdAfter"]);
    }
}

/// The provider rejects the model: the run fails with `model_unavailable`
/// and the provider's reason, visible on the run, the agent and its state.
async fn a_rejected_model_is_a_typed_visible_failure(kind: &'static str) {
    let turns = (0..12).map(|_| Turn::Error {
        status: 404,
        message: "model: no-such-model does not exist or you do not have access to it".into(),
    });
    let Some(t) = setup(kind, turns.collect(), json!({})).await else {
        return;
    };
    t.s.issue(
        &t.cid,
        json!({ "title": "Anything", "status": "todo", "assigneeAgentId": t.aid }),
    )
    .await;
    let runs = t.runs_until(1, 240).await;
    let run = &runs[0];
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["errorCode"], "model_unavailable", "{run}");
    // The CLI's own words about the model reach the run (Claude Code
    // rephrases the provider's 404; Codex and OpenCode pass it through).
    assert!(
        run["error"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("model"),
        "{run}"
    );
    let agent = t.s.ok_get(&format!("/api/agents/{}", t.aid)).await;
    assert_eq!(agent["status"], "error");
    let state =
        t.s.ok_get(&format!("/api/agents/{}/runtime-state", t.aid))
            .await;
    assert_eq!(state["lastError"], run["error"]);
}

/// Cancel while the model is mid-turn: the CLI is stopped, the run is
/// `cancelled`, and the provider hears nothing more.
async fn cancel_mid_turn_stops_the_cli(kind: &'static str) {
    let Some(t) = setup(kind, vec![Turn::Hang], json!({ "graceSec": 5 })).await else {
        return;
    };
    t.s.issue(
        &t.cid,
        json!({ "title": "Long one", "status": "todo", "assigneeAgentId": t.aid }),
    )
    .await;
    assert!(
        t.provider.wait_for_turns(1, Duration::from_secs(240)).await,
        "the CLI never reached the provider"
    );
    let runs =
        t.s.ok_get(&format!(
            "/api/companies/{}/heartbeat-runs?agentId={}",
            t.cid, t.aid
        ))
        .await;
    let run_id = runs[0]["id"].as_str().unwrap().to_string();
    let run =
        t.s.ok_post(
            &format!("/api/heartbeat-runs/{run_id}/cancel"),
            json!({ "reason": "board changed its mind" }),
        )
        .await;
    assert_eq!(run["status"], "cancelled", "{run}");
    assert_eq!(run["errorCode"], "cancelled");
    let pgid = run["processGroupId"].as_i64().unwrap() as i32;
    let seen = t.provider.requests().len();
    // Once the group is gone nothing of the CLI can call the provider again.
    until(10, "the CLI's process group to end", async || {
        // SAFETY: signal 0 only checks for existence.
        let alive = unsafe { libc::killpg(pgid, 0) } == 0 && clis::group_has_live_members(pgid);
        (!alive).then_some(())
    })
    .await;
    assert_eq!(
        t.provider.requests().len(),
        seen,
        "the provider got requests after the cancel"
    );
}

/// A session that outgrew the model's context window is forgotten: the run
/// fails `context_window_exceeded`, and the next wake on the task starts a
/// fresh session (no resume, none of the old conversation) told why.
async fn an_overflowed_session_is_forgotten(kind: &'static str) {
    let first = vec![Turn::Answer {
        text: "Remember the marker WALRUS-17.".into(),
    }];
    let Some(t) = setup(kind, first, json!({})).await else {
        return;
    };
    let issue =
        t.s.issue(
            &t.cid,
            json!({ "title": "Grow the context", "status": "todo", "assigneeAgentId": t.aid }),
        )
        .await;
    let runs = t.runs_until(1, 180).await;
    assert_eq!(runs[0]["status"], "succeeded", "{}", runs[0]);
    let session = runs[0]["sessionIdAfter"]
        .as_str()
        .expect("a session")
        .to_string();

    // Claude Code answers an overflow by compacting and retrying (three
    // requests in all) before it gives up; the others fail at once.
    let refusals = if kind == "claude_local" { 3 } else { 1 };
    t.provider.push((0..refusals).map(|_| Turn::Error {
        status: 400,
        message: "prompt is too long: 210000 tokens > 200000 maximum".into(),
    }));
    t.s.ok_post(
        &format!("/api/agents/{}/wakeup", t.aid),
        json!({ "issueId": issue["id"], "reason": "overflow" }),
    )
    .await;
    let runs = t.runs_until(2, 180).await;
    let second = &runs[1];
    assert_eq!(second["sessionIdBefore"], session.as_str(), "{second}");
    assert_eq!(
        t.provider.remaining(),
        0,
        "the CLI tried fewer times than scripted"
    );
    assert_eq!(second["status"], "failed", "{second}");
    assert_eq!(second["errorCode"], "context_window_exceeded", "{second}");
    let sessions =
        t.s.ok_get(&format!("/api/agents/{}/task-sessions", t.aid))
            .await;
    assert!(
        sessions
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["sessionDisplayId"].is_null()),
        "the overflowed session is still saved: {sessions}"
    );

    let before = t.provider.turn_requests().len();
    t.provider.push([Turn::Answer {
        text: "Started over.".into(),
    }]);
    // The board's comment wakes the agent; the fresh session is told the
    // task so far (its latest comments).
    t.s.ok_post(
        &format!("/api/issues/{}/comments", issue["id"].as_str().unwrap()),
        json!({ "body": "We settled on the TEAL-42 palette." }),
    )
    .await;
    let runs = t.runs_until(3, 180).await;
    let third = &runs[2];
    assert_eq!(third["status"], "succeeded", "{third}");
    assert!(third["sessionIdBefore"].is_null(), "resumed: {third}");
    assert_ne!(third["sessionIdAfter"], session.as_str());
    let requests = t.provider.turn_requests();
    let body = requests[before].body.to_string();
    assert!(
        !body.contains("WALRUS-17"),
        "the old conversation came back"
    );
    assert!(
        body.contains("exceeded the model's context window and was reset"),
        "the prompt does not say why the session is new"
    );
    assert!(
        body.contains("The task so far:") && body.contains("TEAL-42"),
        "the fresh session is not told the task so far"
    );
    let sessions =
        t.s.ok_get(&format!("/api/agents/{}/task-sessions", t.aid))
            .await;
    assert_eq!(sessions[0]["sessionDisplayId"], third["sessionIdAfter"]);
    assert!(sessions[0]["lastError"].is_null(), "{sessions}");
}

/// The server dies (kill -9) while the CLI waits on the model: after the
/// restart, the lost run's task goes to a continuation run that resumes the
/// same CLI session, so the model sees the conversation so far.
async fn a_restart_continues_the_task_in_the_same_session(kind: &'static str) {
    let mut turns = work_turns(kind);
    turns.truncate(1);
    turns.push(Turn::Hang);
    turns.push(Turn::Answer {
        text: "Carried on after the restart.".into(),
    });
    let Some(t) = setup(kind, turns, json!({})).await else {
        return;
    };
    let task =
        t.s.issue(
            &t.cid,
            json!({ "title": "Survive", "status": "todo", "assigneeAgentId": t.aid }),
        )
        .await;
    let task = task["id"].as_str().unwrap().to_string();
    assert!(
        t.provider.wait_for_turns(2, Duration::from_secs(240)).await,
        "the CLI never reached the hanging turn"
    );
    let runs = t.runs_of_agent().await;
    let lost = runs[0]["id"].as_str().unwrap().to_string();
    let s = common::restart_keeping_data(t.s).await;
    let lost = s.ok_get(&format!("/api/heartbeat-runs/{lost}")).await;
    assert_eq!(lost["errorCode"], "control_plane_restart");
    let session = lost["sessionIdAfter"]
        .as_str()
        .expect("the lost run's session is kept")
        .to_string();
    // A hang bound, as for the turn above: on CI's loaded cores an OpenCode
    // continuation has taken over two minutes.
    let list = s
        .wait_for(
            &format!("/api/companies/{}/heartbeat-runs?agentId={}", t.cid, t.aid),
            240,
            |r| r[0]["status"] == "succeeded",
        )
        .await;
    let next = &list[0];
    assert_eq!(next["retryOfRunId"], lost["id"]);
    assert_eq!(next["sessionIdBefore"], session.as_str(), "{next}");
    let requests = t.provider.requests();
    let resumed = requests.last().unwrap().body.to_string();
    assert!(
        resumed.contains("checkout"),
        "the continuation lacks the conversation so far"
    );
    assert!(
        resumed.contains("interrupted by a restart"),
        "the prompt says why"
    );
    let issue = s.ok_get(&format!("/api/issues/{task}")).await;
    assert!(issue["checkoutRunId"].is_null(), "{issue}");
}

macro_rules! cli_tests {
    ($module:ident, $kind:literal) => {
        mod $module {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn works_an_issue_and_resumes_its_session() {
                super::works_an_issue_and_resumes_its_session($kind).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_rejected_model_is_a_typed_visible_failure() {
                super::a_rejected_model_is_a_typed_visible_failure($kind).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn cancel_mid_turn_stops_the_cli() {
                super::cancel_mid_turn_stops_the_cli($kind).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_restart_continues_the_task_in_the_same_session() {
                super::a_restart_continues_the_task_in_the_same_session($kind).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_overflowed_session_is_forgotten() {
                super::an_overflowed_session_is_forgotten($kind).await;
            }
        }
    };
}

cli_tests!(claude, "claude_local");
cli_tests!(codex, "codex_local");
cli_tests!(opencode, "opencode_local");
cli_tests!(pi, "pi_local");
cli_tests!(gemini, "gemini_local");
