//! The CEO's strategy gate: until the board approves the strategy, tasks the
//! CEO creates stay drafts, so none of them may become active work (created,
//! moved or reopened).

use crate::{Result, Tx};
use paperclip_core::issue::IssueStatus;

pub(crate) const CEO_GATE: &str = "The CEO's strategy is not approved yet: tasks the CEO creates stay drafts until the board approves it";

pub(crate) fn is_active(status: IssueStatus) -> bool {
    matches!(status, IssueStatus::Todo | IssueStatus::InProgress)
}

/// Whether `creator` is the company's CEO and its strategy still awaits approval.
pub(crate) async fn ceo_gate_closed(
    tx: &mut Tx,
    company_id: &str,
    creator: Option<&str>,
) -> Result<bool> {
    let Some(creator) = creator else {
        return Ok(false);
    };
    let role: Option<(String,)> =
        crate::engine::db::query_as("SELECT role FROM agents WHERE id = $1")
            .bind(creator)
            .fetch_optional(tx.conn())
            .await?;
    if role.is_none_or(|(r,)| r != "ceo") {
        return Ok(false);
    }
    Ok(!crate::approvals::strategy_approved(tx, company_id).await?)
}
