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
pub mod routine_clock;
pub mod secrets;
pub mod spec;
pub mod teams;
pub mod upstream;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

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
    pub async fn start() -> TestServer {
        TestServer::start_args(&[]).await
    }

    /// A fresh server with extra `paperclip run` flags: a temp data dir, and
    /// a database of its own on Postgres when `PAPERCLIP_TEST_PG_URL` is set.
    pub async fn start_args(extra: &[&str]) -> TestServer {
        let data_dir =
            std::env::temp_dir().join(format!("paperclip-test-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&data_dir).unwrap();
        let database_url = match std::env::var("PAPERCLIP_TEST_PG_URL") {
            Ok(admin) if !admin.is_empty() => Some(create_pg_database(&admin).await),
            _ => None,
        };
        TestServer::start_with(data_dir, database_url, extra).await
    }

    /// The server process, for looking at it from outside (memory, files).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `127.0.0.1:port` of the server, for raw TCP clients.
    pub fn addr(&self) -> String {
        self.base.trim_start_matches("http://").to_string()
    }

    /// Starts a server on an existing data dir / database (a restart).
    pub async fn start_with(
        data_dir: PathBuf,
        database_url: Option<String>,
        extra: &[&str],
    ) -> TestServer {
        TestServer::start_on_port(data_dir, database_url, 0, extra).await
    }

    /// Like [`TestServer::start_with`] on a given port (0: any free one), so a
    /// restarted server is found where clients left it.
    pub async fn start_on_port(
        data_dir: PathBuf,
        database_url: Option<String>,
        port: u16,
        extra: &[&str],
    ) -> TestServer {
        TestServer::spawn(data_dir, database_url, port, extra, &[]).await
    }

    /// A fresh server with extra variables in its environment (which its
    /// agents must not inherit).
    pub async fn start_env(env: &[(&str, &str)]) -> TestServer {
        let (data_dir, database_url) = TestServer::start().await.stop_keeping_data();
        TestServer::spawn(data_dir, database_url, 0, &[], env).await
    }

    async fn spawn(
        data_dir: PathBuf,
        database_url: Option<String>,
        port: u16,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> TestServer {
        TestServer::spawn_full(data_dir, database_url, port, extra, env, None).await
    }

    /// A server on an existing data dir / database whose log (stderr, at
    /// `PAPERCLIP_LOG=debug`) goes to `log`, for tests that read what it
    /// logged. `stdout_after` keeps what it printed once listening.
    pub async fn start_logged(
        data_dir: PathBuf,
        database_url: Option<String>,
        env: &[(&str, &str)],
        log: &std::path::Path,
    ) -> TestServer {
        TestServer::spawn_full(data_dir, database_url, 0, &[], env, Some(log)).await
    }

    async fn spawn_full(
        data_dir: PathBuf,
        database_url: Option<String>,
        port: u16,
        extra: &[&str],
        env: &[(&str, &str)],
        log: Option<&std::path::Path>,
    ) -> TestServer {
        // PAPERCLIP_TEST_BIN: a copy of the binary, for builders sharing one
        // target dir (another worktree's build may relink it mid-run).
        let bin = std::env::var_os("PAPERCLIP_TEST_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_paperclip").into());
        let mut cmd = Command::new(bin);
        cmd.arg("run")
            .arg("--port")
            .arg(port.to_string())
            .arg("--data-dir")
            .arg(&data_dir)
            .args(extra);
        cmd.env_remove("DATABASE_URL")
            .env_remove("PAPERCLIP_PORT")
            .env_remove("PAPERCLIP_CONFIG")
            .envs(env.iter().copied());
        if let Some(url) = &database_url {
            cmd.env("DATABASE_URL", url);
        }
        let stderr = match log {
            Some(path) => {
                cmd.env("PAPERCLIP_LOG", "debug");
                Stdio::from(std::fs::File::create(path).expect("create the server log"))
            }
            None => Stdio::inherit(),
        };
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn paperclip");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout_after = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let after = stdout_after.clone();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let mut before = Vec::new();
            let mut listening = false;
            while let Some(Ok(line)) = lines.next() {
                if let Some(url) = line.strip_prefix("Paperclip listening on ") {
                    listening = true;
                    let _ = tx.send((url.to_string(), std::mem::take(&mut before)));
                } else if listening {
                    after.lock().unwrap().push(line);
                } else {
                    before.push(line);
                }
            }
        });
        let (base, startup) = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("server did not report its address");
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            // Well inside the server's keep-alive limit, so the client never
            // sends on a connection the server is closing as idle (the
            // request would fail "incomplete message" under load).
            .pool_idle_timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        TestServer {
            base,
            data_dir,
            database_url,
            child,
            client,
            startup,
            stdout_after,
        }
    }

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

    /// Stops the server and hands back its data dir and database for a restart.
    pub fn stop_keeping_data(mut self) -> (PathBuf, Option<String>) {
        self.kill();
        (std::mem::take(&mut self.data_dir), self.database_url.take())
    }

    /// Asks the server to stop (SIGTERM, as Ctrl-C or a service manager
    /// would) and waits up to `secs` for it to exit; `true` if it did.
    pub async fn terminate(&mut self, secs: u64) -> bool {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let child = &mut self.child;
        try_until(secs, async || child.try_wait().ok().flatten())
            .await
            .is_some()
    }

    /// Stops the server the hard way (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
        if !self.data_dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.data_dir);
            // The database goes with the data dir (a restart took both):
            // a suite leaves no gigabytes of test databases behind.
            if let Some(url) = self.database_url.take() {
                drop_pg_database(&url);
            }
        }
    }
}

/// Drops a database [`create_pg_database`] made, from a thread of its own
/// (a `Drop` cannot await), connections and all.
fn drop_pg_database(url: &str) {
    let (Some(i), Ok(admin)) = (url.rfind('/'), std::env::var("PAPERCLIP_TEST_PG_URL")) else {
        return;
    };
    let name = url[i + 1..].to_string();
    if !name.starts_with("pc_test_") || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return;
    }
    let _ = std::thread::spawn(move || {
        use sqlx::Connection;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(async {
            let mut conn = sqlx::postgres::PgConnection::connect(&admin).await.ok()?;
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut conn)
                .await;
            conn.close().await.ok()
        })
    })
    .join();
}

/// Kills the server (SIGKILL, as a crash would) and starts it again on the
/// same data dir and database.
pub async fn restart_keeping_data(server: TestServer) -> TestServer {
    let (data_dir, database_url) = server.stop_keeping_data();
    TestServer::start_with(data_dir, database_url, &[]).await
}

/// Like [`restart_keeping_data`], with variables in the new server's
/// environment (as its first start had them).
pub async fn restart_keeping_data_env(server: TestServer, env: &[(&str, &str)]) -> TestServer {
    let (data_dir, database_url) = server.stop_keeping_data();
    TestServer::spawn(data_dir, database_url, 0, &[], env).await
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

/// One connection onto a server's database (`url`), for tests that count
/// or plant rows behind its back, or rewrite a stopped server's schema back
/// to an older release's. One on purpose: with a pool of several, a statement
/// on one connection right after schema changes on another failed now and
/// then on SQLite with "no such table: issues" (about half the runs here,
/// the database all in its WAL after the kill; never seen from the server,
/// which changes its schema on one connection before opening the others).
pub async fn database(url: &str) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .expect("open the server's database")
}

/// The URL of a stopped server's database: its Postgres URL, or the SQLite
/// file in its data dir.
pub fn database_url(data_dir: &std::path::Path, database_url: &Option<String>) -> String {
    database_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("paperclip.db").display()))
}

/// A fresh database for one server, copied from a template that already has
/// every migration: migrating an empty database costs a server ~1.7 s on
/// Postgres (0.2 s to start on a migrated one), once per test otherwise.
pub async fn create_pg_database(admin_url: &str) -> String {
    use sqlx::Connection;
    let template = pg_template(admin_url).await;
    let name = format!("pc_test_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::postgres::PgConnection::connect(admin_url)
        .await
        .expect("connect to test Postgres");
    sqlx::query(&format!("CREATE DATABASE {name} TEMPLATE {template}"))
        .execute(&mut conn)
        .await
        .expect("create test database");
    let _ = conn.close().await;
    pg_url(admin_url, &name)
}

fn pg_url(admin_url: &str, name: &str) -> String {
    match admin_url.rfind('/') {
        Some(i) => format!("{}/{name}", &admin_url[..i]),
        None => panic!("PAPERCLIP_TEST_PG_URL must end in /<database>"),
    }
}

/// The migrated template for this build's migrations (see
/// [`migrations_hash`]), made once per cluster and build:
/// the first test process to need it builds it under an advisory lock
/// while the others wait, and publishes it by renaming it into place.
async fn pg_template(admin_url: &str) -> String {
    use sqlx::Connection;
    static NAME: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    NAME.get_or_init(async || {
        let name = format!("pc_tmpl_{:016x}", migrations_hash());
        let mut conn = sqlx::postgres::PgConnection::connect(admin_url)
            .await
            .expect("connect to test Postgres");
        sqlx::query("SELECT pg_advisory_lock(7243001)")
            .execute(&mut conn)
            .await
            .expect("take the template lock");
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
                .bind(&name)
                .fetch_one(&mut conn)
                .await
                .expect("look for the template");
        if !exists {
            let building = format!("{name}_building");
            for sql in [
                format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)"),
                format!("CREATE DATABASE {building}"),
            ] {
                sqlx::query(&sql).execute(&mut conn).await.expect(&sql);
            }
            let store = paperclip_store::Store::connect(&pg_url(admin_url, &building))
                .await
                .expect("migrate the template");
            store.close().await;
            drop(store);
            // A session the store opened on the side may linger a moment.
            for sql in [
                format!(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE datname = '{building}' AND pid <> pg_backend_pid()"
                ),
                format!("ALTER DATABASE {building} RENAME TO {name}"),
            ] {
                sqlx::query(&sql).execute(&mut conn).await.expect(&sql);
            }
        }
        let _ = sqlx::query("SELECT pg_advisory_unlock(7243001)")
            .execute(&mut conn)
            .await;
        let _ = conn.close().await;
        name
    })
    .await
    .clone()
}

/// Which build's migrations the template holds: the migrations are compiled
/// into this test binary (its store migrates the template), so it is named
/// after the binary itself (size and modification time), never after the
/// files on disk, which may be newer than what was built.
fn migrations_hash() -> u64 {
    let exe = std::env::current_exe().expect("this test binary");
    let meta = std::fs::metadata(&exe).expect("stat this test binary");
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in [meta.len().to_le_bytes(), modified.to_le_bytes()].concat() {
        hash = (hash ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    hash
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

/// `sql` for the Any driver, which binds text only: on Postgres, where times
/// are `timestamptz` and ids `uuid`, a parameter a time or id column is
/// compared with or set to (`created_at >= $2`, `WHERE company_id = $1`) is
/// cast to one. (A selected id must be cast to text by the query itself.)
pub fn bound_as_text(sql: &str, postgres: bool) -> String {
    if !postgres {
        return sql.to_string();
    }
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    while let Some(at) = rest.find('$') {
        let (before, after) = rest.split_at(at);
        let digits = after[1..].chars().take_while(char::is_ascii_digit).count();
        let param = &after[..1 + digits];
        let lhs = before.trim_end();
        let column = ["<=", ">=", "=", "<", ">"]
            .iter()
            .find_map(|op| lhs.strip_suffix(op))
            .map(str::trim_end)
            .and_then(|l| {
                l.rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
            });
        out.push_str(before);
        match column {
            Some(c) if digits > 0 && (c.ends_with("_at") || c.ends_with("_until")) => {
                out.push_str(&format!("CAST({param} AS TIMESTAMPTZ)"))
            }
            Some(c) if digits > 0 && is_uuid_column(c) => {
                out.push_str(&format!("CAST({param} AS UUID)"))
            }
            _ => out.push_str(param),
        }
        rest = &after[param.len()..];
    }
    out.push_str(rest);
    out
}

/// Whether a column of this name is a `uuid` on Postgres (migration 27):
/// ids, but not people's, actors', entities' or clients' ones.
fn is_uuid_column(name: &str) -> bool {
    (name == "id" || name == "reports_to" || name.ends_with("_id"))
        && !name.ends_with("user_id")
        && ![
            "actor_id",
            "entity_id",
            "scope_id",
            "session_display_id",
            "client_request_id",
            "changed_by_actor_id",
            "requested_by_actor_id",
        ]
        .contains(&name)
}

/// Undoes migration 27 on Postgres: ids back to the text of schema 26 (for
/// tests that start from an older database). Each step is one statement.
pub fn postgres_ids_back_to_text() -> Vec<String> {
    let mut steps: Vec<String> = before_secrets_and_teams();
    steps.extend(
    [
        "DROP TRIGGER issue_status_counts_update ON issues",
        "DROP TRIGGER issue_day_counts_update ON issues",
        "DROP TRIGGER task_search_comment_change ON issue_comments",
        // Keys and the columns they join change together: dropped, changed,
        // and made again as they were, in one statement.
        "DO $$ DECLARE k RECORD; c RECORD; again TEXT[] := '{}'; step TEXT; BEGIN \
         FOR k IN SELECT conrelid::regclass::text AS tbl, conname, pg_get_constraintdef(oid) AS def \
             FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace LOOP \
             again := again || format('ALTER TABLE %s ADD CONSTRAINT %I %s', k.tbl, k.conname, k.def); \
             EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', k.tbl, k.conname); \
         END LOOP; \
         FOR c IN SELECT table_name, column_name FROM information_schema.columns \
             WHERE table_schema = current_schema() AND data_type = 'uuid' LOOP \
             EXECUTE format('ALTER TABLE %I ALTER COLUMN %I TYPE TEXT USING CAST(%I AS TEXT)', \
                 c.table_name, c.column_name, c.column_name); \
         END LOOP; \
         FOREACH step IN ARRAY again LOOP EXECUTE step; END LOOP; END $$",
        "DROP FUNCTION task_search_rebuild(UUID)",
        "DROP FUNCTION task_search_words(UUID)",
        "CREATE FUNCTION task_search_words(task TEXT) RETURNS tsvector LANGUAGE sql STABLE AS $$ \
         SELECT task_search_vector(i.identifier || ' ' || i.title || ' ' || COALESCE(i.description, '') \
         || ' ' || LEFT(COALESCE((SELECT string_agg(c.body, ' ' ORDER BY c.created_at, c.id) \
         FROM issue_comments c WHERE c.issue_id = i.id AND c.deleted_at IS NULL), ''), 1000000)) \
         FROM issues i WHERE i.id = task $$",
        "CREATE FUNCTION task_search_rebuild(task TEXT) RETURNS void LANGUAGE plpgsql AS $$ BEGIN \
         PERFORM 1 FROM task_search WHERE issue_id = task FOR UPDATE; \
         UPDATE task_search SET words = COALESCE(task_search_words(task), words) WHERE issue_id = task; \
         END $$",
        "CREATE TRIGGER issue_status_counts_update AFTER UPDATE OF status, company_id ON issues \
         FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.company_id IS DISTINCT \
         FROM NEW.company_id) EXECUTE FUNCTION issue_status_counts_follow()",
        "CREATE TRIGGER issue_day_counts_update AFTER UPDATE OF status, company_id, created_at, \
         completed_at ON issues FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status \
         OR OLD.company_id IS DISTINCT FROM NEW.company_id OR OLD.created_at IS DISTINCT FROM \
         NEW.created_at OR OLD.completed_at IS DISTINCT FROM NEW.completed_at) \
         EXECUTE FUNCTION issue_day_counts_follow()",
        "CREATE TRIGGER task_search_comment_change AFTER INSERT OR DELETE OR UPDATE OF body, \
         deleted_at, issue_id ON issue_comments FOR EACH ROW EXECUTE FUNCTION \
         task_search_comment_follow()",
    ]
    .iter()
    .map(|s| s.to_string()));
    steps.push("DELETE FROM schema_migrations WHERE version = 27".into());
    steps
}

/// Undoes migrations 28 (company secrets) and 29 (teams), for tests that start from a
/// database an earlier release made: it had no such tables.
pub fn before_secrets_and_teams() -> Vec<String> {
    [
        // Migration 34 changes a table dropped below: it runs again.
        "DELETE FROM schema_migrations WHERE version = 34",
        "DROP TABLE IF EXISTS issue_thread_interactions",
        "DELETE FROM schema_migrations WHERE version = 32",
        "DROP TABLE IF EXISTS routine_webhook_replays",
        "DROP TABLE IF EXISTS routine_runs",
        "DROP TABLE IF EXISTS routine_revisions",
        "DROP TABLE IF EXISTS routine_triggers",
        "DROP TABLE IF EXISTS routines",
        "DELETE FROM schema_migrations WHERE version = 31",
        "DROP TABLE IF EXISTS issue_work_products",
        "DROP TABLE IF EXISTS issue_attachments",
        "DELETE FROM schema_migrations WHERE version = 30",
        "DROP TABLE IF EXISTS board_api_key_companies",
        "DROP TABLE IF EXISTS board_api_keys",
        "DROP TABLE IF EXISTS invites",
        "DROP TABLE IF EXISTS company_memberships",
        "DROP TABLE IF EXISTS board_sessions",
        "DROP TABLE IF EXISTS board_users",
        "DELETE FROM schema_migrations WHERE version = 29",
        "DROP TABLE IF EXISTS company_secret_versions",
        "DROP TABLE IF EXISTS company_secrets",
        "DELETE FROM schema_migrations WHERE version = 28",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}
