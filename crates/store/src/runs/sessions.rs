//! Resumable CLI sessions per (agent, adapter, task), and the agent runtime
//! state derived from runs and cost events. A session is saved or forgotten
//! in the same transaction that finishes the run that produced it.

use crate::engine::db::DbRow;
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::model::{HeartbeatRun, RuntimeState, TaskSession};
use serde_json::json;

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::{new_id, now, Result, Store, Tx};

/// The session to resume for this agent's next run on `task_key`.
pub async fn find(
    store: &Store,
    agent_id: &str,
    adapter_type: &str,
    task_key: &str,
) -> Result<Option<TaskSession>> {
    let row = crate::engine::db::query(
        "SELECT * FROM agent_task_sessions WHERE agent_id = $1 AND adapter_type = $2 AND task_key = $3",
    )
    .bind(agent_id)
    .bind(adapter_type)
    .bind(task_key)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(map).transpose()
}

/// Newest first.
pub async fn list(store: &Store, agent_id: &str) -> Result<Vec<TaskSession>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM agent_task_sessions WHERE agent_id = $1 ORDER BY updated_at DESC, id DESC",
    )
    .bind(agent_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

pub(crate) async fn apply_in(
    tx: &mut Tx,
    run: &HeartbeatRun,
    update: &SessionUpdate,
) -> Result<()> {
    if started_before_new_session(tx, run).await? {
        return Ok(());
    }
    let ts = now();
    // Forgotten with a reason: the row stays, without a session, so the next
    // run can be told why it starts fresh.
    let params = update
        .session_id
        .as_ref()
        .map(|session| json!({ "sessionId": session }).to_string());
    match (&update.session_id, &update.error) {
        (None, None) => {
            crate::engine::db::query(
                "DELETE FROM agent_task_sessions WHERE agent_id = $1 AND adapter_type = $2 AND task_key = $3",
            )
            .bind(&run.agent_id)
            .bind(&update.adapter_type)
            .bind(&update.task_key)
            .execute(tx.conn())
            .await?;
        }
        (session, _) => {
            crate::engine::db::query(
                "INSERT INTO agent_task_sessions (id, company_id, agent_id, adapter_type, task_key, \
                 session_params_json, session_display_id, last_run_id, last_error, created_at, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10) \
                 ON CONFLICT (company_id, agent_id, adapter_type, task_key) DO UPDATE SET \
                 session_params_json = $6, session_display_id = $7, last_run_id = $8, last_error = $9, \
                 updated_at = $10",
            )
            .bind(new_id())
            .bind(&run.company_id)
            .bind(&run.agent_id)
            .bind(&update.adapter_type)
            .bind(&update.task_key)
            .bind(params)
            .bind(session.as_deref())
            .bind(&run.id)
            .bind(update.error.as_deref())
            .bind(&ts)
            .execute(tx.conn())
            .await?;
        }
    }
    Ok(())
}

/// A chat turn that was still running when the person typed `/new`: its
/// session belongs to the conversation before the fence, so it is not saved
/// (the next turn starts fresh, as `/new` promised).
async fn started_before_new_session(tx: &mut Tx, run: &HeartbeatRun) -> Result<bool> {
    let (Some(issue_id), Some(generation)) = (
        run.issue_id.as_deref(),
        run.context_snapshot["conversationSessionGeneration"].as_i64(),
    ) else {
        return Ok(false);
    };
    let current: Option<(i64,)> = crate::engine::db::query_as(
        "SELECT conversation_session_generation FROM issues WHERE id = $1",
    )
    .bind(issue_id)
    .fetch_optional(tx.conn())
    .await?;
    Ok(current.is_some_and(|(current,)| current > generation))
}

/// Forgets the agent's sessions (one task's, or all); returns how many.
pub async fn reset(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    agent_id: &str,
    task_key: Option<&str>,
) -> Result<u64> {
    let mut tx = store.begin().await?;
    let cleared = crate::engine::db::query(
        "DELETE FROM agent_task_sessions WHERE agent_id = $1 AND (task_key = $2 OR $2 IS NULL)",
    )
    .bind(agent_id)
    .bind(task_key)
    .execute(tx.conn())
    .await?
    .rows_affected();
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id,
            action: Action::AgentSessionReset,
            entity_type: EntityType::Agent,
            entity_id: agent_id,
            details: json!({ "taskKey": task_key, "cleared": cleared }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(cleared)
}

/// Totals over all of the agent's cost events, its latest run and its newest
/// session. Upstream also keeps an adapter state blob (`stateJson`): our
/// adapters keep no state beyond their sessions, so it is always `{}`, as
/// upstream serves it for an adapter with none.
pub async fn runtime_state(
    store: &Store,
    agent: &paperclip_core::model::Agent,
) -> Result<RuntimeState> {
    let totals = crate::engine::db::query(concat!(
        "SELECT CAST(COALESCE(SUM(",
        capped!("input_tokens"),
        "), 0) AS BIGINT) AS input, CAST(COALESCE(SUM(",
        capped!("output_tokens"),
        "), 0) AS BIGINT) AS output, CAST(COALESCE(SUM(",
        capped!("cached_input_tokens"),
        "), 0) AS BIGINT) AS cached, CAST(COALESCE(SUM(",
        capped!("cost_cents"),
        "), 0) AS BIGINT) AS cost FROM cost_events WHERE agent_id = $1"
    ))
    .bind(&agent.id)
    .fetch_one(store.pool())
    .await?;
    let last = crate::engine::db::query(
        "SELECT id, status, error, updated_at FROM heartbeat_runs WHERE agent_id = $1 \
         AND status NOT IN ('queued', 'running') ORDER BY id DESC LIMIT 1",
    )
    .bind(&agent.id)
    .fetch_optional(store.pool())
    .await?;
    let session: Option<(String,)> = crate::engine::db::query_as(
        "SELECT session_display_id FROM agent_task_sessions WHERE agent_id = $1 \
         AND session_display_id IS NOT NULL ORDER BY updated_at DESC, id DESC LIMIT 1",
    )
    .bind(&agent.id)
    .fetch_optional(store.pool())
    .await?;
    // Upstream's display id and parameters are those of the newest task
    // session, whether or not it still holds one.
    let newest = crate::engine::db::query(
        "SELECT session_display_id, session_params_json FROM agent_task_sessions \
         WHERE agent_id = $1 ORDER BY updated_at DESC, id DESC LIMIT 1",
    )
    .bind(&agent.id)
    .fetch_optional(store.pool())
    .await?;
    let (newest_display, session_params_json) = match &newest {
        Some(row) => (
            row.opt_text("session_display_id")?,
            row.opt_json("session_params_json")?,
        ),
        None => (None, None),
    };
    let session_id = session.map(|(s,)| s);
    let (last_run_id, last_run_status, last_error, updated_at) = match &last {
        Some(row) => (
            Some(row.text("id")?),
            Some(row.stored("status")?),
            row.opt_text("error")?,
            Some(row.text("updated_at")?),
        ),
        None => (None, None, None, None),
    };
    Ok(RuntimeState {
        agent_id: agent.id.clone(),
        company_id: agent.company_id.clone(),
        adapter_type: agent.adapter_type.clone(),
        session_display_id: newest_display.or_else(|| session_id.clone()),
        session_id,
        session_params_json,
        created_at: began(store, agent).await?,
        state_json: json!({}),
        last_run_id,
        last_run_status,
        last_error,
        total_input_tokens: totals.int("input")?,
        total_output_tokens: totals.int("output")?,
        total_cached_input_tokens: totals.int("cached")?,
        total_cost_cents: totals.int("cost")?,
        updated_at,
    })
}

/// When the agent's runtime state began (upstream's `createdAt`, the time
/// its runtime state row was written: at its first run, or its first read
/// through the API before any; see [`keep_began`]). Kept once known, so it
/// never moves; an agent that ran before migration 51 got its first run's
/// time there. Not kept yet (only a page has read it): the first run's time,
/// else the hire's.
async fn began(store: &Store, agent: &paperclip_core::model::Agent) -> Result<String> {
    Ok(match began_and_first_run(store, &agent.id).await? {
        (Some(began), _) | (None, Some(began)) => began,
        (None, None) => agent.created_at.clone(),
    })
}

/// The kept start of the agent's runtime state, and its first run's time.
async fn began_and_first_run(
    store: &Store,
    agent_id: &str,
) -> Result<(Option<String>, Option<String>)> {
    let row = crate::engine::db::query(
        "SELECT a.runtime_state_created_at AS began, \
         (SELECT MIN(r.created_at) FROM heartbeat_runs r WHERE r.agent_id = a.id) AS first_run \
         FROM agents a WHERE a.id = $1",
    )
    .bind(agent_id)
    .fetch_one(store.pool())
    .await?;
    Ok((row.opt_text("began")?, row.opt_text("first_run")?))
}

/// Keeps when the agent's runtime state began, the first time the API reads
/// it (as upstream writes its row then): its first run's time, else now. A
/// write the board's pages do not make (they write only through the API).
pub async fn keep_began(store: &Store, agent_id: &str) -> Result<()> {
    let (kept, first_run) = began_and_first_run(store, agent_id).await?;
    if kept.is_some() {
        return Ok(());
    }
    let began = first_run.unwrap_or_else(now);
    let mut tx = store.begin().await?;
    // Two first reads at once: the first to commit is kept.
    crate::engine::db::query(
        "UPDATE agents SET runtime_state_created_at = $1 \
         WHERE id = $2 AND runtime_state_created_at IS NULL",
    )
    .bind(&began)
    .bind(agent_id)
    .execute(tx.conn())
    .await?;
    tx.commit().await
}

fn map(row: &DbRow) -> Result<TaskSession> {
    Ok(TaskSession {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        agent_id: row.text("agent_id")?,
        adapter_type: row.text("adapter_type")?,
        task_key: row.text("task_key")?,
        session_params_json: row.opt_json("session_params_json")?,
        session_display_id: row.opt_text("session_display_id")?,
        last_run_id: row.opt_text("last_run_id")?,
        last_error: row.opt_text("last_error")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}

/// Saves (or, with `session_id: None`, forgets) the run's task session.
#[derive(Debug, Clone)]
pub struct SessionUpdate {
    pub adapter_type: String,
    pub task_key: String,
    pub session_id: Option<String>,
    pub error: Option<String>,
}
