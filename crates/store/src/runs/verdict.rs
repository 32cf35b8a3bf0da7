//! Records a finished run's liveness verdict (`core::run_liveness`) in the
//! transaction that finishes it, after its task has settled: what the run's
//! agent changed is read from the activity log by run (migration 18's
//! index), one grouped query.

use paperclip_core::activity::Action;
use paperclip_core::model::HeartbeatRun;
use paperclip_core::run_liveness::{self, Evidence};

use crate::engine::row::RowExt;
use crate::{Result, Tx};

pub(crate) async fn record_in(tx: &mut Tx, run: HeartbeatRun) -> Result<HeartbeatRun> {
    let rows = crate::engine::db::query(
        "SELECT action, COUNT(*) AS n, MAX(created_at) AS latest FROM activity_log \
         WHERE run_id = $1 AND actor_type = 'agent' GROUP BY action",
    )
    .bind(&run.id)
    .fetch_all(tx.conn())
    .await?;
    let mut evidence = Evidence::default();
    for r in &rows {
        let n = r.int("n")?;
        match Action::parse(&r.text("action")?) {
            Some(Action::IssueCommentAdded) => evidence.comments += n,
            Some(Action::IssueDocumentCreated | Action::IssueDocumentUpdated) => {
                evidence.document_revisions += n
            }
            _ => evidence.other_changes += n,
        }
        let latest = r.opt_text("latest")?;
        if latest > evidence.latest_at {
            evidence.latest_at = latest;
        }
    }
    let task = match &run.issue_id {
        Some(id) => {
            let row = crate::engine::db::query("SELECT status FROM issues WHERE id = $1")
                .bind(id)
                .fetch_optional(tx.conn())
                .await?;
            row.map(|r| r.stored("status")).transpose()?
        }
        None => None,
    };
    let verdict = run_liveness::classify(
        run.status,
        run.error_code.as_deref(),
        task,
        run.last_output_seq.is_some(),
        &evidence,
    );
    crate::engine::db::query(
        "UPDATE heartbeat_runs SET liveness_state = $2, liveness_reason = $3, \
         last_useful_action_at = $4 WHERE id = $1",
    )
    .bind(&run.id)
    .bind(verdict.state.as_str())
    .bind(&verdict.reason)
    .bind(verdict.last_useful_action_at.as_deref())
    .execute(tx.conn())
    .await?;
    Ok(HeartbeatRun {
        liveness_state: Some(verdict.state),
        liveness_reason: Some(verdict.reason),
        last_useful_action_at: verdict.last_useful_action_at,
        ..run
    })
}
