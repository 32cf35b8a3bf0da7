//! The skeleton every audited write shares: begin, change, record what
//! changed in the activity log, commit; both land or neither does. A change
//! says what it did as an [`Audited`]; the helper writes the row.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use serde_json::Value;

use crate::audit::activity::{self, Entry};
use crate::{Result, Store, Tx};

/// What a change did, for its activity row, and what it returns.
pub(crate) struct Audited<T> {
    pub value: T,
    pub company_id: String,
    pub action: Action,
    pub entity_type: EntityType,
    pub entity_id: String,
    pub details: Value,
}

/// Runs `change` in one transaction with its activity row. An error from
/// the change rolls everything back and writes no row.
pub(crate) async fn mutate<T>(
    store: &Store,
    actor: &Actor,
    change: impl AsyncFnOnce(&mut Tx) -> Result<Audited<T>>,
) -> Result<T> {
    let mut tx = store.begin().await?;
    let done = change(&mut tx).await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &done.company_id,
            action: done.action,
            entity_type: done.entity_type,
            entity_id: &done.entity_id,
            details: done.details,
        },
    )
    .await?;
    tx.commit().await?;
    Ok(done.value)
}
