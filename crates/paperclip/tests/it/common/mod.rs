//! Black-box test harness: starts the real `paperclip` binary on an ephemeral
//! port with a temp data dir and drives it over HTTP.
//!
//! The database is SQLite unless `PAPERCLIP_TEST_PG_URL` names a Postgres
//! server (an admin URL such as `postgres://postgres@127.0.0.1:55432/postgres`);
//! then every server gets a fresh database of its own on it.

#![allow(dead_code)]

pub mod asking;
pub mod attach;
pub mod browser;
pub mod cli;
pub mod fleet;
pub mod repos;
pub mod routine_clock;
pub mod run_logs;
pub mod secrets;
pub mod spec;
pub mod streams;
pub mod task_worker;
pub mod teams;
pub mod upstream;

mod db;
mod pg;
mod spawn;
mod sqlite;

pub use db::{
    before_secrets_and_teams, bound_as_text, database, database_url, postgres_ids_back_to_text,
};
pub use pg::create_pg_database;
pub use spawn::{restart_keeping_data, restart_keeping_data_env};

use std::path::PathBuf;
use std::process::Child;

use reqwest::StatusCode;
use serde_json::Value;

/// A running server: started and stopped in `spawn.rs`, driven over HTTP here.
pub struct TestServer {
    pub base: String,
    pub data_dir: PathBuf,
    pub database_url: Option<String>,
    child: Child,
    client: reqwest::Client,
    /// What the server printed before it was listening.
    pub startup: Vec<String>,
    /// What it printed (stdout) since.
    pub stdout_after: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl TestServer {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    pub async fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self.client.request(method, self.url(path));
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.expect("request failed");
        let status = resp.status();
        let text = resp.text().await.unwrap();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        (status, value)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.request("GET", path, None).await
    }
    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.request("POST", path, Some(body)).await
    }
    pub async fn patch(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.request("PATCH", path, Some(body)).await
    }
    pub async fn put(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.request("PUT", path, Some(body)).await
    }
    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.request("DELETE", path, None).await
    }

    /// POST that must succeed; returns the body.
    pub async fn ok_post(&self, path: &str, body: Value) -> Value {
        let (status, value) = self.post(path, body).await;
        assert!(status.is_success(), "POST {path} -> {status}: {value}");
        value
    }
    pub async fn ok_get(&self, path: &str) -> Value {
        let (status, value) = self.get(path).await;
        assert!(status.is_success(), "GET {path} -> {status}: {value}");
        value
    }
    pub async fn ok_patch(&self, path: &str, body: Value) -> Value {
        let (status, value) = self.patch(path, body).await;
        assert!(status.is_success(), "PATCH {path} -> {status}: {value}");
        value
    }

    /// `POST /api/agents/{id}/wakeup`: the run it queued, or why it skipped.
    pub async fn wake(&self, agent_id: &str, body: Value) -> Value {
        self.ok_post(&format!("/api/agents/{agent_id}/wakeup"), body)
            .await
    }

    /// `POST /api/agents/{id}/{pause|resume|terminate}`: the agent after.
    pub async fn lever(&self, agent_id: &str, lever: &str) -> Value {
        self.ok_post(
            &format!("/api/agents/{agent_id}/{lever}"),
            serde_json::json!({}),
        )
        .await
    }

    pub async fn company(&self, name: &str) -> Value {
        self.ok_post("/api/companies", serde_json::json!({ "name": name }))
            .await
    }

    pub async fn agent(&self, company_id: &str, name: &str, reports_to: Option<&str>) -> Value {
        self.ok_post(
            &format!("/api/companies/{company_id}/agents"),
            serde_json::json!({ "name": name, "reportsTo": reports_to, "adapterType": "process",
                "adapterConfig": { "command": "true" } }),
        )
        .await
    }

    pub async fn issue(&self, company_id: &str, body: Value) -> Value {
        self.ok_post(&format!("/api/companies/{company_id}/issues"), body)
            .await
    }

    /// A new API key for the agent; returns the plaintext token.
    pub async fn key(&self, agent_id: &str) -> String {
        let key = self
            .ok_post(
                &format!("/api/agents/{agent_id}/keys"),
                serde_json::json!({ "name": "test" }),
            )
            .await;
        key["token"].as_str().unwrap().to_string()
    }

    /// A request as an agent (`Authorization: Bearer`), optionally tied to a run.
    pub async fn as_agent(
        &self,
        token: &str,
        run_id: Option<&str>,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = self
            .client
            .request(method, self.url(path))
            .bearer_auth(token);
        if let Some(run) = run_id {
            req = req.header("x-paperclip-run-id", run);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.expect("request failed");
        let status = resp.status();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// Waits until the instance is at rest: no run queued or running, no run
    /// process alive (`GET /api/instance/quiescence`). A test asserting that
    /// something did *not* happen waits on this instead of a sleep.
    pub async fn quiesce(&self) {
        self.wait_for("/api/instance/quiescence", 30, |q| q["idle"] == true)
            .await;
    }

    /// An agent's runs once at least `n` exist and none is queued or
    /// running (panics after `secs`), oldest first.
    pub async fn settled_runs(&self, cid: &str, aid: &str, n: usize, secs: u64) -> Vec<Value> {
        let path = format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}");
        let list = self
            .wait_for(&path, secs, |r| {
                r.as_array().is_some_and(|r| {
                    r.len() >= n
                        && r.iter()
                            .all(|run| run["status"] != "queued" && run["status"] != "running")
                })
            })
            .await;
        let mut runs = list.as_array().unwrap().clone();
        runs.reverse();
        runs
    }

    /// Polls `GET path` until `done` holds for the body (or panics after `secs`).
    pub async fn wait_for(&self, path: &str, secs: u64, done: impl Fn(&Value) -> bool) -> Value {
        let mut last = None;
        let found = try_until(secs, async || {
            let (status, body) = self.get(path).await;
            let ok = status.is_success() && done(&body);
            last = Some((status, body.clone()));
            ok.then_some(body)
        })
        .await;
        found.unwrap_or_else(|| {
            let (status, body) = last.unwrap();
            panic!("timed out waiting on {path}: last answer {status} {body}")
        })
    }

    /// Waits until the agent has exactly one run and it succeeded; returns the runs.
    pub async fn only_run_succeeded(&self, company_id: &str, agent_id: &str) -> Value {
        self.wait_for(
            &format!("/api/companies/{company_id}/heartbeat-runs?agentId={agent_id}"),
            30,
            |runs| {
                runs.as_array()
                    .is_some_and(|r| r.len() == 1 && r[0]["status"] == "succeeded")
            },
        )
        .await
    }

    /// Runs of an agent, oldest first.
    pub async fn runs_of(&self, company_id: &str, agent_id: &str) -> Vec<Value> {
        let list = self
            .ok_get(&format!(
                "/api/companies/{company_id}/heartbeat-runs?agentId={agent_id}"
            ))
            .await;
        let mut runs = list.as_array().unwrap().clone();
        runs.reverse();
        runs
    }

    /// A `process` agent running `sh <script>`, with extra adapter config merged in.
    pub async fn script_agent(
        &self,
        company_id: &str,
        name: &str,
        script: &str,
        extra: Value,
    ) -> Value {
        let path = self
            .data_dir
            .join(format!("{}.sh", uuid::Uuid::new_v4().simple()));
        std::fs::write(&path, script).unwrap();
        let mut config =
            serde_json::json!({ "command": "sh", "args": [path.to_str().unwrap()], "graceSec": 2 });
        if let Value::Object(extra) = extra {
            for (k, v) in extra {
                config[k] = v;
            }
        }
        self.ok_post(
            &format!("/api/companies/{company_id}/agents"),
            serde_json::json!({ "name": name, "adapterType": "process", "adapterConfig": config }),
        )
        .await
    }

    /// Every page of a list through its `X-Next-Cursor`s: each page's items
    /// and the cursor that followed it. `path` already has a `?`.
    pub async fn pages(&self, path: &str) -> Vec<(Vec<Value>, Option<String>)> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let url = match &cursor {
                Some(c) => format!("{path}&cursor={c}"),
                None => path.to_string(),
            };
            let resp = self
                .client
                .get(self.url(&url))
                .send()
                .await
                .expect("request failed");
            assert_eq!(resp.status(), 200, "GET {url}");
            let next = resp
                .headers()
                .get("x-next-cursor")
                .map(|v| v.to_str().unwrap().to_string());
            let page: Vec<Value> = resp.json().await.unwrap();
            out.push((page, next.clone()));
            match next {
                Some(next) => cursor = Some(next),
                None => return out,
            }
            assert!(out.len() < 10_000, "{path}: a list that never ends");
        }
    }

    /// A board page's HTML; panics unless it answers 200.
    pub async fn page(&self, path: &str) -> String {
        let resp = self
            .client
            .get(self.url(path))
            .send()
            .await
            .expect("request failed");
        let status = resp.status();
        let body = resp.text().await.unwrap();
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    /// Activity actions of a company, oldest first.
    pub async fn actions(&self, company_id: &str) -> Vec<String> {
        let list = self
            .ok_get(&format!("/api/companies/{company_id}/activity?limit=1000"))
            .await;
        let mut actions: Vec<String> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["action"].as_str().unwrap().to_string())
            .collect();
        actions.reverse();
        actions
    }
}

/// Polls `probe` until it returns `Some`, or panics naming `what` after
/// `secs`. The one place tests wait: on a condition, with a deadline.
pub async fn until<T>(secs: u64, what: &str, probe: impl AsyncFnMut() -> Option<T>) -> T {
    match try_until(secs, probe).await {
        Some(v) => v,
        None => panic!("timed out after {secs} s waiting for {what}"),
    }
}

/// Like [`until`], but `None` at the deadline instead of a panic.
pub async fn try_until<T>(secs: u64, probe: impl AsyncFnMut() -> Option<T>) -> Option<T> {
    paperclip_bench::poll::until(secs, probe).await
}

/// [`try_until`] where nothing can await (a plain function called from sync
/// code): the same deadline and period, the thread asleep between checks.
pub fn try_until_blocking<T>(secs: u64, probe: impl FnMut() -> Option<T>) -> Option<T> {
    paperclip_bench::poll::until_blocking(secs, probe)
}

/// What a person reads: the markup without its tags and attributes, each
/// run of whitespace as one space.
pub fn visible_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}
