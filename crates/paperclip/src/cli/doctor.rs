//! `paperclip doctor`: checks what `paperclip run` with the same flags would
//! need, and says for each problem how to fix it. It changes nothing: the
//! database is opened read-only (SQLite) or only connected to (Postgres), so
//! it is safe next to a running server. Exit code 1 when something is broken;
//! warnings (a missing optional agent CLI) do not fail it.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use crate::config::{Config, RunArgs};

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Ok,
    Warn,
    Broken,
}

struct Finding {
    level: Level,
    what: &'static str,
    said: String,
    fix: Option<String>,
}

fn ok(what: &'static str, said: impl Into<String>) -> Finding {
    Finding {
        level: Level::Ok,
        what,
        said: said.into(),
        fix: None,
    }
}
fn warn(what: &'static str, said: impl Into<String>, fix: impl Into<String>) -> Finding {
    Finding {
        level: Level::Warn,
        what,
        said: said.into(),
        fix: Some(fix.into()),
    }
}
fn broken(what: &'static str, said: impl Into<String>, fix: impl Into<String>) -> Finding {
    Finding {
        level: Level::Broken,
        what,
        said: said.into(),
        fix: Some(fix.into()),
    }
}

pub async fn run(args: RunArgs, as_json: bool) -> anyhow::Result<i32> {
    let mut findings = vec![ok(
        "paperclip",
        format!(
            "version {} (database schema {})",
            env!("CARGO_PKG_VERSION"),
            paperclip_store::schema_version()
        ),
    )];
    match Config::resolve(args) {
        Err(e) => findings.push(broken(
            "configuration",
            format!("{e:#}"),
            "correct the flag, PAPERCLIP_* variable or config file named above",
        )),
        Ok(config) => {
            findings.push(data_dir(&config.data_dir));
            findings.push(database(&config).await);
            findings.push(port(&config).await);
        }
    }
    for (cli, adapter) in [
        ("claude", "claude_local"),
        ("codex", "codex_local"),
        ("opencode", "opencode_local"),
        ("gemini", "gemini_local"),
    ] {
        findings.push(agent_cli(cli, adapter).await);
    }
    let failed = findings.iter().any(|f| f.level == Level::Broken);
    if as_json {
        let list: Vec<Value> = findings
            .iter()
            .map(|f| {
                json!({
                    "check": f.what,
                    "status": match f.level { Level::Ok => "ok", Level::Warn => "warn", Level::Broken => "broken" },
                    "message": f.said,
                    "fix": f.fix,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({ "ok": !failed, "checks": list }))?
        );
    } else {
        for f in &findings {
            let tag = match f.level {
                Level::Ok => "ok  ",
                Level::Warn => "warn",
                Level::Broken => "FAIL",
            };
            println!("{tag}  {:<13} {}", f.what, f.said);
            if let Some(fix) = &f.fix {
                println!("      {:<13} fix: {fix}", "");
            }
        }
        let broken = findings.iter().filter(|f| f.level == Level::Broken).count();
        println!(
            "\n{}",
            if broken == 0 {
                "Nothing is broken.".to_string()
            } else {
                format!("{broken} problem(s) to fix before `paperclip run` will work.")
            }
        );
    }
    Ok(if failed { 1 } else { 0 })
}

/// Writable is what matters: the server writes its database, run logs and
/// workspaces there. A dir that does not exist yet is fine when it can be made.
fn data_dir(dir: &Path) -> Finding {
    if !dir.exists() {
        let parent = dir.ancestors().skip(1).find(|p| p.exists());
        return match parent {
            Some(p) if writable(p) => ok(
                "data dir",
                format!("{} (made on first `paperclip run`)", dir.display()),
            ),
            _ => broken(
                "data dir",
                format!("{} does not exist and cannot be made", dir.display()),
                "pass --data-dir (or PAPERCLIP_DATA_DIR) with a dir you can write",
            ),
        };
    }
    if !dir.is_dir() {
        return broken(
            "data dir",
            format!("{} is not a directory", dir.display()),
            "point --data-dir at a directory",
        );
    }
    if !writable(dir) {
        return broken(
            "data dir",
            format!("{} is not writable", dir.display()),
            "chown/chmod it for this user, or pass another --data-dir",
        );
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0);
    if mode & 0o077 != 0 {
        return warn(
            "data dir",
            format!(
                "{} is writable but open to others (mode {mode:o})",
                dir.display()
            ),
            "`paperclip run` makes it 0700; or chmod 700 it now",
        );
    }
    ok("data dir", format!("{} is writable", dir.display()))
}

fn writable(dir: &Path) -> bool {
    let probe = dir.join(format!(".paperclip-doctor-{}", std::process::id()));
    let made = std::fs::write(&probe, b"").is_ok();
    let _ = std::fs::remove_file(&probe);
    made
}

async fn database(config: &Config) -> Finding {
    use sqlx::Connection;
    let url = config.database_url();
    if url.starts_with("postgres") {
        let connect = sqlx::postgres::PgConnection::connect(&url);
        return match tokio::time::timeout(Duration::from_secs(10), connect).await {
            Ok(Ok(mut conn)) => {
                let version: Result<(String,), _> = sqlx::query_as("SHOW server_version")
                    .fetch_one(&mut conn)
                    .await;
                let _ = conn.close().await;
                let version = version.map(|v| v.0).unwrap_or_else(|_| "?".into());
                ok("database", format!("postgres {version} connects"))
            }
            Ok(Err(e)) => broken(
                "database",
                format!("postgres does not accept the connection: {e}"),
                "check DATABASE_URL (host, port, user, password, database) and that Postgres runs",
            ),
            Err(_) => broken(
                "database",
                "postgres did not answer in 10 s",
                "check the host and port in DATABASE_URL and any firewall between",
            ),
        };
    }
    let file = config.data_dir.join("paperclip.db");
    if !file.exists() {
        return ok(
            "database",
            format!("sqlite {} (made on first `paperclip run`)", file.display()),
        );
    }
    let ro = format!("sqlite://{}?mode=ro", file.display());
    let opened = async {
        let mut conn = sqlx::sqlite::SqliteConnection::connect(&ro).await?;
        let version: Result<(i64,), _> =
            sqlx::query_as("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
                .fetch_one(&mut conn)
                .await;
        let _ = conn.close().await;
        Ok::<_, sqlx::Error>(version.map(|v| v.0).unwrap_or(0))
    };
    match opened.await {
        Ok(v) if v > paperclip_store::schema_version() => warn(
            "database",
            format!(
                "sqlite {} has schema {v}, newer than this paperclip knows",
                file.display()
            ),
            "run the newer paperclip that wrote it, or restore a backup made for this version",
        ),
        Ok(v) => ok(
            "database",
            format!("sqlite {} opens (schema {v})", file.display()),
        ),
        Err(e) => broken(
            "database",
            format!("sqlite {} does not open: {e}", file.display()),
            "check the file's owner and mode; restore it from a backup if it is damaged",
        ),
    }
}

/// What answers HTTP on a taken port.
pub(crate) enum OnPort {
    /// This Paperclip (its health answer carries `serverVersion` and the
    /// database schema, which upstream's lacks; or, signed out of an
    /// authenticated instance, its API lists our `/api/sample-company`).
    Ours(Option<String>),
    /// Another HTTP server; upstream Paperclip answers `/api/health` with
    /// its version (`2026.916.1`).
    Other(Option<String>),
    /// Nothing that speaks HTTP within 3 s.
    Silent,
}

pub(crate) async fn probe(addr: std::net::SocketAddr) -> OnPort {
    let Ok(client) = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
    else {
        return OnPort::Silent;
    };
    // Some(None): an HTTP answer that is not a JSON success.
    let get = |path: &str| {
        let req = client.get(format!("http://{addr}{path}"));
        async move {
            match req.send().await {
                Ok(r) if r.status().is_success() => Some(r.json::<Value>().await.ok()),
                Ok(_) => Some(None),
                Err(_) => None,
            }
        }
    };
    let health = match get("/api/health").await {
        None => return OnPort::Silent,
        Some(None) => return OnPort::Other(None),
        Some(Some(health)) => health,
    };
    let text = |v: &Value| v.as_str().map(str::to_string);
    if health["serverVersion"].is_string() && health["database"]["schemaVersion"].is_i64() {
        return OnPort::Ours(text(&health["serverVersion"]));
    }
    if health["version"].is_null() {
        let ours = get("/api/openapi.json")
            .await
            .flatten()
            .is_some_and(|spec| spec["paths"]["/api/sample-company"].is_object());
        if ours {
            return OnPort::Ours(None);
        }
    }
    OnPort::Other(text(&health["version"]))
}

/// How to run on another port, in every way the config is read.
pub(crate) fn other_port_hint(port: u16) -> String {
    let next = port.checked_add(1).unwrap_or(3101);
    format!(
        "pick another port: `paperclip run --port {next}` (or PAPERCLIP_PORT={next}, or `port = {next}` in the config file)"
    )
}

/// Free is good; this Paperclip already running there is fine too; any
/// other server there (upstream Paperclip included) means `paperclip run`
/// will fail.
async fn port(config: &Config) -> Finding {
    let addr = std::net::SocketAddr::new(config.bind, config.port);
    if config.port == 0 {
        return ok("port", "0: a free one is picked at start");
    }
    if std::net::TcpListener::bind(addr).is_ok() {
        return ok("port", format!("{addr} is free"));
    }
    let fix = format!("stop that program, or {}", other_port_hint(config.port));
    match probe(addr).await {
        OnPort::Ours(v) if v.as_deref().is_none_or(|v| v == env!("CARGO_PKG_VERSION")) => ok(
            "port",
            format!("{addr}: this Paperclip is already running there"),
        ),
        OnPort::Ours(v) => warn(
            "port",
            format!(
                "{addr}: a Paperclip of another version ({}) is running there",
                v.unwrap_or_default()
            ),
            format!("stop it before `paperclip run`, or {}", other_port_hint(config.port)),
        ),
        OnPort::Other(Some(v)) => broken(
            "port",
            format!("{addr} is taken by another server (it answers /api/health as version {v}, perhaps the original Paperclip), not this Paperclip"),
            fix,
        ),
        OnPort::Other(None) | OnPort::Silent => broken(
            "port",
            format!("{addr} is taken by a program that is not this Paperclip"),
            fix,
        ),
    }
}

/// The coding-agent CLIs are optional: each one missing only rules out its
/// adapter, so it is a warning.
async fn agent_cli(cli: &'static str, adapter: &str) -> Finding {
    let what = cli;
    let mut cmd = tokio::process::Command::new(cli);
    cmd.arg("--version")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(10), cmd.output()).await;
    match output {
        Ok(Ok(out)) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let first = text.lines().next().unwrap_or("").trim();
            ok(
                what,
                format!(
                    "{} ({adapter} agents can run)",
                    if first.is_empty() { "found" } else { first }
                ),
            )
        }
        Ok(Ok(out)) => warn(
            what,
            format!("`{cli} --version` failed ({})", out.status),
            format!("reinstall {cli}, or do not use the {adapter} adapter"),
        ),
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => warn(
            what,
            "not on PATH",
            format!("install {cli} to hire {adapter} agents (others work without it)"),
        ),
        Ok(Err(e)) => warn(
            what,
            format!("cannot run: {e}"),
            format!("check {cli}'s permissions"),
        ),
        Err(_) => warn(
            what,
            "`--version` did not finish in 10 s",
            format!("check that {cli} starts"),
        ),
    }
}
