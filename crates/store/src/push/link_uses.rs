//! The action links of notifications that were used: a link acts once. Its
//! id is kept until the link would have expired, when the signature alone
//! refuses it.

use serde_json::json;

use crate::{now, Error, Result, Store};

/// Records that the link `id` of `user_id` is used now, or errs with a 409
/// (`action_link_used`) if it was before. Expired records go at the same
/// time.
pub async fn use_once(store: &Store, id: &str, user_id: &str, expires_at: &str) -> Result<()> {
    let mut tx = store.begin().await?;
    let ts = now();
    crate::engine::db::query("DELETE FROM push_action_uses WHERE expires_at < $1")
        .bind(&ts)
        .execute(tx.conn())
        .await?;
    let inserted = crate::engine::db::query(
        "INSERT INTO push_action_uses (id, user_id, used_at, expires_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(id)
    .bind(user_id)
    .bind(&ts)
    .bind(expires_at)
    .execute(tx.conn())
    .await?
    .rows_affected();
    if inserted == 0 {
        return Err(Error::conflict(
            "This notification's action was used already",
            Some(json!({ "reason": "action_link_used" })),
        ));
    }
    tx.commit().await?;
    Ok(())
}
