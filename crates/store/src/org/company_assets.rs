//! A company's uploaded assets (its logo) and which one is its logo. The
//! bytes live in the server's storage; a row says what exists, so a file
//! without one is never served.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::asset::{content_path, Asset};
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::{now, Error, Result, Store, Tx};

/// A stored file to record as an asset of `company_id`.
pub struct NewAsset {
    pub id: String,
    pub company_id: String,
    pub provider: String,
    pub object_key: String,
    pub content_type: String,
    pub byte_size: i64,
    pub sha256: String,
    pub original_filename: Option<String>,
    /// Where in the company it is kept (upstream's `namespace`).
    pub namespace: &'static str,
}

/// A stored file no row names any more: the caller deletes its bytes once
/// the change is committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released {
    pub company_id: String,
    pub provider: String,
    pub object_key: String,
}

/// Records an uploaded file with its `asset.created` activity row.
pub async fn create(store: &Store, actor: &Actor, new: NewAsset) -> Result<Asset> {
    let mut tx = store.begin().await?;
    // Checked here rather than through `companies`, which depends on this.
    let company: Option<(String,)> =
        crate::engine::db::query_as("SELECT id FROM companies WHERE id = $1")
            .bind(&new.company_id)
            .fetch_optional(tx.conn())
            .await?;
    if company.is_none() {
        return Err(Error::not_found("Company"));
    }
    let ts = now();
    crate::engine::db::query(
        "INSERT INTO assets (id, company_id, provider, object_key, content_type, byte_size, \
         sha256, original_filename, created_by_agent_id, created_by_user_id, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)",
    )
    .bind(&new.id)
    .bind(&new.company_id)
    .bind(&new.provider)
    .bind(&new.object_key)
    .bind(&new.content_type)
    .bind(new.byte_size)
    .bind(&new.sha256)
    .bind(new.original_filename.as_deref())
    .bind(actor.agent_id())
    .bind(actor.user_id())
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &new.company_id,
            action: Action::AssetCreated,
            entity_type: EntityType::Asset,
            entity_id: &new.id,
            details: json!({
                "originalFilename": new.original_filename,
                "contentType": new.content_type,
                "byteSize": new.byte_size,
                "namespace": new.namespace,
            }),
        },
    )
    .await?;
    let asset = load(&mut tx, &new.id).await?;
    tx.commit().await?;
    Ok(asset)
}

pub async fn get(store: &Store, id: &str) -> Result<Asset> {
    let row = crate::engine::db::query("SELECT * FROM assets WHERE id = $1")
        .bind(id)
        .fetch_optional(store.pool())
        .await?;
    row.as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| Error::not_found("Asset"))
}

async fn load(tx: &mut Tx, id: &str) -> Result<Asset> {
    let row = crate::engine::db::query("SELECT * FROM assets WHERE id = $1")
        .bind(id)
        .fetch_optional(tx.conn())
        .await?;
    row.as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| Error::not_found("Asset"))
}

/// The bucket objects of a company's assets, read before the company is
/// deleted (its rows go with it, by cascade).
pub async fn s3_objects(store: &Store, company_id: &str) -> Result<Vec<(String, String)>> {
    let rows: Vec<(String,)> = crate::engine::db::query_as(
        "SELECT object_key FROM assets WHERE company_id = $1 AND provider = 's3'",
    )
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    Ok(rows
        .into_iter()
        .map(|(key,)| (company_id.to_string(), key))
        .collect())
}

/// Points the company at `logo` (an asset of its own) or at none. A logo it
/// replaces or removes is deleted, as upstream does, and its file returned.
pub(crate) async fn set_logo_in(
    tx: &mut Tx,
    company_id: &str,
    current: Option<&str>,
    logo: Option<&str>,
) -> Result<Option<Released>> {
    if current == logo {
        return Ok(None);
    }
    let ts = now();
    match logo {
        Some(asset_id) => {
            crate::engine::db::query(
                "INSERT INTO company_logos (company_id, asset_id, created_at, updated_at) \
                 VALUES ($1, $2, $3, $3) ON CONFLICT (company_id) \
                 DO UPDATE SET asset_id = excluded.asset_id, updated_at = excluded.updated_at",
            )
            .bind(company_id)
            .bind(asset_id)
            .bind(&ts)
            .execute(tx.conn())
            .await?;
        }
        None => {
            crate::engine::db::query("DELETE FROM company_logos WHERE company_id = $1")
                .bind(company_id)
                .execute(tx.conn())
                .await?;
        }
    }
    let Some(old) = current else {
        return Ok(None);
    };
    let row = crate::engine::db::query(
        "DELETE FROM assets WHERE id = $1 AND company_id = $2 RETURNING provider, object_key",
    )
    .bind(old)
    .bind(company_id)
    .fetch_optional(tx.conn())
    .await?;
    row.map(|r| {
        Ok(Released {
            company_id: company_id.to_string(),
            provider: r.text("provider")?,
            object_key: r.text("object_key")?,
        })
    })
    .transpose()
}

/// `logoAssetId` names an asset of this company: 404 when it names none,
/// 422 when it is another company's (upstream's answers).
pub(crate) async fn check_logo_in(tx: &mut Tx, company_id: &str, asset_id: &str) -> Result<()> {
    if uuid::Uuid::try_parse(asset_id).is_err() {
        return Err(Error::invalid("logoAssetId", "Invalid UUID"));
    }
    let owner: Option<(String,)> =
        crate::engine::db::query_as("SELECT company_id FROM assets WHERE id = $1")
            .bind(asset_id)
            .fetch_optional(tx.conn())
            .await?;
    match owner {
        None => Err(Error::not_found("Logo asset")),
        Some((owner,)) if owner != company_id => {
            Err(Error::rule("Logo asset must belong to the same company"))
        }
        Some(_) => Ok(()),
    }
}

fn map(row: &DbRow) -> Result<Asset> {
    let id = row.text("id")?;
    Ok(Asset {
        content_path: content_path(&id),
        asset_id: id,
        company_id: row.text("company_id")?,
        provider: row.text("provider")?,
        object_key: row.text("object_key")?,
        content_type: row.text("content_type")?,
        byte_size: row.int("byte_size")?,
        sha256: row.text("sha256")?,
        original_filename: row.opt_text("original_filename")?,
        created_by_agent_id: row.opt_text("created_by_agent_id")?,
        created_by_user_id: row.opt_text("created_by_user_id")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}
