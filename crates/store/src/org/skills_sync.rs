//! Which company skills an agent has (issue 40), kept where upstream keeps
//! them: the agent's `adapterConfig.paperclipSkillSync.desiredSkills`, as
//! canonical keys. A sync resolves each reference (id, key, or a slug unique
//! in the company), writes the config with a revision and an activity entry
//! in one transaction; a run start reads the current files of each chosen
//! skill.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::model::Agent;
use paperclip_core::skill::{self, AssignmentMode, VersionFile};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::audit::activity::{self, Entry};
use crate::org::skills::{self as library, short_hash, Skill};
use crate::{now, Error, Result, Store, Tx};

/// The agent after a sync, and the keys it now chooses.
pub struct Synced {
    pub agent: Agent,
    pub desired: Vec<String>,
}

/// Adds, removes or replaces the agent's chosen skills. An unknown or
/// ambiguous reference is a 422 naming it (upstream's answer); keys the
/// agent already had stay even when their skill is gone, so they can be
/// removed.
pub async fn sync(
    store: &Store,
    actor: &Actor,
    agent_id: &str,
    mode: AssignmentMode,
    references: &[String],
) -> Result<Synced> {
    let mut tx = store.begin().await?;
    tx.lock_row(crate::Locked::Agent, agent_id).await?;
    let agent = crate::org::agents::get_in(&mut tx, agent_id).await?;
    let current = skill::desired_keys(&agent.adapter_config);
    let mut requested = Vec::with_capacity(references.len());
    for reference in references {
        let reference = reference.trim();
        let key = match resolve(&mut tx, &agent.company_id, reference).await? {
            Some(found) => found.skill.key,
            // Removing a stale key needs no skill behind it.
            None if mode == AssignmentMode::Remove && current.iter().any(|k| k == reference) => {
                reference.to_string()
            }
            None => {
                return Err(Error::rule(format!(
                    "Unknown or ambiguous company skill reference: {reference}"
                )))
            }
        };
        requested.push(key);
    }
    let desired = skill::merge_desired(&current, &requested, mode);
    let config = skill::with_desired(&agent.adapter_config, &desired);
    if config != agent.adapter_config {
        crate::engine::db::query(
            "UPDATE agents SET adapter_config = $2, updated_at = $3 WHERE id = $1",
        )
        .bind(agent_id)
        .bind(config.to_string())
        .bind(now())
        .execute(tx.conn())
        .await?;
        let saved = crate::org::agents::get_in(&mut tx, agent_id).await?;
        crate::audit::revisions::record_in(
            &mut tx,
            actor,
            &saved,
            "changed adapterConfig (skill sync)",
        )
        .await?;
    }
    let mode_text = match mode {
        AssignmentMode::Add => "add",
        AssignmentMode::Remove => "remove",
        AssignmentMode::Replace => "replace",
    };
    let entry = Entry {
        company_id: &agent.company_id,
        action: Action::AgentSkillsSynced,
        entity_type: EntityType::Agent,
        entity_id: agent_id,
        details: json!({ "adapterType": agent.adapter_type, "desiredSkills": desired,
            "assignmentMode": mode_text, "mode": "ephemeral", "supported": true }),
    };
    activity::record(&mut tx, actor, entry).await?;
    let agent = crate::org::agents::get_in(&mut tx, agent_id).await?;
    tx.commit().await?;
    Ok(Synced { agent, desired })
}

/// An id or key names one skill; a slug only when no key is spelt so.
async fn resolve(tx: &mut Tx, company_id: &str, reference: &str) -> Result<Option<Skill>> {
    if reference.is_empty() {
        return Ok(None);
    }
    library::find_in(tx, company_id, reference).await
}

/// One skill a run gets: its folder name in the CLI's skills folder and
/// its current files.
#[derive(Debug, Clone)]
pub struct RunSkill {
    pub key: String,
    pub folder: String,
    pub version_id: String,
    pub files: Vec<VersionFile>,
}

/// The agent's chosen skills that exist, with their current files, and a
/// fingerprint of the set (the same versions give the same fingerprint).
pub async fn for_run(store: &Store, agent: &Agent) -> Result<(Vec<RunSkill>, String)> {
    let keys = skill::desired_keys(&agent.adapter_config);
    let mut out = Vec::with_capacity(keys.len());
    let mut print = Sha256::new();
    for key in keys {
        let Ok(found) = library::get(store, &agent.company_id, &key).await else {
            continue;
        };
        let Some(version_id) = found.skill.current_version_id.clone() else {
            continue;
        };
        print.update(format!("{}\n{}\n", found.skill.key, version_id).as_bytes());
        out.push(RunSkill {
            folder: skill::runtime_name(&found.skill.slug, &short_hash(&found.skill.key)),
            key: found.skill.key,
            version_id,
            files: found.files,
        });
    }
    let fingerprint: String = print
        .finalize()
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((out, fingerprint))
}
