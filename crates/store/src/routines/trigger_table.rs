//! Trigger rows (cron, webhook, API): reading them, their schedule, the
//! webhook secret and first delivery, and restoring them from a revision.

use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::org::secrets::Seal;
use crate::routines::table::{by, record, stamp};
use crate::{new_id, Error, Result, Store, Tx};
use chrono::{DateTime, Utc};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::company_secret::{SealedVersion, SecretStatus};
use paperclip_core::cron::{parse_timezone, Cron};
use paperclip_core::routine::{
    NewTrigger, RoutineStatus, RoutineTrigger, SigningMode, TriggerKind, LABEL_MAX,
    WEBHOOK_REPLAY_DEFAULT_SEC, WEBHOOK_REPLAY_MAX_SEC, WEBHOOK_REPLAY_MIN_SEC,
};
use paperclip_core::secret_box;
use serde_json::{json, Value};

pub(crate) const COLUMNS: &str = "id, company_id, routine_id, kind, label, enabled, \
     cron_expression, timezone, next_run_at, last_fired_at, public_id, signing_mode, \
     replay_window_sec, last_rotated_at, last_result, created_by_agent_id, created_by_user_id, \
     updated_by_agent_id, updated_by_user_id, created_at, updated_at";

pub async fn get(store: &Store, id: &str) -> Result<RoutineTrigger> {
    let row = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM routine_triggers WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(store.pool())
    .await?
    .ok_or_else(|| Error::not_found("Routine trigger"))?;
    map(&row)
}

pub(crate) async fn get_in(tx: &mut Tx, id: &str) -> Result<RoutineTrigger> {
    let row = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM routine_triggers WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(tx.conn())
    .await?
    .ok_or_else(|| Error::not_found("Routine trigger"))?;
    map(&row)
}

pub async fn by_public_id(store: &Store, public_id: &str) -> Result<RoutineTrigger> {
    let row = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM routine_triggers WHERE public_id = $1 AND kind = 'webhook'"
    ))
    .bind(public_id)
    .fetch_optional(store.pool())
    .await?
    .ok_or_else(|| Error::not_found("Routine trigger"))?;
    map(&row)
}

pub async fn list(store: &Store, routine_id: &str) -> Result<Vec<RoutineTrigger>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM routine_triggers WHERE routine_id = $1 ORDER BY created_at, id"
    ))
    .bind(routine_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

/// Every trigger of the company's routines in one query, for the lists,
/// which group them by routine.
pub async fn of_company(store: &Store, company_id: &str) -> Result<Vec<RoutineTrigger>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM routine_triggers WHERE company_id = $1 ORDER BY created_at, id"
    ))
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

pub(crate) async fn list_in(tx: &mut Tx, routine_id: &str) -> Result<Vec<RoutineTrigger>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM routine_triggers WHERE routine_id = $1 ORDER BY created_at, id"
    ))
    .bind(routine_id)
    .fetch_all(tx.conn())
    .await?;
    rows.iter().map(map).collect()
}

/// The trigger's sealed secret, for the vault to open.
pub async fn webhook_secret(store: &Store, trigger: &RoutineTrigger) -> Result<SealedVersion> {
    let row = crate::engine::db::query(
        "SELECT secret_version, secret_nonce, secret_ciphertext FROM routine_triggers \
         WHERE id = $1",
    )
    .bind(&trigger.id)
    .fetch_one(store.pool())
    .await?;
    let (Some(version), Some(nonce), Some(ciphertext)) = (
        row.try_get::<Option<i64>, _>("secret_version")?,
        row.opt_text("secret_nonce")?,
        row.opt_text("secret_ciphertext")?,
    ) else {
        return Err(Error::rule("Webhook trigger has no secret"));
    };
    Ok(SealedVersion {
        secret_id: trigger.id.clone(),
        company_id: trigger.company_id.clone(),
        name: "routine webhook".into(),
        status: SecretStatus::Active,
        version,
        nonce,
        ciphertext,
    })
}

/// Records a signed delivery; `false` when it was seen before (a replay).
/// Entries older than the window are dropped as new ones come in: their
/// timestamps are refused as stale anyway.
pub async fn first_delivery(
    store: &Store,
    trigger_id: &str,
    replay_key: &str,
    now: DateTime<Utc>,
    window_sec: i64,
) -> Result<bool> {
    let mut tx = store.begin().await?;
    let horizon = stamp(now - chrono::Duration::seconds(2 * window_sec));
    crate::engine::db::query(
        "DELETE FROM routine_webhook_replays WHERE trigger_id = $1 AND seen_at < $2",
    )
    .bind(trigger_id)
    .bind(horizon)
    .execute(tx.conn())
    .await?;
    let seen = crate::engine::db::query(
        "SELECT 1 FROM routine_webhook_replays WHERE trigger_id = $1 AND replay_key = $2",
    )
    .bind(trigger_id)
    .bind(replay_key)
    .fetch_optional(tx.conn())
    .await?;
    if seen.is_some() {
        return Ok(false);
    }
    let inserted = crate::engine::db::query(
        "INSERT INTO routine_webhook_replays (trigger_id, replay_key, seen_at) VALUES ($1, $2, $3)",
    )
    .bind(trigger_id)
    .bind(replay_key)
    .bind(stamp(now))
    .execute(tx.conn())
    .await;
    if let Err(e) = inserted {
        let e = Error::from(e);
        // A concurrent delivery of the same request won the insert.
        if e.is_unique_violation() {
            return Ok(false);
        }
        return Err(e);
    }
    tx.commit().await?;
    Ok(true)
}

/// A resumed routine's schedules restart from `now`.
pub(crate) async fn reschedule_in(tx: &mut Tx, routine_id: &str, now: DateTime<Utc>) -> Result<()> {
    for t in list_in(tx, routine_id).await? {
        if t.kind != TriggerKind::Schedule {
            continue;
        }
        let (Some(c), Some(z)) = (t.cron_expression.as_deref(), t.timezone.as_deref()) else {
            continue;
        };
        let next = next_tick(c, z, now)?;
        crate::engine::db::query("UPDATE routine_triggers SET next_run_at = $2 WHERE id = $1")
            .bind(&t.id)
            .bind(stamp(next))
            .execute(tx.conn())
            .await?;
    }
    Ok(())
}

/// What a restore needs to make a deleted webhook again: a fresh secret
/// and public id per webhook (`(secret, public_id)`), and the sealer.
pub struct Fresh<'a> {
    pub secret: &'a (dyn Fn() -> (String, String) + Sync),
    pub seal: Seal<'a>,
}

/// A trigger a restore made again; a webhook's new secret is shown once.
pub struct Remade {
    pub trigger: RoutineTrigger,
    pub secret: Option<String>,
}

/// Applies a revision's trigger settings to the triggers that still exist,
/// deletes those it did not have and makes again those deleted since, under
/// new ids. A webhook made again gets a new secret and URL: its senders must
/// be told them, so they are handed back once, as on a trigger's creation.
pub(crate) async fn restore_in(
    tx: &mut Tx,
    actor: &Actor,
    routine: &paperclip_core::routine::Routine,
    snapshot: &Value,
    fresh: &Fresh<'_>,
    now: DateTime<Utc>,
) -> Result<Vec<Remade>> {
    let wanted = snapshot["triggers"].as_array().cloned().unwrap_or_default();
    let existing = list_in(tx, &routine.id).await?;
    for t in &existing {
        let Some(s) = wanted.iter().find(|s| s["id"] == json!(t.id)) else {
            crate::engine::db::query("DELETE FROM routine_triggers WHERE id = $1")
                .bind(&t.id)
                .execute(tx.conn())
                .await?;
            continue;
        };
        let text = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_string);
        let enabled = s["enabled"].as_bool().unwrap_or(t.enabled);
        let next = match (t.kind, text("cronExpression"), text("timezone")) {
            (TriggerKind::Schedule, Some(c), Some(z)) => Some(stamp(next_tick(&c, &z, now)?)),
            _ => t.next_run_at.clone(),
        };
        crate::engine::db::query(
            "UPDATE routine_triggers SET label = $2, enabled = $3, cron_expression = $4, \
             timezone = $5, next_run_at = $6, signing_mode = $7, replay_window_sec = $8 \
             WHERE id = $1",
        )
        .bind(&t.id)
        .bind(text("label"))
        .bind(enabled)
        .bind(text("cronExpression"))
        .bind(text("timezone"))
        .bind(next)
        .bind(text("signingMode"))
        .bind(s["replayWindowSec"].as_i64())
        .execute(tx.conn())
        .await?;
    }
    let mut remade = Vec::new();
    for s in &wanted {
        if existing.iter().any(|t| s["id"] == json!(t.id)) {
            continue;
        }
        // The snapshot was written by write_revision in a NewTrigger's own
        // field names; one that no longer reads as a trigger is a stored
        // value gone wrong, reported, not skipped.
        let input: NewTrigger = serde_json::from_value(s.clone()).map_err(|e| {
            sqlx::Error::Decode(format!("revision trigger {} does not read: {e}", s["id"]).into())
        })?;
        let secret = (input.kind == TriggerKind::Webhook).then(|| (fresh.secret)());
        let new_secret = secret.as_ref().map(|(value, public_id)| NewSecret {
            value,
            public_id,
            seal: fresh.seal,
        });
        let trigger = create_in(tx, actor, routine, &input, new_secret, now).await?;
        remade.push(Remade {
            trigger,
            secret: secret.map(|(value, _)| value),
        });
    }
    Ok(remade)
}

pub(crate) fn next_tick(expr: &str, tz: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
    let cron = Cron::parse(expr).map_err(|e| Error::invalid("cronExpression", e))?;
    let zone = parse_timezone(tz).map_err(Error::rule)?;
    cron.next_after(zone, now)
        .ok_or_else(|| Error::rule(format!("Cron expression never fires: {expr}")))
}

pub(crate) fn checked_label(label: Option<&str>) -> Result<Option<String>> {
    match label.map(str::trim) {
        Some(l) if l.chars().count() > LABEL_MAX => Err(Error::invalid(
            "label",
            format!("Label must be at most {LABEL_MAX} characters"),
        )),
        Some("") | None => Ok(None),
        Some(l) => Ok(Some(l.to_string())),
    }
}

pub(crate) fn checked_window(window: Option<i64>) -> Result<i64> {
    let w = window.unwrap_or(WEBHOOK_REPLAY_DEFAULT_SEC);
    if !(WEBHOOK_REPLAY_MIN_SEC..=WEBHOOK_REPLAY_MAX_SEC).contains(&w) {
        return Err(Error::invalid(
            "replayWindowSec",
            format!("replayWindowSec must be {WEBHOOK_REPLAY_MIN_SEC} to {WEBHOOK_REPLAY_MAX_SEC}"),
        ));
    }
    Ok(w)
}

/// Whether a routine in this status may fire at all.
pub fn fires(status: RoutineStatus) -> bool {
    status == RoutineStatus::Active
}

pub(crate) fn map(row: &DbRow) -> Result<RoutineTrigger> {
    Ok(RoutineTrigger {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        routine_id: row.text("routine_id")?,
        kind: row.stored("kind")?,
        label: row.opt_text("label")?,
        enabled: row.flag("enabled")?,
        cron_expression: row.opt_text("cron_expression")?,
        timezone: row.opt_text("timezone")?,
        next_run_at: row.opt_text("next_run_at")?,
        last_fired_at: row.opt_text("last_fired_at")?,
        public_id: row.opt_text("public_id")?,
        signing_mode: row.opt_stored("signing_mode")?,
        replay_window_sec: row.try_get::<Option<i64>, _>("replay_window_sec")?,
        last_rotated_at: row.opt_text("last_rotated_at")?,
        last_result: row.opt_text("last_result")?,
        created_by_agent_id: row.opt_text("created_by_agent_id")?,
        created_by_user_id: row.opt_text("created_by_user_id")?,
        updated_by_agent_id: row.opt_text("updated_by_agent_id")?,
        updated_by_user_id: row.opt_text("updated_by_user_id")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}

/// A new webhook secret: the caller makes it (48 hex characters) and gets
/// it back once, in `secretMaterial`.
pub struct NewSecret<'a> {
    pub value: &'a str,
    pub public_id: &'a str,
    pub seal: Seal<'a>,
}

pub(crate) async fn create_in(
    tx: &mut Tx,
    actor: &Actor,
    routine: &paperclip_core::routine::Routine,
    input: &NewTrigger,
    secret: Option<NewSecret<'_>>,
    now: DateTime<Utc>,
) -> Result<RoutineTrigger> {
    let label = checked_label(input.label.as_deref())?;
    let (cron, tz, next) = match input.kind {
        TriggerKind::Schedule => {
            let expr = input
                .cron_expression
                .as_deref()
                .ok_or_else(|| Error::invalid("cronExpression", "cronExpression is required"))?;
            let tz = input.timezone.clone().unwrap_or_else(|| "UTC".into());
            let next = next_tick(expr, &tz, now)?;
            for v in &routine.variables {
                // A default that reads as nothing (blank, or refused by its
                // type) is no default.
                let default = v.default_value.as_ref().map(|d| v.normalize(d));
                if v.required && !matches!(default, Some(Ok(Some(_)))) {
                    return Err(Error::rule(format!(
                        "Scheduled routines need a default for required variable '{}'",
                        v.name
                    )));
                }
            }
            (Some(expr.trim().to_string()), Some(tz), Some(stamp(next)))
        }
        _ => (None, None, None),
    };
    let (mode, window) = match input.kind {
        TriggerKind::Webhook => (
            Some(input.signing_mode.unwrap_or(SigningMode::Bearer)),
            Some(checked_window(input.replay_window_sec)?),
        ),
        _ => (None, None),
    };
    let id = new_id();
    let ts = crate::now();
    let (agent, user) = by(actor);
    let (public_id, nonce, ciphertext, version) = match (&secret, input.kind) {
        (Some(s), TriggerKind::Webhook) => {
            let sealed = (s.seal)(&id, 1, s.value.as_bytes());
            (
                Some(s.public_id.to_string()),
                Some(secret_box::encode(&sealed.nonce)),
                Some(secret_box::encode(&sealed.ciphertext)),
                Some(1i64),
            )
        }
        _ => (None, None, None, None),
    };
    crate::engine::db::query(&format!(
        "INSERT INTO routine_triggers ({COLUMNS}, secret_version, secret_nonce, secret_ciphertext) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, NULL, $10, $11, $12, NULL, NULL, $13, $14, \
         $13, $14, $15, $15, $16, $17, $18)"
    ))
    .bind(&id)
    .bind(&routine.company_id)
    .bind(&routine.id)
    .bind(input.kind.as_str())
    .bind(label.as_deref())
    .bind(input.enabled.unwrap_or(true))
    .bind(cron.as_deref())
    .bind(tz.as_deref())
    .bind(next.as_deref())
    .bind(public_id.as_deref())
    .bind(mode.map(|m| m.as_str()))
    .bind(window)
    .bind(agent)
    .bind(user)
    .bind(&ts)
    .bind(version)
    .bind(nonce)
    .bind(ciphertext)
    .execute(tx.conn())
    .await?;
    // The secret is never in an entry: only that there is one.
    record(
        tx,
        actor,
        &routine.company_id,
        Action::RoutineTriggerCreated,
        EntityType::RoutineTrigger,
        &id,
        json!({ "routineId": routine.id, "kind": input.kind, "label": label,
            "cronExpression": cron, "timezone": tz, "signingMode": mode }),
    )
    .await?;
    get_in(tx, &id).await
}
