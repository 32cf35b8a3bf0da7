//! What a page of activity rows talks about, named: tasks by identifier and
//! title, approvals by what they request, projects and goals by name. One
//! query per kind for the whole page (ids bound as one JSON list), so a feed
//! of 200 rows costs the same few queries as one of 2.

use std::collections::HashMap;

use serde_json::Value;

use crate::engine::sql::{json_array, json_values, ListOf};
use crate::{Result, Store};

#[derive(Debug, Default)]
pub struct Named {
    /// Task id -> (identifier, title).
    pub issues: HashMap<String, (String, String)>,
    /// Approval id -> (type, the name of the agent a hire proposes).
    pub approvals: HashMap<String, (String, Option<String>)>,
    pub projects: HashMap<String, String>,
    pub goals: HashMap<String, String>,
}

/// Ids of each kind to name (duplicates are fine).
#[derive(Debug, Default)]
pub struct Wanted {
    pub issues: Vec<String>,
    pub approvals: Vec<String>,
    pub projects: Vec<String>,
    pub goals: Vec<String>,
}

pub async fn load(store: &Store, company_id: &str, wanted: &Wanted) -> Result<Named> {
    let mut named = Named::default();
    let ids = json_values(store.backend(), "$2", ListOf::Ids);
    let rows = |table_cols: &str, list: &[String]| {
        (
            // By primary key: compared as an expression, the company cannot
            // pull SQLite onto its index (a walk of a million tasks).
            format!("SELECT {table_cols} WHERE id IN {ids} AND company_id || '' = $1"),
            json_array(dedup(list).into_iter()),
        )
    };
    if !wanted.issues.is_empty() {
        let (sql, list) = rows("id, identifier, title FROM issues", &wanted.issues);
        let found: Vec<(String, String, String)> = crate::engine::db::query_as(&sql)
            .bind(company_id)
            .bind(list)
            .fetch_all(store.pool())
            .await?;
        named.issues = found
            .into_iter()
            .map(|(id, ident, title)| (id, (ident, title)))
            .collect();
    }
    if !wanted.approvals.is_empty() {
        let (sql, list) = rows("id, type, payload FROM approvals", &wanted.approvals);
        let found: Vec<(String, String, String)> = crate::engine::db::query_as(&sql)
            .bind(company_id)
            .bind(list)
            .fetch_all(store.pool())
            .await?;
        // Only the proposed name is read from a payload (it may hold
        // adapter secrets, which must not reach a page).
        named.approvals = found
            .into_iter()
            .map(|(id, kind, payload)| {
                let name = serde_json::from_str::<Value>(&payload)
                    .ok()
                    .and_then(|p| p.get("name").and_then(Value::as_str).map(str::to_string));
                (id, (kind, name))
            })
            .collect();
    }
    for (table, list, out) in [
        (
            "id, name FROM projects",
            &wanted.projects,
            &mut named.projects,
        ),
        ("id, title FROM goals", &wanted.goals, &mut named.goals),
    ] {
        if list.is_empty() {
            continue;
        }
        let (sql, list) = rows(table, list);
        let found: Vec<(String, String)> = crate::engine::db::query_as(&sql)
            .bind(company_id)
            .bind(list)
            .fetch_all(store.pool())
            .await?;
        *out = found.into_iter().collect();
    }
    Ok(named)
}

fn dedup(list: &[String]) -> Vec<&String> {
    let mut seen = std::collections::HashSet::new();
    list.iter().filter(|id| seen.insert(id.as_str())).collect()
}
