//! The server process: the built binary started on a data dir and a
//! database (a fresh pair, or a stopped server's for a restart), and stopped
//! (SIGTERM as a service manager would, SIGKILL as a crash, and on drop).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::pg::{create_pg_database, drop_pg_database};
use super::{try_until, TestServer};

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
            _ => {
                super::sqlite::seed_sqlite(&data_dir).await;
                None
            }
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

    /// A server on `data_dir` and an existing database shared with other
    /// instances (see `common::fleet`).
    pub async fn start_instance(
        data_dir: PathBuf,
        database_url: String,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> TestServer {
        TestServer::spawn(data_dir, Some(database_url), 0, extra, env).await
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

    /// Sends SIGTERM without waiting (a drain keeps the server up a while).
    pub fn sigterm(&self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
    }

    /// Waits up to `secs` for the server to exit; `true` if it did.
    pub async fn exited_within(&mut self, secs: u64) -> bool {
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
