//! Company labels; attached to issues through `labelIds`.

use crate::engine::db::DbRow;
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::input::NewLabel;
use paperclip_core::model::Label;
use serde_json::json;

use crate::audit::mutate::{mutate, Audited};
use crate::engine::row::{one_by_id, RowExt};
use crate::{new_id, now, Error, Result, Store, Tx};

pub async fn create(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    input: NewLabel,
) -> Result<Label> {
    let name = input.name.trim().to_string();
    if name.is_empty() || name.chars().count() > 48 {
        return Err(Error::invalid("name", "Name must be 1 to 48 characters"));
    }
    let color_ok = input.color.len() == 7
        && input.color.starts_with('#')
        && input.color[1..].chars().all(|c| c.is_ascii_hexdigit());
    if !color_ok {
        return Err(Error::invalid("color", "Color must look like #8b5cf6"));
    }
    mutate(store, actor, async |tx: &mut Tx| {
        crate::org::companies::exists_in(tx, company_id).await?;
        let id = new_id();
        let ts = now();
        crate::engine::db::query(
            "INSERT INTO labels (id, company_id, name, color, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $5)",
        )
        .bind(&id)
        .bind(company_id)
        .bind(&name)
        .bind(&input.color)
        .bind(&ts)
        .execute(tx.conn())
        .await
        .map_err(|e| match Error::from(e) {
            e if e.is_unique_violation() => {
                Error::conflict("Label already exists", Some(json!({ "name": name })))
            }
            e => e,
        })?;
        Ok(Audited {
            company_id: company_id.to_string(),
            action: Action::LabelCreated,
            entity_type: EntityType::Label,
            entity_id: id.clone(),
            details: json!({ "name": name, "color": input.color }),
            value: Label {
                id,
                company_id: company_id.to_string(),
                name: name.clone(),
                color: input.color.clone(),
                created_at: ts.clone(),
                updated_at: ts,
            },
        })
    })
    .await
}

pub async fn list(store: &Store, company_id: &str) -> Result<Vec<Label>> {
    let rows = crate::engine::db::query("SELECT * FROM labels WHERE company_id = $1 ORDER BY name")
        .bind(company_id)
        .fetch_all(store.pool())
        .await?;
    rows.iter().map(map).collect()
}

pub async fn get(store: &Store, id: &str) -> Result<Label> {
    one_by_id(
        store.pool(),
        "SELECT * FROM labels WHERE id = $1",
        id,
        map,
        "Label",
    )
    .await
}

/// Deletes the label and detaches it from every issue.
pub async fn delete(store: &Store, actor: &Actor, id: &str) -> Result<Label> {
    let label = get(store, id).await?;
    mutate(store, actor, async |tx: &mut Tx| {
        crate::engine::db::query("DELETE FROM labels WHERE id = $1")
            .bind(id)
            .execute(tx.conn())
            .await?;
        Ok(Audited {
            company_id: label.company_id.clone(),
            action: Action::LabelDeleted,
            entity_type: EntityType::Label,
            entity_id: id.to_string(),
            details: json!({ "name": label.name }),
            value: label,
        })
    })
    .await
}

pub(crate) fn map(row: &DbRow) -> Result<Label> {
    Ok(Label {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        name: row.text("name")?,
        color: row.text("color")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}
