//! `paperclip`: the control plane in one binary.
//!
//! `paperclip run` serves the API (and later the board UI) on loopback with an
//! embedded SQLite database in the data dir, or Postgres when `DATABASE_URL`
//! is set. Flags override the TOML config file, which overrides defaults; each
//! flag also reads a `PAPERCLIP_*` environment variable.

mod cli;
mod config;
mod db_cmd;
mod telemetry;

use std::time::Instant;

use anyhow::Context;
use clap::{CommandFactory, Parser, Subcommand};

use crate::config::{Config, RunArgs};

#[derive(Parser)]
#[command(
    name = "paperclip",
    version,
    about = "Run companies staffed by AI agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    client: cli::Global,
}

#[derive(Subcommand)]
enum Command {
    /// Start the server (API on http://127.0.0.1:3100 by default).
    Run(RunArgs),
    /// Print the example agent: a POSIX shell script (sh and curl only) that
    /// does one heartbeat; the sample company's agents run it.
    ExampleAgent,
    /// The database: `paperclip db backup` takes a backup now.
    #[command(subcommand)]
    Db(db_cmd::DbCommand),
    /// The command-line client of the API (company, agent, issue, run, …).
    #[command(flatten)]
    Client(cli::ClientCommand),
}

/// glibc serves every allocation above 128 KiB (a list page's rows and its
/// JSON body are ~700 KiB each) with a fresh `mmap` and returns it at `free`,
/// so each large response paid ~350 page faults and page clears: a fifth of
/// the server's CPU for a list of 1,000 tasks. Up to 4 MiB they now come from
/// the heap, which keeps up to 4 MiB free at its top instead of handing it back.
///
/// glibc also gives threads up to 8 arenas per core, each keeping its own free
/// memory: at a million tasks (SQLite) the server held 144 MiB after the scale
/// bench's measure phase, and 77 MiB with one arena per core, at the same
/// latencies. `MALLOC_ARENA_MAX` in the environment still decides if set.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_allocator() {
    const FOUR_MIB: libc::c_int = 4 << 20;
    let arenas = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(2, 64) as libc::c_int;
    // SAFETY: mallopt only sets allocator parameters; it is called before
    // the runtime starts any thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, FOUR_MIB);
        libc::mallopt(libc::M_TRIM_THRESHOLD, FOUR_MIB);
        if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() {}

fn main() -> anyhow::Result<()> {
    // Re-executed as a confined run's helper, this process is only that.
    paperclip_adapters::confine::enter();
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => {
            let config = Config::resolve(args)?;
            if let Some(url) = &config.ollama_url {
                paperclip_adapters::local_models::set_ollama_url(url);
            }
            tune_allocator();
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting the async runtime")?
                .block_on(run(config))
        }
        Command::ExampleAgent => {
            print!("{}", paperclip_server::sample::EXAMPLE_AGENT);
            Ok(())
        }
        Command::Db(cmd) => db_cmd::main(cmd),
        Command::Client(cmd) => cli::main(cli.client, cmd, Cli::command),
    }
}

async fn run(config: Config) -> anyhow::Result<()> {
    let started = Instant::now();
    let telemetry = telemetry::init(config.otlp.as_ref())?;

    std::fs::create_dir_all(&config.data_dir)
        .with_context(|| format!("creating data dir {}", config.data_dir.display()))?;
    private_dir(&config.data_dir)?;
    // Read from the environment only, never a flag: a flag would show the
    // key to anyone listing processes. Checked before anything is served.
    let vault = paperclip_runtime::vault::Vault::open(
        &config.data_dir,
        std::env::var(paperclip_runtime::vault::KEY_ENV)
            .ok()
            .as_deref(),
    )
    .context("opening the secrets master key")?;
    let database_url = config.database_url();
    let store = paperclip_store::Store::connect(&database_url)
        .await
        .with_context(|| format!("opening the {} database", config.database_label()))?;
    private_db_files(&config.data_dir);
    let listener = match tokio::net::TcpListener::bind((config.bind, config.port)).await {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            anyhow::bail!(port_taken(config.bind, config.port).await)
        }
        Err(e) => {
            return Err(e).with_context(|| format!("binding {}:{}", config.bind, config.port))
        }
    };
    let addr = listener.local_addr()?;
    let mut team = config.team.clone();
    if team.base_url.is_empty() {
        team.base_url = format!("http://{addr}");
    }
    let secret =
        paperclip_store::org::keys::instance_secret(&store, "run_token_hs256", random_secret)
            .await?;
    let runtime = paperclip_runtime::Runtime::new(paperclip_runtime::executor::RuntimeConfig {
        store: store.clone(),
        data_dir: config.data_dir.clone(),
        api_url: format!("http://{addr}"),
        token_secret: secret.into_bytes(),
        vault: std::sync::Arc::new(vault),
    });
    runtime
        .routine_clock()
        .set_interval(config.routine_interval);
    runtime.set_run_log_max_bytes(config.run_log_max_bytes);
    runtime.set_fleet(config.fleet.clone());
    if let Some(start) = config.test_clock {
        runtime.routine_clock().enable_test(start);
        println!("Test clock on: routines run at {start} until it is set");
    }
    // The process's life: the signal handler asks it to stop; the runtime's
    // loops and runs, the accept loop and live streams stop on it.
    let lifecycle = paperclip_runtime::Lifecycle::new();
    runtime
        .start(&lifecycle)
        .await
        .context("starting the heartbeat runtime")?;
    // Restart recovery is done (`start` returns after it).
    let ready_at = paperclip_store::now();
    let backups = paperclip_runtime::backups::Backups::new(
        config.backup_source(),
        config.backups.clone(),
        &config.data_dir,
    );
    if config.backups.enabled {
        lifecycle.spawn_until_stopped(backups.clone().run(store.clone()));
    }
    let state = paperclip_server::AppState {
        store: store.clone(),
        runtime,
        info: std::sync::Arc::new(paperclip_server::ServerInfo {
            version: env!("CARGO_PKG_VERSION"),
            started_at: paperclip_store::now(),
            data_dir: config.data_dir.display().to_string(),
            build: build_commit(),
            ready_at,
            backups: config.backups.enabled.then(|| backups.clone()),
            backup_service: Some(backups),
        }),
        security: std::sync::Arc::new(
            paperclip_server::Security::new(config.limits.clone(), config.public_url.as_deref())
                .with_team(team),
        ),
        lifecycle: lifecycle.clone(),
    };
    paperclip_server::push::start(&state);
    // The example agent is rewritten at every start, so sample agents keep
    // working after an upgrade or with the binary moved elsewhere.
    paperclip_server::sample::install_example_agent(&config.data_dir).with_context(|| {
        format!(
            "writing the example agent into {}",
            config.data_dir.display()
        )
    })?;
    let sample = if config.sample {
        let (company, created) =
            paperclip_server::sample::ensure_for_board(&store, &config.data_dir)
                .await
                .context("creating the sample company")?;
        Some((company.issue_prefix, created))
    } else {
        None
    };
    if state.security.team.authenticated() {
        println!(
            "Mode: authenticated ({}); people sign in at {}/login",
            state.security.team.exposure.as_str(),
            state.security.team.base_url
        );
        if let Some((url, expires)) = paperclip_server::bootstrap::invite_if_needed(&state).await? {
            println!("No administrator yet. Open this one-time link to become the first (expires {expires}):");
            println!("Bootstrap invite: {url}");
        }
    }
    // Shutdown is a command to the lifecycle: the signal handler gives it,
    // after the drain (if any) or a second signal, whichever comes first.
    let signalled = lifecycle.clone();
    let signal = shutdown_signal();
    let drain = config.drain;
    tokio::spawn(async move {
        signal.await;
        if !drain.is_zero() {
            signalled.drain();
            println!(
                "Draining for {} s before shutting down (a second signal stops now)",
                drain.as_secs()
            );
            tokio::select! {
                _ = tokio::time::sleep(drain) => {},
                _ = shutdown_signal() => {},
            }
        }
        signalled.shutdown();
    });
    // Tests and scripts wait for this line; keep its shape.
    println!("Paperclip listening on http://{addr}");
    if let Some((prefix, created)) = sample {
        let how = if created { "created" } else { "already there" };
        println!("Sample company ({how}): http://{addr}/{prefix}/dashboard");
        if created {
            println!("Its two agents work through three tasks for about ten seconds: open it now to watch.");
        }
    }
    println!(
        "Data: {} ({})",
        config.data_dir.display(),
        config.database_label()
    );
    println!("Ready in {} ms", started.elapsed().as_millis());
    let served = paperclip_server::serve(listener, state).await;
    // However serving ended, everything else stops too; the runs in flight
    // are dropped (their processes killed) and left to the next start's
    // recovery. The store closes once they have let go, or after the bound.
    lifecycle.shutdown();
    if !lifecycle.wait(SHUTDOWN_BOUND).await {
        tracing::warn!(
            tasks = lifecycle.tasks_left(),
            "the runtime had not stopped {} s after shutdown; closing the store anyway",
            SHUTDOWN_BOUND.as_secs()
        );
    }
    // After the runtime: the spans of runs stopped by the shutdown go too.
    if let Some(telemetry) = telemetry {
        telemetry.shutdown().await;
    }
    store.close().await;
    served?;
    Ok(())
}

/// The commit the build script recorded, if the source was a git checkout.
fn build_commit() -> Option<paperclip_server::BuildCommit> {
    let full_sha = env!("PAPERCLIP_GIT_SHA");
    if full_sha.len() != 40 || !full_sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let text = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Some(paperclip_server::BuildCommit {
        full_sha: full_sha.to_ascii_lowercase(),
        short_sha: text(env!("PAPERCLIP_GIT_SHORT_SHA")).unwrap_or_else(|| full_sha[..7].into()),
        branch: text(env!("PAPERCLIP_GIT_BRANCH")),
        subject: text(env!("PAPERCLIP_GIT_SUBJECT")).unwrap_or_else(|| "(no subject)".into()),
        committed_at: chrono::DateTime::parse_from_rfc3339(env!("PAPERCLIP_GIT_COMMITTED_AT"))
            .ok()
            .map(|t| {
                t.with_timezone(&chrono::Utc)
                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
            }),
    })
}

/// How long `main` waits for the runtime's loops and runs to stop after
/// serving ended (which itself drains requests for up to 3 s).
const SHUTDOWN_BOUND: std::time::Duration = std::time::Duration::from_secs(1);

/// A taken port in words: which, what answers there, and how to pick another.
async fn port_taken(bind: std::net::IpAddr, port: u16) -> String {
    use cli::doctor::{other_port_hint, probe, OnPort};
    let addr = std::net::SocketAddr::new(bind, port);
    let what = match probe(addr).await {
        OnPort::Ours(_) => {
            format!("Paperclip is already running there: open http://{addr}/ or stop it first")
        }
        OnPort::Other(Some(v)) => {
            format!("another server answers there (version {v}, perhaps the original Paperclip)")
        }
        OnPort::Other(None) | OnPort::Silent => "another program holds it".to_string(),
    };
    format!(
        "port {port} on {bind} is already in use: {what}.\nTo run beside it, {}.",
        other_port_hint(port)
    )
}

/// The data dir holds the database (with the run-token signing secret),
/// run logs and workspaces: only its owner may enter it. Existing dirs made
/// by older versions with 0755 are tightened in place.
fn private_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("making data dir {} private (0700)", dir.display()))
}

/// The SQLite files are created with the umask's mode; make them 0600 so
/// they stay private even if the dir's mode is loosened later.
fn private_db_files(dir: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    for name in ["paperclip.db", "paperclip.db-wal", "paperclip.db-shm"] {
        let path = dir.join(name);
        if path.exists() {
            if let Err(err) =
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            {
                tracing::warn!(path = %path.display(), error = %err, "could not make file private");
            }
        }
    }
}

/// 32 random bytes, hex: the signing key of run tokens, made once per instance.
fn random_secret() -> String {
    use std::io::Read;
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .expect("reading /dev/urandom");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Resolves on Ctrl-C or SIGTERM. The SIGTERM handler is installed when
/// this is called, not when first polled, so a SIGTERM sent as soon as the
/// server says it listens is never the default (an abrupt exit).
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    let terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    async move {
        let ctrl_c = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        let terminate = async {
            match terminate {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = ctrl_c => {},
            _ = terminate => {},
        }
    }
}
