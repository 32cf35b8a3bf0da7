//! Helpers of the company secrets tests: values to look for, the live
//! stream, a process agent that writes what it got, at-rest scans.

use std::path::{Path, PathBuf};

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::TestServer;

pub fn value(label: &str) -> String {
    format!("sk-{label}-{}", uuid::Uuid::new_v4().simple())
}

/// The company's SSE stream, read in the background into one string.
pub struct LiveCapture {
    text: std::sync::Arc<std::sync::Mutex<String>>,
    task: tokio::task::JoinHandle<()>,
}

impl LiveCapture {
    pub async fn start(server: &TestServer, cid: &str) -> LiveCapture {
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
    pub async fn until(self, marker: &str) -> String {
        let text = self.text.clone();
        let seen = super::until(
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

pub fn assert_clean(what: &str, text: &str, values: &[&str]) {
    for v in values {
        assert!(!text.contains(v), "{what} shows a secret value: {text}");
    }
}

/// A server whose stderr log (debug level) is kept in a file outside its
/// data dir, on a database of its own.
pub async fn logged_server(env: &[(&str, &str)]) -> (TestServer, PathBuf) {
    let (data_dir, database_url) = TestServer::start().await.stop_keeping_data();
    let log = std::env::temp_dir().join(format!("paperclip-secrets-{}.log", uuid::Uuid::new_v4()));
    (
        TestServer::start_logged(data_dir, database_url, env, &log).await,
        log,
    )
}

/// A process agent that appends `$MY_TOKEN` to `out` and prints it (which
/// the run log must hide).
pub async fn token_agent(
    s: &TestServer,
    cid: &str,
    name: &str,
    binding: Value,
    out: &Path,
) -> String {
    let script = "printf '%s\\n' \"$MY_TOKEN\" >> \"$OUT\"\necho \"token=$MY_TOKEN\"\n";
    let agent = s
        .script_agent(
            cid,
            name,
            script,
            json!({ "env": { "MY_TOKEN": binding, "OUT": out.to_str().unwrap() } }),
        )
        .await;
    agent["id"].as_str().unwrap().to_string()
}

pub fn secret_ref(id: &str) -> Value {
    json!({ "type": "secret_ref", "secretId": id, "version": "latest" })
}

/// Wakes the agent and waits for its `n`th run to end; returns that run.
pub async fn run(s: &TestServer, cid: &str, aid: &str, n: usize) -> Value {
    let (status, body) = s
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    assert!(status.is_success(), "wakeup: {status} {body}");
    let runs = s
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
    runs[0].clone()
}

pub fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// Every file under `dir` (the database, its WAL, run logs, keys) as bytes,
/// with the ones in `skip` left out.
pub fn files_under(dir: &Path, skip: &[&Path], out: &mut Vec<(PathBuf, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if skip.contains(&path.as_path()) {
            continue;
        }
        if path.is_dir() {
            files_under(&path, skip, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, bytes));
        }
    }
}

/// Every row of every table of a Postgres database, as text.
pub async fn postgres_dump(url: &str) -> String {
    use sqlx::Row;
    let db = super::database(url).await;
    let tables: Vec<String> = sqlx::query(
        "SELECT table_name::text FROM information_schema.tables \
         WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
    )
    .fetch_all(&db)
    .await
    .unwrap()
    .iter()
    .map(|r| r.get::<String, _>(0))
    .collect();
    let mut out = String::new();
    for t in tables {
        for row in sqlx::query(&format!("SELECT CAST(t AS TEXT) FROM \"{t}\" t"))
            .fetch_all(&db)
            .await
            .unwrap()
        {
            out.push_str(&row.get::<String, _>(0));
            out.push('\n');
        }
    }
    out
}
