//! A routine's triggers. A schedule keeps its next tick (`next_run_at`),
//! computed from the caller's clock; a webhook keeps a public id and a
//! secret sealed like a company secret (bound to the trigger's id and the
//! secret's version), which only [`webhook_secret`] hands back, sealed.

use crate::routines::trigger_table::*;
pub use crate::routines::trigger_table::{
    by_public_id, fires, first_delivery, get, list, of_company, webhook_secret, Fresh, NewSecret,
    Remade,
};

use chrono::{DateTime, Utc};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::routine::{
    NewTrigger, RoutineTrigger, TriggerKind, TriggerPatch, WEBHOOK_REPLAY_DEFAULT_SEC,
};
use paperclip_core::secret_box;
use serde_json::json;

use crate::engine::row::RowExt;
use crate::org::secrets::Seal;
use crate::routines::revisions::write_revision;
use crate::routines::table::{by, record, stamp};
use crate::{Error, Result, Store};

/// The trigger and the revision its change wrote.
pub struct Changed {
    pub trigger: RoutineTrigger,
    pub revision_id: String,
}

#[allow(clippy::too_many_arguments)]
pub async fn create(
    store: &Store,
    actor: &Actor,
    routine_id: &str,
    input: &NewTrigger,
    secret: Option<NewSecret<'_>>,
    now: DateTime<Utc>,
) -> Result<Changed> {
    let mut tx = store.begin().await?;
    let routine = crate::routines::table::get_in(&mut tx, routine_id).await?;
    let trigger = create_in(&mut tx, actor, &routine, input, secret, now).await?;
    let revision_id = write_revision(&mut tx, actor, routine_id, "Trigger added", None).await?;
    tx.commit().await?;
    Ok(Changed {
        trigger,
        revision_id,
    })
}

pub async fn update(
    store: &Store,
    actor: &Actor,
    id: &str,
    patch: &TriggerPatch,
    now: DateTime<Utc>,
) -> Result<Changed> {
    let mut tx = store.begin().await?;
    let current = get_in(&mut tx, id).await?;
    let label = match &patch.label {
        Some(l) => checked_label(l.as_deref())?,
        None => current.label.clone(),
    };
    let enabled = patch.enabled.unwrap_or(current.enabled);
    let (mut cron, mut tz, mut next) = (
        current.cron_expression.clone(),
        current.timezone.clone(),
        current.next_run_at.clone(),
    );
    if current.kind == TriggerKind::Schedule {
        if let Some(c) = &patch.cron_expression {
            cron = Some(c.trim().to_string());
        }
        if let Some(t) = &patch.timezone {
            tz = Some(t.clone());
        }
        let changed_schedule = patch.cron_expression.is_some()
            || patch.timezone.is_some()
            || (enabled && !current.enabled);
        if changed_schedule {
            let (c, t) = (
                cron.as_deref().unwrap_or(""),
                tz.as_deref().unwrap_or("UTC"),
            );
            next = Some(stamp(next_tick(c, t, now)?));
        }
    }
    let (mode, window) = match current.kind {
        TriggerKind::Webhook => (
            patch.signing_mode.or(current.signing_mode),
            Some(match patch.replay_window_sec {
                Some(w) => checked_window(Some(w))?,
                None => current
                    .replay_window_sec
                    .unwrap_or(WEBHOOK_REPLAY_DEFAULT_SEC),
            }),
        ),
        _ => (None, None),
    };
    let (agent, user) = by(actor);
    crate::engine::db::query(
        "UPDATE routine_triggers SET label = $2, enabled = $3, cron_expression = $4, \
         timezone = $5, next_run_at = $6, signing_mode = $7, replay_window_sec = $8, \
         updated_by_agent_id = $9, updated_by_user_id = $10, updated_at = $11 WHERE id = $1",
    )
    .bind(id)
    .bind(label.as_deref())
    .bind(enabled)
    .bind(cron.as_deref())
    .bind(tz.as_deref())
    .bind(next.as_deref())
    .bind(mode.map(|m| m.as_str()))
    .bind(window)
    .bind(agent)
    .bind(user)
    .bind(crate::now())
    .execute(tx.conn())
    .await?;
    record(
        &mut tx,
        actor,
        &current.company_id,
        Action::RoutineTriggerUpdated,
        EntityType::RoutineTrigger,
        id,
        json!({ "routineId": current.routine_id, "enabled": enabled, "label": label,
            "cronExpression": cron, "timezone": tz, "signingMode": mode }),
    )
    .await?;
    let revision_id =
        write_revision(&mut tx, actor, &current.routine_id, "Trigger updated", None).await?;
    let trigger = get_in(&mut tx, id).await?;
    tx.commit().await?;
    Ok(Changed {
        trigger,
        revision_id,
    })
}

/// Deletes the trigger and its sealed secret with it.
pub async fn delete(store: &Store, actor: &Actor, id: &str) -> Result<RoutineTrigger> {
    let mut tx = store.begin().await?;
    let current = get_in(&mut tx, id).await?;
    crate::engine::db::query("DELETE FROM routine_triggers WHERE id = $1")
        .bind(id)
        .execute(tx.conn())
        .await?;
    record(
        &mut tx,
        actor,
        &current.company_id,
        Action::RoutineTriggerDeleted,
        EntityType::RoutineTrigger,
        id,
        json!({ "routineId": current.routine_id, "kind": current.kind }),
    )
    .await?;
    write_revision(&mut tx, actor, &current.routine_id, "Trigger deleted", None).await?;
    tx.commit().await?;
    Ok(current)
}

/// A new secret version for a webhook trigger; the old one stops working.
pub async fn rotate(
    store: &Store,
    actor: &Actor,
    id: &str,
    value: &str,
    seal: Seal<'_>,
) -> Result<Changed> {
    let mut tx = store.begin().await?;
    let current = get_in(&mut tx, id).await?;
    if current.kind != TriggerKind::Webhook {
        return Err(Error::rule("Only webhook triggers have a secret to rotate"));
    }
    let row = crate::engine::db::query(
        "UPDATE routine_triggers SET secret_version = COALESCE(secret_version, 0) + 1, \
         last_rotated_at = $2, updated_at = $2 WHERE id = $1 RETURNING secret_version",
    )
    .bind(id)
    .bind(crate::now())
    .fetch_one(tx.conn())
    .await?;
    let version = row.int("secret_version")?;
    let sealed = seal(id, version, value.as_bytes());
    crate::engine::db::query(
        "UPDATE routine_triggers SET secret_nonce = $2, secret_ciphertext = $3 WHERE id = $1",
    )
    .bind(id)
    .bind(secret_box::encode(&sealed.nonce))
    .bind(secret_box::encode(&sealed.ciphertext))
    .execute(tx.conn())
    .await?;
    record(
        &mut tx,
        actor,
        &current.company_id,
        Action::RoutineTriggerSecretRotated,
        EntityType::RoutineTrigger,
        id,
        json!({ "routineId": current.routine_id, "version": version }),
    )
    .await?;
    let revision_id = write_revision(
        &mut tx,
        actor,
        &current.routine_id,
        "Webhook secret rotated",
        None,
    )
    .await?;
    let trigger = get_in(&mut tx, id).await?;
    tx.commit().await?;
    Ok(Changed {
        trigger,
        revision_id,
    })
}
