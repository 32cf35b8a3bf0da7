//! A routine's triggers, the public webhook that fires one, and the test
//! clock routines run on when the server was started with `--test-clock`.
//!
//! A webhook secret (48 hex characters) is made here, sealed with the
//! instance's master key before it reaches the store, and shown once, in
//! `secretMaterial`; no other answer, entry or log line carries it.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use paperclip_core::actor::{Actor, ActorKind};
use paperclip_core::routine::{
    NewTrigger, RoutineRevision, RoutineRun, RoutineStatus, RoutineTrigger, RunSource,
    SecretMaterial, SigningMode, TriggerKind, TriggerPatch, IDEMPOTENCY_KEY_MAX,
};
use paperclip_runtime::vault::Vault;
use paperclip_store::routines::triggers::{self as routine_triggers, Changed, NewSecret};
use paperclip_store::{
    routines, routines::revisions as routine_revisions, routines::runs as routine_runs,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::Sha256;
use subtle::ConstantTimeEq;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::JsonBody;
use crate::routes::routines::{agent_owns, load as load_routine, needs_assign};
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_trigger))
        .routes(routes!(update_trigger, delete_trigger))
        .routes(routes!(rotate_secret))
        .routes(routes!(fire_webhook))
        .routes(routes!(set_test_clock))
}

pub(crate) async fn load(app: &AppState, caller: &Caller, id: &str) -> ApiResult<RoutineTrigger> {
    if uuid::Uuid::try_parse(id).is_err() {
        return Err(paperclip_store::Error::not_found("Routine trigger").into());
    }
    let trigger = routine_triggers::get(&app.store, id).await?;
    caller.ensure_company(&trigger.company_id)?;
    Ok(trigger)
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct TriggerChange {
    trigger: RoutineTrigger,
    secret_material: Option<SecretMaterial>,
    revision: Option<RoutineRevision>,
}

pub(super) fn random_hex(bytes: usize) -> String {
    use rand::RngCore;
    let mut buf = vec![0u8; bytes];
    rand::rngs::OsRng.fill_bytes(&mut buf);
    hex::encode(buf)
}

pub(super) fn master_key(app: &AppState) -> ApiResult<paperclip_core::secret_box::MasterKey> {
    app.runtime.vault().key().map_err(|err| {
        tracing::error!(error = %format!("{err:#}"), "the secrets master key is unavailable");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The secrets master key is unavailable",
        )
    })
}

pub(super) fn webhook_url(app: &AppState, public_id: &str) -> String {
    let base = app
        .security
        .public_origin()
        .map(str::to_string)
        .unwrap_or_else(|| app.runtime.api_url().trim_end_matches('/').to_string());
    format!("{base}/api/routine-triggers/public/{public_id}/fire")
}

async fn answer(
    app: &AppState,
    changed: Changed,
    secret: Option<String>,
) -> ApiResult<TriggerChange> {
    let revision = routine_revisions::revisions(&app.store, &changed.trigger.routine_id)
        .await?
        .into_iter()
        .find(|r| r.id == changed.revision_id);
    let secret_material = match (secret, &changed.trigger.public_id) {
        (Some(webhook_secret), Some(public_id)) => Some(SecretMaterial {
            webhook_url: webhook_url(app, public_id),
            webhook_secret,
        }),
        _ => None,
    };
    Ok(TriggerChange {
        trigger: changed.trigger,
        secret_material,
        revision,
    })
}

#[utoipa::path(post, path = "/api/routines/{id}/triggers", tag = "routines",
    params(("id" = String, Path)), request_body = NewTrigger,
    responses((status = 201, body = TriggerChange), (status = 422, description = "Invalid schedule")))]
#[paperclip_macros::handler]
async fn create_trigger(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<NewTrigger>,
) -> ApiResult<(StatusCode, Json<TriggerChange>)> {
    let routine = load_routine(&app, &caller, &id).await?;
    agent_owns(&caller, &routine)?;
    needs_assign(&caller, &routine.company_id)?;
    let now = app.runtime.routine_clock().now();
    let (value, public_id) = (random_hex(24), random_hex(12));
    let changed = if input.kind == TriggerKind::Webhook {
        let seal = Vault::sealer(master_key(&app)?);
        let secret = NewSecret {
            value: &value,
            public_id: &public_id,
            seal: &seal,
        };
        routine_triggers::create(&app.store, caller.actor(), &id, &input, Some(secret), now).await?
    } else {
        routine_triggers::create(&app.store, caller.actor(), &id, &input, None, now).await?
    };
    let secret = (input.kind == TriggerKind::Webhook).then_some(value);
    Ok((
        StatusCode::CREATED,
        Json(answer(&app, changed, secret).await?),
    ))
}

#[utoipa::path(patch, path = "/api/routine-triggers/{id}", tag = "routines",
    params(("id" = String, Path)), request_body = TriggerPatch,
    responses((status = 200, body = RoutineTrigger)))]
#[paperclip_macros::handler]
async fn update_trigger(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(patch): JsonBody<TriggerPatch>,
) -> ApiResult<Json<RoutineTrigger>> {
    let trigger = load(&app, &caller, &id).await?;
    let routine = routines::get(&app.store, &trigger.routine_id).await?;
    agent_owns(&caller, &routine)?;
    needs_assign(&caller, &routine.company_id)?;
    let now = app.runtime.routine_clock().now();
    let changed = routine_triggers::update(&app.store, caller.actor(), &id, &patch, now).await?;
    Ok(Json(changed.trigger))
}

#[utoipa::path(delete, path = "/api/routine-triggers/{id}", tag = "routines",
    params(("id" = String, Path)),
    responses((status = 204, description = "Deleted with its secret")))]
#[paperclip_macros::handler]
async fn delete_trigger(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let trigger = load(&app, &caller, &id).await?;
    let routine = routines::get(&app.store, &trigger.routine_id).await?;
    agent_owns(&caller, &routine)?;
    needs_assign(&caller, &routine.company_id)?;
    routine_triggers::delete(&app.store, caller.actor(), &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/routine-triggers/{id}/rotate-secret", tag = "routines",
    params(("id" = String, Path)),
    responses((status = 200, body = TriggerChange), (status = 422, description = "Not a webhook")))]
#[paperclip_macros::handler]
async fn rotate_secret(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<TriggerChange>> {
    let trigger = load(&app, &caller, &id).await?;
    let routine = routines::get(&app.store, &trigger.routine_id).await?;
    agent_owns(&caller, &routine)?;
    needs_assign(&caller, &routine.company_id)?;
    if trigger.kind != TriggerKind::Webhook {
        return Err(
            paperclip_store::Error::rule("Only webhook triggers have a secret to rotate").into(),
        );
    }
    let value = random_hex(24);
    let seal = Vault::sealer(master_key(&app)?);
    let changed = routine_triggers::rotate(&app.store, caller.actor(), &id, &value, &seal).await?;
    Ok(Json(answer(&app, changed, Some(value)).await?))
}

fn webhook_actor() -> Actor {
    Actor {
        kind: ActorKind::System,
        id: "routine-webhook".into(),
        run_id: None,
        company_id: None,
    }
}

fn unauthorized(message: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, message)
}

/// A header the webhook decides on; one that is not text is a 400.
fn header<'h>(headers: &'h HeaderMap, name: &str) -> ApiResult<Option<&'h str>> {
    Ok(crate::extract::header_text(headers, name)?.map(str::trim))
}

fn hmac_hex(secret: &str, parts: &[&[u8]]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    for p in parts {
        mac.update(p);
    }
    hex::encode(mac.finalize().into_bytes())
}

fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The public webhook. No session or key: the trigger's signing mode is
/// the whole authentication. Server-to-server, so it sends no `Origin`.
#[utoipa::path(post, path = "/api/routine-triggers/public/{publicId}/fire", tag = "routines",
    params(("publicId" = String, Path)), request_body = Object,
    responses((status = 202, body = RoutineRun), (status = 401, description = "Bad signature"),
        (status = 404, description = "No such webhook"), (status = 409, description = "Disabled, inactive or a replay")))]
#[paperclip_macros::handler]
async fn fire_webhook(
    State(app): State<AppState>,
    Path(public_id): Path<String>,
    request: axum::extract::Request,
) -> ApiResult<(StatusCode, Json<RoutineRun>)> {
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    // The guard has read the body within the limit already.
    let body: Bytes = axum::body::to_bytes(body, crate::MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::new(StatusCode::BAD_REQUEST, "Could not read the request body"))?;
    if public_id.len() != 24 || !public_id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(paperclip_store::Error::not_found("Routine trigger").into());
    }
    let trigger = routine_triggers::by_public_id(&app.store, &public_id).await?;
    let routine = routines::get(&app.store, &trigger.routine_id).await?;
    let now = app.runtime.routine_clock().now();
    let mode = trigger.signing_mode.unwrap_or(SigningMode::Bearer);
    let mut replay: Option<String> = None;
    if mode != SigningMode::None {
        let sealed = routine_triggers::webhook_secret(&app.store, &trigger).await?;
        let secret = app.runtime.vault().reveal(&sealed).map_err(|_| {
            tracing::error!(trigger = %trigger.id, "a webhook secret could not be opened");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Webhook secret is unreadable",
            )
        })?;
        check_signature(mode, &secret, &headers, &body, now, &trigger, &mut replay)?;
    }
    // Only a sender who holds the secret learns the routine's state.
    if !trigger.enabled {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "Routine trigger is disabled",
        ));
    }
    if routine.status != RoutineStatus::Active {
        return Err(ApiError::new(StatusCode::CONFLICT, "Routine is not active"));
    }
    if let Some(key) = &replay {
        let window = trigger.replay_window_sec.unwrap_or(300);
        let first =
            routine_triggers::first_delivery(&app.store, &trigger.id, key, now, window).await?;
        if !first {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "Webhook replay detected",
            ));
        }
    }
    let payload: Option<Value> = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Some(crate::extract::parse_json::<Value>(&body)?)
    };
    let idempotency = match (mode, header(&headers, "idempotency-key")?) {
        (SigningMode::HmacSha256, _) | (_, None) => None,
        (_, Some(k)) if k.len() > IDEMPOTENCY_KEY_MAX => {
            return Err(ApiError::validation(json!([{ "code": "too_big",
                "path": ["headers", "idempotency-key"], "message": "Idempotency-Key is too long" }])))
        }
        (_, Some(k)) => Some(k.to_string()),
    };
    let dispatched = routine_runs::dispatch(
        &app.store,
        &webhook_actor(),
        routine_runs::Dispatch {
            routine_id: &routine.id,
            trigger: Some(&trigger),
            source: RunSource::Webhook,
            triggered_at: now,
            payload,
            variables: Default::default(),
            idempotency_key: idempotency.as_deref(),
            assignee_agent_id: None,
        },
    )
    .await;
    let result = match &dispatched {
        Ok(run) => run.status.as_str(),
        Err(_) => "failed",
    };
    routine_runs::mark_trigger(&app.store, &trigger.id, now, result).await?;
    Ok((StatusCode::ACCEPTED, Json(dispatched?)))
}

fn check_signature(
    mode: SigningMode,
    secret: &str,
    headers: &HeaderMap,
    body: &[u8],
    now: DateTime<Utc>,
    trigger: &RoutineTrigger,
    replay: &mut Option<String>,
) -> ApiResult<()> {
    let signature = |names: &[&str]| -> ApiResult<Option<String>> {
        for name in names {
            if let Some(s) = header(headers, name)? {
                return Ok(Some(
                    s.strip_prefix("sha256=").unwrap_or(s).to_ascii_lowercase(),
                ));
            }
        }
        Ok(None)
    };
    match mode {
        SigningMode::None => Ok(()),
        SigningMode::Bearer => {
            let given = header(headers, "authorization")?
                .and_then(|h| {
                    h.strip_prefix("Bearer ")
                        .or_else(|| h.strip_prefix("bearer "))
                })
                .ok_or_else(|| unauthorized("Missing webhook bearer token"))?;
            if same(given.trim(), secret) {
                Ok(())
            } else {
                Err(unauthorized("Invalid webhook token"))
            }
        }
        SigningMode::GithubHmac => {
            let given = signature(&["x-hub-signature-256", "x-paperclip-signature"])?
                .ok_or_else(|| unauthorized("Missing webhook signature"))?;
            if !same(&given, &hmac_hex(secret, &[body])) {
                return Err(unauthorized("Invalid webhook signature"));
            }
            // GitHub signs the body alone: no timestamp bounds a resend, so
            // the same signed body is one delivery within the window.
            *replay = Some(format!("body:{given}"));
            Ok(())
        }
        SigningMode::HmacSha256 => {
            let given = signature(&["x-paperclip-signature"])?
                .ok_or_else(|| unauthorized("Missing webhook signature"))?;
            let stamp = header(headers, "x-paperclip-timestamp")?
                .ok_or_else(|| unauthorized("Missing webhook timestamp"))?;
            let number: i64 = stamp
                .parse()
                .map_err(|_| unauthorized("Invalid webhook timestamp"))?;
            let seconds = if number > 1_000_000_000_000 {
                number / 1000
            } else {
                number
            };
            let window = trigger.replay_window_sec.unwrap_or(300);
            // The sender's number is any i64: a difference that overflows is
            // simply far outside the window.
            if now.timestamp().abs_diff(seconds) > window.unsigned_abs() {
                return Err(unauthorized(
                    "Webhook timestamp is outside the replay window",
                ));
            }
            let expected = hmac_hex(secret, &[stamp.as_bytes(), b".", body]);
            if !same(&given, &expected) {
                return Err(unauthorized("Invalid webhook signature"));
            }
            *replay = Some(format!("{stamp}:{given}"));
            Ok(())
        }
    }
}

#[derive(Deserialize, ToSchema)]
struct ClockSet {
    /// RFC 3339.
    now: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ClockState {
    now: String,
    dispatched: usize,
    /// Agents the timer pass at the new time woke.
    timers_woken: usize,
    /// Run logs the retention pass at the new time removed.
    removed_logs: usize,
    /// Worktrees of long-closed tasks the workspace sweep removed.
    closed_workspaces: usize,
}

/// Sets the test clock and runs one routine pass, one timer heartbeat pass,
/// one run log retention pass and one workspace retention pass at the new
/// time. Answers
/// 404 unless the server was started with `--test-clock` (which the binary
/// refuses in authenticated mode); the local board or an instance
/// administrator only.
#[utoipa::path(post, path = "/api/instance/test-clock", tag = "routines",
    request_body = ClockSet,
    responses((status = 200, body = ClockState), (status = 404, description = "No test clock")))]
#[paperclip_macros::handler]
async fn set_test_clock(
    State(app): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<ClockSet>,
) -> ApiResult<Json<ClockState>> {
    caller.require_instance_admin()?;
    let clock = app.runtime.routine_clock();
    if !clock.is_test() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "The test clock is off (start the server with --test-clock)",
        ));
    }
    let at = DateTime::parse_from_rfc3339(&input.now)
        .map_err(|_| {
            ApiError::validation(json!([{ "code": "invalid_string", "path": ["now"],
                "message": "now must be an RFC 3339 time" }]))
        })?
        .with_timezone(&Utc);
    clock.set(at);
    let dispatched = paperclip_runtime::routines::tick(&app.store, clock)
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")))?;
    let timers_woken = paperclip_runtime::scheduler::tick(&app.store, at)
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")))?;
    let removed_logs = app
        .runtime
        .sweep_run_logs()
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")))?;
    let closed_workspaces = app
        .runtime
        .sweep_workspaces()
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")))?;
    Ok(Json(ClockState {
        now: at.to_rfc3339(),
        dispatched,
        timers_woken,
        removed_logs,
        closed_workspaces,
    }))
}
