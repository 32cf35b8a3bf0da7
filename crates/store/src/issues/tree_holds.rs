//! Issue-tree holds (upstream's tree control): a pause over a task's subtree
//! keeps every queued run of its members from being claimed (the claim's
//! gate is [`HELD`]) until the hold is released; a resume releases the
//! pauses over a subtree. Each hold keeps the members it took in, as they
//! were when it was made.

use paperclip_core::activity::Action;
use paperclip_core::actor::Actor;
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::Issue;
use paperclip_core::tree_control::{
    skip_reason, HoldInput, HoldStatus, ReleaseInput, ReleasePolicy, TreeMode,
};
use serde_json::{json, Value};

use crate::audit::activity;
use crate::engine::db::Conn;
use crate::engine::row::RowExt;
use crate::issues::tree_preview::preview_in;
use crate::{new_id, now, Error, Result, Store, Tx};

/// The claim's gate: whether the run's task (`r.issue_id`) is a member of an
/// active pause. One probe of the members' issue index per queued run.
pub(crate) const HELD: &str = "EXISTS (SELECT 1 FROM issue_tree_hold_members hm \
     JOIN issue_tree_holds hh ON hh.id = hm.hold_id \
     WHERE hm.issue_id = r.issue_id AND NOT hm.skipped \
     AND hh.status = 'active' AND hh.mode = 'pause')";

pub async fn preview(
    store: &Store,
    actor: &Actor,
    root: &Issue,
    mode: TreeMode,
    policy: Option<ReleasePolicy>,
) -> Result<Value> {
    let mut tx = store.begin().await?;
    let policy = policy.unwrap_or_default();
    let (preview, _) = preview_in(&mut tx, root, mode, &policy).await?;
    let codes: Vec<Value> = preview["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| w["code"].clone())
        .collect();
    activity::on_issue(
        &mut tx,
        actor,
        root,
        Action::IssueTreeControlPreviewed,
        json!({ "mode": mode.as_str(), "totals": preview["totals"], "warningCodes": codes }),
    )
    .await?;
    tx.commit().await?;
    Ok(preview)
}

/// A hold made, with the preview it was made from. A pause stays active; a
/// resume releases the pauses rooted in the subtree and then itself.
pub struct Created {
    pub hold: Value,
    pub preview: Value,
    pub resumed_pause_hold_ids: Option<Vec<String>>,
}

fn actor_columns(actor: &Actor) -> (&'static str, Option<String>, Option<String>, Option<String>) {
    let kind = match (actor.agent_id(), actor.user_id()) {
        (Some(_), _) => "agent",
        (None, Some(_)) => "user",
        _ => "system",
    };
    (
        kind,
        actor.agent_id().map(str::to_string),
        actor.user_id().map(str::to_string),
        actor.run_id.clone(),
    )
}

pub async fn create(
    store: &Store,
    actor: &Actor,
    root: &Issue,
    input: HoldInput,
) -> Result<Created> {
    let reason = paperclip_core::tree_control::check_text(&input.reason, 1000)
        .map_err(|m| Error::invalid("reason", m))?;
    let policy = input.release_policy.unwrap_or_default();
    let mut tx = store.begin().await?;
    tx.lock_row(crate::Locked::Issue, &root.id).await?;
    let (preview, issues) = preview_in(&mut tx, root, input.mode, &policy).await?;
    let id = new_id();
    let ts = now();
    let (kind, agent, user, run) = actor_columns(actor);
    crate::engine::db::query(
        "INSERT INTO issue_tree_holds (id, company_id, root_issue_id, mode, status, reason, \
         release_policy, created_by_actor_type, created_by_agent_id, created_by_user_id, \
         created_by_run_id, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, 'active', $5, $6, $7, $8, $9, $10, $11, $11)",
    )
    .bind(&id)
    .bind(&root.company_id)
    .bind(&root.id)
    .bind(input.mode.as_str())
    .bind(reason.as_deref())
    .bind(serde_json::to_string(&policy).unwrap_or_default())
    .bind(kind)
    .bind(agent.as_deref())
    .bind(user.as_deref())
    .bind(run.as_deref())
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    for issue in &issues {
        let skip = skip_reason(input.mode, issue.status, issue.paused);
        crate::engine::db::query(
            "INSERT INTO issue_tree_hold_members (id, company_id, hold_id, issue_id, parent_issue_id, \
             depth, issue_identifier, issue_title, issue_status, assignee_agent_id, assignee_user_id, \
             active_run_id, active_run_status, skipped, skip_reason, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
        )
        .bind(new_id()).bind(&root.company_id).bind(&id).bind(&issue.id)
        .bind(issue.parent_id.as_deref()).bind(issue.depth).bind(&issue.identifier)
        .bind(&issue.title).bind(issue.status.as_str()).bind(issue.agent.as_deref())
        .bind(issue.user.as_deref()).bind(issue.run.as_ref().map(|r| r.0.as_str()))
        .bind(issue.run.as_ref().map(|r| r.2.as_str())).bind(skip.is_some())
        .bind(skip.map(|s| s.as_str())).bind(&ts)
        .execute(tx.conn()).await?;
    }
    let codes: Vec<Value> = preview["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| w["code"].clone())
        .collect();
    activity::on_issue(
        &mut tx,
        actor,
        root,
        Action::IssueTreeHoldCreated,
        json!({
        "holdId": id, "mode": input.mode.as_str(), "reason": reason,
        "totals": preview["totals"], "warningCodes": codes }),
    )
    .await?;
    let mut resumed = None;
    if input.mode == TreeMode::Resume {
        let why = reason
            .clone()
            .unwrap_or_else(|| "Subtree resume applied.".into());
        let ids: Vec<String> = issues.iter().map(|i| i.id.clone()).collect();
        let pauses = pauses_rooted_in(&mut tx, &root.company_id, &ids).await?;
        for (pause, pause_root) in &pauses {
            let meta = json!({ "resumedByResumeHoldId": id, "resumeHoldMode": "tree_resume", "resumedPauseHoldId": pause });
            release_in(&mut tx, actor, pause_root, pause, Some(why.clone()), meta).await?;
        }
        let pause_ids: Vec<String> = pauses.into_iter().map(|(p, _)| p).collect();
        let meta = json!({ "resumedPauseHoldIds": pause_ids, "resumeMode": "subtree" });
        release_in(&mut tx, actor, &root.id, &id, Some(why), meta).await?;
        resumed = Some(pause_ids);
    }
    let hold = load(tx.conn(), &root.company_id, &id)
        .await?
        .ok_or_else(|| Error::not_found("Issue tree hold"))?;
    tx.commit().await?;
    Ok(Created {
        hold,
        preview,
        resumed_pause_hold_ids: resumed,
    })
}

async fn pauses_rooted_in(
    tx: &mut Tx,
    company_id: &str,
    issue_ids: &[String],
) -> Result<Vec<(String, String)>> {
    let rows = crate::engine::db::query(
        "SELECT id, root_issue_id FROM issue_tree_holds WHERE company_id = $1 AND status = 'active' \
         AND mode = 'pause' ORDER BY created_at, id",
    )
    .bind(company_id)
    .fetch_all(tx.conn())
    .await?;
    let mut out = Vec::new();
    for row in &rows {
        let root = row.text("root_issue_id")?;
        if issue_ids.contains(&root) {
            out.push((row.text("id")?, root));
        }
    }
    Ok(out)
}

async fn release_in(
    tx: &mut Tx,
    actor: &Actor,
    root_id: &str,
    hold_id: &str,
    reason: Option<String>,
    metadata: Value,
) -> Result<()> {
    let (kind, agent, user, run) = actor_columns(actor);
    let ts = now();
    let done = crate::engine::db::query(
        "UPDATE issue_tree_holds SET status = 'released', released_at = $3, released_by_actor_type = $4, \
         released_by_agent_id = $5, released_by_user_id = $6, released_by_run_id = $7, \
         release_reason = $8, release_metadata = $9, updated_at = $3 \
         WHERE id = $1 AND root_issue_id = $2 AND status = 'active'",
    )
    .bind(hold_id).bind(root_id).bind(&ts).bind(kind).bind(agent.as_deref()).bind(user.as_deref())
    .bind(run.as_deref()).bind(reason.as_deref()).bind(metadata.to_string())
    .execute(tx.conn()).await?
    .rows_affected();
    if done == 0 {
        return Err(Error::conflict("Issue tree hold is already released", None));
    }
    // Runs of the subtree queued meanwhile may start now.
    tx.runs_may_start();
    Ok(())
}

/// Releases an active hold of `root` (409 once released).
pub async fn release(
    store: &Store,
    actor: &Actor,
    root: &Issue,
    hold_id: &str,
    input: ReleaseInput,
) -> Result<Value> {
    let reason = paperclip_core::tree_control::check_text(&input.reason, 1000)
        .map_err(|m| Error::invalid("reason", m))?;
    let mut tx = store.begin().await?;
    let hold = load(tx.conn(), &root.company_id, hold_id)
        .await?
        .filter(|h| h["rootIssueId"] == root.id.as_str())
        .ok_or_else(|| Error::not_found("Issue tree hold"))?;
    if hold["status"] != HoldStatus::Active.as_str() {
        return Err(Error::conflict("Issue tree hold is already released", None));
    }
    let meta = input.metadata.map(Value::Object).unwrap_or(Value::Null);
    release_in(&mut tx, actor, &root.id, hold_id, reason.clone(), meta).await?;
    let members = hold["members"].as_array().map_or(0, Vec::len);
    activity::on_issue(
        &mut tx,
        actor,
        root,
        Action::IssueTreeHoldReleased,
        json!({
        "holdId": hold_id, "mode": hold["mode"], "reason": reason, "memberCount": members }),
    )
    .await?;
    let hold = load(tx.conn(), &root.company_id, hold_id)
        .await?
        .ok_or_else(|| Error::not_found("Issue tree hold"))?;
    tx.commit().await?;
    Ok(hold)
}

const HOLD_COLUMNS: &str = "id, company_id, root_issue_id, mode, status, reason, release_policy, \
     created_by_actor_type, created_by_agent_id, created_by_user_id, created_by_run_id, released_at, \
     released_by_actor_type, released_by_agent_id, released_by_user_id, released_by_run_id, \
     release_reason, release_metadata, created_at, updated_at";

fn hold_json<R: RowExt>(row: &R) -> Result<Value> {
    let mode: TreeMode = row.stored("mode")?;
    let status: HoldStatus = row.stored("status")?;
    Ok(json!({
        "id": row.text("id")?, "companyId": row.text("company_id")?,
        "rootIssueId": row.text("root_issue_id")?, "mode": mode.as_str(), "status": status.as_str(),
        "reason": row.opt_text("reason")?, "releasePolicy": row.opt_json("release_policy")?,
        "createdByActorType": row.text("created_by_actor_type")?,
        "createdByAgentId": row.opt_text("created_by_agent_id")?,
        "createdByUserId": row.opt_text("created_by_user_id")?,
        "createdByRunId": row.opt_text("created_by_run_id")?,
        "releasedAt": row.opt_text("released_at")?,
        "releasedByActorType": row.opt_text("released_by_actor_type")?,
        "releasedByAgentId": row.opt_text("released_by_agent_id")?,
        "releasedByUserId": row.opt_text("released_by_user_id")?,
        "releasedByRunId": row.opt_text("released_by_run_id")?,
        "releaseReason": row.opt_text("release_reason")?,
        "releaseMetadata": row.opt_json("release_metadata")?,
        "createdAt": row.text("created_at")?, "updatedAt": row.text("updated_at")?,
    }))
}

async fn members(conn: &mut Conn, hold_ids: &[String]) -> Result<Vec<(String, Value)>> {
    if hold_ids.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT id, company_id, hold_id, issue_id, parent_issue_id, depth, issue_identifier, issue_title, \
         issue_status, assignee_agent_id, assignee_user_id, active_run_id, active_run_status, \
         skipped, skip_reason, created_at FROM issue_tree_hold_members WHERE hold_id IN ({}) \
         ORDER BY depth, created_at, id",
        crate::engine::sql::placeholders(1, hold_ids.len())
    );
    let mut query = crate::engine::db::query(&sql);
    for id in hold_ids {
        query = query.bind(id.as_str());
    }
    let rows = query.fetch_all(&mut *conn).await?;
    rows.iter().map(|row| {
        let status: IssueStatus = row.stored("issue_status")?;
        Ok((row.text("hold_id")?, json!({
            "id": row.text("id")?, "companyId": row.text("company_id")?, "holdId": row.text("hold_id")?,
            "issueId": row.text("issue_id")?, "parentIssueId": row.opt_text("parent_issue_id")?,
            "depth": row.int("depth")?, "issueIdentifier": row.opt_text("issue_identifier")?,
            "issueTitle": row.text("issue_title")?, "issueStatus": status.as_str(),
            "assigneeAgentId": row.opt_text("assignee_agent_id")?,
            "assigneeUserId": row.opt_text("assignee_user_id")?,
            "activeRunId": row.opt_text("active_run_id")?,
            "activeRunStatus": row.opt_text("active_run_status")?,
            "skipped": row.flag("skipped")?, "skipReason": row.opt_text("skip_reason")?,
            "createdAt": row.text("created_at")?,
        })))
    }).collect()
}

async fn load(conn: &mut Conn, company_id: &str, hold_id: &str) -> Result<Option<Value>> {
    let sql =
        format!("SELECT {HOLD_COLUMNS} FROM issue_tree_holds WHERE id = $1 AND company_id = $2");
    let Some(row) = crate::engine::db::query(&sql)
        .bind(hold_id)
        .bind(company_id)
        .fetch_optional(&mut *conn)
        .await?
    else {
        return Ok(None);
    };
    let mut hold = hold_json(&row)?;
    hold["members"] = Value::Array(
        members(conn, &[hold_id.to_string()])
            .await?
            .into_iter()
            .map(|(_, m)| m)
            .collect(),
    );
    Ok(Some(hold))
}

/// One hold of `root` with its members.
pub async fn get(store: &Store, root: &Issue, hold_id: &str) -> Result<Value> {
    let mut conn = store.pool().acquire().await?;
    load(&mut conn, &root.company_id, hold_id)
        .await?
        .filter(|h| h["rootIssueId"] == root.id.as_str())
        .ok_or_else(|| Error::not_found("Issue tree hold"))
}

/// The holds rooted at `root`, newest first, optionally with their members.
pub async fn list(
    store: &Store,
    root: &Issue,
    status: Option<HoldStatus>,
    mode: Option<TreeMode>,
    with_members: bool,
) -> Result<Vec<Value>> {
    let mut conn = store.pool().acquire().await?;
    let sql = format!(
        "SELECT {HOLD_COLUMNS} FROM issue_tree_holds WHERE company_id = $1 AND root_issue_id = $2 \
         AND ($3 IS NULL OR status = $3) AND ($4 IS NULL OR mode = $4) ORDER BY created_at DESC, id DESC"
    );
    let rows = crate::engine::db::query(&sql)
        .bind(&root.company_id)
        .bind(&root.id)
        .bind(status.map(|s| s.as_str()))
        .bind(mode.map(|m| m.as_str()))
        .fetch_all(&mut conn)
        .await?;
    let mut holds = rows.iter().map(hold_json).collect::<Result<Vec<_>>>()?;
    if with_members {
        let ids: Vec<String> = holds
            .iter()
            .filter_map(|h| h["id"].as_str().map(str::to_string))
            .collect();
        let all = members(&mut conn, &ids).await?;
        for hold in &mut holds {
            let mine: Vec<Value> = all
                .iter()
                .filter(|(h, _)| hold["id"] == h.as_str())
                .map(|(_, m)| m.clone())
                .collect();
            hold["members"] = Value::Array(mine);
        }
    }
    Ok(holds)
}

/// Upstream's `activePauseHold` of a task: the oldest active pause rooted at
/// the task or one of its ancestors (one statement up the parent chain).
pub async fn active_pause_gate(store: &Store, issue: &Issue) -> Result<Option<Value>> {
    let row = crate::engine::db::query(
        "WITH RECURSIVE a (id, parent_id, n) AS ( \
         SELECT id, parent_id, 0 FROM issues WHERE id = $1 \
         UNION ALL SELECT i.id, i.parent_id, a.n + 1 FROM issues i JOIN a ON i.id = a.parent_id WHERE a.n < 64) \
         SELECT h.id, h.root_issue_id, h.reason, h.release_policy FROM issue_tree_holds h JOIN a ON h.root_issue_id = a.id \
         WHERE h.company_id = $2 AND h.status = 'active' AND h.mode = 'pause' ORDER BY h.created_at, h.id LIMIT 1",
    )
    .bind(&issue.id).bind(&issue.company_id)
    .fetch_optional(store.pool()).await?;
    row.map(|row| -> Result<Value> {
        let root = row.text("root_issue_id")?;
        Ok(json!({
            "holdId": row.text("id")?, "rootIssueId": root, "issueId": issue.id,
            "isRoot": root == issue.id, "mode": "pause", "reason": row.opt_text("reason")?,
            "releasePolicy": row.opt_json("release_policy")?,
        }))
    })
    .transpose()
}

/// A task made under a paused one joins its pause, so the pause keeps
/// covering the whole subtree (the claim's gate reads members only).
pub(crate) async fn join_parent_holds(tx: &mut Tx, issue: &Issue, parent_id: &str) -> Result<()> {
    let rows = crate::engine::db::query(
        "SELECT m.hold_id, m.depth FROM issue_tree_hold_members m \
         JOIN issue_tree_holds h ON h.id = m.hold_id WHERE m.issue_id = $1 AND NOT m.skipped \
         AND h.status = 'active' AND h.mode = 'pause'",
    )
    .bind(parent_id)
    .fetch_all(tx.conn())
    .await?;
    for row in &rows {
        crate::engine::db::query(
            "INSERT INTO issue_tree_hold_members (id, company_id, hold_id, issue_id, parent_issue_id, \
             depth, issue_identifier, issue_title, issue_status, assignee_agent_id, assignee_user_id, \
             skipped, skip_reason, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, NULL, $13)",
        )
        .bind(new_id())
        .bind(&issue.company_id)
        .bind(row.text("hold_id")?)
        .bind(&issue.id)
        .bind(parent_id)
        .bind(row.int("depth")? + 1)
        .bind(&issue.identifier)
        .bind(&issue.title)
        .bind(issue.status.as_str())
        .bind(issue.assignee_agent_id.as_deref())
        .bind(issue.assignee_user_id.as_deref())
        .bind(false)
        .bind(now())
        .execute(tx.conn())
        .await?;
    }
    Ok(())
}
