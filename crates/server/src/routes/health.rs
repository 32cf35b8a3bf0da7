use axum::extract::State;
use axum::Json;
use paperclip_core::team::{DeploymentMode, Exposure};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(health))
        .routes(routes!(readiness))
        .routes(routes!(quiescence))
        .routes(routes!(database_backup))
}

/// A backup taken on request, in the original's answer shape (its
/// `retention` policy object is left out: ours keeps the newest N).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ManualBackup {
    backup_file: String,
    size_bytes: u64,
    /// Older backups retention deleted after this one.
    pruned_count: usize,
    /// Always `manual`.
    trigger: &'static str,
    backup_dir: String,
    started_at: String,
    finished_at: String,
    duration_ms: u64,
}

/// Takes a database backup now (the instance's administrator; the local
/// board). 409 while another is being written; a failure is a 502 naming
/// its cause (and is what health's `lastFailure` then shows).
#[utoipa::path(post, path = "/api/instance/database-backups", tag = "health",
    responses((status = 201, body = ManualBackup),
        (status = 403, description = "Not an instance administrator", body = crate::error::ErrorBody),
        (status = 409, description = "A backup is already being written", body = crate::error::ErrorBody),
        (status = 502, description = "The backup failed", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn database_backup(
    State(app): State<AppState>,
    caller: crate::auth::Caller,
) -> Result<(axum::http::StatusCode, Json<ManualBackup>), crate::error::ApiError> {
    caller.require_instance_admin()?;
    let Some(backups) = app.info.backup_service.clone() else {
        return Err(crate::error::ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "This instance takes no database backups",
        ));
    };
    let started = std::time::Instant::now();
    let started_at = paperclip_store::now();
    let taken = backups.try_take().await.ok_or_else(|| {
        crate::error::ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "Database backup already in progress",
        )
    })?;
    let taken = taken.map_err(|e| {
        tracing::warn!(error = %format!("{e:#}"), "a requested database backup failed");
        crate::error::ApiError::new(
            axum::http::StatusCode::BAD_GATEWAY,
            format!("The database backup failed: {e:#}"),
        )
    })?;
    Ok((
        axum::http::StatusCode::CREATED,
        Json(ManualBackup {
            backup_file: taken.path.display().to_string(),
            size_bytes: taken.size_bytes,
            pruned_count: taken.deleted.len(),
            trigger: "manual",
            backup_dir: backups.settings().dir.display().to_string(),
            started_at,
            finished_at: paperclip_store::now(),
            duration_ms: started.elapsed().as_millis() as u64,
        }),
    ))
}

/// Whether the instance has its first administrator yet (always `ready` in
/// local trusted mode, which has none).
#[derive(Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
enum BootstrapStatus {
    Ready,
    BootstrapPending,
}

/// What the health check answers: everything to the board; the deployment
/// and bootstrap facts, the commit and the backups' warnings (without paths
/// or errors) to a caller not signed in to an authenticated instance.
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
pub enum HealthAnswer {
    Full(Box<Health>),
    Public(PublicHealth),
}

// Fields of both in name order: the JSON objects these replaced serialized
// their keys sorted. Upstream's `nativeRecovery` (counts of its native
// runner's executions per recovery state) is left out: we have no native
// runner, and our restart recovery (`paperclip_runtime::recovery`) settles
// each lost run at once, as upstream's generic orphan reaper does, which its
// health answer does not report either.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    auth_ready: bool,
    bootstrap_invite_active: bool,
    bootstrap_status: BootstrapStatus,
    /// The commit the binary was built from, when known.
    commit: Option<String>,
    database: DatabaseInfo,
    #[serde(skip_serializing_if = "Option::is_none")]
    database_backup: Option<DatabaseBackup>,
    #[schema(schema_with = exposure_schema)]
    deployment_exposure: Exposure,
    #[schema(schema_with = mode_schema)]
    deployment_mode: DeploymentMode,
    features: Features,
    local_ai_login_supported: bool,
    server_info: ServerInfoBody,
    server_version: &'static str,
    startup_recovery: StartupRecovery,
    status: &'static str,
    version: &'static str,
    /// The backups' warnings again, when there are any.
    #[serde(skip_serializing_if = "Option::is_none")]
    warnings: Option<Vec<BackupWarning>>,
}

// No other keys: the schema must tell this answer from the full one.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PublicHealth {
    bootstrap_invite_active: bool,
    bootstrap_status: BootstrapStatus,
    commit: Option<String>,
    /// Whether backups are on and well, without their folder or errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    database_backup: Option<RedactedBackup>,
    #[schema(schema_with = exposure_schema)]
    deployment_exposure: Exposure,
    #[schema(schema_with = mode_schema)]
    deployment_mode: DeploymentMode,
    local_ai_login_supported: bool,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    warnings: Option<Vec<BackupWarning>>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Features {
    company_deletion_enabled: bool,
}

/// Start-up's phase. Restart recovery runs before the listener is bound, so
/// whoever can ask finds it `ready`, since `updatedAt`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct StartupRecovery {
    phase: &'static str,
    updated_at: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct DatabaseBackup {
    enabled: bool,
    /// `ok`, or `warning` when `warnings` has any.
    status: &'static str,
    backup_dir: String,
    /// The age past which the newest backup is stale.
    max_age_hours: u64,
    latest_backup: Option<LatestBackup>,
    last_failure: Option<LastFailure>,
    warnings: Vec<BackupWarning>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct LatestBackup {
    name: String,
    path: String,
    mtime: String,
    age_hours: f64,
    size_bytes: u64,
}

/// A backup failed and none has succeeded since.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct LastFailure {
    /// The failure marker in the data dir.
    path: String,
    mtime: String,
    message: String,
}

#[derive(Serialize, ToSchema)]
struct RedactedBackup {
    enabled: bool,
    status: &'static str,
    warnings: Vec<BackupWarning>,
}

#[derive(Clone, Serialize, ToSchema)]
struct BackupWarning {
    /// `database_backup_missing`, `database_backup_stale`,
    /// `database_backup_last_failure` or `database_backup_check_failed`.
    code: &'static str,
    message: String,
}

/// The two deployment enums are core's, which derives no schema for them
/// (only these answers show them): a string of their values.
fn string_enum(values: impl IntoIterator<Item = &'static str>) -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .enum_values(Some(values))
        .build()
}

fn mode_schema() -> utoipa::openapi::Object {
    string_enum(
        [DeploymentMode::LocalTrusted, DeploymentMode::Authenticated].map(DeploymentMode::as_str),
    )
}

fn exposure_schema() -> utoipa::openapi::Object {
    string_enum([Exposure::Private, Exposure::Public].map(Exposure::as_str))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct DatabaseInfo {
    backend: &'static str,
    schema_version: i64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ServerInfoBody {
    git: GitInfo,
    process_started_at: String,
}

/// The build's commit, in upstream's two forms. The available one carries
/// `unavailableReason: null` too, so both have the key (and the schema
/// tells them apart by its type).
#[derive(Serialize, ToSchema)]
#[serde(untagged)]
enum GitInfo {
    Unavailable(GitUnavailable),
    Available(GitAvailable),
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct GitUnavailable {
    available: bool,
    unavailable_reason: &'static str,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct GitAvailable {
    available: bool,
    unavailable_reason: Option<&'static str>,
    full_sha: String,
    short_sha: String,
    branch_name: Option<String>,
    subject: String,
    committed_at: Option<String>,
    /// Whether the build's tree had uncommitted changes: not recorded (it
    /// would rebuild the binary on every edit).
    local_changes: GitUnavailable,
}

impl GitInfo {
    fn of(build: Option<&crate::BuildCommit>) -> GitInfo {
        let Some(b) = build else {
            return GitInfo::Unavailable(GitUnavailable {
                available: false,
                unavailable_reason: "git_unavailable",
            });
        };
        GitInfo::Available(GitAvailable {
            available: true,
            unavailable_reason: None,
            full_sha: b.full_sha.clone(),
            short_sha: b.short_sha.clone(),
            branch_name: b.branch.clone(),
            subject: b.subject.clone(),
            committed_at: b.committed_at.clone(),
            local_changes: GitUnavailable {
                available: false,
                unavailable_reason: "git_status_unavailable",
            },
        })
    }
}

fn warnings_of(list: &[paperclip_core::backup::Warning], redacted: bool) -> Vec<BackupWarning> {
    list.iter()
        .map(|w| BackupWarning {
            code: w.code.as_str(),
            message: if redacted {
                w.code.redacted_message().to_string()
            } else {
                w.message.clone()
            },
        })
        .collect()
}

/// What the backup folder and failure marker say (read off the async
/// threads); `None` when automatic backups are off, as upstream leaves the
/// key out then.
async fn inspect_backups(app: &AppState) -> Option<paperclip_runtime::backups::Inspection> {
    let backups = app.info.backups.clone()?;
    tokio::task::spawn_blocking(move || backups.inspect())
        .await
        .ok()
}

/// Liveness and deployment facts; answers as soon as the store is open. On an
/// authenticated instance a caller who is not signed in gets the deployment
/// and bootstrap facts only, as upstream does.
#[utoipa::path(get, path = "/api/health", tag = "health",
    responses((status = 200, description = "Healthy: everything to the board, the deployment facts only to a caller not signed in", body = HealthAnswer)))]
#[paperclip_macros::handler]
async fn health(
    State(app): State<AppState>,
    caller: Result<crate::auth::Caller, crate::error::ApiError>,
) -> Result<Json<HealthAnswer>, crate::error::ApiError> {
    let team = &app.security.team;
    let (bootstrap_status, invite_active) = if team.authenticated() {
        if paperclip_store::org::people::admin_exists(&app.store).await? {
            (BootstrapStatus::Ready, false)
        } else {
            let now = paperclip_store::now();
            let open = paperclip_store::org::members::bootstrap_open(&app.store, &now).await?;
            (BootstrapStatus::BootstrapPending, open)
        }
    } else {
        (BootstrapStatus::Ready, false)
    };
    let commit = app.info.build.as_ref().map(|b| b.full_sha.clone());
    // Local AI sign-in runs on the server's host: not for the internet.
    let local_ai_login_supported = team.exposure == Exposure::Private;
    let backup = inspect_backups(&app).await;
    if team.authenticated() && caller.is_err() {
        let database_backup = backup.map(|b| RedactedBackup {
            enabled: b.enabled,
            status: b.status,
            warnings: warnings_of(&b.warnings, true),
        });
        let warnings = database_backup
            .as_ref()
            .filter(|b| !b.warnings.is_empty())
            .map(|b| b.warnings.clone());
        return Ok(Json(HealthAnswer::Public(PublicHealth {
            bootstrap_invite_active: invite_active,
            bootstrap_status,
            commit,
            database_backup,
            deployment_exposure: team.exposure,
            deployment_mode: team.mode,
            local_ai_login_supported,
            status: "ok",
            warnings,
        })));
    }
    let database_backup = backup.map(|b| DatabaseBackup {
        enabled: b.enabled,
        status: b.status,
        backup_dir: b.dir,
        max_age_hours: b.max_age_hours,
        latest_backup: b.latest.map(|l| LatestBackup {
            name: l.name,
            path: l.path,
            mtime: l.mtime,
            age_hours: l.age_hours,
            size_bytes: l.size_bytes,
        }),
        last_failure: b.last_failure.map(|f| LastFailure {
            path: f.path,
            mtime: f.mtime,
            message: f.message,
        }),
        warnings: warnings_of(&b.warnings, false),
    });
    let warnings = database_backup
        .as_ref()
        .filter(|b| !b.warnings.is_empty())
        .map(|b| b.warnings.clone());
    Ok(Json(HealthAnswer::Full(Box::new(Health {
        auth_ready: true,
        bootstrap_invite_active: invite_active,
        bootstrap_status,
        commit,
        database: DatabaseInfo {
            backend: app.store.backend().as_str(),
            schema_version: paperclip_store::schema_version(),
        },
        database_backup,
        deployment_exposure: team.exposure,
        deployment_mode: team.mode,
        // DELETE /api/companies/{companyId} is served to the board in
        // every mode; no setting turns it off.
        features: Features {
            company_deletion_enabled: true,
        },
        local_ai_login_supported,
        server_info: ServerInfoBody {
            git: GitInfo::of(app.info.build.as_ref()),
            process_started_at: app.info.started_at.clone(),
        },
        server_version: app.info.version,
        startup_recovery: StartupRecovery {
            phase: "ready",
            updated_at: app.info.ready_at.clone(),
        },
        status: "ok",
        version: app.info.version,
        warnings,
    }))))
}

/// Whether this instance takes new work.
#[derive(Serialize, ToSchema)]
struct Readiness {
    /// `ok`, or `draining` while it finishes before a shutdown.
    status: &'static str,
}

/// Readiness for a load balancer or Kubernetes: 200 while the instance takes
/// new work, 503 from the moment it drains (SIGTERM with `--drain-seconds`),
/// so traffic moves to the other replicas while it still answers what it
/// was sent. No caller needed: it tells nothing about the instance's data.
/// Not upstream's (which has only `/api/health`); liveness stays there.
#[utoipa::path(get, path = "/api/health/ready", tag = "health",
    responses((status = 200, body = Readiness, description = "Taking new work"),
        (status = 503, body = Readiness, description = "Draining before a shutdown")))]
#[paperclip_macros::handler]
async fn readiness(State(app): State<AppState>) -> (axum::http::StatusCode, Json<Readiness>) {
    if app.lifecycle.is_draining() {
        (
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            Json(Readiness { status: "draining" }),
        )
    } else {
        (axum::http::StatusCode::OK, Json(Readiness { status: "ok" }))
    }
}

/// Whether the instance has come to rest: no run queued or running in the
/// store and no run process alive. What happens next then needs a new input
/// (a request, a timer, a routine tick), so a test can assert that something
/// did *not* happen without sleeping first.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Quiescence {
    idle: bool,
    queued_runs: i64,
    running_runs: i64,
    live_processes: usize,
}

/// The instance's runs in flight; the local board or an instance administrator.
#[utoipa::path(get, path = "/api/instance/quiescence", tag = "health",
    responses((status = 200, body = Quiescence), (status = 403, description = "Not an instance administrator", body = crate::error::ErrorBody)))]
#[paperclip_macros::handler]
async fn quiescence(
    State(app): State<AppState>,
    caller: crate::auth::Caller,
) -> Result<Json<Quiescence>, crate::error::ApiError> {
    caller.require_instance_admin()?;
    // The live registry first: a run enters it before its row is claimed and
    // leaves it only after its row is final (and any follow-up is queued in
    // the same transaction), so reading in this order cannot miss a run.
    let live_processes = app.runtime.live_run_ids().len();
    let (queued_runs, running_runs) = paperclip_store::runs::in_flight(&app.store).await?;
    Ok(Json(Quiescence {
        idle: queued_runs == 0 && running_runs == 0 && live_processes == 0,
        queued_runs,
        running_runs,
        live_processes,
    }))
}
