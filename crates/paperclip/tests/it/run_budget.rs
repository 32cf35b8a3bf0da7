//! Budgets enforced during a run: the real `claude` CLI works against the
//! scripted provider, each model turn reporting a known usage, and the run is
//! stopped when its streamed cost reaches the agent's monthly budget or its
//! per-run cap, not after it ends. The cost so far is recorded once.
//!
//! Skipped without `claude` on PATH unless `PAPERCLIP_REQUIRE_AGENT_CLIS=1`.

use crate::clis;
use crate::common;

use clis::Cli;
use common::TestServer;
use paperclip_scripted_provider::{ScriptedProvider, Turn, TurnUsage};
use serde_json::{json, Value};

/// Turns the script offers: far more than any budget here lets the run use.
const SCRIPTED_TURNS: usize = 8;

/// Each turn's usage on claude-sonnet-4-5 ($3 in, $15 out per million):
/// 60,000 input tokens are $0.18, so a run costs 18, 36, 54, ... cents.
const TURN: TurnUsage = TurnUsage {
    input_tokens: 60_000,
    cached_input_tokens: 0,
    output_tokens: 100,
};
const TURN_CENTS: i64 = 19;

/// Shell steps that take a moment each, like real work: the stop lands while
/// a step runs, before the CLI can ask the model for the next turn.
fn steps() -> Vec<Turn> {
    let mut turns: Vec<Turn> = (1..=SCRIPTED_TURNS)
        .map(|n| Turn::Bash {
            command: format!("sleep 2; echo step {n}"),
        })
        .collect();
    turns.push(Turn::Answer {
        text: "All steps done.".into(),
    });
    turns
}

struct Setup {
    s: TestServer,
    provider: ScriptedProvider,
    _cli: Cli,
    cid: String,
    aid: String,
}

async fn setup(runtime_config: Value) -> Option<Setup> {
    setup_cli("claude_local", runtime_config).await
}

async fn setup_cli(kind: &'static str, runtime_config: Value) -> Option<Setup> {
    let cli = Cli::find(kind)?;
    let provider = ScriptedProvider::start(steps()).await;
    provider.report_usage(TURN);
    let s = TestServer::start().await;
    let cid = s.company("Thrift").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Coder", "role": "engineer", "adapterType": kind,
                    "adapterConfig": cli.config(&provider), "runtimeConfig": runtime_config }),
        )
        .await;
    Some(Setup {
        aid: agent["id"].as_str().unwrap().to_string(),
        s,
        provider,
        _cli: cli,
        cid,
    })
}

impl Setup {
    /// Assigns a task (which wakes the agent) and waits for the run to end.
    async fn run_a_task(&self) -> Value {
        self.run_a_task_in(None).await
    }

    async fn run_a_task_in(&self, project_id: Option<&str>) -> Value {
        self.s
            .issue(
                &self.cid,
                json!({ "title": "Work through the steps", "status": "todo", "assigneeAgentId": self.aid,
                        "projectId": project_id }),
            )
            .await;
        let path = format!(
            "/api/companies/{}/heartbeat-runs?agentId={}",
            self.cid, self.aid
        );
        let runs = self
            .s
            .wait_for(&path, 180, |r| {
                r.as_array().is_some_and(|r| {
                    !r.is_empty()
                        && r.iter()
                            .all(|run| run["status"] != "queued" && run["status"] != "running")
                })
            })
            .await;
        assert_eq!(runs.as_array().unwrap().len(), 1, "{runs}");
        runs[0].clone()
    }

    /// The run's cost events, once the one written after its end is there.
    async fn cost_events(&self, run_id: &str) -> Vec<Value> {
        let all = self
            .s
            .wait_for(
                &format!("/api/companies/{}/cost-events", self.cid),
                20,
                |c| {
                    c.as_array()
                        .is_some_and(|c| c.iter().any(|e| e["heartbeatRunId"] == run_id))
                },
            )
            .await;
        all.as_array()
            .unwrap()
            .iter()
            .filter(|e| e["heartbeatRunId"] == run_id)
            .cloned()
            .collect()
    }
}

/// The agent's monthly budget is crossed on the third turn: the run is
/// stopped there, its cost is recorded once, and the hard stop pauses the
/// agent as any recorded overspend does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_stopped_when_its_streamed_cost_reaches_the_agent_budget() {
    let Some(t) = setup(json!({})).await else {
        return;
    };
    t.s.ok_patch(
        &format!("/api/agents/{}/budgets", t.aid),
        json!({ "budgetMonthlyCents": 50 }),
    )
    .await;
    let run = t.run_a_task().await;
    let run_id = run["id"].as_str().unwrap();
    assert_eq!(run["status"], "cancelled", "{run}");
    assert_eq!(run["errorCode"], "budget_exceeded", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(
        error.contains("agent monthly budget of $0.50"),
        "the error names the limit and its figures: {error}"
    );
    // Stopped at the turn that crossed the budget: no request after it.
    let requested = t.provider.turn_requests().len();
    assert_eq!(requested, 3, "model turns requested");
    assert!(t.provider.remaining() > 0, "the script was not exhausted");

    let events = t.cost_events(run_id).await;
    assert_eq!(events.len(), 1, "one cost event per run: {events:?}");
    let cents = events[0]["costCents"].as_i64().expect("priced");
    assert!(
        (50..50 + TURN_CENTS).contains(&cents),
        "the spend is within one turn of the budget: {cents}"
    );
    assert_eq!(events[0]["model"], "claude-sonnet-4-5");
    assert_eq!(events[0]["inputTokens"], json!(3 * TURN.input_tokens));
    assert_eq!(
        run["usageJson"]["inputTokens"],
        json!(3 * TURN.input_tokens)
    );

    let agent =
        t.s.wait_for(&format!("/api/agents/{}", t.aid), 20, |a| {
            a["status"] == "paused"
        })
        .await;
    assert_eq!(agent["pauseReason"], "budget", "{agent}");
    let incidents =
        t.s.ok_get(&format!("/api/companies/{}/budget-incidents", t.cid))
            .await;
    assert!(
        incidents
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["kind"] == "hard" && i["scopeType"] == "agent" && i["status"] == "open"),
        "{incidents}"
    );
    // Nothing asked the model for more once the run was over.
    assert_eq!(t.provider.turn_requests().len(), requested);
}

/// `runtimeConfig.maxCostCentsPerRun` stops one run at its cap (the second
/// turn here) without pausing the agent: the next task may run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_stopped_at_its_per_run_cap_and_the_agent_stays_active() {
    let Some(t) = setup(json!({ "maxCostCentsPerRun": 30 })).await else {
        return;
    };
    let run = t.run_a_task().await;
    let run_id = run["id"].as_str().unwrap();
    assert_eq!(run["status"], "cancelled", "{run}");
    assert_eq!(run["errorCode"], "budget_exceeded", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(
        error.contains("per-run cap of $0.30"),
        "the error names the cap: {error}"
    );
    assert_eq!(t.provider.turn_requests().len(), 2, "model turns requested");

    let events = t.cost_events(run_id).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let cents = events[0]["costCents"].as_i64().expect("priced");
    assert!((30..30 + TURN_CENTS).contains(&cents), "{cents}");

    let agent = t.s.ok_get(&format!("/api/agents/{}", t.aid)).await;
    assert_ne!(agent["status"], "paused", "{agent}");
    let incidents =
        t.s.ok_get(&format!("/api/companies/{}/budget-incidents", t.cid))
            .await;
    assert!(incidents.as_array().unwrap().is_empty(), "{incidents}");
}

/// A project's budget counts what the month already spent on it: 40 of 60
/// cents are gone, so the run on one of its tasks is stopped at its second
/// turn (40 + 36), and the project's hard stop opens; the agent itself has no
/// budget and is not paused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_budget_counts_the_months_spend_before_the_run() {
    let Some(t) = setup(json!({})).await else {
        return;
    };
    let project =
        t.s.ok_post(
            &format!("/api/companies/{}/projects", t.cid),
            json!({ "name": "App" }),
        )
        .await;
    let pid = project["id"].as_str().unwrap();
    t.s.ok_patch(
        &format!("/api/projects/{pid}/budgets"),
        json!({ "budgetMonthlyCents": 60 }),
    )
    .await;
    t.s.ok_post(
        &format!("/api/companies/{}/cost-events", t.cid),
        json!({ "projectId": pid, "costCents": 40, "model": "earlier-work" }),
    )
    .await;
    let run = t.run_a_task_in(Some(pid)).await;
    assert_eq!(run["status"], "cancelled", "{run}");
    assert_eq!(run["errorCode"], "budget_exceeded", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(
        error.contains("project monthly budget of $0.60")
            && error.contains("$0.40 spent this month"),
        "{error}"
    );
    assert_eq!(t.provider.turn_requests().len(), 2, "model turns requested");
    let events = t.cost_events(run["id"].as_str().unwrap()).await;
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["projectId"], pid);
    let incidents =
        t.s.wait_for(
            &format!("/api/companies/{}/budget-incidents", t.cid),
            20,
            |i| {
                i.as_array().unwrap().iter().any(|i| {
                    i["kind"] == "hard" && i["scopeType"] == "project" && i["status"] == "open"
                })
            },
        )
        .await;
    assert!(
        !incidents
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["scopeType"] == "agent"),
        "{incidents}"
    );
    let agent = t.s.ok_get(&format!("/api/agents/{}", t.aid)).await;
    assert_ne!(agent["status"], "paused", "{agent}");
}

/// OpenCode prices its steps itself (the test config's mock model costs what
/// claude-sonnet-4-5 does) and reports each as it finishes: the cap stops it
/// too. Its step's report comes after the step's tool ran, so the CLI may
/// have sent the next request before the stop lands; none after that: the
/// stop kills without the grace (OpenCode keeps working after TERM).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_is_stopped_at_its_per_run_cap() {
    let Some(t) = setup_cli("opencode_local", json!({ "maxCostCentsPerRun": 30 })).await else {
        return;
    };
    let run = t.run_a_task().await;
    assert_eq!(run["status"], "cancelled", "{run}");
    assert_eq!(run["errorCode"], "budget_exceeded", "{run}");
    let requested = t.provider.turn_requests().len();
    assert!(
        (2..=3).contains(&requested),
        "model turns requested: {requested}"
    );
    let events = t.cost_events(run["id"].as_str().unwrap()).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let cents = events[0]["costCents"].as_i64().expect("priced by OpenCode");
    assert!((30..30 + TURN_CENTS).contains(&cents), "{cents}");
}
