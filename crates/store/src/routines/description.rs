//! A routine's description document (the original's `routine_documents`,
//! key `description`): the routine's description as markdown, with a
//! revision for each change of the text. Kept in step by every revision of
//! the routine ([`crate::routines::revisions::write_revision`]), in its
//! transaction; read with the routine's detail.

use paperclip_core::actor::Actor;
use paperclip_core::routine::{Routine, RoutineDocument};

use crate::engine::db::{DbRow, Exec};
use crate::engine::row::RowExt;
use crate::routines::table::by;
use crate::{new_id, now, Result, Store, Tx};

const KEY: &str = "description";
const TITLE: &str = "Routine description";

const COLUMNS: &str = "id, company_id, routine_id, key, title, format, body, latest_revision_id, \
     latest_revision_number, created_by_agent_id, created_by_user_id, updated_by_agent_id, \
     updated_by_user_id, created_at, updated_at";

async fn find<'e>(exec: impl Exec<'e>, routine_id: &str) -> Result<Option<RoutineDocument>> {
    let row = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM routine_documents WHERE routine_id = $1 AND key = $2"
    ))
    .bind(routine_id)
    .bind(KEY)
    .fetch_optional(exec)
    .await?;
    row.as_ref().map(map).transpose()
}

pub async fn get(store: &Store, routine_id: &str) -> Result<Option<RoutineDocument>> {
    find(store.pool(), routine_id).await
}

/// Brings the document to the routine's description: a new revision when
/// the text changed, the document at revision 1 when it has none yet.
pub(crate) async fn sync_in(
    tx: &mut Tx,
    actor: &Actor,
    routine: &Routine,
    change_summary: &str,
) -> Result<()> {
    let body = routine.description.as_deref().unwrap_or("");
    let existing = find(tx.conn(), &routine.id).await?;
    if existing.as_ref().is_some_and(|d| d.body == body) {
        return Ok(());
    }
    let (agent, user) = by(actor);
    let ts = now();
    let (document_id, number) = match &existing {
        Some(d) => (d.id.clone(), d.latest_revision_number + 1),
        None => {
            let id = new_id();
            crate::engine::db::query(&format!(
                "INSERT INTO routine_documents ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, 'markdown', \
                 $6, NULL, 1, $7, $8, $7, $8, $9, $9)"
            ))
            .bind(&id)
            .bind(&routine.company_id)
            .bind(&routine.id)
            .bind(KEY)
            .bind(TITLE)
            .bind(body)
            .bind(agent)
            .bind(user)
            .bind(&ts)
            .execute(tx.conn())
            .await?;
            (id, 1)
        }
    };
    let revision_id = new_id();
    crate::engine::db::query(
        "INSERT INTO routine_document_revisions (id, company_id, document_id, revision_number, \
         title, format, body, change_summary, created_by_agent_id, created_by_user_id, \
         created_by_run_id, created_at) VALUES ($1, $2, $3, $4, $5, 'markdown', $6, $7, $8, $9, \
         $10, $11)",
    )
    .bind(&revision_id)
    .bind(&routine.company_id)
    .bind(&document_id)
    .bind(number)
    .bind(TITLE)
    .bind(body)
    .bind(change_summary)
    .bind(agent)
    .bind(user)
    .bind(actor.run_id.as_deref())
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    crate::engine::db::query(
        "UPDATE routine_documents SET body = $2, latest_revision_id = $3, \
         latest_revision_number = $4, updated_by_agent_id = $5, updated_by_user_id = $6, \
         updated_at = $7 WHERE id = $1",
    )
    .bind(&document_id)
    .bind(body)
    .bind(&revision_id)
    .bind(number)
    .bind(agent)
    .bind(user)
    .bind(&ts)
    .execute(tx.conn())
    .await?;
    Ok(())
}

fn map(row: &DbRow) -> Result<RoutineDocument> {
    Ok(RoutineDocument {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        routine_id: row.text("routine_id")?,
        key: row.text("key")?,
        title: row.text("title")?,
        format: row.text("format")?,
        body: row.text("body")?,
        latest_revision_id: row.opt_text("latest_revision_id")?,
        latest_revision_number: row.int("latest_revision_number")?,
        created_by_agent_id: row.opt_text("created_by_agent_id")?,
        created_by_user_id: row.opt_text("created_by_user_id")?,
        updated_by_agent_id: row.opt_text("updated_by_agent_id")?,
        updated_by_user_id: row.opt_text("updated_by_user_id")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}
