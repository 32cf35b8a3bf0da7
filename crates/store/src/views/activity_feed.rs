//! The board's own activity entries (`POST /api/companies/{id}/activity`):
//! a use case over the audit table that checks the company and agent named,
//! so it lives above both rather than in `audit`, which every table uses.

use paperclip_core::model::ActivityEntry;

use crate::{Result, Store};

/// An entry written as given (the board's `POST /api/companies/{id}/activity`):
/// the company must exist, and a named agent must be one of its agents.
pub async fn create(store: &Store, row: ActivityEntry) -> Result<ActivityEntry> {
    let mut tx = store.begin().await?;
    crate::org::companies::get_in(&mut tx, &row.company_id).await?;
    if let Some(agent) = &row.agent_id {
        crate::org::agents::get_in_company(&mut tx, &row.company_id, agent).await?;
    }
    crate::audit::activity::insert(&mut tx, row.clone()).await?;
    tx.commit().await?;
    Ok(row)
}
