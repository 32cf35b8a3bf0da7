//! Reading decisions in upstream's shape: one with its effect executions,
//! the company's list (filters as upstream's, a bounded number of queries
//! whatever the page holds) and the per-rule statistics.

use std::collections::BTreeMap;

use paperclip_core::decision::{DecisionStatus, EffectStatus, ExecutionStatus};
use serde_json::{json, Map, Value};

use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::engine::sql::{json_array, json_values, ListOf};
use crate::{Error, Result, Store, Tx};

pub(crate) fn map(row: &DbRow) -> Result<Value> {
    let status: DecisionStatus = row.stored("status")?;
    let execution: Option<String> = row.opt_text("execution_status")?;
    if let Some(e) = &execution {
        <ExecutionStatus as paperclip_core::stored::Stored>::from_stored(e).ok_or_else(|| {
            Error::rule(format!("Stored decision execution status {e:?} is unknown"))
        })?;
    }
    Ok(json!({
        "id": row.text("id")?,
        "companyId": row.text("company_id")?,
        "bundleId": row.opt_text("bundle_id")?,
        "originAgentId": row.text("origin_agent_id")?,
        "originIssueId": row.text("origin_issue_id")?,
        "originRunId": row.text("origin_run_id")?,
        "ruleKey": row.opt_text("rule_key")?,
        "title": row.text("title")?,
        "body": row.text("body")?,
        "options": row.json("options")?,
        "inputs": row.opt_json("inputs")?,
        "status": status,
        "executionStatus": execution,
        "chosenOptionId": row.opt_text("chosen_option_id")?,
        "inputValues": row.opt_json("input_values")?,
        "decidedByUserId": row.opt_text("decided_by_user_id")?,
        "decidedAt": row.opt_text("decided_at")?,
        "expiresAt": row.text("expires_at")?,
        "idempotencyKey": row.opt_text("idempotency_key")?,
        "signedSpec": row.text("signed_spec")?,
        "targetSnapshots": row.json("target_snapshots")?,
        "continuationPolicy": row.text("continuation_policy")?,
        "metadata": row.json("metadata")?,
        "createdAt": row.text("created_at")?,
        "updatedAt": row.text("updated_at")?,
    }))
}

fn map_execution(row: &DbRow) -> Result<Value> {
    let status: EffectStatus = row.stored("status")?;
    Ok(json!({
        "id": row.text("id")?,
        "decisionId": row.text("decision_id")?,
        "effectIndex": row.int("effect_index")?,
        "effectType": row.text("effect_type")?,
        "targetIssueId": row.text("target_issue_id")?,
        "status": status,
        "result": row.opt_json("result")?,
        "error": row.opt_text("error")?,
        "activityLogId": row.opt_text("activity_log_id")?,
        "executedAt": row.opt_text("executed_at")?,
    }))
}

/// The decision alone, for the routes' company check.
pub async fn get(store: &Store, id: &str) -> Result<Value> {
    let row = crate::engine::db::query("SELECT * FROM decisions WHERE id = $1")
        .bind(id)
        .fetch_optional(store.pool())
        .await?
        .ok_or_else(|| Error::not_found("Decision"))?;
    map(&row)
}

pub(crate) async fn get_in(tx: &mut Tx, id: &str) -> Result<Value> {
    let row = crate::engine::db::query("SELECT * FROM decisions WHERE id = $1")
        .bind(id)
        .fetch_optional(tx.conn())
        .await?
        .ok_or_else(|| Error::not_found("Decision"))?;
    map(&row)
}

/// The decision with its effect executions, in effect order.
pub async fn outcome(store: &Store, id: &str) -> Result<Value> {
    let mut decision = get(store, id).await?;
    let rows = crate::engine::db::query(
        "SELECT * FROM decision_effect_executions WHERE decision_id = $1 ORDER BY effect_index",
    )
    .bind(id)
    .fetch_all(store.pool())
    .await?;
    decision["executions"] = Value::Array(rows.iter().map(map_execution).collect::<Result<_>>()?);
    Ok(decision)
}

#[derive(Debug, Default)]
pub struct ListFilter {
    pub status: Option<DecisionStatus>,
    pub bundle_id: Option<String>,
    pub target_issue_id: Option<String>,
    pub origin_agent_id: Option<String>,
    pub limit: Option<i64>,
}

/// Newest first, at most 100; an open decision says which targets changed
/// since it was made, a settled one carries its executions. Three queries.
pub async fn list(store: &Store, company_id: &str, f: &ListFilter) -> Result<Vec<Value>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM decisions d WHERE company_id = $1 AND (status = $2 OR $2 IS NULL) \
         AND (bundle_id = $3 OR $3 IS NULL) AND (origin_agent_id = $4 OR $4 IS NULL) \
         AND (EXISTS (SELECT 1 FROM decision_target_issues t WHERE t.decision_id = d.id AND t.issue_id = $5) OR $5 IS NULL) \
         ORDER BY created_at DESC, id DESC LIMIT $6",
    )
    .bind(company_id)
    .bind(f.status.map(|s| s.as_str()))
    .bind(f.bundle_id.as_deref())
    .bind(f.origin_agent_id.as_deref())
    .bind(f.target_issue_id.as_deref())
    .bind(f.limit.unwrap_or(50).clamp(1, 100))
    .fetch_all(store.pool())
    .await?;
    let mut out: Vec<Value> = rows.iter().map(map).collect::<Result<_>>()?;
    let backend = store.backend();
    let targets: Vec<String> = out
        .iter()
        .filter(|d| d["status"] == "open")
        .flat_map(|d| {
            d["targetSnapshots"]
                .as_object()
                .map(|m| m.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .collect();
    let mut current: BTreeMap<String, String> = BTreeMap::new();
    if !targets.is_empty() {
        let sql = format!(
            "SELECT id, updated_at FROM issues WHERE company_id = $1 AND id IN {}",
            json_values(backend, "$2", ListOf::Ids)
        );
        let rows: Vec<(String, String)> = crate::engine::db::query_as(&sql)
            .bind(company_id)
            .bind(json_array(targets.iter()))
            .fetch_all(store.pool())
            .await?;
        current.extend(rows);
    }
    let settled: Vec<String> = out
        .iter()
        .filter(|d| d["status"] != "open")
        .filter_map(|d| d["id"].as_str().map(str::to_string))
        .collect();
    let mut executions: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    if !settled.is_empty() {
        let sql = format!(
            "SELECT * FROM decision_effect_executions WHERE decision_id IN {} ORDER BY decision_id, effect_index",
            json_values(backend, "$1", ListOf::Ids)
        );
        for row in crate::engine::db::query(&sql)
            .bind(json_array(settled.iter()))
            .fetch_all(store.pool())
            .await?
        {
            let e = map_execution(&row)?;
            executions
                .entry(e["decisionId"].as_str().unwrap_or_default().to_string())
                .or_default()
                .push(e);
        }
    }
    for d in &mut out {
        if d["status"] == "open" {
            let mut changed = Map::new();
            for (id, snap) in d["targetSnapshots"]
                .as_object()
                .cloned()
                .unwrap_or_default()
            {
                let now = current.get(&id).map(String::as_str);
                changed.insert(id, json!(now != snap["updatedAt"].as_str()));
            }
            d["targetChanged"] = Value::Object(changed);
        } else {
            let id = d["id"].as_str().unwrap_or_default().to_string();
            d["targetChanged"] = json!({});
            d["executions"] = Value::Array(executions.remove(&id).unwrap_or_default());
        }
    }
    Ok(out)
}

/// Upstream's per-rule statistics: proposed (all), accepted (decided, not
/// dismissed), rejected (dismissed), expired; chosen options of accepted.
pub async fn stats(
    store: &Store,
    company_id: &str,
    origin_agent_id: Option<&str>,
    since: Option<&str>,
) -> Result<Value> {
    let rows = crate::engine::db::query(
        "SELECT rule_key, status, chosen_option_id, CAST(metadata AS TEXT) AS meta, COUNT(*) AS n FROM decisions \
         WHERE company_id = $1 AND (origin_agent_id = $2 OR $2 IS NULL) AND (created_at >= $3 OR $3 IS NULL) \
         GROUP BY rule_key, status, chosen_option_id, CAST(metadata AS TEXT)",
    )
    .bind(company_id)
    .bind(origin_agent_id)
    .bind(since)
    .fetch_all(store.pool())
    .await?;
    let mut grouped = Vec::with_capacity(rows.len());
    for row in &rows {
        grouped.push((
            row.opt_text("rule_key")?,
            row.text("status")?,
            row.opt_text("chosen_option_id")?,
            row.text("meta")?,
            row.int("n")?,
        ));
    }
    let empty = || json!({ "proposed": 0, "accepted": 0, "rejected": 0, "expired": 0 });
    let mut totals = empty();
    let mut groups: BTreeMap<Option<String>, (Value, BTreeMap<String, i64>)> = BTreeMap::new();
    let bump = |v: &mut Value, key: &str, n: i64| v[key] = json!(v[key].as_i64().unwrap_or(0) + n);
    for (rule, status, chosen, metadata, n) in grouped {
        let group = groups
            .entry(rule)
            .or_insert_with(|| (empty(), BTreeMap::new()));
        bump(&mut totals, "proposed", n);
        bump(&mut group.0, "proposed", n);
        let kind = match status.as_str() {
            "expired" => "expired",
            "decided" => {
                let dismissed = serde_json::from_str::<Value>(&metadata)
                    .ok()
                    .is_some_and(|m| m["dismissed"] == true);
                if dismissed || chosen.as_deref() == Some("dismissed") {
                    "rejected"
                } else {
                    if let Some(option) = chosen {
                        *group.1.entry(option).or_default() += n;
                    }
                    "accepted"
                }
            }
            _ => continue,
        };
        bump(&mut totals, kind, n);
        bump(&mut group.0, kind, n);
    }
    // Named rules first (by name), the unnamed group last, as upstream sorts.
    let mut ordered: Vec<_> = groups.into_iter().collect();
    ordered.sort_by(|a, b| match (&a.0, &b.0) {
        (None, None) => std::cmp::Ordering::Equal,
        (None, _) => std::cmp::Ordering::Greater,
        (_, None) => std::cmp::Ordering::Less,
        (Some(x), Some(y)) => x.cmp(y),
    });
    let groups: Vec<Value> = ordered
        .into_iter()
        .map(|(rule, (mut counts, chosen))| {
            let mut chosen: Vec<(String, i64)> = chosen.into_iter().collect();
            chosen.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            counts["ruleKey"] = json!(rule);
            counts["chosenOptions"] = chosen
                .into_iter()
                .map(|(id, n)| json!({ "optionId": id, "count": n }))
                .collect();
            counts
        })
        .collect();
    Ok(json!({
        "groupBy": "ruleKey",
        "filters": { "originAgentId": origin_agent_id, "since": since },
        "totals": totals,
        "groups": groups,
    }))
}

/// Open decisions for the board's inbox, newest first, each with its origin
/// agent's name and origin task's identifier (one query).
pub async fn open_for_board(store: &Store, company_id: &str, limit: i64) -> Result<Vec<Value>> {
    let rows = crate::engine::db::query(
        "SELECT d.*, a.name AS agent_name, i.identifier AS origin_identifier, i.title AS origin_title, \
         b.title AS bundle_title FROM decisions d LEFT JOIN agents a ON a.id = d.origin_agent_id \
         LEFT JOIN issues i ON i.id = d.origin_issue_id LEFT JOIN decision_bundles b ON b.id = d.bundle_id \
         WHERE d.company_id = $1 AND d.status = 'open' ORDER BY d.created_at DESC, d.id DESC LIMIT $2",
    )
    .bind(company_id)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let mut d = map(row)?;
        d["originAgentName"] = json!(row.opt_text("agent_name")?);
        d["originIdentifier"] = json!(row.opt_text("origin_identifier")?);
        d["originTitle"] = json!(row.opt_text("origin_title")?);
        d["bundleTitle"] = json!(row.opt_text("bundle_title")?);
        out.push(d);
    }
    Ok(out)
}
