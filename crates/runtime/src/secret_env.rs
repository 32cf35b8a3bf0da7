//! Company secrets referenced from an agent's `adapterConfig.env`, resolved
//! to their values as the run's child environment is built, and never
//! before: the stored config keeps the reference, and the resolved copy
//! lives only in the invocation handed to the adapter.

use paperclip_core::company_secret::{
    env_secret_refs, resolved_binding, SecretStatus, VersionSelector,
};
use paperclip_core::model::Agent;
use paperclip_store::Store;
use serde_json::Value;

use crate::vault::Vault;

/// The agent's config with each `secret_ref` in `env` replaced by its
/// value (a `{ "type": "plain" }` binding marked as a secret's), and those values,
/// for the run's redaction. An error names the variable and the secret,
/// never a value, and fails the run before anything is spawned.
pub(crate) async fn resolve(
    store: &Store,
    vault: &Vault,
    agent: &Agent,
) -> Result<(Value, Vec<String>), String> {
    let refs = env_secret_refs(&agent.adapter_config);
    let mut config = agent.adapter_config.clone();
    let mut values = Vec::with_capacity(refs.len());
    for (var, reference) in refs {
        let reference = reference.map_err(|why| format!("env {var}: {why}"))?;
        let exact = match reference.version {
            VersionSelector::Latest => None,
            VersionSelector::Exact(n) => Some(n),
        };
        let value = reveal(store, vault, agent, &var, &reference.secret_id, exact).await?;
        config["env"][var.as_str()] = resolved_binding(value.clone());
        values.push(value);
    }
    // Secrets the agent asked for and the board granted at `env.NAME`
    // (approved binding proposals), under a variable the config does not
    // set itself: the config's own binding wins.
    let granted = paperclip_store::org::secret_grants::env_bindings(store, &agent.id)
        .await
        .map_err(|err| format!("reading the agent's granted secrets failed: {err}"))?;
    for (var, id) in granted {
        if config.pointer(&format!("/env/{var}")).is_some() {
            continue;
        }
        let value = reveal(store, vault, agent, &var, &id, None).await?;
        if !config["env"].is_object() {
            config["env"] = Value::Object(Default::default());
        }
        config["env"][var.as_str()] = resolved_binding(value.clone());
        values.push(value);
    }
    Ok((config, values))
}

/// The value of secret `id` (version `exact`, else its latest) for the
/// variable `var` of `agent`'s run; an error names both, never a value.
pub(crate) async fn reveal(
    store: &Store,
    vault: &Vault,
    agent: &Agent,
    var: &str,
    id: &str,
    exact: Option<i64>,
) -> Result<String, String> {
    // Another company's secret is answered as a missing one, as every
    // cross-company reference is.
    let missing = || format!("env {var}: secret {id} not found in this company");
    let sealed = match paperclip_store::org::secrets::sealed_version(store, id, exact).await {
        Ok(Some(sealed)) if sealed.company_id == agent.company_id => sealed,
        Ok(Some(_)) | Err(paperclip_store::Error::NotFound(_)) => return Err(missing()),
        Ok(None) => {
            return Err(format!(
                "env {var}: secret {id} has no version {}",
                exact.unwrap_or_default()
            ))
        }
        Err(err) => return Err(format!("env {var}: reading secret {id} failed: {err}")),
    };
    if sealed.status != SecretStatus::Active {
        return Err(format!(
            "env {var}: secret \"{}\" is {}, not active",
            sealed.name, sealed.status
        ));
    }
    vault.reveal(&sealed).map_err(|why| {
        format!(
            "env {var}: secret \"{}\" version {}: {why}",
            sealed.name, sealed.version
        )
    })
}
