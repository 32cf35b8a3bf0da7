//! The simulated day: the company (agents on hourly timers, routines on
//! cron schedules, a project, a goal, a sample task), and the board's
//! seeded plan of actions spread over 24 hours of the test clock: tasks
//! assigned, reassigned, commented with @mentions, approvals asked and
//! decided, budget stops and lifts. Writes go to whichever instance is up.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::{bail, Context};
use serde_json::{json, Value};

use crate::chaos::driver::{Acked, Agent};

/// One instance as the clients see it: its address and whether it is up.
#[derive(Default)]
pub struct Slot {
    pub base: RwLock<String>,
    pub up: AtomicBool,
}

pub type Slots = Arc<Vec<Slot>>;

/// The board's client: each write to the next instance that is up.
pub struct Board {
    client: reqwest::Client,
    slots: Slots,
    turn: usize,
    pub unanswered: u64,
}

impl Board {
    pub fn new(slots: Slots) -> Board {
        Board {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("http client"),
            slots,
            turn: 0,
            unanswered: 0,
        }
    }

    fn base(&mut self) -> Option<String> {
        for _ in 0..self.slots.len() {
            self.turn = (self.turn + 1) % self.slots.len();
            let slot = &self.slots[self.turn];
            if slot.up.load(Ordering::SeqCst) {
                return Some(slot.base.read().unwrap().clone());
            }
        }
        None
    }

    /// `None` when no instance answered (down, or killed under the request):
    /// the write may or may not have happened, so it is not acknowledged.
    pub async fn call(&mut self, method: &str, path: &str, body: Value) -> Option<(u16, Value)> {
        let base = self.base()?;
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self.client.request(method.clone(), format!("{base}{path}"));
        if method != reqwest::Method::GET {
            req = req.json(&body);
        }
        let answer = match req.send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let text = resp.text().await.ok();
                text.map(|t| (status, serde_json::from_str(&t).unwrap_or(Value::String(t))))
            }
            Err(_) => None,
        };
        if answer.is_none() {
            self.unanswered += 1;
        }
        answer
    }

    /// The body of a 2xx answer.
    pub async fn ok(&mut self, method: &str, path: &str, body: Value) -> Option<Value> {
        match self.call(method, path, body).await {
            Some((s, v)) if (200..300).contains(&s) => Some(v),
            _ => None,
        }
    }

    /// Like [`ok`](Self::ok), for setup, where a refusal is an error.
    pub async fn must(&mut self, method: &str, path: &str, body: Value) -> anyhow::Result<Value> {
        match self.call(method, path, body).await {
            Some((s, v)) if (200..300).contains(&s) => Ok(v),
            other => bail!("{method} {path}: {other:?}"),
        }
    }
}

/// The company as the day and the load client need it.
pub struct Company {
    pub id: String,
    pub prefix: String,
    pub agents: Vec<Agent>,
    pub agent_keys: Vec<String>,
    pub routines: usize,
    pub sample_id: String,
    pub sample_identifier: String,
    pub sample_run: String,
    /// The url key of the agent that made `sample_run`.
    pub sample_run_key: String,
    pub approval: String,
    pub project: String,
    pub goal: String,
}

/// Cron schedules of the routines, in turn: hourly, every four hours, daily.
const CRONS: [&str; 4] = ["0 * * * *", "30 */4 * * *", "0 9 * * *", "15 */2 * * *"];

pub async fn setup(
    board: &mut Board,
    n: usize,
    data_dir: &Path,
    provider: &str,
) -> anyhow::Result<Company> {
    let company = board
        .must("POST", "/api/companies", json!({ "name": "Fleet Co" }))
        .await?;
    let cid = company["id"].as_str().context("company id")?.to_string();
    let prefix = company["issuePrefix"]
        .as_str()
        .context("prefix")?
        .to_string();
    let names: Vec<String> = (0..n).map(|i| format!("f{i}")).collect();
    let (mut agents, mut agent_keys) = (Vec::new(), Vec::new());
    for (i, name) in names.iter().enumerate() {
        // A few neighbours to @mention, so comments wake peers.
        let peers: Vec<String> = (1..=4).map(|d| names[(i + d) % n].clone()).collect();
        let log = data_dir.join("agent-logs").join(format!("{name}.log"));
        let script = data_dir.join(format!("{name}.sh"));
        std::fs::write(&script, super::agent::script(&log, provider, &peers))?;
        let max_concurrent = if i % 3 == 0 { 2 } else { 1 };
        let agent = board
            .must(
                "POST",
                &format!("/api/companies/{cid}/agents"),
                json!({ "name": name, "adapterType": "process",
                    "adapterConfig": { "command": "sh", "args": [script], "graceSec": 1 },
                    "runtimeConfig": { "heartbeat": { "enabled": true, "intervalSec": 3600,
                        "maxConcurrentRuns": max_concurrent } } }),
            )
            .await
            .with_context(|| format!("creating agent {name}"))?;
        agent_keys.push(agent["urlKey"].as_str().unwrap_or(name).to_string());
        agents.push(Agent {
            id: agent["id"].as_str().context("agent id")?.to_string(),
            name: name.clone(),
            max_concurrent,
        });
    }
    let routines = (n / 8).max(2);
    for r in 0..routines {
        let agent = &agents[(r * 7) % n];
        let routine = board
            .must(
                "POST",
                &format!("/api/companies/{cid}/routines"),
                json!({ "title": format!("Routine {r} {{{{date}}}}"), "assigneeAgentId": agent.id }),
            )
            .await?;
        let rid = routine["id"].as_str().context("routine id")?;
        board
            .must(
                "POST",
                &format!("/api/routines/{rid}/triggers"),
                json!({ "kind": "schedule", "cronExpression": CRONS[r % CRONS.len()],
                    "timezone": "UTC" }),
            )
            .await?;
    }
    let project = board
        .must(
            "POST",
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Operations" }),
        )
        .await?;
    let goal = board
        .must(
            "POST",
            &format!("/api/companies/{cid}/goals"),
            json!({ "title": "Run the day" }),
        )
        .await?;
    let sample = board
        .must(
            "POST",
            &format!("/api/companies/{cid}/issues"),
            json!({ "title": "The sample task", "description": "Read by the load client.",
                "status": "todo", "assigneeAgentId": agents[0].id, "projectId": project["id"] }),
        )
        .await?;
    let sample_id = sample["id"].as_str().context("task id")?.to_string();
    for c in 0..5 {
        board
            .must(
                "POST",
                &format!("/api/issues/{sample_id}/comments"),
                json!({ "body": format!("Board note {c}") }),
            )
            .await?;
    }
    let approval = board
        .must(
            "POST",
            &format!("/api/companies/{cid}/approvals"),
            json!({ "type": "request_board_approval", "payload": { "ask": "the sample" },
                "issueIds": [sample_id] }),
        )
        .await?;
    // The sample's run, for the run routes and pages.
    let runs_path = format!("/api/companies/{cid}/heartbeat-runs?issueId={sample_id}");
    let mut sample_run = None;
    let mut sample_run_key = None;
    for _ in 0..600 {
        if let Some(Value::Array(runs)) = board.ok("GET", &runs_path, Value::Null).await {
            if let Some(r) = runs.iter().find(|r| r["finishedAt"].is_string()) {
                sample_run = r["id"].as_str().map(str::to_string);
                // Its page is under the agent that ran it (not always the
                // first: a comment or an approval can wake another).
                sample_run_key = agents
                    .iter()
                    .position(|a| r["agentId"] == a.id.as_str())
                    .map(|i| agent_keys[i].clone());
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(Company {
        id: cid,
        prefix,
        agent_keys,
        routines,
        sample_identifier: sample["identifier"]
            .as_str()
            .context("identifier")?
            .to_string(),
        sample_id,
        sample_run: sample_run.context("the sample task's run did not finish in 60 s")?,
        sample_run_key: sample_run_key.context("the sample run's agent is not the company's")?,
        approval: approval["id"].as_str().context("approval id")?.to_string(),
        project: project["id"].as_str().context("project id")?.to_string(),
        goal: goal["id"].as_str().context("goal id")?.to_string(),
        agents,
    })
}

#[derive(Debug, Clone, Copy)]
pub enum Action {
    CreateTask,
    Comment,
    Reassign,
    AskApproval,
    /// Decide the oldest undecided approval.
    Decide,
    BudgetStop,
    /// Lift the oldest budget stop and resume the agent.
    BudgetLift,
}

/// Per simulated day at the default 10 real minutes; a shorter run does
/// proportionally fewer (at least one of each).
const PER_DAY: [(Action, usize); 5] = [
    (Action::CreateTask, 600),
    (Action::Comment, 300),
    (Action::Reassign, 100),
    (Action::AskApproval, 40),
    (Action::BudgetStop, 3),
];

/// The day's plan: (fraction of the day, action), in order. A decision
/// follows each approval and a lift each budget stop, a sixteenth of the
/// day later (an hour and a half).
pub fn plan(rng: &mut super::Rng, scale: f64) -> Vec<(f64, Action)> {
    let mut plan = Vec::new();
    for (action, per_day) in PER_DAY {
        let n = ((per_day as f64 * scale).round() as usize).max(1);
        for _ in 0..n {
            // Leave the last eighth of the day for the queue to settle.
            let at = rng.unit() * 0.8;
            plan.push((at, action));
            match action {
                Action::AskApproval => plan.push((at + 0.0625, Action::Decide)),
                Action::BudgetStop => plan.push((at + 0.0625, Action::BudgetLift)),
                _ => {}
            }
        }
    }
    plan.sort_by(|a, b| a.0.total_cmp(&b.0));
    plan
}

#[derive(Default, Debug)]
pub struct Done {
    pub tasks: u64,
    pub comments: u64,
    pub reassigns: u64,
    pub approvals_asked: u64,
    pub approvals_decided: u64,
    pub budget_stops: u64,
    pub budget_lifts: u64,
}

/// The board during the day: performs one planned action.
pub struct Day {
    pub board: Board,
    pub company: Company,
    pub acked: Acked,
    pub done: Done,
    issues: Vec<String>,
    approvals: std::collections::VecDeque<String>,
    stopped: std::collections::VecDeque<usize>,
    spent: Vec<i64>,
}

impl Day {
    pub fn new(board: Board, company: Company) -> Day {
        let n = company.agents.len();
        let issues = vec![company.sample_id.clone()];
        Day {
            board,
            company,
            acked: Acked::default(),
            done: Done::default(),
            issues,
            approvals: Default::default(),
            stopped: Default::default(),
            spent: vec![0; n],
        }
    }

    pub async fn act(&mut self, action: Action, rng: &mut super::Rng) {
        let cid = self.company.id.clone();
        let n = self.company.agents.len();
        let a = rng.below(n);
        let agent = self.company.agents[a].id.clone();
        match action {
            Action::CreateTask => {
                let body = json!({ "title": format!("Fleet task {}", self.issues.len()),
                    "status": "todo", "assigneeAgentId": agent });
                let path = format!("/api/companies/{cid}/issues");
                if let Some(v) = self.board.ok("POST", &path, body).await {
                    if let Some(id) = v["id"].as_str() {
                        self.acked.issues.push(id.to_string());
                        self.issues.push(id.to_string());
                        self.done.tasks += 1;
                    }
                }
            }
            Action::Comment => {
                let issue = self.issues[rng.below(self.issues.len())].clone();
                let mut body = format!("board note {}", rng.below(1_000_000));
                for _ in 0..rng.below(3) {
                    body.push_str(&format!(" @{}", self.company.agents[rng.below(n)].name));
                }
                let path = format!("/api/issues/{issue}/comments");
                if let Some(v) = self.board.ok("POST", &path, json!({ "body": body })).await {
                    self.acked
                        .comments
                        .push(v["id"].as_str().unwrap_or_default().to_string());
                    self.done.comments += 1;
                }
            }
            Action::Reassign => {
                let issue = self.issues[rng.below(self.issues.len())].clone();
                let body = json!({ "assigneeAgentId": agent });
                let path = format!("/api/issues/{issue}");
                if self.board.ok("PATCH", &path, body).await.is_some() {
                    self.done.reassigns += 1;
                }
            }
            Action::AskApproval => {
                let issue = self.issues[rng.below(self.issues.len())].clone();
                let body = json!({ "type": "request_board_approval",
                    "payload": { "ask": "ship it?" }, "issueIds": [issue] });
                let path = format!("/api/companies/{cid}/approvals");
                if let Some(v) = self.board.ok("POST", &path, body).await {
                    if let Some(id) = v["id"].as_str() {
                        self.approvals.push_back(id.to_string());
                        self.done.approvals_asked += 1;
                    }
                }
            }
            Action::Decide => {
                let Some(id) = self.approvals.pop_front() else {
                    return;
                };
                let verb = if rng.below(4) == 0 {
                    "reject"
                } else {
                    "approve"
                };
                let path = format!("/api/approvals/{id}/{verb}");
                let body = json!({ "decisionNote": "decided by the fleet bench" });
                if self.board.ok("POST", &path, body).await.is_some() {
                    self.done.approvals_decided += 1;
                }
            }
            Action::BudgetStop => {
                // A monthly budget just above the agent's spend, then a cost
                // that reaches it: the hard stop pauses the agent.
                let limit = json!({ "budgetMonthlyCents": self.spent[a] + 10 });
                let path = format!("/api/agents/{agent}/budgets");
                if self.board.ok("PATCH", &path, limit).await.is_none() {
                    return;
                }
                self.spent[a] += 10;
                let cost = json!({ "agentId": agent, "costCents": 10 });
                let path = format!("/api/companies/{cid}/cost-events");
                if self.board.ok("POST", &path, cost).await.is_some() {
                    self.done.budget_stops += 1;
                }
                self.stopped.push_back(a);
            }
            Action::BudgetLift => {
                let Some(a) = self.stopped.pop_front() else {
                    return;
                };
                self.lift(a).await;
            }
        }
    }

    async fn lift(&mut self, a: usize) {
        let agent = self.company.agents[a].id.clone();
        let limit = json!({ "budgetMonthlyCents": self.spent[a] + 1_000_000 });
        let path = format!("/api/agents/{agent}/budgets");
        if self.board.ok("PATCH", &path, limit).await.is_some() {
            self.done.budget_lifts += 1;
        }
        let path = format!("/api/agents/{agent}/resume");
        self.board.ok("POST", &path, json!({})).await;
    }

    /// Lifts every stop still in place, so the queue can drain.
    pub async fn lift_all(&mut self) {
        while let Some(a) = self.stopped.pop_front() {
            self.lift(a).await;
        }
    }
}
