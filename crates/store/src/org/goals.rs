//! Goals: company / team / agent / task levels linked by a parent chain.

use crate::audit::mutate::{mutate, Audited};
use crate::engine::db::DbRow;
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::goal::{GoalLevel, GoalStatus};
use paperclip_core::input::{GoalPatch, NewGoal};
use paperclip_core::model::Goal;
use serde_json::{json, Map};

use crate::audit::activity::{self, Entry};
use crate::engine::row::{one_by_id, RowExt};
use crate::engine::sql::diff;
use crate::{new_id, now, Error, Result, Store, Tx};

pub async fn create(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    input: NewGoal,
) -> Result<Goal> {
    let title = input.title.trim().to_string();
    if title.is_empty() {
        return Err(Error::invalid("title", "Title must not be empty"));
    }
    let mut tx = store.begin().await?;
    crate::org::companies::exists_in(&mut tx, company_id).await?;
    if let Some(parent) = &input.parent_id {
        get_in_company(&mut tx, company_id, parent)
            .await
            .map_err(|_| Error::not_found("Parent goal"))?;
    }
    if let Some(owner) = &input.owner_agent_id {
        crate::org::agents::get_in_company(&mut tx, company_id, owner).await?;
    }
    let id = new_id();
    let ts = now();
    crate::engine::db::query(
        "INSERT INTO goals (id, company_id, title, description, level, status, parent_id, \
         owner_agent_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(&title)
    .bind(input.description.as_deref())
    .bind(input.level.unwrap_or(GoalLevel::Task).as_str())
    .bind(input.status.unwrap_or(GoalStatus::Planned).as_str())
    .bind(input.parent_id.as_deref())
    .bind(input.owner_agent_id.as_deref())
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id,
            action: Action::GoalCreated,
            entity_type: EntityType::Goal,
            entity_id: &id,
            details: json!({ "title": title }),
        },
    )
    .await?;
    let goal = get_in(&mut tx, &id).await?;
    tx.commit().await?;
    Ok(goal)
}

pub async fn list(store: &Store, company_id: &str) -> Result<Vec<Goal>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM goals WHERE company_id = $1 ORDER BY created_at, id",
    )
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

pub async fn get(store: &Store, id: &str) -> Result<Goal> {
    one_by_id(
        store.pool(),
        "SELECT * FROM goals WHERE id = $1",
        id,
        map,
        "Goal",
    )
    .await
}

async fn get_in(tx: &mut Tx, id: &str) -> Result<Goal> {
    one_by_id(
        tx.conn(),
        "SELECT * FROM goals WHERE id = $1",
        id,
        map,
        "Goal",
    )
    .await
}

pub(crate) async fn get_in_company(tx: &mut Tx, company_id: &str, id: &str) -> Result<Goal> {
    let goal = get_in(tx, id).await?;
    if goal.company_id != company_id {
        return Err(Error::not_found("Goal"));
    }
    Ok(goal)
}

pub async fn update(store: &Store, actor: &Actor, id: &str, patch: GoalPatch) -> Result<Goal> {
    let mut tx = store.begin().await?;
    let before = get_in(&mut tx, id).await?;
    let mut after = before.clone();
    let mut changes = Map::new();
    if let Some(title) = patch.title {
        let title = title.trim().to_string();
        if title.is_empty() {
            return Err(Error::invalid("title", "Title must not be empty"));
        }
        diff(&mut changes, "title", &before.title, &title);
        after.title = title;
    }
    if let Some(description) = patch.description {
        diff(
            &mut changes,
            "description",
            &before.description,
            &description,
        );
        after.description = description;
    }
    if let Some(level) = patch.level {
        after.level = level;
        diff(&mut changes, "level", &before.level, &after.level);
    }
    if let Some(status) = patch.status {
        after.status = status;
        diff(&mut changes, "status", &before.status, &after.status);
    }
    if let Some(parent) = patch.parent_id {
        if let Some(parent_id) = &parent {
            // Walk up from the new parent: meeting this goal means a cycle.
            let mut cursor = Some(parent_id.clone());
            while let Some(current) = cursor {
                if current == id {
                    return Err(Error::rule("Goal parent would create cycle"));
                }
                let goal = get_in_company(&mut tx, &before.company_id, &current)
                    .await
                    .map_err(|_| Error::not_found("Parent goal"))?;
                cursor = goal.parent_id;
            }
        }
        diff(&mut changes, "parentId", &before.parent_id, &parent);
        after.parent_id = parent;
    }
    if let Some(owner) = patch.owner_agent_id {
        if let Some(owner_id) = &owner {
            crate::org::agents::get_in_company(&mut tx, &before.company_id, owner_id).await?;
        }
        diff(&mut changes, "ownerAgentId", &before.owner_agent_id, &owner);
        after.owner_agent_id = owner;
    }
    if changes.is_empty() {
        return Ok(before);
    }
    crate::engine::db::query(
        "UPDATE goals SET title = $2, description = $3, level = $4, status = $5, parent_id = $6, \
         owner_agent_id = $7, updated_at = $8 WHERE id = $1",
    )
    .bind(id)
    .bind(&after.title)
    .bind(after.description.as_deref())
    .bind(after.level)
    .bind(after.status)
    .bind(after.parent_id.as_deref())
    .bind(after.owner_agent_id.as_deref())
    .bind(now())
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &before.company_id,
            action: Action::GoalUpdated,
            entity_type: EntityType::Goal,
            entity_id: id,
            details: json!({ "changes": changes }),
        },
    )
    .await?;
    let goal = get_in(&mut tx, id).await?;
    tx.commit().await?;
    Ok(goal)
}

pub async fn delete(store: &Store, actor: &Actor, id: &str) -> Result<Goal> {
    mutate(store, actor, async |tx: &mut Tx| {
        let goal = get_in(tx, id).await?;
        crate::engine::db::query("DELETE FROM goals WHERE id = $1")
            .bind(id)
            .execute(tx.conn())
            .await?;
        Ok(Audited {
            company_id: goal.company_id.clone(),
            action: Action::GoalDeleted,
            entity_type: EntityType::Goal,
            entity_id: id.to_string(),
            details: json!({ "title": goal.title }),
            value: goal,
        })
    })
    .await
}

fn map(row: &DbRow) -> Result<Goal> {
    Ok(Goal {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        title: row.text("title")?,
        description: row.opt_text("description")?,
        level: row.stored("level")?,
        status: row.stored("status")?,
        parent_id: row.opt_text("parent_id")?,
        owner_agent_id: row.opt_text("owner_agent_id")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}
