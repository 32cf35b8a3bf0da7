//! Agent configuration revisions: every change to an agent's adapter or
//! runtime config is kept, with secret values redacted, and can be rolled back.

use crate::engine::db::DbRow;
use paperclip_core::actor::Actor;
use paperclip_core::model::{Agent, ConfigRevision};
use paperclip_core::secrets::redact_config;
use serde_json::{json, Value};

use crate::engine::row::RowExt;
use crate::{new_id, now, Error, Result, Store, Tx};

/// Records the agent's current config as its next revision (inside the
/// transaction that changed it).
pub(crate) async fn record_in(
    tx: &mut Tx,
    actor: &Actor,
    agent: &Agent,
    summary: &str,
) -> Result<ConfigRevision> {
    let (next,): (i64,) =
        crate::engine::db::query_as("SELECT COALESCE(MAX(revision_number), 0) + 1 FROM agent_config_revisions WHERE agent_id = $1")
            .bind(&agent.id)
            .fetch_one(tx.conn())
            .await?;
    let (adapter_config, mut paths) = redact_config(&agent.adapter_config);
    let (runtime_config, runtime_paths) = redact_config(&agent.runtime_config);
    paths.extend(runtime_paths.into_iter().map(|mut p| {
        p.insert(0, "runtimeConfig".into());
        p
    }));
    let id = new_id();
    crate::engine::db::query(
        "INSERT INTO agent_config_revisions (id, company_id, agent_id, revision_number, adapter_type, \
         adapter_config, runtime_config, redacted_paths, changed_by_actor_type, changed_by_actor_id, \
         change_summary, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(&id)
    .bind(&agent.company_id)
    .bind(&agent.id)
    .bind(next)
    .bind(&agent.adapter_type)
    .bind(adapter_config.to_string())
    .bind(runtime_config.to_string())
    .bind(json!(paths).to_string())
    .bind(actor.kind.as_str())
    .bind(&actor.id)
    .bind(summary)
    .bind(now())
    .execute(tx.conn())
    .await?;
    let row = crate::engine::db::query("SELECT * FROM agent_config_revisions WHERE id = $1")
        .bind(&id)
        .fetch_one(tx.conn())
        .await?;
    map(&row)
}

/// Newest first.
pub async fn list(store: &Store, agent_id: &str) -> Result<Vec<ConfigRevision>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM agent_config_revisions WHERE agent_id = $1 ORDER BY revision_number DESC",
    )
    .bind(agent_id)
    .fetch_all(store.pool())
    .await?;
    let mut revisions: Vec<ConfigRevision> = rows.iter().map(map).collect::<Result<_>>()?;
    let ids: Vec<(i64, String)> = revisions
        .iter()
        .map(|r| (r.revision_number, r.id.clone()))
        .collect();
    let afters: Vec<Value> = revisions.iter().map(|r| r.after_config.clone()).collect();
    for (i, revision) in revisions.iter_mut().enumerate() {
        // The one before is the next in this newest-first list.
        let before = afters.get(i + 1).cloned().unwrap_or_else(|| json!({}));
        link(revision, before, |n| {
            ids.iter().find(|(m, _)| *m == n).map(|(_, id)| id.clone())
        });
    }
    Ok(revisions)
}

pub async fn get(store: &Store, agent_id: &str, revision_id: &str) -> Result<ConfigRevision> {
    let row = crate::engine::db::query(
        "SELECT * FROM agent_config_revisions WHERE agent_id = $1 AND id = $2",
    )
    .bind(agent_id)
    .bind(revision_id)
    .fetch_optional(store.pool())
    .await?;
    let mut revision = row
        .as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| Error::not_found("Config revision"))?;
    let by_number = |n: i64| async move {
        let row = crate::engine::db::query(
            "SELECT * FROM agent_config_revisions WHERE agent_id = $1 AND revision_number = $2",
        )
        .bind(agent_id)
        .bind(n)
        .fetch_optional(store.pool())
        .await?;
        row.as_ref().map(map).transpose()
    };
    let before = by_number(revision.revision_number - 1)
        .await?
        .map_or_else(|| json!({}), |r| r.after_config);
    let restored = match rolled_back_to(&revision) {
        Some(n) => by_number(n).await?.map(|r| r.id),
        None => None,
    };
    link(&mut revision, before, |_| restored.clone());
    Ok(revision)
}

/// Fills what a revision says about the one before it: the snapshot it
/// changed, the keys that differ, and the revision a rollback restored
/// (found by number with `id_of`).
fn link(revision: &mut ConfigRevision, before: Value, id_of: impl Fn(i64) -> Option<String>) {
    revision.changed_keys = ["adapterType", "adapterConfig", "runtimeConfig"]
        .iter()
        .filter(|k| before.get(**k) != revision.after_config.get(**k))
        .map(|k| k.to_string())
        .collect();
    revision.before_config = before;
    if let Some(n) = rolled_back_to(revision) {
        revision.source = "rollback".into();
        revision.rolled_back_from_revision_id = id_of(n);
    }
}

/// The revision number a rollback restored, from the summary it wrote.
fn rolled_back_to(revision: &ConfigRevision) -> Option<i64> {
    revision
        .change_summary
        .as_deref()?
        .strip_prefix(ROLLBACK_SUMMARY)?
        .trim()
        .parse()
        .ok()
}

pub(crate) const ROLLBACK_SUMMARY: &str = "rollback to revision ";

fn map(row: &DbRow) -> Result<ConfigRevision> {
    let paths: Value = row.json("redacted_paths")?;
    let (kind, actor) = (
        row.text("changed_by_actor_type")?,
        row.text("changed_by_actor_id")?,
    );
    let adapter_type = row.text("adapter_type")?;
    let adapter_config: Value = row.json("adapter_config")?;
    let runtime_config: Value = row.json("runtime_config")?;
    Ok(ConfigRevision {
        id: row.text("id")?,
        agent_id: row.text("agent_id")?,
        company_id: row.text("company_id")?,
        revision_number: row.int("revision_number")?,
        after_config: json!({
            "adapterType": adapter_type,
            "adapterConfig": adapter_config,
            "runtimeConfig": runtime_config,
        }),
        adapter_type,
        adapter_config,
        runtime_config,
        redacted_paths: serde_json::from_value(paths).unwrap_or_default(),
        created_by_agent_id: (kind == "agent").then(|| actor.clone()),
        created_by_user_id: (kind == "user").then_some(actor),
        source: "patch".into(),
        rolled_back_from_revision_id: None,
        changed_keys: Vec::new(),
        before_config: json!({}),
        change_summary: row.opt_text("change_summary")?,
        created_at: row.text("created_at")?,
    })
}

/// The newest revision, linked like [`get`]'s, or `None` for an agent never changed.
pub async fn latest(store: &Store, agent_id: &str) -> Result<Option<ConfigRevision>> {
    let newest: Option<(String,)> = crate::engine::db::query_as(
        "SELECT id FROM agent_config_revisions WHERE agent_id = $1 ORDER BY revision_number DESC LIMIT 1",
    )
    .bind(agent_id)
    .fetch_optional(store.pool())
    .await?;
    match newest {
        Some((id,)) => get(store, agent_id, &id).await.map(Some),
        None => Ok(None),
    }
}
