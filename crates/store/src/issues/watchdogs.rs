//! A task's watchdog (upstream's): an agent of the company named to review
//! the task when its work stops. Kept and answered as upstream does; the
//! review itself (upstream's watchdog issue) is not made here.

use paperclip_core::activity::Action;
use paperclip_core::actor::Actor;
use paperclip_core::model::Issue;
use serde_json::{json, Value};

use crate::audit::activity;
use crate::engine::row::RowExt;
use crate::{new_id, now, Error, Result, Store, Tx};

const COLUMNS: &str = "id, company_id, issue_id, watchdog_agent_id, instructions, status, \
     watchdog_issue_id, last_triggered_at, last_completed_at, trigger_count, created_by_agent_id, \
     created_by_user_id, created_by_run_id, updated_by_agent_id, updated_by_user_id, \
     updated_by_run_id, created_at, updated_at";

fn to_json<R: RowExt>(row: &R) -> Result<Value> {
    Ok(json!({
        "id": row.text("id")?, "companyId": row.text("company_id")?, "issueId": row.text("issue_id")?,
        "watchdogAgentId": row.text("watchdog_agent_id")?, "instructions": row.opt_text("instructions")?,
        "status": row.text("status")?, "watchdogIssueId": row.opt_text("watchdog_issue_id")?,
        "lastTriggeredAt": row.opt_text("last_triggered_at")?,
        "lastCompletedAt": row.opt_text("last_completed_at")?,
        "triggerCount": row.int("trigger_count")?,
        "createdByAgentId": row.opt_text("created_by_agent_id")?,
        "createdByUserId": row.opt_text("created_by_user_id")?,
        "createdByRunId": row.opt_text("created_by_run_id")?,
        "updatedByAgentId": row.opt_text("updated_by_agent_id")?,
        "updatedByUserId": row.opt_text("updated_by_user_id")?,
        "updatedByRunId": row.opt_text("updated_by_run_id")?,
        "createdAt": row.text("created_at")?, "updatedAt": row.text("updated_at")?,
    }))
}

async fn active_in(tx: &mut Tx, issue: &Issue) -> Result<Option<Value>> {
    let sql =
        format!("SELECT {COLUMNS} FROM issue_watchdogs WHERE company_id = $1 AND issue_id = $2");
    let row = crate::engine::db::query(&sql)
        .bind(&issue.company_id)
        .bind(&issue.id)
        .fetch_optional(tx.conn())
        .await?;
    row.as_ref()
        .map(to_json)
        .transpose()
        .map(|w| w.filter(|w| w["status"] == "active"))
}

/// The task's active watchdog, or `None`.
pub async fn get(store: &Store, issue: &Issue) -> Result<Option<Value>> {
    let mut tx = store.begin().await?;
    let found = active_in(&mut tx, issue).await?;
    tx.commit().await?;
    Ok(found)
}

/// Sets (or replaces) the task's watchdog: an agent of the task's company
/// that can run. Returns it and whether it is new.
pub async fn upsert(
    store: &Store,
    actor: &Actor,
    issue: &Issue,
    agent_id: &str,
    instructions: Option<String>,
) -> Result<(Value, bool)> {
    let mut tx = store.begin().await?;
    tx.lock_row(crate::Locked::Issue, &issue.id).await?;
    let agent =
        crate::engine::db::query("SELECT id, status FROM agents WHERE id = $1 AND company_id = $2")
            .bind(agent_id)
            .bind(&issue.company_id)
            .fetch_optional(tx.conn())
            .await?
            .ok_or_else(|| Error::not_found("Watchdog agent"))?;
    if matches!(
        agent.text("status")?.as_str(),
        "terminated" | "pending_approval"
    ) {
        return Err(Error::conflict(
            "Cannot assign watchdog to an agent that is not invokable",
            None,
        ));
    }
    let existing = crate::engine::db::query("SELECT id, status, instructions FROM issue_watchdogs WHERE company_id = $1 AND issue_id = $2")
        .bind(&issue.company_id).bind(&issue.id).fetch_optional(tx.conn()).await?;
    let ts = now();
    let (by_agent, by_user, by_run) = (actor.agent_id(), actor.user_id(), actor.run_id.as_deref());
    let created = existing
        .as_ref()
        .map_or(Ok(true), |r| r.text("status").map(|s| s != "active"))?;
    let before = existing
        .as_ref()
        .map(|r| r.opt_text("instructions"))
        .transpose()?
        .flatten();
    match &existing {
        Some(row) => {
            crate::engine::db::query(
                "UPDATE issue_watchdogs SET watchdog_agent_id = $2, instructions = $3, status = 'active', \
                 updated_by_agent_id = $4, updated_by_user_id = $5, updated_by_run_id = $6, updated_at = $7 WHERE id = $1",
            )
            .bind(row.text("id")?).bind(agent_id).bind(instructions.as_deref()).bind(by_agent)
            .bind(by_user).bind(by_run).bind(&ts).execute(tx.conn()).await?;
        }
        None => {
            crate::engine::db::query(
                "INSERT INTO issue_watchdogs (id, company_id, issue_id, watchdog_agent_id, instructions, status, \
                 created_by_agent_id, created_by_user_id, created_by_run_id, updated_by_agent_id, \
                 updated_by_user_id, updated_by_run_id, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, 'active', $6, $7, $8, $6, $7, $8, $9, $9)",
            )
            .bind(new_id()).bind(&issue.company_id).bind(&issue.id).bind(agent_id)
            .bind(instructions.as_deref()).bind(by_agent).bind(by_user).bind(by_run).bind(&ts)
            .execute(tx.conn()).await?;
        }
    }
    let watchdog = active_in(&mut tx, issue)
        .await?
        .ok_or_else(|| Error::not_found("Watchdog"))?;
    let action = if created {
        Action::IssueWatchdogCreated
    } else {
        Action::IssueWatchdogUpdated
    };
    activity::on_issue(
        &mut tx,
        actor,
        issue,
        action,
        json!({
            "watchdogId": watchdog["id"], "watchdogAgentId": agent_id,
            "instructionsChanged": before != instructions,
        }),
    )
    .await?;
    tx.commit().await?;
    Ok((watchdog, created))
}

/// Turns the task's watchdog off; `false` when it had none.
pub async fn disable(store: &Store, actor: &Actor, issue: &Issue) -> Result<bool> {
    let mut tx = store.begin().await?;
    let Some(watchdog) = active_in(&mut tx, issue).await? else {
        return Ok(false);
    };
    crate::engine::db::query(
        "UPDATE issue_watchdogs SET status = 'disabled', updated_by_agent_id = $2, updated_by_user_id = $3, \
         updated_by_run_id = $4, updated_at = $5 WHERE id = $1",
    )
    .bind(watchdog["id"].as_str()).bind(actor.agent_id()).bind(actor.user_id())
    .bind(actor.run_id.as_deref()).bind(now()).execute(tx.conn()).await?;
    activity::on_issue(
        &mut tx,
        actor,
        issue,
        Action::IssueWatchdogRemoved,
        json!({
            "watchdogId": watchdog["id"], "watchdogAgentId": watchdog["watchdogAgentId"],
        }),
    )
    .await?;
    tx.commit().await?;
    Ok(true)
}
