//! Agents and the org tree. Invariants: an agent reports to an agent of the
//! same company, the reporting graph has no cycle, and `urlKey` is unique in
//! the company. Status changes follow [`AgentStatus::can_transition_to`].

use paperclip_core::activity::{Action, EntityType};
use std::collections::HashMap;

use crate::engine::db::DbRow;
use paperclip_core::actor::Actor;
use paperclip_core::agent::{AgentRole, AgentStatus};
use paperclip_core::input::{AgentPatch, NewAgent};
use paperclip_core::model::{Agent, OrgNode};
use paperclip_core::naming::{url_key, url_key_candidate};
use paperclip_core::org::would_create_cycle;
use serde_json::{json, Map, Value};

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::engine::sql::diff;
use crate::{new_id, now, Error, Result, Store, Tx};

pub async fn create(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    input: NewAgent,
) -> Result<Agent> {
    let mut tx = store.begin().await?;
    let agent = create_in(&mut tx, actor, company_id, input, AgentStatus::Idle).await?;
    tx.commit().await?;
    Ok(agent)
}

/// Creates an agent inside the caller's transaction, in `status`: `idle`, or
/// `pending_approval` for a hire that waits for the board.
pub(crate) async fn create_in(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    input: NewAgent,
    status: AgentStatus,
) -> Result<Agent> {
    let name = input.name.trim().to_string();
    if name.is_empty() {
        return Err(Error::invalid("name", "Name must not be empty"));
    }
    crate::org::companies::exists_in(tx, company_id).await?;
    let name = crate::org::agent_names::for_new_agent(tx, company_id, &name).await?;
    if let Some(manager) = &input.reports_to {
        get_in_company(tx, company_id, manager)
            .await
            .map_err(|_| Error::not_found("Manager agent"))?;
    }
    let key = free_url_key(tx, company_id, &url_key(&name), None).await?;
    let id = new_id();
    let ts = now();
    let role = input.role.unwrap_or(AgentRole::General).as_str();
    let mut runtime_config = Value::Object(input.runtime_config.unwrap_or_default());
    keep_secrets_in("runtimeConfig", &mut runtime_config, &Value::Null)?;
    let mut adapter_config = Value::Object(input.adapter_config.unwrap_or_default());
    keep_secrets(&mut adapter_config, &Value::Null)?;
    let permissions = Value::Object(input.permissions.unwrap_or_default());
    crate::engine::db::query(
        "INSERT INTO agents (id, company_id, name, url_key, role, title, icon, status, reports_to, \
         capabilities, adapter_type, adapter_config, runtime_config, permissions, metadata, \
         budget_monthly_cents, spent_monthly_cents, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $17, $8, $9, $10, $11, $12, $13, $14, $15, 0, $16, $16)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(&name)
    .bind(&key)
    .bind(role)
    .bind(input.title.as_deref())
    .bind(input.icon.as_deref())
    .bind(input.reports_to.as_deref())
    .bind(input.capabilities.as_deref())
    .bind(input.adapter_type.as_deref().unwrap_or("process"))
    .bind(adapter_config.to_string())
    .bind(runtime_config.to_string())
    .bind(permissions.to_string())
    .bind(input.metadata.map(|m| Value::Object(m).to_string()))
    .bind(i64::from(input.budget_monthly_cents.unwrap_or(0)))
    .bind(&ts)
    .bind(status.as_str())
    .execute(tx.conn())
    .await?;
    activity::record(
        tx,
        actor,
        Entry {
            company_id,
            action: Action::AgentCreated,
            entity_type: EntityType::Agent,
            entity_id: &id,
            details: json!({ "name": name, "role": role, "urlKey": key, "status": status.as_str() }),
        },
    )
    .await?;
    let agent = get_in(tx, &id).await?;
    crate::audit::revisions::record_in(tx, actor, &agent, "created").await?;
    Ok(agent)
}

/// Agents with their month's spend (`$1`, the month as `2026-12`, bound
/// first: the raw reads bind by position of first appearance), from the
/// kept monthly totals per agent (migration 13) rather than a sum of the
/// month's cost events on every load.
const WITH_SPEND: &str = "SELECT a.id, a.company_id, a.name, a.role, a.title, a.icon, a.status, \
     a.reports_to, a.capabilities, a.adapter_type, a.adapter_config, a.runtime_config, \
     a.budget_monthly_cents, CAST(COALESCE((SELECT t.cost_cents FROM cost_month_totals t \
     WHERE t.company_id = a.company_id AND t.month = $1 AND t.dim = 'agent' AND t.dim_key = CAST(a.id AS TEXT)), 0) \
     AS BIGINT) AS month_spend, a.pause_reason, a.paused_at, a.error_reason, a.permissions, \
     a.last_heartbeat_at, a.metadata, a.created_at, a.updated_at, a.url_key, a.usage_limited_until \
     FROM agents a";
static BY_ID: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("{WITH_SPEND} WHERE a.id = $2"));

pub async fn list(store: &Store, company_id: &str) -> Result<Vec<Agent>> {
    let (start, _, _) = paperclip_core::budget::month_window(chrono::Utc::now());
    // Straight from the statement on SQLite (see `raw`): a thousand agents
    // through sqlx's worker hand-off took ~15 ms.
    crate::engine::db::query(&format!(
        "{WITH_SPEND} WHERE a.company_id = $2 ORDER BY a.created_at, a.id"
    ))
    .bind(&start[..7])
    .bind(company_id)
    .fetch_map(store.pool(), map, map)
    .await
}

/// The company's agent with this url key (or id), if any.
pub async fn by_key(store: &Store, company_id: &str, key: &str) -> Result<Option<Agent>> {
    let (start, _, _) = paperclip_core::budget::month_window(chrono::Utc::now());
    // The key twice: an id is a uuid on Postgres, a url key text.
    let sql = format!("{WITH_SPEND} WHERE a.company_id = $2 AND (a.url_key = $3 OR a.id = $4)");
    let row = crate::engine::db::query(&sql)
        .bind(&start[..7])
        .bind(company_id)
        .bind(key)
        .bind(key)
        .fetch_optional(store.pool())
        .await?;
    row.as_ref().map(map).transpose()
}

pub async fn get(store: &Store, id: &str) -> Result<Agent> {
    let (start, _, _) = paperclip_core::budget::month_window(chrono::Utc::now());
    let row = crate::engine::db::query(BY_ID.as_str())
        .bind(&start[..7])
        .bind(id)
        .fetch_optional(store.pool())
        .await?;
    row.as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| Error::not_found("Agent"))
}

pub(crate) async fn get_in(tx: &mut Tx, id: &str) -> Result<Agent> {
    let (start, _, _) = paperclip_core::budget::month_window(chrono::Utc::now());
    let row = crate::engine::db::query(BY_ID.as_str())
        .bind(&start[..7])
        .bind(id)
        .fetch_optional(tx.conn())
        .await?;
    row.as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| Error::not_found("Agent"))
}

/// What checks need of an agent (existence, company, status, policy),
/// without the month's spend that a full [`Agent`] sums from cost events:
/// authentication, wakes and references load this, inside the write lock too.
#[derive(Debug, Clone)]
pub struct Brief {
    pub id: String,
    pub company_id: String,
    pub name: String,
    pub status: AgentStatus,
    pub pause_reason: Option<String>,
    pub adapter_type: String,
    pub runtime_config: Value,
    /// Set while a provider usage limit holds its runs back.
    pub usage_limited_until: Option<String>,
}

const BRIEF: &str =
    "SELECT id, company_id, name, status, pause_reason, adapter_type, runtime_config, usage_limited_until FROM agents WHERE id = $1";

fn map_brief(row: &DbRow) -> Result<Brief> {
    Ok(Brief {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        name: row.text("name")?,
        status: row.stored("status")?,
        pause_reason: row.opt_text("pause_reason")?,
        adapter_type: row.text("adapter_type")?,
        runtime_config: row.json("runtime_config")?,
        usage_limited_until: row
            .opt_text("usage_limited_until")?
            .filter(|t| t.as_str() > crate::now().as_str()),
    })
}

pub async fn brief(store: &Store, id: &str) -> Result<Brief> {
    brief_from(store.pool(), id).await
}

/// The briefs of `ids` in one query (the ids bound as one JSON array); an id
/// with no agent is left out. How the executor reads every agent with queued
/// runs at once instead of one query per agent.
pub async fn briefs(store: &Store, ids: &[&str]) -> Result<Vec<Brief>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let list =
        crate::engine::sql::json_values(store.backend(), "$1", crate::engine::sql::ListOf::Ids);
    let sql = format!(
        "SELECT id, company_id, name, status, pause_reason, adapter_type, runtime_config, usage_limited_until \
         FROM agents WHERE id IN {list}"
    );
    let rows = crate::engine::db::query(&sql)
        .bind(crate::engine::sql::json_array(ids.iter()))
        .fetch_all(store.pool())
        .await?;
    rows.iter().map(map_brief).collect()
}

pub(crate) async fn brief_in(tx: &mut Tx, id: &str) -> Result<Brief> {
    brief_from(tx.conn(), id).await
}

async fn brief_from<'e>(db: impl crate::engine::db::Exec<'e>, id: &str) -> Result<Brief> {
    let row = crate::engine::db::query(BRIEF)
        .bind(id)
        .fetch_all(db)
        .await?
        .pop();
    row.as_ref()
        .map(map_brief)
        .transpose()?
        .ok_or_else(|| Error::not_found("Agent"))
}

/// The agent, only if it belongs to `company_id`: how every reference from
/// another entity is resolved, so no id of another company is ever accepted.
pub(crate) async fn get_in_company(tx: &mut Tx, company_id: &str, id: &str) -> Result<Brief> {
    let agent = brief_in(tx, id).await?;
    if agent.company_id != company_id {
        return Err(Error::not_found("Agent"));
    }
    Ok(agent)
}

pub async fn update(store: &Store, actor: &Actor, id: &str, patch: AgentPatch) -> Result<Agent> {
    let mut tx = store.begin().await?;
    tx.lock_row(crate::Locked::Agent, id).await?;
    let before = get_in(&mut tx, id).await?;
    let mut after = before.clone();
    let mut changes = Map::new();
    if let Some(name) = patch.name {
        let name = name.trim().to_string();
        if name.is_empty() {
            return Err(Error::invalid("name", "Name must not be empty"));
        }
        if url_key(&name) != url_key(&before.name) {
            crate::org::agent_names::check_rename(&mut tx, &before.company_id, id, &name).await?;
        }
        if name != before.name {
            after.url_key =
                free_url_key(&mut tx, &before.company_id, &url_key(&name), Some(id)).await?;
        }
        diff(&mut changes, "name", &before.name, &name);
        after.name = name;
    }
    if let Some(role) = patch.role {
        after.role = role;
        diff(&mut changes, "role", &before.role, &after.role);
    }
    if let Some(title) = patch.title {
        diff(&mut changes, "title", &before.title, &title);
        after.title = title;
    }
    if let Some(icon) = patch.icon {
        diff(&mut changes, "icon", &before.icon, &icon);
        after.icon = icon;
    }
    if let Some(capabilities) = patch.capabilities {
        diff(
            &mut changes,
            "capabilities",
            &before.capabilities,
            &capabilities,
        );
        after.capabilities = capabilities;
    }
    if let Some(reports_to) = patch.reports_to {
        if let Some(manager) = &reports_to {
            get_in_company(&mut tx, &before.company_id, manager)
                .await
                .map_err(|_| Error::not_found("Manager agent"))?;
            let edges = reporting_edges(&mut tx, &before.company_id).await?;
            if would_create_cycle(&edges, id, manager) {
                return Err(Error::rule("Reporting relationship would create cycle"));
            }
        }
        diff(&mut changes, "reportsTo", &before.reports_to, &reports_to);
        after.reports_to = reports_to;
    }
    if let Some(adapter_type) = patch.adapter_type {
        diff(
            &mut changes,
            "adapterType",
            &before.adapter_type,
            &adapter_type,
        );
        after.adapter_type = adapter_type;
    }
    if let Some(config) = patch.adapter_config {
        let merged = if patch.replace_adapter_config.unwrap_or(false) {
            Value::Object(config)
        } else {
            merge_config(&before.adapter_config, config)
        };
        let mut merged = merged;
        keep_secrets(&mut merged, &before.adapter_config)?;
        if merged != before.adapter_config {
            changes.insert("adapterConfig".into(), json!({ "changed": true }));
        }
        after.adapter_config = merged;
    }
    if let Some(config) = patch.runtime_config {
        let mut merged = merge_config(&before.runtime_config, config);
        keep_secrets_in("runtimeConfig", &mut merged, &before.runtime_config)?;
        if merged != before.runtime_config {
            changes.insert("runtimeConfig".into(), json!({ "changed": true }));
        }
        after.runtime_config = merged;
    }
    if let Some(permissions) = patch.permissions {
        let merged = merge_config(&before.permissions, permissions);
        diff(&mut changes, "permissions", &before.permissions, &merged);
        after.permissions = merged;
    }
    if let Some(metadata) = patch.metadata {
        let metadata = metadata.map(Value::Object);
        diff(&mut changes, "metadata", &before.metadata, &metadata);
        after.metadata = metadata;
    }
    if let Some(cents) = patch.budget_monthly_cents {
        let cents = i64::from(cents);
        diff(
            &mut changes,
            "budgetMonthlyCents",
            &before.budget_monthly_cents,
            &cents,
        );
        after.budget_monthly_cents = cents;
    }
    if let Some(status) = patch.status {
        let from = before.status;
        if !from.can_transition_to(status) {
            return Err(Error::rule(format!(
                "Agent status cannot change from {} to {}",
                from.as_str(),
                status.as_str()
            )));
        }
        after.status = status;
        diff(&mut changes, "status", &before.status, &after.status);
    }
    if changes.is_empty() {
        return Ok(before);
    }
    write(&mut tx, &after).await?;
    let summary: Vec<&str> = crate::audit::revisions::FIELDS
        .into_iter()
        .filter(|k| changes.contains_key(*k))
        .collect();
    if !summary.is_empty() {
        let saved = get_in(&mut tx, id).await?;
        crate::audit::revisions::record_in(
            &mut tx,
            actor,
            &saved,
            &format!("changed {}", summary.join(", ")),
        )
        .await?;
    }
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &before.company_id,
            action: Action::AgentUpdated,
            entity_type: EntityType::Agent,
            entity_id: id,
            details: json!({ "changes": changes }),
        },
    )
    .await?;
    let agent = get_in(&mut tx, id).await?;
    tx.commit().await?;
    Ok(agent)
}

/// The company's reporting tree, roots first; siblings in creation order.
pub async fn org_tree(store: &Store, company_id: &str) -> Result<Vec<OrgNode>> {
    let agents = list(store, company_id).await?;
    let mut children: HashMap<Option<String>, Vec<&Agent>> = HashMap::new();
    for agent in &agents {
        children
            .entry(agent.reports_to.clone())
            .or_default()
            .push(agent);
    }
    fn build(
        agent: &Agent,
        children: &HashMap<Option<String>, Vec<&Agent>>,
        depth: usize,
    ) -> OrgNode {
        let reports = if depth > 64 {
            Vec::new()
        } else {
            children
                .get(&Some(agent.id.clone()))
                .map(|list| list.iter().map(|a| build(a, children, depth + 1)).collect())
                .unwrap_or_default()
        };
        OrgNode {
            id: agent.id.clone(),
            name: agent.name.clone(),
            role: agent.role,
            title: agent.title.clone(),
            status: agent.status,
            reports,
        }
    }
    Ok(children
        .get(&None)
        .map(|roots| roots.iter().map(|a| build(a, &children, 0)).collect())
        .unwrap_or_default())
}

async fn reporting_edges(tx: &mut Tx, company_id: &str) -> Result<HashMap<String, Option<String>>> {
    let rows: Vec<(String, Option<String>)> =
        crate::engine::db::query_as("SELECT id, reports_to FROM agents WHERE company_id = $1")
            .bind(company_id)
            .fetch_all(tx.conn())
            .await?;
    Ok(rows.into_iter().collect())
}

async fn free_url_key(
    tx: &mut Tx,
    company_id: &str,
    base: &str,
    except: Option<&str>,
) -> Result<String> {
    let taken: Vec<(String,)> = crate::engine::db::query_as(
        "SELECT url_key FROM agents WHERE company_id = $1 AND (url_key = $2 OR url_key LIKE $3) \
         AND (id <> $4 OR $4 IS NULL)",
    )
    .bind(company_id)
    .bind(base)
    .bind(format!("{base}-%"))
    .bind(except)
    .fetch_all(tx.conn())
    .await?;
    Ok((0..)
        .map(|n| url_key_candidate(base, n))
        .find(|k| !taken.iter().any(|(t,)| t == k))
        .expect("an unbounded candidate sequence has a free entry"))
}

/// Secrets are write-only through the API: a config sent back as it was read
/// carries placeholders, which keep the values `current` stores.
pub(crate) fn keep_secrets(config: &mut Value, current: &Value) -> Result<()> {
    keep_secrets_in("adapterConfig", config, current)
}

fn keep_secrets_in(field: &str, config: &mut Value, current: &Value) -> Result<()> {
    paperclip_core::secrets::keep_secrets(config, current).map_err(|paths| {
        let paths: Vec<String> = paths.iter().map(|p| format!("{field}.{p}")).collect();
        Error::rule(format!(
            "{} is the redaction placeholder {} and no value is stored there; send the value itself",
            paths.join(", "),
            paperclip_core::secrets::REDACTED
        ))
    })
}

/// Shallow merge of a config patch into the stored config (`adapterConfig`,
/// `runtimeConfig`, `permissions`): top-level keys of the patch win.
pub fn merge_config(base: &Value, patch: Map<String, Value>) -> Value {
    let mut merged = base.as_object().cloned().unwrap_or_default();
    for (k, v) in patch {
        merged.insert(k, v);
    }
    Value::Object(merged)
}

async fn write(tx: &mut Tx, a: &Agent) -> Result<()> {
    crate::engine::db::query(
        "UPDATE agents SET name = $2, url_key = $3, role = $4, title = $5, icon = $6, status = $7, \
         reports_to = $8, capabilities = $9, adapter_type = $10, adapter_config = $11, \
         runtime_config = $12, permissions = $13, metadata = $14, budget_monthly_cents = $15, \
         updated_at = $16 WHERE id = $1",
    )
    .bind(&a.id)
    .bind(&a.name)
    .bind(&a.url_key)
    .bind(a.role)
    .bind(a.title.as_deref())
    .bind(a.icon.as_deref())
    .bind(a.status)
    .bind(a.reports_to.as_deref())
    .bind(a.capabilities.as_deref())
    .bind(&a.adapter_type)
    .bind(a.adapter_config.to_string())
    .bind(a.runtime_config.to_string())
    .bind(a.permissions.to_string())
    .bind(a.metadata.as_ref().map(Value::to_string))
    .bind(a.budget_monthly_cents)
    .bind(now())
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// An agent from a row of [`WITH_SPEND`]'s columns, by position.
fn map<R: RowExt>(row: &R) -> Result<Agent> {
    Ok(Agent {
        id: row.text(0)?,
        company_id: row.text(1)?,
        name: row.text(2)?,
        role: row.stored(3)?,
        title: row.opt_text(4)?,
        icon: row.opt_text(5)?,
        status: row.stored(6)?,
        reports_to: row.opt_text(7)?,
        capabilities: row.opt_text(8)?,
        adapter_type: row.text(9)?,
        adapter_config: row.json(10)?,
        runtime_config: row.json(11)?,
        budget_monthly_cents: row.int(12)?,
        spent_monthly_cents: row.int(13)?,
        pause_reason: row.opt_text(14)?,
        paused_at: row.opt_text(15)?,
        error_reason: row.opt_text(16)?,
        permissions: row.json(17)?,
        last_heartbeat_at: row.opt_text(18)?,
        metadata: row.opt_json(19)?,
        created_at: row.text(20)?,
        updated_at: row.text(21)?,
        url_key: row.text(22)?,
        // Only a limit still in force is news; a past one is history.
        usage_limited_until: row
            .opt_text(23)?
            .filter(|t| t.as_str() > crate::now().as_str()),
    })
}
