//! What a finished run said about its session's context and its provider's
//! usage windows: the context tokens go on the task session the run kept,
//! the windows replace the agent's quota snapshot. Both are written in the
//! transaction that finishes the run, and only from what the CLI printed.

use paperclip_core::context::QuotaWindow;
use paperclip_core::model::HeartbeatRun;
use serde::Serialize;
use serde_json::Value;

use crate::engine::row::RowExt;
use crate::runs::sessions::SessionUpdate;
use crate::{now, Result, Store, Tx};

/// `result` and `usage` are the run's (as its row stores them); `session`
/// the task session it kept.
pub(crate) async fn record_in(
    tx: &mut Tx,
    run: &HeartbeatRun,
    result: Option<&Value>,
    usage: Option<&Value>,
    session: Option<&SessionUpdate>,
) -> Result<()> {
    let tokens = result
        .and_then(|r| r.get("contextTokens"))
        .and_then(Value::as_u64);
    if let (Some(tokens), Some(session)) = (tokens, session) {
        let model = usage.and_then(|u| u.get("model")).and_then(Value::as_str);
        crate::engine::db::query(
            "UPDATE agent_task_sessions SET context_tokens = $4, context_model = COALESCE($5, context_model) \
             WHERE agent_id = $1 AND adapter_type = $2 AND task_key = $3 AND session_display_id IS NOT NULL",
        )
        .bind(&run.agent_id)
        .bind(&session.adapter_type)
        .bind(&session.task_key)
        .bind(tokens.min(i64::MAX as u64) as i64)
        .bind(model)
        .execute(tx.conn())
        .await?;
    }
    let quota = result.and_then(|r| r.get("quotaWindows"));
    let provider = quota
        .and_then(|q| q.get("provider"))
        .and_then(Value::as_str);
    let windows = quota.and_then(|q| q.get("windows")).filter(|w| {
        w.as_array().is_some_and(|a| !a.is_empty())
            && serde_json::from_value::<Vec<QuotaWindow>>((*w).clone()).is_ok()
    });
    if let (Some(provider), Some(windows)) = (provider, windows) {
        crate::engine::db::query(
            "INSERT INTO agent_quota_snapshots (agent_id, company_id, provider, windows, run_id, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (agent_id) DO UPDATE SET \
             provider = $3, windows = $4, run_id = $5, updated_at = $6",
        )
        .bind(&run.agent_id)
        .bind(&run.company_id)
        .bind(provider)
        .bind(windows.to_string())
        .bind(&run.id)
        .bind(now())
        .execute(tx.conn())
        .await?;
    }
    Ok(())
}

/// A task session's context as its last run left it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionContext {
    pub session_id: Option<String>,
    pub tokens: Option<u64>,
    pub model: Option<String>,
}

/// The agent's session for the task, with its context use when known.
pub async fn for_task(
    store: &Store,
    agent_id: &str,
    adapter_type: &str,
    task_key: &str,
) -> Result<Option<SessionContext>> {
    let row = crate::engine::db::query(
        "SELECT session_display_id, context_tokens, context_model FROM agent_task_sessions \
         WHERE agent_id = $1 AND adapter_type = $2 AND task_key = $3",
    )
    .bind(agent_id)
    .bind(adapter_type)
    .bind(task_key)
    .fetch_optional(store.pool())
    .await?;
    row.map(|row| -> Result<SessionContext> {
        let tokens: Option<i64> = row.try_get("context_tokens")?;
        Ok(SessionContext {
            session_id: row.opt_text("session_display_id")?,
            tokens: tokens.and_then(|t| u64::try_from(t).ok()),
            model: row.opt_text("context_model")?,
        })
    })
    .transpose()
}

/// An agent's latest provider windows, as its CLI last reported them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaSnapshot {
    pub agent_id: String,
    pub provider: String,
    pub windows: Vec<QuotaWindow>,
    pub run_id: Option<String>,
    pub updated_at: String,
}

/// Every agent's snapshot in the company, newest first.
pub async fn quota_snapshots(store: &Store, company_id: &str) -> Result<Vec<QuotaSnapshot>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM agent_quota_snapshots WHERE company_id = $1 ORDER BY updated_at DESC, agent_id",
    )
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(snapshot).collect()
}

/// One agent's snapshot.
pub async fn quota_snapshot(store: &Store, agent_id: &str) -> Result<Option<QuotaSnapshot>> {
    let row = crate::engine::db::query("SELECT * FROM agent_quota_snapshots WHERE agent_id = $1")
        .bind(agent_id)
        .fetch_optional(store.pool())
        .await?;
    row.as_ref().map(snapshot).transpose()
}

fn snapshot(row: &crate::engine::db::DbRow) -> Result<QuotaSnapshot> {
    let windows = row.json("windows")?;
    Ok(QuotaSnapshot {
        agent_id: row.text("agent_id")?,
        provider: row.text("provider")?,
        windows: serde_json::from_value(windows)
            .map_err(|e| crate::Error::Database(sqlx::Error::Decode(Box::new(e))))?,
        run_id: row.opt_text("run_id")?,
        updated_at: row.text("updated_at")?,
    })
}

/// The context row of a task: its assignee's session for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskContext {
    pub agent_id: String,
    pub adapter_type: String,
    pub session_id: Option<String>,
    pub context_tokens: Option<u64>,
    pub model: Option<String>,
    pub window_tokens: Option<u64>,
    pub percent: Option<u64>,
    /// "62 % · 124k of 200k tokens", "124k tokens", or none when unknown.
    pub label: Option<String>,
    /// The assignee's adapter has a compaction a run can ask for.
    pub can_compact: bool,
}

/// The task's context row; `None` without an assigned agent.
pub async fn for_issue(
    store: &Store,
    issue: &paperclip_core::model::Issue,
) -> Result<Option<TaskContext>> {
    let Some(agent_id) = &issue.assignee_agent_id else {
        return Ok(None);
    };
    let adapter: Option<(String,)> =
        crate::engine::db::query_as("SELECT adapter_type FROM agents WHERE id = $1")
            .bind(agent_id)
            .fetch_optional(store.pool())
            .await?;
    let Some((adapter_type,)) = adapter else {
        return Ok(None);
    };
    let session = for_task(store, agent_id, &adapter_type, &issue.id).await?;
    let (session_id, tokens, model) = match session {
        Some(s) => (s.session_id, s.tokens, s.model),
        None => (None, None, None),
    };
    let usage = tokens.map(|t| paperclip_core::context::ContextUse::new(t, model.as_deref()));
    Ok(Some(TaskContext {
        agent_id: agent_id.clone(),
        can_compact: paperclip_core::context::compaction_prompt(&adapter_type).is_some(),
        adapter_type,
        session_id,
        context_tokens: tokens,
        model,
        window_tokens: usage.as_ref().and_then(|u| u.window_tokens),
        percent: usage.as_ref().and_then(|u| u.percent),
        label: usage.as_ref().map(|u| u.label()),
    }))
}
