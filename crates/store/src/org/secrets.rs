//! Company secrets and their sealed versions. The store never holds a key:
//! a write is handed a `Seal` (the runtime's vault) that turns a value into
//! ciphertext bound to the secret's id and version, which only this
//! transaction knows; reads hand back the sealed version for the vault to
//! open. No row, activity entry or error here carries a value.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::{Actor, ActorKind};
use paperclip_core::company_secret::{
    normalize_key, valid_key, CompanySecret, NewSecret, SealedVersion, SecretManagedMode,
    SecretPatch, SecretProvider, SecretRotation, SecretStatus,
};
use paperclip_core::secret_box::{self, Sealed};
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::db::DbRow;
use crate::engine::row::{one_by_id, RowExt};
use crate::{new_id, now, Error, Result, Store, Tx};

/// Seals `plaintext` as version `version` of secret `secret_id`.
pub type Seal<'a> = &'a (dyn Fn(&str, i64, &[u8]) -> Sealed + Sync);

pub(crate) const COLUMNS: &str =
    "id, company_id, key, name, description, provider, status, latest_version, \
     last_rotated_at, created_by_agent_id, created_by_user_id, created_at, updated_at";

pub async fn create(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    input: &NewSecret,
    seal: Seal<'_>,
) -> Result<CompanySecret> {
    let name = required_name(&input.name)?;
    let key = match &input.key {
        Some(key) => checked_key(key)?,
        None => normalize_key(&name),
    };
    if key.is_empty() {
        return Err(Error::rule(
            "Secret key is required: the name has no letters or digits to derive one from",
        ));
    }
    let value = required_value(input.value.as_deref())?;
    let mut tx = store.begin().await?;
    let secret = create_in(&mut tx, actor, company_id, &name, &key, input, value, seal).await?;
    tx.commit().await?;
    Ok(secret)
}

/// [`create`] inside the caller's transaction (an approved proposal).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn create_in(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    name: &str,
    key: &str,
    input: &NewSecret,
    value: &str,
    seal: Seal<'_>,
) -> Result<CompanySecret> {
    let (name, key) = (name.to_string(), key.to_string());
    crate::org::companies::exists_in(tx, company_id).await?;
    ensure_unique(tx, company_id, None, &name, &key).await?;
    let id = new_id();
    let ts = now();
    let (agent_id, user_id) = creator(actor);
    crate::engine::db::query(&format!(
        "INSERT INTO company_secrets ({COLUMNS}) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $9, $10, $8, $8)"
    ))
    .bind(&id)
    .bind(company_id)
    .bind(&key)
    .bind(&name)
    .bind(input.description.as_deref())
    .bind(SecretProvider::LocalEncrypted)
    .bind(SecretStatus::Active)
    .bind(&ts)
    .bind(agent_id)
    .bind(user_id)
    .execute(tx.conn())
    .await
    .map_err(taken)?;
    insert_version(tx, actor, &id, 1, seal(&id, 1, value.as_bytes()), &ts).await?;
    record(
        tx,
        actor,
        company_id,
        Action::SecretCreated,
        &id,
        json!({ "name": name, "key": key, "provider": SecretProvider::LocalEncrypted.as_str() }),
    )
    .await?;
    get_in(tx, &id).await
}

/// The company's secrets, newest first (as upstream lists them).
pub async fn list(store: &Store, company_id: &str) -> Result<Vec<CompanySecret>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM company_secrets WHERE company_id = $1 \
         ORDER BY created_at DESC, id DESC"
    ))
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

pub async fn get(store: &Store, id: &str) -> Result<CompanySecret> {
    one_by_id(
        store.pool(),
        &format!("SELECT {COLUMNS} FROM company_secrets WHERE id = $1"),
        id,
        map,
        "Secret",
    )
    .await
}

pub async fn update(
    store: &Store,
    actor: &Actor,
    id: &str,
    patch: &SecretPatch,
) -> Result<CompanySecret> {
    let mut tx = store.begin().await?;
    let current = get_in(&mut tx, id).await?;
    let name = match &patch.name {
        Some(name) => required_name(name)?,
        None => current.name.clone(),
    };
    let key = match &patch.key {
        Some(key) => checked_key(key)?,
        None => current.key.clone(),
    };
    ensure_unique(&mut tx, &current.company_id, Some(id), &name, &key).await?;
    let status = patch.status.unwrap_or(current.status);
    let description = match &patch.description {
        Some(d) => d.clone(),
        None => current.description.clone(),
    };
    crate::engine::db::query(
        "UPDATE company_secrets SET name = $2, key = $3, status = $4, description = $5, \
         updated_at = $6 WHERE id = $1",
    )
    .bind(id)
    .bind(&name)
    .bind(&key)
    .bind(status)
    .bind(description)
    .bind(now())
    .execute(tx.conn())
    .await
    .map_err(taken)?;
    let mut details = json!({ "name": name });
    if name != current.name {
        details["previousName"] = json!(current.name);
    }
    if key != current.key {
        details["key"] = json!(key);
    }
    if status != current.status {
        details["status"] = json!(status);
    }
    record(
        &mut tx,
        actor,
        &current.company_id,
        Action::SecretUpdated,
        id,
        details,
    )
    .await?;
    let secret = get_in(&mut tx, id).await?;
    tx.commit().await?;
    Ok(secret)
}

/// A new version becomes the latest; references that ask for the latest
/// get it from their next run on, pinned ones keep theirs.
pub async fn rotate(
    store: &Store,
    actor: &Actor,
    id: &str,
    input: &SecretRotation,
    seal: Seal<'_>,
) -> Result<CompanySecret> {
    let value = required_value(input.value.as_deref())?;
    let mut tx = store.begin().await?;
    let ts = now();
    // The increment takes the row's lock, so concurrent rotations number
    // their versions one after the other.
    let row = crate::engine::db::query(
        "UPDATE company_secrets SET latest_version = latest_version + 1, last_rotated_at = $2, \
         updated_at = $2 WHERE id = $1 RETURNING latest_version, company_id",
    )
    .bind(id)
    .bind(&ts)
    .fetch_optional(tx.conn())
    .await?
    .ok_or_else(|| Error::not_found("Secret"))?;
    let version = row.int("latest_version")?;
    let company_id = row.text("company_id")?;
    let sealed = seal(id, version, value.as_bytes());
    insert_version(&mut tx, actor, id, version, sealed, &ts).await?;
    record(
        &mut tx,
        actor,
        &company_id,
        Action::SecretRotated,
        id,
        json!({ "version": version }),
    )
    .await?;
    let secret = get_in(&mut tx, id).await?;
    tx.commit().await?;
    Ok(secret)
}

/// Deletes the secret and every version of it. References to it stay in
/// agents' configs and fail their next run, naming the variable.
pub async fn delete(store: &Store, actor: &Actor, id: &str) -> Result<CompanySecret> {
    let mut tx = store.begin().await?;
    let secret = get_in(&mut tx, id).await?;
    crate::engine::db::query("DELETE FROM company_secrets WHERE id = $1")
        .bind(id)
        .execute(tx.conn())
        .await?;
    record(
        &mut tx,
        actor,
        &secret.company_id,
        Action::SecretDeleted,
        id,
        json!({ "name": secret.name, "key": secret.key }),
    )
    .await?;
    tx.commit().await?;
    Ok(secret)
}

/// The sealed version a reference asks for (`None`: the latest). `Ok(None)`
/// when the secret exists but not that version; not found when the secret
/// does not exist. The caller checks the company.
pub async fn sealed_version(
    store: &Store,
    secret_id: &str,
    version: Option<i64>,
) -> Result<Option<SealedVersion>> {
    let secret = get(store, secret_id).await?;
    let version = version.unwrap_or(secret.latest_version);
    let row = crate::engine::db::query(
        "SELECT nonce, ciphertext FROM company_secret_versions \
         WHERE secret_id = $1 AND version = $2",
    )
    .bind(secret_id)
    .bind(version)
    .fetch_optional(store.pool())
    .await?;
    row.map(|row| {
        Ok(SealedVersion {
            secret_id: secret.id.clone(),
            company_id: secret.company_id.clone(),
            name: secret.name.clone(),
            status: secret.status,
            version,
            nonce: row.text("nonce")?,
            ciphertext: row.text("ciphertext")?,
        })
    })
    .transpose()
}

/// Writes version `version` of a secret, sealed, with who made it.
pub(crate) async fn insert_version(
    tx: &mut Tx,
    actor: &Actor,
    secret_id: &str,
    version: i64,
    sealed: Sealed,
    ts: &str,
) -> Result<()> {
    let (agent_id, user_id) = creator(actor);
    crate::engine::db::query(
        "INSERT INTO company_secret_versions (secret_id, version, nonce, ciphertext, \
         created_by_agent_id, created_by_user_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(secret_id)
    .bind(version)
    .bind(secret_box::encode(&sealed.nonce))
    .bind(secret_box::encode(&sealed.ciphertext))
    .bind(agent_id)
    .bind(user_id)
    .bind(ts)
    .execute(tx.conn())
    .await?;
    Ok(())
}

async fn record(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    action: Action,
    id: &str,
    details: serde_json::Value,
) -> Result<()> {
    activity::record(
        tx,
        actor,
        Entry {
            company_id,
            action,
            entity_type: EntityType::Secret,
            entity_id: id,
            details,
        },
    )
    .await
}

async fn get_in(tx: &mut Tx, id: &str) -> Result<CompanySecret> {
    one_by_id(
        tx.conn(),
        &format!("SELECT {COLUMNS} FROM company_secrets WHERE id = $1"),
        id,
        map,
        "Secret",
    )
    .await
}

/// Upstream's 409s, naming which of the two is taken. The unique indexes
/// settle a race this check loses ([`taken`]).
async fn ensure_unique(
    tx: &mut Tx,
    company_id: &str,
    except: Option<&str>,
    name: &str,
    key: &str,
) -> Result<()> {
    let rows = crate::engine::db::query(
        "SELECT id, name, key FROM company_secrets WHERE company_id = $1 AND (name = $2 OR key = $3)",
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
        if row.text("name")? == name {
            return Err(Error::conflict(
                format!("Secret already exists: {name}"),
                Some(json!({ "name": name })),
            ));
        }
        return Err(Error::conflict(
            format!("Secret key already exists: {key}"),
            Some(json!({ "key": key })),
        ));
    }
    Ok(())
}

fn taken(err: sqlx::Error) -> Error {
    match Error::from(err) {
        e if e.is_unique_violation() => {
            Error::conflict("A secret of that name or key already exists", None)
        }
        e => e,
    }
}

/// Who made a row, as its `created_by_agent_id` / `created_by_user_id`.
pub(crate) fn creator(actor: &Actor) -> (Option<&str>, Option<&str>) {
    match actor.kind {
        ActorKind::Agent => (Some(actor.id.as_str()), None),
        ActorKind::User => (None, Some(actor.id.as_str())),
        ActorKind::System => (None, None),
    }
}

pub(crate) fn required_name(name: &str) -> Result<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::invalid("name", "Name is required"));
    }
    Ok(name.to_string())
}

fn checked_key(key: &str) -> Result<String> {
    if !valid_key(key) {
        return Err(Error::invalid(
            "key",
            "Key must be 1 to 120 letters, digits, '_', '.' or '-'",
        ));
    }
    Ok(normalize_key(key))
}

/// Upstream's rule: a managed secret needs a value that is not blank. The
/// value is used as given (not trimmed): whitespace may be part of it.
fn required_value(value: Option<&str>) -> Result<&str> {
    match value {
        Some(v) if !v.trim().is_empty() => Ok(v),
        _ => Err(Error::invalid("value", "Managed secrets require value")),
    }
}

fn map(row: &DbRow) -> Result<CompanySecret> {
    Ok(CompanySecret {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        key: row.text("key")?,
        name: row.text("name")?,
        provider: row.stored("provider")?,
        status: row.stored("status")?,
        managed_mode: SecretManagedMode::PaperclipManaged,
        latest_version: row.int("latest_version")?,
        description: row.opt_text("description")?,
        last_rotated_at: row.opt_text("last_rotated_at")?,
        created_by_agent_id: row.opt_text("created_by_agent_id")?,
        created_by_user_id: row.opt_text("created_by_user_id")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}
