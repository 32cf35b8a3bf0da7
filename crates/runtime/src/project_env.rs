//! A project's `env`, merged into the runs of its tasks over the agent's own
//! (upstream's order: the project's binding wins on a shared name). Secret
//! references are resolved here as the agent's are, into the adapter's copy
//! only; their values join the run's redaction.

use paperclip_core::company_secret::{parse_secret_ref, resolved_binding, VersionSelector};
use paperclip_core::model::{Agent, Issue};
use paperclip_store::Store;
use serde_json::Value;

use crate::vault::Vault;

/// `config` (the agent's, already resolved) with the env of `issue`'s
/// project laid over it; `values` gains the secrets' values. An error
/// names the variable and the secret, never a value.
pub(crate) async fn merge(
    store: &Store,
    vault: &Vault,
    agent: &Agent,
    issue: Option<&Issue>,
    config: Value,
    values: Vec<String>,
) -> Result<(Value, Vec<String>), String> {
    let Some(project_id) = issue.and_then(|i| i.project_id.as_deref()) else {
        return Ok((config, values));
    };
    let project = match paperclip_store::org::projects::get(store, project_id).await {
        Ok(project) if project.company_id == agent.company_id => project,
        Ok(_) | Err(paperclip_store::Error::NotFound(_)) => return Ok((config, values)),
        Err(err) => return Err(format!("reading the project's env failed: {err}")),
    };
    let Some(Value::Object(vars)) = project.look.env else {
        return Ok((config, values));
    };
    overlay(store, vault, agent, "project", vars, config, values).await
}

/// `vars` (the env of `owner`: a project or a routine) laid over `config`'s
/// env, secret references resolved; `values` gains the secrets' values.
pub(crate) async fn overlay(
    store: &Store,
    vault: &Vault,
    agent: &Agent,
    owner: &str,
    vars: serde_json::Map<String, Value>,
    mut config: Value,
    mut values: Vec<String>,
) -> Result<(Value, Vec<String>), String> {
    if vars.is_empty() {
        return Ok((config, values));
    }
    if !config["env"].is_object() {
        config["env"] = Value::Object(Default::default());
    }
    for (var, binding) in vars {
        let merged = match parse_secret_ref(&binding) {
            None => binding,
            Some(reference) => {
                let reference = reference.map_err(|why| format!("{owner} env {var}: {why}"))?;
                let exact = match reference.version {
                    VersionSelector::Latest => None,
                    VersionSelector::Exact(n) => Some(n),
                };
                let value = crate::secret_env::reveal(
                    store,
                    vault,
                    agent,
                    &var,
                    &reference.secret_id,
                    exact,
                )
                .await
                .map_err(|why| format!("{owner} {why}"))?;
                values.push(value.clone());
                resolved_binding(value)
            }
        };
        config["env"][var.as_str()] = merged;
    }
    Ok((config, values))
}
