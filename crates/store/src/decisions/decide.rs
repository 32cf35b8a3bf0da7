//! The board's answer to a decision, and the origin agent withdrawing it.
//!
//! Deciding follows upstream's steps: one transaction claims the decision
//! (`open` → `decided`, execution `running`) with its activity row, so two
//! answers cannot both win; then each effect of the chosen option runs
//! through the ordinary issue flows (each atomic with its own activity and
//! wakes, as if the deciding person had made the change) and its outcome is
//! recorded once (a unique index per effect); a last transaction settles the
//! execution status and, with `wake_origin_agent`, wakes the origin agent in
//! the same commit, so it wakes exactly once.

use paperclip_core::activity::Action;
use paperclip_core::actor::Actor;
use paperclip_core::decision::{
    Decide, DecisionInput, DecisionOption, EffectStatus, ExecutionStatus,
};
use paperclip_core::heartbeat::WakeSource;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::decisions::create::hex;
use crate::decisions::effects::{execute, record, settle_effect};
use crate::decisions::read::{get, get_in, outcome};
use crate::wakes::queue::Wake;
use crate::{now, Error, Result, Store, Tx};

fn resolved() -> Error {
    Error::conflict(
        "decision_already_resolved",
        Some(json!({ "code": "decision_already_resolved" })),
    )
}

/// The stored spec still matches its digest: what the board sees is what runs.
fn verify(d: &Value) -> Result<()> {
    let spec = json!({ "decisionId": d["id"], "options": d["options"], "targetSnapshots": d["targetSnapshots"] });
    let digest = format!(
        "sha256:{}",
        hex(&Sha256::digest(spec.to_string().as_bytes()))
    );
    if d["signedSpec"].as_str() != Some(digest.as_str()) {
        return Err(Error::forbidden("Decision signature verification failed"));
    }
    Ok(())
}

fn options(d: &Value) -> Result<Vec<DecisionOption>> {
    serde_json::from_value(d["options"].clone())
        .map_err(|e| Error::rule(format!("Stored decision options are invalid: {e}")))
}

pub async fn decide(store: &Store, actor: &Actor, id: &str, input: Decide) -> Result<Value> {
    decide_as(store, actor, id, input, None).await
}

/// `dismissed`: the board's dismissal (with its reason) recorded as the
/// choice of an option without effects.
async fn decide_as(
    store: &Store,
    actor: &Actor,
    id: &str,
    input: Decide,
    dismissed: Option<Option<String>>,
) -> Result<Value> {
    let current = get(store, id).await?;
    verify(&current)?;
    let values = input.input_values.clone().unwrap_or_default();
    if current["status"] == "decided" {
        let same_key = input.idempotency_key.is_some()
            && current["metadata"]["decideIdempotencyKey"].as_str()
                == input.idempotency_key.as_deref();
        let same_choice = current["chosenOptionId"].as_str() == Some(input.option_id.as_str())
            && current["inputValues"] == json!(values);
        if same_key || same_choice {
            if current["decidedByUserId"].as_str() != Some(actor.id.as_str()) {
                return Err(Error::forbidden(
                    "Decision replay belongs to a different user",
                ));
            }
            return outcome(store, id).await;
        }
    }
    if current["status"] != "open" {
        return Err(resolved());
    }
    if current["expiresAt"]
        .as_str()
        .is_some_and(|at| at <= now().as_str())
    {
        expire(store, &current).await?;
        return Err(Error::conflict(
            "decision_expired",
            Some(json!({ "code": "decision_expired" })),
        ));
    }
    let options = options(&current)?;
    let Some(option) = options.iter().find(|o| o.id == input.option_id) else {
        return Err(Error::rule("Unknown optionId"));
    };
    let fields: Vec<DecisionInput> =
        serde_json::from_value(current["inputs"].clone()).unwrap_or_default();
    for field in &fields {
        let value = values.get(&field.id).map(String::as_str).unwrap_or("");
        if field.required == Some(true) && value.trim().is_empty() {
            return Err(Error::rule(format!("Input {} is required", field.id)));
        }
        if field
            .max_length
            .is_some_and(|m| value.chars().count() as u64 > m)
        {
            return Err(Error::rule(format!("Input {} is too long", field.id)));
        }
    }
    let mut metadata = current["metadata"].clone();
    metadata["decideIdempotencyKey"] = json!(input.idempotency_key);
    if let Some(reason) = &dismissed {
        metadata["dismissed"] = json!(true);
        metadata["dismissReason"] = json!(reason);
    }
    let ts = now();
    let mut tx = store.begin().await?;
    let claimed = crate::engine::db::query(
        "UPDATE decisions SET status = 'decided', execution_status = 'running', chosen_option_id = $2, \
         input_values = $3, decided_by_user_id = $4, decided_at = $5, updated_at = $5, metadata = $6 \
         WHERE id = $1 AND status = 'open'",
    )
    .bind(id)
    .bind(&option.id)
    .bind(json!(values).to_string())
    .bind(actor.id.as_str())
    .bind(&ts)
    .bind(metadata.to_string())
    .execute(tx.conn())
    .await?
    .rows_affected();
    if claimed == 0 {
        return Err(resolved());
    }
    let verb = if dismissed.is_some() {
        Action::DecisionDismissed
    } else {
        Action::DecisionDecided
    };
    record(
        &mut tx,
        actor,
        &current,
        verb,
        json!({
            "chosenOptionId": option.id, "decidedByUserId": actor.id, "title": current["title"],
            "dismissed": dismissed.is_some(), "dismissReason": dismissed.flatten(),
        }),
    )
    .await?;
    let claimed = get_in(&mut tx, id).await?;
    tx.commit().await?;
    let mut executed = 0;
    for (index, effect) in option.effects.iter().enumerate() {
        let (status, result, error) = execute(store, actor, &claimed, index, effect).await;
        executed += usize::from(status == EffectStatus::Executed);
        settle_effect(store, actor, &claimed, index, effect, status, result, error).await?;
    }
    let status = if executed == option.effects.len() {
        ExecutionStatus::Succeeded
    } else if executed > 0 {
        ExecutionStatus::Partial
    } else {
        ExecutionStatus::Failed
    };
    let mut tx = store.begin().await?;
    let settled = crate::engine::db::query(
        "UPDATE decisions SET execution_status = $2, updated_at = $3 WHERE id = $1 AND execution_status = 'running'",
    )
    .bind(id)
    .bind(status.as_str())
    .bind(now())
    .execute(tx.conn())
    .await?
    .rows_affected();
    if settled == 1 {
        continue_origin(&mut tx, actor, &claimed, "decided", Some(status)).await?;
    }
    tx.commit().await?;
    outcome(store, id).await
}

/// Dismissing chooses the option without effects when there is one (as
/// upstream does); otherwise the decision is settled as `dismissed`.
pub async fn dismiss(
    store: &Store,
    actor: &Actor,
    id: &str,
    reason: Option<String>,
) -> Result<Value> {
    let current = get(store, id).await?;
    verify(&current)?;
    if let Some(empty) = options(&current)?
        .into_iter()
        .find(|o| o.effects.is_empty())
    {
        let input = Decide {
            option_id: empty.id,
            ..Decide::default()
        };
        return decide_as(store, actor, id, input, Some(reason)).await;
    }
    let mut metadata = current["metadata"].clone();
    metadata["dismissed"] = json!(true);
    metadata["dismissReason"] = json!(reason);
    let ts = now();
    let mut tx = store.begin().await?;
    let n = crate::engine::db::query(
        "UPDATE decisions SET status = 'decided', execution_status = 'succeeded', chosen_option_id = 'dismissed', \
         decided_by_user_id = $2, decided_at = $3, updated_at = $3, metadata = $4 WHERE id = $1 AND status = 'open'",
    )
    .bind(id)
    .bind(actor.id.as_str())
    .bind(&ts)
    .bind(metadata.to_string())
    .execute(tx.conn())
    .await?
    .rows_affected();
    if n == 0 {
        return Err(resolved());
    }
    record(&mut tx, actor, &current, Action::DecisionDismissed, json!({
        "chosenOptionId": "dismissed", "decidedByUserId": actor.id, "dismissed": true, "dismissReason": reason,
    }))
    .await?;
    continue_origin(
        &mut tx,
        actor,
        &current,
        "decided",
        Some(ExecutionStatus::Succeeded),
    )
    .await?;
    tx.commit().await?;
    outcome(store, id).await
}

/// The origin agent (or the board) withdraws an open decision; withdrawing
/// a withdrawn one answers it again.
pub async fn cancel(store: &Store, actor: &Actor, id: &str) -> Result<Value> {
    let current = get(store, id).await?;
    if current["status"] == "cancelled" {
        return Ok(current);
    }
    let mut tx = store.begin().await?;
    let n = crate::engine::db::query("UPDATE decisions SET status = 'cancelled', updated_at = $2 WHERE id = $1 AND status = 'open'")
        .bind(id)
        .bind(now())
        .execute(tx.conn())
        .await?
        .rows_affected();
    if n == 0 {
        return Err(resolved());
    }
    record(
        &mut tx,
        actor,
        &current,
        Action::DecisionCancelled,
        json!({ "title": current["title"] }),
    )
    .await?;
    continue_origin(&mut tx, actor, &current, "cancelled", None).await?;
    let out = get_in(&mut tx, id).await?;
    tx.commit().await?;
    Ok(out)
}

/// A decision past its expiry is expired when someone tries to answer it.
async fn expire(store: &Store, current: &Value) -> Result<()> {
    let id = current["id"].as_str().unwrap_or_default();
    let mut metadata = current["metadata"].clone();
    metadata["expiredReason"] = json!("ttl");
    let mut tx = store.begin().await?;
    let n = crate::engine::db::query(
        "UPDATE decisions SET status = 'expired', updated_at = $2, metadata = $3 WHERE id = $1 AND status = 'open'",
    )
    .bind(id)
    .bind(now())
    .bind(metadata.to_string())
    .execute(tx.conn())
    .await?
    .rows_affected();
    if n == 1 {
        let system = Actor::system();
        record(
            &mut tx,
            &system,
            current,
            Action::DecisionExpired,
            json!({ "expiredReason": "ttl" }),
        )
        .await?;
        continue_origin(&mut tx, &system, current, "expired", None).await?;
    }
    tx.commit().await
}

/// With `wake_origin_agent`, the origin agent wakes on its issue with the
/// decision and its outcome (upstream's reason `decision_<outcome>`).
async fn continue_origin(
    tx: &mut Tx,
    actor: &Actor,
    d: &Value,
    outcome: &str,
    execution: Option<ExecutionStatus>,
) -> Result<()> {
    if d["continuationPolicy"] != "wake_origin_agent" {
        return Ok(());
    }
    let chosen: Option<(Option<String>,)> =
        crate::engine::db::query_as("SELECT chosen_option_id FROM decisions WHERE id = $1")
            .bind(d["id"].as_str().unwrap_or_default())
            .fetch_optional(tx.conn())
            .await?;
    crate::wakes::enqueue::enqueue_in(
        tx,
        actor,
        Wake {
            agent_id: d["originAgentId"].as_str().unwrap_or_default().to_string(),
            source: WakeSource::Automation,
            trigger_detail: Some("system".into()),
            reason: Some(format!("decision_{outcome}")),
            payload: Some(json!({
                "issueId": d["originIssueId"], "decisionId": d["id"], "outcome": outcome,
                "chosenOptionId": chosen.and_then(|c| c.0), "executionStatus": execution.map(|e| e.as_str()),
            })),
            issue_id: d["originIssueId"].as_str().map(str::to_string),
            idempotency_key: None,
        },
    )
    .await?;
    tx.runs_may_start();
    Ok(())
}
