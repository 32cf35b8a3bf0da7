//! Agent configuration revisions: every change to an agent's adapter or
//! runtime config, or to who it is (name, role, title, manager, budget ...),
//! is kept, with secret values redacted; its config can be rolled back.

use crate::engine::db::DbRow;
use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::HeartbeatPolicy;
use paperclip_core::model::{Agent, ConfigRevision};
use paperclip_core::secrets::redact_config;
use serde_json::{json, Map, Value};

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
    let metadata = agent
        .metadata
        .as_ref()
        .map_or(Value::Null, |m| redact_config(m).0);
    let identity = json!({
        "name": agent.name,
        "role": agent.role,
        "title": agent.title,
        "icon": agent.icon,
        "reportsTo": agent.reports_to,
        "capabilities": agent.capabilities,
        "budgetMonthlyCents": agent.budget_monthly_cents,
        "metadata": metadata,
    });
    let id = new_id();
    crate::engine::db::query(
        "INSERT INTO agent_config_revisions (id, company_id, agent_id, revision_number, adapter_type, \
         adapter_config, runtime_config, redacted_paths, changed_by_actor_type, changed_by_actor_id, \
         change_summary, created_at, identity) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
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
    .bind(identity.to_string())
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
    revision.changed_keys = changed_keys(&before, &revision.after_config);
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

/// The agent's fields a revision snapshots, in the original's order; a
/// change to any of them writes a revision.
pub(crate) const FIELDS: [&str; 12] = [
    "name",
    "role",
    "title",
    "icon",
    "reportsTo",
    "capabilities",
    "adapterType",
    "adapterConfig",
    "runtimeConfig",
    "defaultEnvironmentId",
    "budgetMonthlyCents",
    "metadata",
];

/// The snapshot keys that differ. The first revision changed everything it
/// has; a revision written before snapshots named the agent (no `name`)
/// compares on the keys both have, so it never reports a change it did not make.
fn changed_keys(before: &Value, after: &Value) -> Vec<String> {
    let first = before.as_object().is_none_or(|b| b.is_empty());
    FIELDS
        .iter()
        .filter(|k| after.get(**k).is_some() && (first || before.get(**k).is_some()))
        .filter(|k| before.get(**k) != after.get(**k))
        .map(|k| k.to_string())
        .collect()
}

/// A revision's snapshot: its config, with the run limit in force written
/// out as agents' answers have it, and who the agent was when the revision
/// has it. We run every agent in its adapter's one environment, so there is
/// never a default environment to name.
fn snapshot(
    adapter_type: &str,
    adapter_config: &Value,
    runtime_config: &Value,
    identity: Option<Value>,
) -> Value {
    let limit = HeartbeatPolicy::from_runtime_config(runtime_config).max_concurrent_runs;
    let mut runtime = runtime_config.clone();
    if !runtime.is_object() {
        runtime = json!({});
    }
    let heartbeat = runtime
        .as_object_mut()
        .expect("an object")
        .entry("heartbeat")
        .or_insert_with(|| json!({}));
    if let Some(heartbeat) = heartbeat.as_object_mut() {
        heartbeat
            .entry("maxConcurrentRuns")
            .or_insert(Value::from(limit));
    }
    let mut out = match identity {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    };
    out.insert("adapterType".into(), json!(adapter_type));
    out.insert("adapterConfig".into(), adapter_config.clone());
    out.insert("runtimeConfig".into(), runtime);
    if out.contains_key("name") {
        out.insert("defaultEnvironmentId".into(), Value::Null);
    }
    Value::Object(out)
}

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
        after_config: snapshot(
            &adapter_type,
            &adapter_config,
            &runtime_config,
            row.opt_json("identity")?,
        ),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_reports_only_the_keys_both_snapshots_have() {
        let config_only =
            json!({ "adapterType": "process", "adapterConfig": {}, "runtimeConfig": {} });
        let named = json!({ "name": "A", "title": "T", "adapterType": "process",
            "adapterConfig": {}, "runtimeConfig": {} });
        assert!(changed_keys(&config_only, &named).is_empty());
        let retitled = json!({ "name": "A", "title": "U", "adapterType": "process",
            "adapterConfig": {}, "runtimeConfig": {} });
        assert_eq!(changed_keys(&named, &retitled), ["title"]);
        assert_eq!(
            changed_keys(&json!({}), &config_only),
            ["adapterType", "adapterConfig", "runtimeConfig"]
        );
    }

    #[test]
    fn a_snapshot_writes_the_run_limit_out_and_names_no_environment() {
        let old = snapshot(
            "process",
            &json!({}),
            &json!({ "heartbeat": { "enabled": true } }),
            None,
        );
        assert_eq!(old["runtimeConfig"]["heartbeat"]["maxConcurrentRuns"], 1);
        assert_eq!(old["runtimeConfig"]["heartbeat"]["enabled"], true);
        assert!(old.get("defaultEnvironmentId").is_none());
        let named = snapshot(
            "process",
            &json!({}),
            &Value::Null,
            Some(json!({ "name": "A" })),
        );
        assert_eq!(named.get("defaultEnvironmentId"), Some(&Value::Null));
        assert_eq!(named["name"], "A");
    }
}
