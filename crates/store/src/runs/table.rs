//! Heartbeat runs (`queued -> running -> succeeded | failed | cancelled |
//! timed_out`) and their append-only event timeline. Claiming a run is one
//! conditional UPDATE, so a queued run is started at most once.

use crate::engine::db::DbRow;
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::agent::AgentStatus;
use paperclip_core::heartbeat::RunStatus;
use paperclip_core::model::{HeartbeatRun, RunEvent};
use serde_json::{json, Value};

use crate::audit::activity::{self, Entry};
use crate::engine::row::{one_by_id, RowExt};
use crate::{new_id, now, Result, Store, Tx};

pub const TERMINAL: [&str; 4] = ["succeeded", "failed", "cancelled", "timed_out"];

pub async fn get(store: &Store, id: &str) -> Result<HeartbeatRun> {
    one_by_id(
        store.pool(),
        "SELECT * FROM heartbeat_runs WHERE id = $1",
        id,
        map,
        "Heartbeat run",
    )
    .await
}

pub(crate) async fn get_in(tx: &mut Tx, id: &str) -> Result<HeartbeatRun> {
    one_by_id(
        tx.conn(),
        "SELECT * FROM heartbeat_runs WHERE id = $1",
        id,
        map,
        "Heartbeat run",
    )
    .await
}

#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub agent_id: Option<String>,
    pub status: Option<String>,
    pub issue_id: Option<String>,
    pub live_only: bool,
    pub limit: i64,
}

/// Newest first.
/// A task's runs, newest first: the runs woken for it, and the runs that
/// acted on it while working on something else (a comment, a status change,
/// a child task: the activity log names the run), as upstream lists them.
pub async fn touching_issue(
    store: &Store,
    company_id: &str,
    issue_id: &str,
    limit: i64,
) -> Result<Vec<HeartbeatRun>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM heartbeat_runs WHERE company_id = $1 AND id IN ( \
           SELECT id FROM heartbeat_runs WHERE company_id = $1 AND issue_id = $2 \
           UNION SELECT run_id FROM activity_log WHERE company_id = $1 AND entity_type = 'issue' \
             AND entity_id = CAST($2 AS TEXT) AND run_id IS NOT NULL) \
         ORDER BY id DESC LIMIT $3",
    )
    .bind(company_id)
    .bind(issue_id)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

pub async fn list(store: &Store, company_id: &str, filter: &Filter) -> Result<Vec<HeartbeatRun>> {
    // Only the filters given become conditions, so the planner can use the
    // agent, task or status index (`$n IS NULL OR ...` hides them: a task's
    // runs took 300 ms among 100,000 runs).
    let mut sql = String::from("SELECT * FROM heartbeat_runs WHERE company_id = $1");
    let mut values: Vec<&str> = Vec::new();
    for (column, value) in [
        ("agent_id", &filter.agent_id),
        ("status", &filter.status),
        ("issue_id", &filter.issue_id),
    ] {
        if let Some(value) = value {
            values.push(value);
            sql.push_str(&format!(" AND {column} = ${}", values.len() + 1));
        }
    }
    let limit = format!("${}", values.len() + 2);
    let sql = if filter.live_only && filter.status.is_none() {
        // One equality per status (with `IN` and the id order, SQLite walks
        // the company's whole history by id: 300 ms among 100,000 runs),
        // in one statement: as two reads, a run claimed between them was
        // in neither (an interrupt then missed the run it should hand over to).
        format!(
            "SELECT * FROM (SELECT * FROM ({sql} AND status = 'running' ORDER BY id DESC LIMIT {limit}) r \
             UNION ALL SELECT * FROM ({sql} AND status = 'queued' ORDER BY id DESC LIMIT {limit}) q) live \
             ORDER BY id DESC LIMIT {limit}"
        )
    } else {
        if filter.live_only {
            sql.push_str(" AND status IN ('queued', 'running')");
        }
        format!("{sql} ORDER BY id DESC LIMIT {limit}")
    };
    let mut query = crate::engine::db::query(&sql).bind(company_id);
    for value in values {
        query = query.bind(value);
    }
    let rows = query.bind(filter.limit).fetch_all(store.pool()).await?;
    rows.iter().map(map).collect()
}

/// The run currently working on an issue (running first, else queued).
pub async fn active_for_issue(store: &Store, issue_id: &str) -> Result<Option<HeartbeatRun>> {
    let row = crate::engine::db::query(
        "SELECT * FROM heartbeat_runs WHERE issue_id = $1 AND status IN ('running', 'queued') \
         ORDER BY CASE status WHEN 'running' THEN 0 ELSE 1 END, id LIMIT 1",
    )
    .bind(issue_id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(map).transpose()
}

/// Queued runs, oldest first, with how many runs their agent has running.
pub async fn queued(store: &Store, limit: i64) -> Result<Vec<(HeartbeatRun, i64)>> {
    // A run of a task under a pause waits (not listed) until the hold goes.
    let sql = format!(
        "SELECT r.*, (SELECT COUNT(*) FROM heartbeat_runs x WHERE x.agent_id = r.agent_id \
         AND x.status = 'running') AS running_count FROM heartbeat_runs r \
         WHERE r.status = 'queued' AND NOT {} ORDER BY r.id LIMIT $1",
        crate::issues::tree_holds::HELD
    );
    let rows = crate::engine::db::query(&sql)
        .bind(limit)
        .fetch_all(store.pool())
        .await?;
    rows.iter()
        .map(|r| Ok((map(r)?, r.int("running_count")?)))
        .collect()
}

/// Starts a queued run: the run becomes `running`, its wakeup `claimed`, its
/// agent `running`. `None` if someone else claimed it first, it was cancelled,
/// or the agent already runs `maxConcurrentRuns` runs. `owner` is the
/// instance that drives it (`crate::fleet`).
pub async fn claim(store: &Store, run_id: &str, owner: &str) -> Result<Option<HeartbeatRun>> {
    let mut tx = store.begin().await?;
    let ts = now();
    let queued = get_in(&mut tx, run_id).await?;
    if queued.status != RunStatus::Queued {
        return Ok(None);
    }
    // The agent row first: a pause (a budget stop, the board) that commits
    // before this claim makes it fail, and one that comes after finds the run
    // running and stops it. Either way no run starts after the stop.
    let runnable = crate::engine::db::query(
        "UPDATE agents SET status = 'running', last_heartbeat_at = $2, updated_at = $2 \
         WHERE id = $1 AND status IN ('idle', 'active', 'error', 'running')",
    )
    .bind(&queued.agent_id)
    .bind(&ts)
    .execute(tx.conn())
    .await?
    .rows_affected();
    if runnable == 0 || !crate::runs::limit::has_free_slot(&mut tx, &queued.agent_id).await? {
        return Ok(None);
    }
    // Not under a pause made since the queue was read.
    let claim_sql = format!(
        "UPDATE heartbeat_runs SET status = 'running', started_at = $2, updated_at = $2, \
         owner_instance_id = $3 WHERE id = $1 AND status = 'queued' AND NOT EXISTS \
         (SELECT 1 FROM heartbeat_runs r WHERE r.id = $1 AND {})",
        crate::issues::tree_holds::HELD
    );
    let claimed = crate::engine::db::query(&claim_sql)
        .bind(run_id)
        .bind(&ts)
        .bind(owner)
        .execute(tx.conn())
        .await?
        .rows_affected();
    if claimed == 0 {
        return Ok(None);
    }
    crate::engine::db::query("UPDATE agent_wakeup_requests SET status = 'claimed', updated_at = $2 WHERE run_id = $1 AND status = 'queued'")
        .bind(run_id)
        .bind(&ts)
        .execute(tx.conn())
        .await?;
    let run = get_in(&mut tx, run_id).await?;
    append_event_in(
        &mut tx,
        &run,
        "lifecycle",
        None,
        "info",
        "run started",
        None,
    )
    .await?;
    // Seed 004's own kind for the start, with why the run woke.
    append_event_in(
        &mut tx,
        &run,
        paperclip_core::run_status::RunEventType::HeartbeatStarted.as_str(),
        None,
        "info",
        "heartbeat started",
        Some(serde_json::json!({
            "invocationSource": run.invocation_source,
            "triggerDetail": run.trigger_detail,
            "wakeReason": run.wake_reason,
            "issueId": run.issue_id,
            "startedAt": run.started_at,
        })),
    )
    .await?;
    tx.commit().await?;
    Ok(Some(run))
}

/// Records the run's process: its pid, group, and the leader's start time
/// (kernel ticks, and as a time) that proves its identity to recovery.
pub async fn set_process(
    store: &Store,
    run_id: &str,
    pid: u32,
    pgid: u32,
    start: Option<(i64, Option<String>)>,
) -> Result<()> {
    let (ticks, started_at) = start.map_or((None, None), |(t, s)| (Some(t), s));
    let mut tx = store.begin().await?;
    crate::engine::db::query(
        "UPDATE heartbeat_runs SET process_pid = $2, process_group_id = $3, \
         process_start_ticks = $4, process_started_at = $5, updated_at = $6 WHERE id = $1",
    )
    .bind(run_id)
    .bind(i64::from(pid))
    .bind(i64::from(pgid))
    .bind(ticks)
    .bind(started_at)
    .bind(now())
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The recorded start ticks of a run's process leader, for recovery.
pub async fn process_start_ticks(store: &Store, run_id: &str) -> Result<Option<i64>> {
    let row: Option<(Option<i64>,)> =
        crate::engine::db::query_as("SELECT process_start_ticks FROM heartbeat_runs WHERE id = $1")
            .bind(run_id)
            .fetch_all(store.pool())
            .await?
            .pop();
    Ok(row.and_then(|r| r.0))
}

/// The CLI session a run reported starting (its last `transcript.init`):
/// what a continuation resumes when the run itself never finished.
pub async fn last_session_seen(store: &Store, run_id: &str) -> Result<Option<String>> {
    let row: Option<(Option<String>,)> = crate::engine::db::query_as(
        "SELECT payload FROM heartbeat_run_events WHERE run_id = $1 \
         AND event_type = 'transcript.init' ORDER BY seq DESC LIMIT 1",
    )
    .bind(run_id)
    .fetch_all(store.pool())
    .await?
    .pop();
    Ok(row
        .and_then(|r| r.0)
        .and_then(|p| serde_json::from_str::<Value>(&p).ok())
        .and_then(|p| p.get("sessionId")?.as_str().map(str::to_string)))
}

/// Queued runs of one agent (for pause: they are cancelled).
pub async fn queued_for_agent(store: &Store, agent_id: &str) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = crate::engine::db::query_as(
        "SELECT id FROM heartbeat_runs WHERE agent_id = $1 AND status = 'queued'",
    )
    .bind(agent_id)
    .fetch_all(store.pool())
    .await?;
    Ok(rows.into_iter().map(|r| r.0).collect())
}

pub async fn running_for_agent(store: &Store, agent_id: &str) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = crate::engine::db::query_as(
        "SELECT id FROM heartbeat_runs WHERE agent_id = $1 AND status = 'running'",
    )
    .bind(agent_id)
    .fetch_all(store.pool())
    .await?;
    Ok(rows.into_iter().map(|r| r.0).collect())
}

/// Runs left `running` by a previous server process.
pub async fn running(store: &Store) -> Result<Vec<HeartbeatRun>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM heartbeat_runs WHERE status = 'running' ORDER BY id",
    )
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
}

pub async fn append_event(
    store: &Store,
    run: &HeartbeatRun,
    event_type: &str,
    stream: Option<&str>,
    level: &str,
    message: &str,
    payload: Option<Value>,
) -> Result<RunEvent> {
    let mut tx = store.begin().await?;
    let event = append_event_in(&mut tx, run, event_type, stream, level, message, payload).await?;
    tx.commit().await?;
    Ok(event)
}

/// Appends to the run's timeline; `seq` comes from the run row, so events of
/// one run are numbered 1, 2, 3, ... without gaps.
pub(crate) async fn append_event_in(
    tx: &mut Tx,
    run: &HeartbeatRun,
    event_type: &str,
    stream: Option<&str>,
    level: &str,
    message: &str,
    payload: Option<Value>,
) -> Result<RunEvent> {
    let seq_row = crate::engine::db::query(
        "UPDATE heartbeat_runs SET next_event_seq = next_event_seq + 1 WHERE id = $1 RETURNING next_event_seq",
    )
    .bind(&run.id)
    .fetch_all(tx.conn())
    .await?
    .pop()
    .ok_or_else(|| crate::Error::not_found("Heartbeat run"))?;
    let seq = seq_row.int("next_event_seq")? - 1;
    let event = RunEvent {
        id: new_id(),
        company_id: run.company_id.clone(),
        run_id: run.id.clone(),
        agent_id: run.agent_id.clone(),
        seq,
        event_type: event_type.to_string(),
        stream: stream.map(str::to_string),
        level: level.to_string(),
        message: Some(crate::runs::text::storable(message).into_owned()),
        payload: payload.map(crate::runs::text::storable_json),
        created_at: now(),
    };
    crate::engine::db::query(
        "INSERT INTO heartbeat_run_events (id, company_id, run_id, agent_id, seq, event_type, stream, \
         level, message, payload, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&event.id)
    .bind(&event.company_id)
    .bind(&event.run_id)
    .bind(&event.agent_id)
    .bind(event.seq)
    .bind(&event.event_type)
    .bind(event.stream.as_deref())
    .bind(&event.level)
    .bind(event.message.as_deref())
    .bind(event.payload.as_ref().map(Value::to_string))
    .bind(&event.created_at)
    .execute(tx.conn())
    .await?;
    Ok(event)
}

pub async fn events(
    store: &Store,
    run_id: &str,
    after_seq: i64,
    limit: i64,
) -> Result<Vec<RunEvent>> {
    let rows = crate::engine::db::query(
        "SELECT * FROM heartbeat_run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
    )
    .bind(run_id)
    .bind(after_seq)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map_event).collect()
}

pub(crate) fn map(row: &DbRow) -> Result<HeartbeatRun> {
    Ok(HeartbeatRun {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        agent_id: row.text("agent_id")?,
        invocation_source: row.text("invocation_source")?,
        trigger_detail: row.opt_text("trigger_detail")?,
        status: row.stored("status")?,
        wakeup_request_id: row.opt_text("wakeup_request_id")?,
        issue_id: row.opt_text("issue_id")?,
        wake_reason: row.opt_text("wake_reason")?,
        context_snapshot: row.json("context_snapshot")?,
        started_at: row.opt_text("started_at")?,
        finished_at: row.opt_text("finished_at")?,
        error: row.opt_text("error")?,
        error_code: row.opt_text("error_code")?,
        exit_code: DbRow::try_get(row, "exit_code")?,
        signal: row.opt_text("signal")?,
        usage_json: row.opt_json("usage_json")?,
        result_json: row.opt_json("result_json")?,
        stdout_excerpt: row.opt_text("stdout_excerpt")?,
        stderr_excerpt: row.opt_text("stderr_excerpt")?,
        log_store: row.opt_text("log_store")?,
        log_ref: row.opt_text("log_ref")?,
        log_bytes: row.int("log_bytes")?,
        log_compressed: false,
        log_removed_at: row.opt_text("log_removed_at")?,
        next_event_seq: row.int("next_event_seq")?,
        process_pid: DbRow::try_get(row, "process_pid")?,
        process_group_id: DbRow::try_get(row, "process_group_id")?,
        process_started_at: row.opt_text("process_started_at")?,
        last_output_at: row.opt_text("last_output_at")?,
        last_output_seq: DbRow::try_get(row, "last_output_seq")?,
        last_output_stream: row.opt_text("last_output_stream")?,
        last_output_bytes: DbRow::try_get(row, "last_output_bytes")?,
        liveness_state: row.opt_stored("liveness_state")?,
        liveness_reason: row.opt_text("liveness_reason")?,
        last_useful_action_at: row.opt_text("last_useful_action_at")?,
        retry_of_run_id: row.opt_text("retry_of_run_id")?,
        continuation_attempt: row.int("continuation_attempt")?,
        coalesced_count: row.int("coalesced_count")?,
        session_id_before: row.opt_text("session_id_before")?,
        session_id_after: row.opt_text("session_id_after")?,
        upstream: Default::default(),
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}

pub(crate) fn map_event(row: &DbRow) -> Result<RunEvent> {
    Ok(RunEvent {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        run_id: row.text("run_id")?,
        agent_id: row.text("agent_id")?,
        seq: row.int("seq")?,
        event_type: row.text("event_type")?,
        stream: row.opt_text("stream")?,
        level: row.text("level")?,
        message: row.opt_text("message")?,
        payload: row.opt_json("payload")?,
        created_at: row.text("created_at")?,
    })
}

/// An agent the timer scheduler may wake: timer policy on, nothing in flight.
#[derive(Debug, Clone)]
pub struct TimerCandidate {
    pub agent_id: String,
    pub status: AgentStatus,
    pub runtime_config: Value,
    pub last_heartbeat_at: Option<String>,
    pub last_finished_at: Option<String>,
}

pub async fn timer_candidates(store: &Store) -> Result<Vec<TimerCandidate>> {
    // Agents whose policy turns the timer on (`heartbeat.enabled` is true);
    // the caller reads the rest of the policy.
    let enabled = match store.backend() {
        // A malformed config (never written by the store) is skipped, not an
        // error for every agent.
        crate::Backend::Sqlite => {
            "CASE WHEN json_valid(a.runtime_config) \
             THEN json_type(a.runtime_config, '$.heartbeat.enabled') END = 'true'"
        }
        crate::Backend::Postgres => "a.runtime_config -> 'heartbeat' -> 'enabled' = 'true'::jsonb",
    };
    let sql = format!(
        "SELECT a.id, a.status, a.runtime_config, a.last_heartbeat_at, \
         (SELECT MAX(r.finished_at) FROM heartbeat_runs r WHERE r.agent_id = a.id) AS last_finished_at \
         FROM agents a WHERE {enabled} \
         AND a.status IN ('idle', 'active', 'error') \
         AND NOT EXISTS (SELECT 1 FROM heartbeat_runs r WHERE r.agent_id = a.id AND r.status IN ('queued', 'running'))"
    );
    let rows = crate::engine::db::query(&sql)
        .fetch_all(store.pool())
        .await?;
    rows.iter()
        .map(|r| {
            Ok(TimerCandidate {
                agent_id: r.text("id")?,
                status: r.stored("status")?,
                runtime_config: r.json("runtime_config")?,
                last_heartbeat_at: r.opt_text("last_heartbeat_at")?,
                last_finished_at: r.opt_text("last_finished_at")?,
            })
        })
        .collect()
}

pub async fn record_recovery(store: &Store, actor: &Actor, run: &HeartbeatRun) -> Result<()> {
    let mut tx = store.begin().await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &run.company_id,
            action: Action::HeartbeatRecovered,
            entity_type: EntityType::HeartbeatRun,
            entity_id: &run.id,
            details: json!({ "agentId": run.agent_id, "errorCode": "control_plane_restart", "processGroupId": run.process_group_id }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Agents marked `running` with no run in flight return to idle.
pub async fn reset_orphaned_agents(store: &Store) -> Result<u64> {
    let mut tx = store.begin().await?;
    let n = crate::engine::db::query(
        "UPDATE agents SET status = 'idle', updated_at = $1 WHERE status = 'running' AND NOT EXISTS \
         (SELECT 1 FROM heartbeat_runs r WHERE r.agent_id = agents.id AND r.status = 'running')",
    )
    .bind(now())
    .execute(tx.conn())
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok(n)
}

/// The agent's latest output as the run's sink saw it.
#[derive(Debug, Clone)]
pub struct LastOutput {
    pub at: String,
    pub seq: i64,
    pub stream: &'static str,
    pub bytes: i64,
}

/// Records the run's latest output. Updates may arrive out of order (they
/// are sent as the run goes); an older one never overwrites a newer one.
pub async fn set_last_output(store: &Store, run_id: &str, out: &LastOutput) -> Result<()> {
    // Through the writer like every write (SQLite's writer lock).
    let mut tx = store.begin().await?;
    crate::engine::db::query(
        "UPDATE heartbeat_runs SET last_output_at = $2, last_output_seq = $3, last_output_stream = $4, \
         last_output_bytes = $5 WHERE id = $1 AND (last_output_seq IS NULL OR last_output_seq < $3)",
    )
    .bind(run_id)
    .bind(&out.at)
    .bind(out.seq)
    .bind(out.stream)
    .bind(out.bytes)
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Runs the instance has in flight: `(queued, running)`, over every company.
/// Tests wait on this reaching `(0, 0)` (with no live process either) before
/// they assert that something did *not* happen.
pub async fn in_flight(store: &Store) -> Result<(i64, i64)> {
    let row = crate::engine::db::query(
        "SELECT COALESCE(SUM(CASE WHEN status = 'queued' THEN 1 ELSE 0 END), 0) AS queued, \
         COALESCE(SUM(CASE WHEN status = 'running' THEN 1 ELSE 0 END), 0) AS running \
         FROM heartbeat_runs WHERE status IN ('queued', 'running')",
    )
    .fetch_one(store.pool())
    .await?;
    Ok((row.int("queued")?, row.int("running")?))
}
