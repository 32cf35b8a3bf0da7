//! The secrets granted to agents (approved bindings) and the audit of an
//! agent's access to them: the list, and each value read (never the value).

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::company_secret::SecretStatus;
use paperclip_core::secret_proposal::GrantedSecret;
use serde_json::Value;

use crate::engine::row::RowExt;
use crate::org::secret_proposals::record_as;
use crate::{Result, Store};

/// The secrets granted to an agent: (what the agent sees, the secret's id).
pub async fn grants(store: &Store, agent_id: &str) -> Result<Vec<(GrantedSecret, String)>> {
    let rows = crate::engine::db::query(
        "SELECT s.id, s.key, s.name, s.description, s.latest_version, s.status, \
         b.config_path, b.version_selector FROM company_secret_bindings b \
         JOIN company_secrets s ON s.id = b.secret_id \
         WHERE b.agent_id = $1 ORDER BY s.key, b.config_path",
    )
    .bind(agent_id)
    .fetch_all(store.pool())
    .await?;
    let mut out: Vec<(GrantedSecret, String)> = Vec::new();
    for row in &rows {
        let status: SecretStatus = row.stored("status")?;
        if status != SecretStatus::Active {
            continue;
        }
        let key = row.text("key")?;
        let delivery = paperclip_core::secret_proposal::delivery(&row.text("config_path")?);
        if let Some((seen, _)) = out.iter_mut().find(|(g, _)| g.key == key) {
            if seen.delivery != delivery {
                seen.delivery = "both".into();
            }
            continue;
        }
        let latest = row.int("latest_version")?;
        out.push((
            GrantedSecret {
                key,
                secret_ref: row.text("id")?,
                name: row.text("name")?,
                description: row.opt_text("description")?,
                delivery: delivery.into(),
                projection_class: "unclassified".into(),
                latest_version: latest,
                version_selector: row.text("version_selector")?,
                resolved_version: latest,
            },
            row.text("id")?,
        ));
    }
    Ok(out)
}

/// The agent's approved bindings delivered in its environment
/// (`env.NAME`): (the variable, the secret's id), of active secrets only
/// (a disabled one is not delivered, as it is not listed to the agent).
pub async fn env_bindings(store: &Store, agent_id: &str) -> Result<Vec<(String, String)>> {
    let rows = crate::engine::db::query(
        "SELECT b.config_path, s.id, s.status FROM company_secret_bindings b \
         JOIN company_secrets s ON s.id = b.secret_id \
         WHERE b.agent_id = $1 ORDER BY b.config_path",
    )
    .bind(agent_id)
    .fetch_all(store.pool())
    .await?;
    let mut out = Vec::new();
    for row in &rows {
        let status: SecretStatus = row.stored("status")?;
        let path = row.text("config_path")?;
        if let (SecretStatus::Active, Some(var)) = (status, path.strip_prefix("env.")) {
            out.push((var.to_string(), row.text("id")?));
        }
    }
    Ok(out)
}

/// An agent's secret access, audited: the list, or a value read (the key
/// and the outcome, never the value).
pub async fn record_access(
    store: &Store,
    actor: &Actor,
    action: Action,
    entity: (EntityType, &str),
    details: Value,
) -> Result<()> {
    let company_id = actor.company_id.clone().unwrap_or_default();
    let mut tx = store.begin().await?;
    record_as(
        &mut tx,
        actor,
        &company_id,
        action,
        entity.0,
        entity.1,
        details,
    )
    .await?;
    tx.commit().await
}
