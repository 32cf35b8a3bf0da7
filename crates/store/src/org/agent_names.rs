//! Agent names are unique in a company among agents that are not
//! terminated, compared by their url key ("Builder" and "builder!" are the
//! same name), as upstream does: a new agent whose name is taken gets the
//! first free "Builder 2", "Builder 3", ... (upstream's
//! `deduplicateAgentName`), and renaming an agent to a taken name is a 409
//! (upstream's `assertCompanyShortnameAvailable`). So a person can tell
//! agents apart, and `--assignee Builder` names one agent.

use paperclip_core::naming::url_key;
use serde_json::json;

use crate::{Error, Result, Tx};

/// The name compared, or `None` for a name with no letter or digit (it has
/// no url key of its own, so it collides with nothing, as upstream).
fn compared(name: &str) -> Option<String> {
    name.chars()
        .any(|c| c.is_ascii_alphanumeric())
        .then(|| url_key(name))
}

/// `name`, or the first of "name 2", "name 3", ... whose url key is not
/// among `taken` (url keys of the live agents' names).
pub(crate) fn deduplicate(name: &str, taken: &[String]) -> String {
    let free = |n: &str| compared(n).is_none_or(|k| !taken.contains(&k));
    if free(name) {
        return name.to_string();
    }
    (2..)
        .map(|n| format!("{name} {n}"))
        .find(|candidate| free(candidate))
        .expect("an unbounded candidate sequence has a free entry")
}

/// Two creations (or a creation and a rename) in one company take turns
/// on Postgres; SQLite's one writer already serialises them.
async fn serialise(tx: &mut Tx, company_id: &str) -> Result<()> {
    if tx.conn().backend() == crate::Backend::Postgres {
        crate::engine::db::query(
            "SELECT CAST(pg_advisory_xact_lock(hashtext('agent_names ' || $1)) AS TEXT)",
        )
        .bind(company_id)
        .fetch_all(tx.conn())
        .await?;
    }
    Ok(())
}

/// Url keys of the names of the company's agents that are not terminated,
/// `except` one.
async fn taken(tx: &mut Tx, company_id: &str, except: Option<&str>) -> Result<Vec<String>> {
    let names: Vec<(String,)> = crate::engine::db::query_as(
        "SELECT name FROM agents WHERE company_id = $1 AND status <> 'terminated' \
         AND (id <> $2 OR $2 IS NULL)",
    )
    .bind(company_id)
    .bind(except)
    .fetch_all(tx.conn())
    .await?;
    Ok(names.iter().filter_map(|(n,)| compared(n)).collect())
}

/// The name a new agent gets: `name`, or the next free "name N".
pub(crate) async fn for_new_agent(tx: &mut Tx, company_id: &str, name: &str) -> Result<String> {
    serialise(tx, company_id).await?;
    let taken = taken(tx, company_id, None).await?;
    Ok(deduplicate(name, &taken))
}

/// Refuses renaming agent `id` to a name another live agent has.
pub(crate) async fn check_rename(
    tx: &mut Tx,
    company_id: &str,
    id: &str,
    name: &str,
) -> Result<()> {
    let Some(key) = compared(name) else {
        return Ok(());
    };
    serialise(tx, company_id).await?;
    if taken(tx, company_id, Some(id)).await?.contains(&key) {
        return Err(Error::conflict(
            format!("An agent named {name} already exists in this company (its short name is '{key}'); choose another name"),
            Some(json!({ "field": "name", "urlKey": key })),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_name_gets_the_next_free_number() {
        let taken = |names: &[&str]| names.iter().filter_map(|n| compared(n)).collect::<Vec<_>>();
        assert_eq!(deduplicate("Builder", &taken(&[])), "Builder");
        assert_eq!(deduplicate("Builder", &taken(&["Writer"])), "Builder");
        assert_eq!(deduplicate("Builder", &taken(&["builder"])), "Builder 2");
        assert_eq!(
            deduplicate("Builder", &taken(&["Builder!", "Builder 2"])),
            "Builder 3"
        );
        // A name with no letter or digit has no short name to collide on.
        assert_eq!(deduplicate("!!", &taken(&["!!"])), "!!");
    }
}
