//! The board's side of the chaos: random (seeded) wakes, tasks, assignments,
//! comments and @mentions, cancels, pauses, budget stops, and SIGKILL
//! restarts of the server, while the agents' scripts work their tasks.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::Mutex;

use super::proc::ServerProc;
use super::Rng;

pub struct Agent {
    pub id: String,
    pub name: String,
    pub max_concurrent: u32,
}

/// What the server acknowledged (2xx) and so must be in the database.
#[derive(Default)]
pub struct Acked {
    pub issues: Vec<String>,
    pub comments: Vec<String>,
    pub wake_requests: Vec<String>,
}

#[derive(Default)]
pub struct Counters {
    pub rounds: AtomicU64,
    pub restarts: AtomicU64,
    pub cancels: AtomicU64,
    pub pauses: AtomicU64,
    pub budget_stops: AtomicU64,
}

#[derive(Clone)]
pub struct Api {
    client: reqwest::Client,
    base: Arc<RwLock<String>>,
}

impl Api {
    pub fn new(base: &str) -> Api {
        Api {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("http client"),
            base: Arc::new(RwLock::new(base.to_string())),
        }
    }

    pub fn set_base(&self, base: &str) {
        *self.base.write().unwrap() = base.to_string();
    }

    /// `None` when no answer came (the server was killed under the
    /// request): the write may or may not have happened, so it is not
    /// counted as acknowledged. Waits for the server to be back first.
    pub async fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Option<(u16, Value)> {
        let url = format!("{}{path}", self.base.read().unwrap());
        let mut req = self
            .client
            .request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), url);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let answer = match req.send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                resp.text().await.ok().map(|text| {
                    (
                        status,
                        serde_json::from_str(&text).unwrap_or(Value::String(text)),
                    )
                })
            }
            Err(_) => None,
        };
        if answer.is_none() {
            self.healthy(60).await;
        }
        answer
    }

    /// Written out rather than with `until`: an async closure borrowing
    /// `self` would make `call` non-`Send`, and cancels run on spawned tasks.
    pub async fn healthy(&self, secs: u64) -> bool {
        // Polled on an interval rather than through `poll::until`: this runs
        // in spawned tasks, and an async closure's future cannot be shown Send.
        let deadline = Instant::now() + Duration::from_secs(secs);
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        while Instant::now() <= deadline {
            tick.tick().await;
            let url = format!("{}/api/health", self.base.read().unwrap());
            if self
                .client
                .get(url)
                .send()
                .await
                .is_ok_and(|r| r.status() == 200)
            {
                return true;
            }
        }
        false
    }

    /// The body of a 2xx answer.
    pub async fn ok(&self, method: &str, path: &str, body: Value) -> Option<Value> {
        match self.call(method, path, Some(body)).await {
            Some((s, v)) if (200..300).contains(&s) => Some(v),
            _ => None,
        }
    }
}

pub struct Driver {
    pub api: Api,
    pub cid: String,
    pub agents: Vec<Agent>,
    pub issues: Vec<String>,
    pub acked: Acked,
    pub counters: Arc<Counters>,
    spent: Vec<i64>,
    background: Vec<tokio::task::JoinHandle<()>>,
}

impl Driver {
    pub fn new(api: Api, cid: String, agents: Vec<Agent>, counters: Arc<Counters>) -> Driver {
        let n = agents.len();
        Driver {
            api,
            cid,
            agents,
            issues: Vec::new(),
            acked: Acked::default(),
            counters,
            spent: vec![0; n],
            background: Vec::new(),
        }
    }

    /// One random board action.
    pub async fn step(&mut self, rng: &mut Rng) {
        self.counters.rounds.fetch_add(1, Ordering::Relaxed);
        let a = rng.below(self.agents.len());
        let roll = rng.below(100);
        match roll {
            _ if self.issues.is_empty() || roll < 16 => self.create_issue(a).await,
            16..36 => self.wake(a, rng).await,
            36..42 => self.reassign(a, rng).await,
            42..72 => self.board_comment(rng).await,
            72..82 => self.cancel(rng).await,
            82..86 => self.background_post(format!("/api/agents/{}/pause", self.agents[a].id)),
            86..92 => self.background_post(format!("/api/agents/{}/resume", self.agents[a].id)),
            92..96 => self.budget_stop(a).await,
            _ => self.budget_lift(a).await,
        }
    }

    async fn create_issue(&mut self, a: usize) {
        let n = self.issues.len();
        let body = json!({ "title": format!("Chaos task {n}"), "status": "todo",
            "assigneeAgentId": self.agents[a].id });
        if let Some(v) = self
            .api
            .ok("POST", &format!("/api/companies/{}/issues", self.cid), body)
            .await
        {
            let id = v["id"].as_str().unwrap_or_default().to_string();
            self.acked.issues.push(id.clone());
            self.issues.push(id);
        }
    }

    async fn wake(&mut self, a: usize, rng: &mut Rng) {
        let mut body = json!({ "reason": "chaos" });
        if rng.below(2) == 0 {
            body["issueId"] = json!(self.issues[rng.below(self.issues.len())]);
        }
        let path = format!("/api/agents/{}/wakeup", self.agents[a].id);
        if let Some(v) = self.api.ok("POST", &path, body).await {
            if let Some(id) = v["wakeupRequest"]["id"].as_str() {
                self.acked.wake_requests.push(id.to_string());
            }
        }
    }

    async fn reassign(&mut self, a: usize, rng: &mut Rng) {
        let issue = &self.issues[rng.below(self.issues.len())];
        let body = json!({ "assigneeAgentId": self.agents[a].id });
        self.api
            .ok("PATCH", &format!("/api/issues/{issue}"), body)
            .await;
    }

    async fn board_comment(&mut self, rng: &mut Rng) {
        let issue = self.issues[rng.below(self.issues.len())].clone();
        let mut body = format!("board note {}", rng.below(1_000_000));
        for _ in 0..rng.below(3).saturating_sub(rng.below(2)) {
            body.push_str(&format!(
                " @{}",
                self.agents[rng.below(self.agents.len())].name
            ));
        }
        let path = format!("/api/issues/{issue}/comments");
        if let Some(v) = self.api.ok("POST", &path, json!({ "body": body })).await {
            self.acked
                .comments
                .push(v["id"].as_str().unwrap_or_default().to_string());
        }
    }

    async fn cancel(&mut self, rng: &mut Rng) {
        let path = format!("/api/companies/{}/heartbeat-runs?limit=50", self.cid);
        let Some((200, Value::Array(runs))) = self.api.call("GET", &path, None).await else {
            return;
        };
        let live: Vec<&Value> = runs
            .iter()
            .filter(|r| r["status"] == "running" || r["status"] == "queued")
            .collect();
        if live.is_empty() {
            return;
        }
        let run = live[rng.below(live.len())]["id"]
            .as_str()
            .unwrap_or_default();
        self.counters.cancels.fetch_add(1, Ordering::Relaxed);
        self.background_post(format!("/api/heartbeat-runs/{run}/cancel"));
    }

    /// Cancels and pauses answer once the run's process has stopped (up to
    /// its grace period), so they go on beside the other actions.
    fn background_post(&mut self, path: String) {
        if path.ends_with("/pause") {
            self.counters.pauses.fetch_add(1, Ordering::Relaxed);
        }
        let api = self.api.clone();
        self.background.push(tokio::spawn(async move {
            api.call("POST", &path, Some(json!({}))).await;
        }));
        self.background.retain(|h| !h.is_finished());
    }

    /// A monthly budget just above what the agent spent, then a reported
    /// cost that reaches it: the hard stop pauses the agent.
    async fn budget_stop(&mut self, a: usize) {
        let id = self.agents[a].id.clone();
        let limit = json!({ "budgetMonthlyCents": self.spent[a] + 10 });
        if self
            .api
            .ok("PATCH", &format!("/api/agents/{id}/budgets"), limit)
            .await
            .is_none()
        {
            return;
        }
        let cost = json!({ "agentId": id, "costCents": 10 });
        let path = format!("/api/companies/{}/cost-events", self.cid);
        // Counted even unanswered: the cost may have been recorded.
        self.spent[a] += 10;
        if self.api.ok("POST", &path, cost).await.is_some() {
            self.counters.budget_stops.fetch_add(1, Ordering::Relaxed);
        }
    }

    async fn budget_lift(&mut self, a: usize) {
        let limit = json!({ "budgetMonthlyCents": self.spent[a] + 1_000_000 });
        let path = format!("/api/agents/{}/budgets", self.agents[a].id);
        self.api.ok("PATCH", &path, limit).await;
    }

    pub async fn join_background(&mut self) {
        for h in self.background.drain(..) {
            let _ = h.await;
        }
    }
}

/// Kills and restarts the server every `every` (a random span) until `stop`.
pub async fn killer(
    server: Arc<Mutex<ServerProc>>,
    api: Api,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    every: (Duration, Duration),
    mut rng: Rng,
) -> anyhow::Result<()> {
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    let span = |rng: &mut Rng| {
        let (lo, hi) = (every.0.as_millis() as usize, every.1.as_millis() as usize);
        Duration::from_millis((lo + rng.below(hi - lo + 1)) as u64)
    };
    let mut next = Instant::now() + span(&mut rng);
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        if Instant::now() < next {
            continue;
        }
        let mut s = server.lock().await;
        s.kill9().await;
        s.restart().await?;
        api.set_base(&s.base);
        counters.restarts.fetch_add(1, Ordering::Relaxed);
        drop(s);
        next = Instant::now() + span(&mut rng);
    }
    Ok(())
}
