//! A routine's `env`, merged into the runs of the tasks it makes over the
//! agent's and the project's (the original's order: the routine's binding
//! wins on a shared name). The env is the one of the revision the routine
//! ran (an edit after the run does not change what it runs with), resolved
//! as the agent's is, into the adapter's copy only; secret values join the
//! run's redaction.

use paperclip_core::model::{Agent, Issue};
use paperclip_store::Store;
use serde_json::Value;

use crate::vault::Vault;

pub(crate) async fn merge(
    store: &Store,
    vault: &Vault,
    agent: &Agent,
    issue: Option<&Issue>,
    config: Value,
    values: Vec<String>,
) -> Result<(Value, Vec<String>), String> {
    let Some(issue) = issue.filter(|i| i.origin_kind == "routine_execution") else {
        return Ok((config, values));
    };
    let env = paperclip_store::routines::revisions::env_of_execution(store, &issue.id)
        .await
        .map_err(|err| format!("reading the routine's env failed: {err}"))?;
    let Some(Value::Object(vars)) = env else {
        return Ok((config, values));
    };
    crate::project_env::overlay(store, vault, agent, "routine", vars, config, values).await
}
