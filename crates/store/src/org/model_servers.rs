//! Local model servers of a company (issue 39). A server's API key becomes a
//! company secret in the same transaction (sealed by the caller's `Seal`,
//! like every secret), so agents hired on the server reference it by id and
//! it shows, rotates and is deleted on the Secrets page like any other. No
//! row, activity entry or error here carries the key.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::company_secret::{normalize_key, SecretProvider, SecretStatus};
use paperclip_core::model_server::{
    check_price, normalize_base_url, provider_key, ModelServer, ModelServerKind, ModelServerPatch,
    NewModelServer, Price,
};
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::db::DbRow;
use crate::engine::row::{one_by_id, RowExt};
use crate::org::secrets::{self, creator, required_name, Seal};
use crate::{new_id, now, Error, Result, Store, Tx};

const COLUMNS: &str = "id, company_id, name, kind, base_url, provider_key, api_key_secret_id, \
     input_micros_per_mtok, output_micros_per_mtok, created_at, updated_at";

pub async fn create(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    input: &NewModelServer,
    seal: Seal<'_>,
) -> Result<ModelServer> {
    let name = required_name(&input.name)?;
    let base_url = checked_url(&input.base_url)?;
    let price = checked_price(input.price.unwrap_or_default())?;
    let kind = input.kind.unwrap_or(ModelServerKind::OpenaiCompatible);
    let key = provider_key(&name);
    let api_key = input.api_key.as_deref().filter(|k| !k.trim().is_empty());
    let mut tx = store.begin().await?;
    crate::org::companies::exists_in(&mut tx, company_id).await?;
    ensure_unique(&mut tx, company_id, None, &name, &key).await?;
    let id = new_id();
    let ts = now();
    let secret_id = match api_key {
        Some(value) => {
            Some(new_key_secret(&mut tx, actor, company_id, &name, value, seal, &ts).await?)
        }
        None => None,
    };
    crate::engine::db::query(&format!(
        "INSERT INTO model_servers ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)"
    ))
    .bind(&id)
    .bind(company_id)
    .bind(&name)
    .bind(kind.as_str())
    .bind(&base_url)
    .bind(&key)
    .bind(secret_id.as_deref())
    .bind(Price::to_micros(price.input_per_million_usd))
    .bind(Price::to_micros(price.output_per_million_usd))
    .bind(&ts)
    .execute(tx.conn())
    .await
    .map_err(taken)?;
    let details = json!({ "name": name, "kind": kind.as_str(), "baseUrl": base_url,
        "providerKey": key, "hasApiKey": secret_id.is_some() });
    record(
        &mut tx,
        actor,
        company_id,
        Action::ModelServerCreated,
        &id,
        details,
    )
    .await?;
    let server = get_in(&mut tx, &id).await?;
    tx.commit().await?;
    Ok(server)
}

/// The company's servers, by name.
pub async fn list(store: &Store, company_id: &str) -> Result<Vec<ModelServer>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM model_servers WHERE company_id = $1 ORDER BY name, id"
    ))
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

pub async fn get(store: &Store, id: &str) -> Result<ModelServer> {
    let sql = format!("SELECT {COLUMNS} FROM model_servers WHERE id = $1");
    one_by_id(store.pool(), &sql, id, map, "Model server").await
}

pub async fn update(
    store: &Store,
    actor: &Actor,
    id: &str,
    patch: &ModelServerPatch,
    seal: Seal<'_>,
) -> Result<ModelServer> {
    let mut tx = store.begin().await?;
    // A whole-row update: on Postgres take the row's lock first (SQLite's
    // one writer serialises writers already).
    if tx.conn().backend() == crate::Backend::Postgres {
        crate::engine::db::query("SELECT id FROM model_servers WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_all(tx.conn())
            .await?;
    }
    let current = get_in(&mut tx, id).await?;
    let name = match &patch.name {
        Some(n) => required_name(n)?,
        None => current.name.clone(),
    };
    let base_url = match &patch.base_url {
        Some(u) => checked_url(u)?,
        None => current.base_url.clone(),
    };
    let price = checked_price(patch.price.unwrap_or(current.price))?;
    ensure_unique(
        &mut tx,
        &current.company_id,
        Some(id),
        &name,
        &current.provider_key,
    )
    .await?;
    let ts = now();
    let mut details = json!({ "name": name });
    let secret_id = match &patch.api_key {
        None => current.api_key_secret_id.clone(),
        // Unlinked, not deleted: agents hired on the server still use it.
        Some(None) => {
            details["apiKey"] = json!("removed");
            None
        }
        Some(Some(value)) if value.trim().is_empty() => {
            return Err(Error::invalid(
                "apiKey",
                "API key must not be blank; send null to remove it",
            ));
        }
        Some(Some(value)) => {
            details["apiKey"] = json!("replaced");
            match &current.api_key_secret_id {
                Some(secret) => {
                    rotate_key_secret(
                        &mut tx,
                        actor,
                        &current.company_id,
                        secret,
                        value,
                        seal,
                        &ts,
                    )
                    .await?;
                    Some(secret.clone())
                }
                None => Some(
                    new_key_secret(&mut tx, actor, &current.company_id, &name, value, seal, &ts)
                        .await?,
                ),
            }
        }
    };
    crate::engine::db::query(
        "UPDATE model_servers SET name = $2, base_url = $3, api_key_secret_id = $4, \
         input_micros_per_mtok = $5, output_micros_per_mtok = $6, updated_at = $7 WHERE id = $1",
    )
    .bind(id)
    .bind(&name)
    .bind(&base_url)
    .bind(secret_id.as_deref())
    .bind(Price::to_micros(price.input_per_million_usd))
    .bind(Price::to_micros(price.output_per_million_usd))
    .bind(&ts)
    .execute(tx.conn())
    .await
    .map_err(taken)?;
    if name != current.name {
        details["previousName"] = json!(current.name);
    }
    if base_url != current.base_url {
        details["baseUrl"] = json!(base_url);
    }
    if price != current.price {
        details["price"] = json!(price);
    }
    let company = current.company_id.clone();
    record(
        &mut tx,
        actor,
        &company,
        Action::ModelServerUpdated,
        id,
        details,
    )
    .await?;
    let server = get_in(&mut tx, id).await?;
    tx.commit().await?;
    Ok(server)
}

/// Forgets the server. Agents hired on it keep their config (the base URL
/// is in it) and its key's secret stays for them.
pub async fn delete(store: &Store, actor: &Actor, id: &str) -> Result<ModelServer> {
    let mut tx = store.begin().await?;
    let server = get_in(&mut tx, id).await?;
    crate::engine::db::query("DELETE FROM model_servers WHERE id = $1")
        .bind(id)
        .execute(tx.conn())
        .await?;
    let details = json!({ "name": server.name, "baseUrl": server.base_url });
    record(
        &mut tx,
        actor,
        &server.company_id,
        Action::ModelServerDeleted,
        id,
        details,
    )
    .await?;
    tx.commit().await?;
    Ok(server)
}

/// The provider names whose spend is local for this company: its servers'
/// and the well-known local ones.
pub async fn local_providers(store: &Store, company_id: &str) -> Result<Vec<String>> {
    let rows =
        crate::engine::db::query("SELECT provider_key FROM model_servers WHERE company_id = $1")
            .bind(company_id)
            .fetch_all(store.pool())
            .await?;
    let mut keys: Vec<String> = paperclip_core::model_server::KNOWN_LOCAL_PROVIDERS
        .iter()
        .map(|k| k.to_string())
        .collect();
    for row in rows {
        let key = row.text("provider_key")?;
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    Ok(keys)
}

async fn new_key_secret(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    server_name: &str,
    value: &str,
    seal: Seal<'_>,
    ts: &str,
) -> Result<String> {
    let name = format!("API key of model server {server_name}");
    let key = normalize_key(&format!(
        "model-server-{}-api-key",
        provider_key(server_name)
    ));
    let taken = crate::engine::db::query(
        "SELECT id FROM company_secrets WHERE company_id = $1 AND (name = $2 OR key = $3)",
    )
    .bind(company_id)
    .bind(&name)
    .bind(&key)
    .fetch_optional(tx.conn())
    .await?;
    if taken.is_some() {
        return Err(Error::conflict(
            format!("A secret named {name:?} already exists: delete or rename it first"),
            Some(json!({ "name": name })),
        ));
    }
    let id = new_id();
    let (agent_id, user_id) = creator(actor);
    crate::engine::db::query(
        "INSERT INTO company_secrets (id, company_id, key, name, description, provider, status, \
         latest_version, last_rotated_at, created_by_agent_id, created_by_user_id, created_at, \
         updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 1, NULL, $8, $9, $10, $10)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(&key)
    .bind(&name)
    .bind("Made with the model server; agents hired on it read it")
    .bind(SecretProvider::LocalEncrypted.as_str())
    .bind(SecretStatus::Active.as_str())
    .bind(agent_id)
    .bind(user_id)
    .bind(ts)
    .execute(tx.conn())
    .await?;
    secrets::insert_version(tx, actor, &id, 1, seal(&id, 1, value.as_bytes()), ts).await?;
    let details =
        json!({ "name": name, "key": key, "provider": SecretProvider::LocalEncrypted.as_str() });
    activity::record(
        tx,
        actor,
        Entry {
            company_id,
            action: Action::SecretCreated,
            entity_type: EntityType::Secret,
            entity_id: &id,
            details,
        },
    )
    .await?;
    Ok(id)
}

async fn rotate_key_secret(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    secret_id: &str,
    value: &str,
    seal: Seal<'_>,
    ts: &str,
) -> Result<()> {
    let row = crate::engine::db::query(
        "UPDATE company_secrets SET latest_version = latest_version + 1, last_rotated_at = $2, \
         updated_at = $2 WHERE id = $1 RETURNING latest_version",
    )
    .bind(secret_id)
    .bind(ts)
    .fetch_optional(tx.conn())
    .await?
    .ok_or_else(|| Error::not_found("Secret"))?;
    let version = row.int("latest_version")?;
    secrets::insert_version(
        tx,
        actor,
        secret_id,
        version,
        seal(secret_id, version, value.as_bytes()),
        ts,
    )
    .await?;
    activity::record(
        tx,
        actor,
        Entry {
            company_id,
            action: Action::SecretRotated,
            entity_type: EntityType::Secret,
            entity_id: secret_id,
            details: json!({ "version": version }),
        },
    )
    .await
}

async fn record(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    action: Action,
    id: &str,
    details: serde_json::Value,
) -> Result<()> {
    let entry = Entry {
        company_id,
        action,
        entity_type: EntityType::ModelServer,
        entity_id: id,
        details,
    };
    activity::record(tx, actor, entry).await
}

async fn get_in(tx: &mut Tx, id: &str) -> Result<ModelServer> {
    let sql = format!("SELECT {COLUMNS} FROM model_servers WHERE id = $1");
    one_by_id(tx.conn(), &sql, id, map, "Model server").await
}

/// The 409s, naming what is taken; the unique indexes settle a race.
async fn ensure_unique(
    tx: &mut Tx,
    company_id: &str,
    except: Option<&str>,
    name: &str,
    key: &str,
) -> Result<()> {
    let rows = crate::engine::db::query(
        "SELECT id, name FROM model_servers WHERE company_id = $1 AND (name = $2 OR provider_key = $3)",
    )
    .bind(company_id)
    .bind(name)
    .bind(key)
    .fetch_all(tx.conn())
    .await?;
    for row in rows {
        if Some(row.text("id")?.as_str()) == except {
            continue;
        }
        return Err(Error::conflict(
            format!(
                "A model server named {:?} already exists",
                row.text("name")?
            ),
            Some(json!({ "name": name })),
        ));
    }
    Ok(())
}

fn taken(err: sqlx::Error) -> Error {
    match Error::from(err) {
        e if e.is_unique_violation() => {
            Error::conflict("A model server of that name already exists", None)
        }
        e => e,
    }
}

fn checked_url(url: &str) -> Result<String> {
    normalize_base_url(url).map_err(|why| Error::invalid("baseUrl", format!("Base URL {why}")))
}

fn checked_price(price: Price) -> Result<Price> {
    check_price(&price).map_err(|(field, why)| Error::Invalid {
        message: format!("price.{field} {why}"),
        path: vec!["price".into(), field.into()],
    })?;
    Ok(price)
}

fn map(row: &DbRow) -> Result<ModelServer> {
    let secret = row.opt_text("api_key_secret_id")?;
    Ok(ModelServer {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        name: row.text("name")?,
        kind: row.stored("kind")?,
        base_url: row.text("base_url")?,
        provider_key: row.text("provider_key")?,
        has_api_key: secret.is_some(),
        api_key_secret_id: secret,
        price: Price {
            input_per_million_usd: Price::from_micros(row.int("input_micros_per_mtok")?),
            output_per_million_usd: Price::from_micros(row.int("output_micros_per_mtok")?),
        },
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}
