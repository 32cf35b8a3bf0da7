//! Configuration: flag > environment variable > TOML file > default.

use std::net::IpAddr;
use std::path::PathBuf;

use anyhow::{bail, Context};
use paperclip_core::team::{DeploymentMode, Exposure};
use serde::Deserialize;

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Port to listen on (0 picks a free one).
    #[arg(long, env = "PAPERCLIP_PORT")]
    port: Option<u16>,
    /// Address to bind. Local trusted mode allows loopback only.
    #[arg(long, env = "PAPERCLIP_BIND")]
    bind: Option<IpAddr>,
    /// Where the embedded database and run logs live.
    #[arg(long, env = "PAPERCLIP_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// A TOML file with `port`, `bind`, `data_dir`, `database_url`,
    /// `otlp_endpoint` and `otel_service_name`.
    #[arg(long, env = "PAPERCLIP_CONFIG")]
    config: Option<PathBuf>,
    /// Postgres URL (`postgres://...`); without it the embedded SQLite is used.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// The URL people reach this server at when it is not a loopback address
    /// (e.g. behind a reverse proxy); its host is accepted in `Host` and its
    /// origin in `Origin`.
    #[arg(long, env = "PAPERCLIP_PUBLIC_URL")]
    public_url: Option<String>,
    /// Seconds a client has to send a request's headers, and the longest an
    /// idle keep-alive connection is kept.
    #[arg(long, env = "PAPERCLIP_HEADER_TIMEOUT", default_value_t = 20.0)]
    header_timeout: f64,
    /// Seconds a client has to send a whole request body.
    #[arg(long, env = "PAPERCLIP_BODY_TIMEOUT", default_value_t = 30.0)]
    body_timeout: f64,
    /// Live event subscribers (SSE and WebSocket) allowed per company.
    #[arg(long, env = "PAPERCLIP_MAX_SUBSCRIBERS", default_value_t = 1000)]
    max_subscribers: usize,
    /// Open connections served (live streams included); past it the
    /// longest-idle connection is closed, then a small reserve is served one
    /// request each, then new ones get 503. Default: from the descriptor
    /// limit (soft limit less an eighth, at least 64, for everything else).
    #[arg(long, env = "PAPERCLIP_MAX_CONNECTIONS")]
    max_connections: Option<usize>,
    /// Largest issue attachment accepted, in bytes (default 10 MiB).
    #[arg(long, env = "PAPERCLIP_ATTACHMENT_MAX_BYTES", default_value_t = paperclip_core::attachment::DEFAULT_MAX_BYTES)]
    attachment_max_bytes: u64,
    /// Most bytes a run's log keeps on disk (default 16 MiB): past it the
    /// log keeps its first half and its last part, with a line saying how
    /// much was left out between.
    #[arg(long, env = "PAPERCLIP_RUN_LOG_MAX_BYTES", default_value_t = paperclip_runtime::logs::DEFAULT_MAX_BYTES)]
    run_log_max_bytes: u64,
    /// This instance's id among several on one Postgres database (a pod's
    /// name). Default: an id made at the first start and kept in the data
    /// dir. Two instances must never share one.
    #[arg(long, env = "PAPERCLIP_INSTANCE_ID")]
    instance_id: Option<String>,
    /// Seconds an instance's lease lasts without renewal (renewed every
    /// sixth of it): a dead instance's runs are taken over by a survivor
    /// within it plus one sweep.
    #[arg(long, env = "PAPERCLIP_INSTANCE_LEASE_SECS", default_value_t = 30)]
    instance_lease_secs: u64,
    /// Where new attachments are stored: `local_disk` (the data dir) or `s3`.
    #[arg(long, env = "PAPERCLIP_STORAGE_PROVIDER", default_value = "local_disk")]
    storage_provider: String,
    /// S3 bucket (with `--storage-provider s3`).
    #[arg(long, env = "PAPERCLIP_STORAGE_S3_BUCKET", default_value = "paperclip")]
    storage_s3_bucket: String,
    #[arg(long, env = "PAPERCLIP_STORAGE_S3_REGION", default_value = "us-east-1")]
    storage_s3_region: String,
    /// An S3-compatible endpoint (MinIO, R2, ...); AWS's when absent.
    #[arg(long, env = "PAPERCLIP_STORAGE_S3_ENDPOINT")]
    storage_s3_endpoint: Option<String>,
    /// Prepended to every object key.
    #[arg(long, env = "PAPERCLIP_STORAGE_S3_PREFIX", default_value = "")]
    storage_s3_prefix: String,
    /// `{endpoint}/{bucket}/{key}` instead of `{bucket}.{host}/{key}`.
    #[arg(long, env = "PAPERCLIP_STORAGE_S3_FORCE_PATH_STYLE")]
    storage_s3_force_path_style: bool,
    /// `local_trusted` (one person at this machine, loopback only, no
    /// sign-in) or `authenticated` (people sign in; any address may be bound).
    #[arg(long, env = "PAPERCLIP_DEPLOYMENT_MODE", value_parser = parse_mode)]
    deployment_mode: Option<DeploymentMode>,
    /// Who reaches an authenticated instance: `private` (a private network)
    /// or `public` (the internet; needs --public-url).
    #[arg(long, env = "PAPERCLIP_DEPLOYMENT_EXPOSURE", value_parser = parse_exposure)]
    exposure: Option<Exposure>,
    /// Host names served besides loopback and the public URL's (comma-separated),
    /// e.g. a tailnet name of an authenticated private instance.
    #[arg(long, env = "PAPERCLIP_ALLOWED_HOSTNAMES", value_delimiter = ',')]
    allowed_hostnames: Vec<String>,
    /// Accounts only through invites: nobody may sign up on their own.
    #[arg(long, env = "PAPERCLIP_AUTH_DISABLE_SIGN_UP")]
    disable_sign_up: bool,
    /// Serve MCP (`/api/mcp`) on an authenticated instance: people's assistants act as them.
    #[arg(long, env = "PAPERCLIP_MCP_ENABLED")]
    mcp: bool,
    /// Seconds a sign-in lasts (default 7 days).
    #[arg(long, env = "PAPERCLIP_SESSION_TTL", default_value_t = 7 * 24 * 3600)]
    session_ttl: u64,
    /// Create the sample company (two script agents working on a few tasks,
    /// no model key needed) unless it exists already.
    #[arg(long)]
    sample: bool,
    /// Seconds between the routine scheduler's passes over due schedules.
    #[arg(
        long,
        env = "PAPERCLIP_ROUTINE_SCHEDULER_INTERVAL",
        default_value_t = 30
    )]
    routine_interval: u64,
    /// Seconds to drain on SIGTERM before shutting down: readiness
    /// (`/api/health/ready`) answers 503, no new run is claimed, requests
    /// are still served. 0 (the default) stops at once, as Ctrl-C should; a
    /// Deployment of several replicas sets it longer than its probe period.
    #[arg(long, env = "PAPERCLIP_DRAIN_SECONDS", default_value_t = 0)]
    drain_seconds: u64,
    /// Where to look for Ollama on this machine: its models are offered
    /// when hiring on a local model (default http://127.0.0.1:11434).
    #[arg(long, env = "PAPERCLIP_OLLAMA_URL")]
    ollama_url: Option<String>,
    /// Send OpenTelemetry traces (a span per HTTP request and per run) to
    /// this OTLP/HTTP collector base URL, e.g. http://127.0.0.1:4318 (spans
    /// go to `/v1/traces` under it). Off when unset. Without the flag,
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the full URL) or
    /// OTEL_EXPORTER_OTLP_ENDPOINT (a base URL) is used;
    /// OTEL_SDK_DISABLED=true turns it off.
    #[arg(long)]
    otlp_endpoint: Option<String>,
    /// The `service.name` of exported traces (default `paperclip`).
    #[arg(long, env = "OTEL_SERVICE_NAME")]
    otel_service_name: Option<String>,
    /// Automatic database backups (`true` or `false`): SQLite is copied
    /// (VACUUM INTO), Postgres dumped with pg_dump, which must then be
    /// installed. `paperclip db backup` takes one at any time.
    #[arg(
        long,
        env = "PAPERCLIP_DB_BACKUP_ENABLED",
        default_value_t = true,
        action = clap::ArgAction::Set,
        value_name = "BOOL"
    )]
    db_backup: bool,
    /// Where backups go [default: `backups` in the data dir].
    #[arg(long, env = "PAPERCLIP_DB_BACKUP_DIR")]
    db_backup_dir: Option<PathBuf>,
    /// Minutes between automatic backups (default a day). One is taken at
    /// start when the newest is older, once the instance holds a company.
    #[arg(
        long,
        env = "PAPERCLIP_DB_BACKUP_INTERVAL_MINUTES",
        default_value_t = 24 * 60
    )]
    db_backup_interval_minutes: u64,
    /// How many backups are kept: the oldest beyond it are deleted.
    #[arg(long, env = "PAPERCLIP_DB_BACKUP_KEEP", default_value_t = paperclip_runtime::backups::DEFAULT_KEEP)]
    db_backup_keep: usize,
    /// Tests only: routines run on a clock that starts at this RFC 3339
    /// time and moves only when set through `POST /api/instance/test-clock`.
    /// No environment variable, and refused in authenticated mode, so a
    /// deployment cannot turn it on by accident.
    #[arg(long, hide = true)]
    test_clock: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    port: Option<u16>,
    bind: Option<IpAddr>,
    data_dir: Option<PathBuf>,
    database_url: Option<String>,
    otlp_endpoint: Option<String>,
    otel_service_name: Option<String>,
}

#[derive(Debug)]
pub struct Config {
    pub port: u16,
    pub bind: IpAddr,
    pub data_dir: PathBuf,
    postgres_url: Option<String>,
    pub public_url: Option<String>,
    pub limits: paperclip_server::Limits,
    pub sample: bool,
    pub team: paperclip_server::people::TeamConfig,
    pub routine_interval: std::time::Duration,
    pub test_clock: Option<chrono::DateTime<chrono::Utc>>,
    pub run_log_max_bytes: u64,
    pub fleet: paperclip_runtime::fleet::FleetSettings,
    /// Where traces go; `None`: no exporter.
    pub otlp: Option<crate::telemetry::Otlp>,
    pub drain: std::time::Duration,
    /// `--ollama-url`: where Ollama is detected.
    pub ollama_url: Option<String>,
    pub backups: paperclip_runtime::backups::Settings,
}

impl Config {
    pub fn resolve(args: RunArgs) -> anyhow::Result<Config> {
        let s3 = s3_config(&args)?;
        let file = match &args.config {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading config {}", path.display()))?;
                toml::from_str::<FileConfig>(&text)
                    .with_context(|| format!("parsing config {}", path.display()))?
            }
            None => FileConfig::default(),
        };
        let bind = args
            .bind
            .or(file.bind)
            .unwrap_or(IpAddr::from([127, 0, 0, 1]));
        let mode = args.deployment_mode.unwrap_or(DeploymentMode::LocalTrusted);
        let exposure = args.exposure.unwrap_or(Exposure::Private);
        if mode == DeploymentMode::LocalTrusted && !bind.is_loopback() {
            bail!(
                "refusing to bind {bind}: local trusted mode gives every caller board access, \
                 so it listens on loopback only (127.0.0.1 or ::1); to serve other machines, \
                 start with --deployment-mode authenticated"
            );
        }
        if mode == DeploymentMode::LocalTrusted && exposure == Exposure::Public {
            bail!("--exposure public needs --deployment-mode authenticated");
        }
        if exposure == Exposure::Public && args.public_url.is_none() {
            bail!("--exposure public needs --public-url (the https:// address people use)");
        }
        let data_dir = match args.data_dir.or(file.data_dir) {
            Some(dir) => dir,
            None => default_data_dir()?,
        };
        let postgres_url = args
            .database_url
            .or(file.database_url)
            .filter(|u| !u.is_empty());
        if let Some(url) = &postgres_url {
            if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
                bail!("DATABASE_URL must be a postgres:// URL (SQLite is the default without it)");
            }
        }
        if let Some(url) = &args.public_url {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                bail!("--public-url must be an http:// or https:// URL");
            }
        }
        let seconds = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 && v <= 3600.0 {
                Ok(std::time::Duration::from_secs_f64(v))
            } else {
                Err(anyhow::anyhow!(
                    "--{name} must be between 0 and 3600 seconds"
                ))
            }
        };
        let limits = paperclip_server::Limits {
            header_timeout: seconds("header-timeout", args.header_timeout)?,
            body_timeout: seconds("body-timeout", args.body_timeout)?,
            max_subscribers_per_company: args.max_subscribers.max(1),
            attachment_max_bytes: attachment_max(args.attachment_max_bytes)?,
            s3,
            max_connections: match args.max_connections {
                Some(0) => bail!("--max-connections must be at least 1"),
                other => other,
            },
        };
        if args.session_ttl < 1 || args.session_ttl > 365 * 24 * 3600 {
            bail!("--session-ttl must be between 1 second and a year");
        }
        let team = paperclip_server::people::TeamConfig {
            mode,
            exposure,
            allowed_hosts: args
                .allowed_hostnames
                .iter()
                .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect(),
            sign_up: !args.disable_sign_up,
            mcp: args.mcp,
            session_ttl: std::time::Duration::from_secs(args.session_ttl),
            secure_cookies: args
                .public_url
                .as_deref()
                .is_some_and(|u| u.starts_with("https://")),
            base_url: args
                .public_url
                .as_deref()
                .map(|u| u.trim_end_matches('/').to_string())
                .unwrap_or_default(),
        };
        let log_min = paperclip_runtime::logs::MIN_MAX_BYTES;
        if let Some(id) = &args.instance_id {
            if !paperclip_runtime::fleet::valid_id(id) {
                bail!("--instance-id must be 1 to 200 printable characters without spaces");
            }
        }
        let lease_min = paperclip_runtime::fleet::MIN_LEASE.as_secs();
        if !(lease_min..=3600).contains(&args.instance_lease_secs) {
            bail!("--instance-lease-secs must be between {lease_min} and 3600");
        }
        if !(log_min..=1 << 40).contains(&args.run_log_max_bytes) {
            bail!(
                "--run-log-max-bytes must be between {log_min} (64 KiB) and 1099511627776 (1 TiB)"
            );
        }
        if !(1..=86_400).contains(&args.routine_interval) {
            bail!("--routine-interval must be between 1 and 86400 seconds");
        }
        if !(1..=30 * 24 * 60).contains(&args.db_backup_interval_minutes) {
            bail!("--db-backup-interval-minutes must be between 1 and 43200 (30 days)");
        }
        if !(1..=1000).contains(&args.db_backup_keep) {
            bail!("--db-backup-keep must be between 1 and 1000");
        }
        if args.drain_seconds > 3600 {
            bail!("--drain-seconds must be between 0 and 3600");
        }
        let test_clock = match &args.test_clock {
            None => None,
            Some(_) if mode != DeploymentMode::LocalTrusted => {
                bail!("--test-clock is for tests: refused in authenticated mode")
            }
            Some(t) => Some(
                chrono::DateTime::parse_from_rfc3339(t)
                    .map_err(|_| anyhow::anyhow!("--test-clock must be an RFC 3339 time"))?
                    .with_timezone(&chrono::Utc),
            ),
        };
        let otlp = crate::telemetry::resolve(crate::telemetry::OtlpSources {
            flag: args.otlp_endpoint,
            file: file.otlp_endpoint,
            service_name: args.otel_service_name.or(file.otel_service_name),
            ..crate::telemetry::OtlpSources::from_env()
        })?;
        Ok(Config {
            otlp,
            team,
            port: args.port.or(file.port).unwrap_or(3100),
            bind,
            postgres_url,
            public_url: args.public_url,
            limits,
            sample: args.sample,
            routine_interval: std::time::Duration::from_secs(args.routine_interval),
            test_clock,
            run_log_max_bytes: args.run_log_max_bytes,
            fleet: paperclip_runtime::fleet::FleetSettings {
                id: args.instance_id,
                lease: std::time::Duration::from_secs(args.instance_lease_secs),
            },
            drain: std::time::Duration::from_secs(args.drain_seconds),
            ollama_url: args.ollama_url,
            backups: paperclip_runtime::backups::Settings {
                enabled: args.db_backup,
                dir: args
                    .db_backup_dir
                    .unwrap_or_else(|| data_dir.join(paperclip_runtime::backups::DEFAULT_DIR)),
                interval: std::time::Duration::from_secs(args.db_backup_interval_minutes * 60),
                keep: args.db_backup_keep,
            },
            data_dir,
        })
    }

    pub fn database_url(&self) -> String {
        match &self.postgres_url {
            Some(url) => url.clone(),
            None => format!(
                "sqlite://{}?mode=rwc",
                self.data_dir.join("paperclip.db").display()
            ),
        }
    }

    /// What automatic backups copy: the SQLite file or the Postgres database.
    pub fn backup_source(&self) -> paperclip_runtime::backups::Source {
        match &self.postgres_url {
            Some(url) => paperclip_runtime::backups::Source::Postgres { url: url.clone() },
            None => paperclip_runtime::backups::Source::Sqlite(self.data_dir.join("paperclip.db")),
        }
    }

    /// How the database is named to a person: never with its password.
    pub fn database_label(&self) -> String {
        match &self.postgres_url {
            Some(_) => "postgres".to_string(),
            None => format!("sqlite {}", self.data_dir.join("paperclip.db").display()),
        }
    }
}

fn default_data_dir() -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME").context("HOME is not set; pass --data-dir")?;
    Ok(PathBuf::from(home)
        .join(".paperclip")
        .join("instances")
        .join("default"))
}

fn parse_mode(text: &str) -> Result<DeploymentMode, String> {
    DeploymentMode::parse(text).ok_or_else(|| {
        format!("'{text}' is not a deployment mode: use local_trusted or authenticated")
    })
}

fn parse_exposure(text: &str) -> Result<Exposure, String> {
    Exposure::parse(text)
        .ok_or_else(|| format!("'{text}' is not an exposure: use private or public"))
}

/// Uploads are held in memory while they are checked, so the limit is
/// bounded (1 GiB) as well as positive.
fn attachment_max(bytes: u64) -> anyhow::Result<u64> {
    if bytes == 0 || bytes > 1024 * 1024 * 1024 {
        bail!("--attachment-max-bytes must be between 1 and 1073741824 (1 GiB)");
    }
    Ok(bytes)
}

/// The bucket new attachments go to, when `--storage-provider s3`; its
/// credentials come from the environment only (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`), never from flags.
fn s3_config(args: &RunArgs) -> anyhow::Result<Option<paperclip_server::storage_s3::S3Config>> {
    match args.storage_provider.as_str() {
        "local_disk" => return Ok(None),
        "s3" => {}
        other => bail!("--storage-provider must be local_disk or s3, not {other:?}"),
    }
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let (Some(access_key_id), Some(secret_access_key)) =
        (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY"))
    else {
        bail!("--storage-provider s3 needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment");
    };
    if let Some(e) = &args.storage_s3_endpoint {
        if !(e.starts_with("http://") || e.starts_with("https://")) {
            bail!("--storage-s3-endpoint must be an http:// or https:// URL");
        }
    }
    Ok(Some(paperclip_server::storage_s3::S3Config {
        bucket: args.storage_s3_bucket.clone(),
        region: args.storage_s3_region.clone(),
        endpoint: args.storage_s3_endpoint.clone(),
        prefix: args.storage_s3_prefix.clone(),
        force_path_style: args.storage_s3_force_path_style,
        access_key_id,
        secret_access_key,
        session_token: env("AWS_SESSION_TOKEN"),
    }))
}
