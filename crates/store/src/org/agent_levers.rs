//! What the board does to an agent beyond editing it: pause, resume and
//! terminate (which reach its runs and budget), delete, and rolling its
//! config back to an earlier revision. Flows over the agents table.

use crate::audit::activity::{self, Entry};
use crate::audit::revisions::*;
use crate::org::agents::*;
use crate::{now, Error, Result, Store};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::agent::AgentStatus;
use paperclip_core::model::Agent;
use paperclip_core::secrets::{get_path, set_path};
use serde_json::json;

/// Pause, resume and terminate: the board's levers on a running company.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lever {
    Pause,
    Resume,
    Terminate,
}

pub async fn pull_lever(store: &Store, actor: &Actor, id: &str, lever: Lever) -> Result<Agent> {
    let mut tx = store.begin().await?;
    let agent = get_in(&mut tx, id).await?;
    let from = agent.status;
    let (to, action) = match lever {
        Lever::Pause => (AgentStatus::Paused, Action::AgentPaused),
        Lever::Resume => (AgentStatus::Idle, Action::AgentResumed),
        Lever::Terminate => (AgentStatus::Terminated, Action::AgentTerminated),
    };
    if from == AgentStatus::Terminated && lever != Lever::Terminate {
        let verb = if lever == Lever::Pause {
            "pause"
        } else {
            "resume"
        };
        return Err(Error::conflict(
            format!("Cannot {verb} terminated agent"),
            None,
        ));
    }
    if lever == Lever::Resume && from != AgentStatus::Paused {
        return Err(Error::conflict("Agent is not paused", None));
    }
    if from == to {
        return Ok(agent);
    }
    if !from.can_transition_to(to) {
        return Err(Error::conflict(
            format!(
                "Agent in status {} cannot be {}",
                from.as_str(),
                to.as_str()
            ),
            None,
        ));
    }
    let ts = now();
    if lever == Lever::Resume && agent.pause_reason.as_deref() == Some("budget") {
        // Resuming an agent stopped by its budget is the board's override.
        crate::money::budget_changes::override_for_agent(
            &mut tx,
            actor,
            &agent.company_id,
            id,
            chrono::Utc::now(),
        )
        .await?;
    }
    let (pause_reason, paused_at) = match lever {
        Lever::Pause => (Some("manual"), Some(ts.clone())),
        _ => (None, None),
    };
    crate::engine::db::query(
        "UPDATE agents SET status = $2, pause_reason = $3, paused_at = $4, updated_at = $5 WHERE id = $1",
    )
    .bind(id)
    .bind(to.as_str())
    .bind(pause_reason)
    .bind(paused_at)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    // Queued runs go with the pause, in its transaction: a pause interrupted
    // half way must not leave runs waiting behind it.
    if lever != Lever::Resume {
        let reason = format!("The agent was {}", to.as_str());
        crate::runs::finish::cancel_queued_of_agent_in(&mut tx, id, &reason, "cancelled", &ts)
            .await?;
    }
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &agent.company_id,
            action,
            entity_type: EntityType::Agent,
            entity_id: id,
            details: json!({ "from": from.as_str(), "to": to.as_str() }),
        },
    )
    .await?;
    let agent = get_in(&mut tx, id).await?;
    tx.commit().await?;
    Ok(agent)
}

pub async fn delete(store: &Store, actor: &Actor, id: &str) -> Result<Agent> {
    let mut tx = store.begin().await?;
    let agent = get_in(&mut tx, id).await?;
    crate::engine::db::query("DELETE FROM agents WHERE id = $1")
        .bind(id)
        .execute(tx.conn())
        .await?;
    crate::views::run_days::forget(&mut tx, store.backend(), &agent.company_id).await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &agent.company_id,
            action: Action::AgentDeleted,
            entity_type: EntityType::Agent,
            entity_id: id,
            details: json!({ "name": agent.name }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(agent)
}

/// Restores the config of a revision. Redacted values are not restorable:
/// each one keeps the agent's current value, and a rollback that would have
/// to invent a secret the agent no longer has is refused.
pub async fn rollback(
    store: &Store,
    actor: &Actor,
    agent_id: &str,
    revision_id: &str,
) -> Result<Agent> {
    let revision = crate::audit::revisions::get(store, agent_id, revision_id).await?;
    let mut tx = store.begin().await?;
    let agent = crate::org::agents::get_in(&mut tx, agent_id).await?;
    let mut adapter_config = revision.adapter_config.clone();
    let mut runtime_config = revision.runtime_config.clone();
    for path in &revision.redacted_paths {
        let (target, current, inner) = if path.first().map(String::as_str) == Some("runtimeConfig")
        {
            (&mut runtime_config, &agent.runtime_config, &path[1..])
        } else {
            (&mut adapter_config, &agent.adapter_config, &path[..])
        };
        match get_path(current, inner) {
            Some(value) => set_path(target, inner, value.clone()),
            None => {
                return Err(Error::rule(format!(
                    "Revision {} has a redacted value at {} that the agent no longer has; set it again instead",
                    revision.revision_number,
                    path.join(".")
                )))
            }
        }
    }
    let ts = now();
    crate::engine::db::query("UPDATE agents SET adapter_type = $2, adapter_config = $3, runtime_config = $4, updated_at = $5 WHERE id = $1")
        .bind(agent_id)
        .bind(&revision.adapter_type)
        .bind(adapter_config.to_string())
        .bind(runtime_config.to_string())
        .bind(&ts)
        .execute(tx.conn())
        .await?;
    let restored = crate::org::agents::get_in(&mut tx, agent_id).await?;
    record_in(
        &mut tx,
        actor,
        &restored,
        &format!("{ROLLBACK_SUMMARY}{}", revision.revision_number),
    )
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &agent.company_id,
            action: Action::AgentConfigRolledBack,
            entity_type: EntityType::Agent,
            entity_id: agent_id,
            details: json!({ "revisionId": revision.id, "revisionNumber": revision.revision_number }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(restored)
}
