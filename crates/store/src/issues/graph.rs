//! The parent and blocker graphs of issues, walked in the database with one
//! recursive query each, inside the writing transaction. The walks are
//! bounded, so a check costs the same few statements however large the
//! company is and never holds the SQLite write lock for long.

use paperclip_core::limits::{ISSUE_GRAPH_DEPTH_MAX, ISSUE_GRAPH_WALK_MAX};

use crate::engine::row::RowExt;
use crate::engine::sql::placeholders;
use crate::{Error, Result, Tx};

/// Refuses `parent_id` as the parent of `id` when it is missing from the
/// company, is `id` or a descendant of it (a cycle), or its chain of
/// ancestors is longer than [`ISSUE_GRAPH_DEPTH_MAX`].
pub(crate) async fn check_parent(
    tx: &mut Tx,
    company_id: &str,
    id: &str,
    parent_id: &str,
) -> Result<()> {
    let row = crate::engine::db::query(
        "WITH RECURSIVE chain(id, parent_id, depth) AS ( \
           SELECT id, parent_id, 1 FROM issues WHERE id = $1 AND company_id = $2 \
           UNION ALL \
           SELECT i.id, i.parent_id, c.depth + 1 FROM issues i JOIN chain c ON i.id = c.parent_id \
           WHERE c.depth < $3 AND c.id <> $4) \
         SELECT COUNT(*) AS n, CAST(COALESCE(MAX(CASE WHEN id = $4 THEN 1 ELSE 0 END), 0) AS BIGINT) AS cycle, \
         CAST(COALESCE(MAX(depth), 0) AS BIGINT) AS depth FROM chain",
    )
    .bind(parent_id)
    .bind(company_id)
    .bind(ISSUE_GRAPH_DEPTH_MAX)
    .bind(id)
    .fetch_one(tx.conn())
    .await?;
    if row.int("n")? == 0 {
        return Err(Error::not_found("Parent issue"));
    }
    if row.int("cycle")? == 1 {
        return Err(Error::rule("Issue parent would create cycle"));
    }
    if row.int("depth")? >= ISSUE_GRAPH_DEPTH_MAX {
        return Err(Error::rule(format!(
            "Issue parent chain is too deep (at most {ISSUE_GRAPH_DEPTH_MAX} levels)"
        )));
    }
    Ok(())
}

/// Refuses `blockers` as the blockers of `issue_id` when one of them is
/// missing from the company or already waits, directly or not, on
/// `issue_id`. The walk follows blocker edges from the new blockers and
/// visits each issue once (`UNION` drops repeats), so it reads each edge
/// among the company's issues at most once; past [`ISSUE_GRAPH_WALK_MAX`]
/// issues it refuses rather than guess.
pub(crate) async fn check_blockers(
    tx: &mut Tx,
    company_id: &str,
    issue_id: &str,
    blockers: &[&str],
) -> Result<()> {
    if blockers.is_empty() {
        return Ok(());
    }
    if blockers.contains(&issue_id) {
        return Err(Error::rule("An issue cannot block itself"));
    }
    let found = count_in_company(tx, company_id, blockers).await?;
    if found != blockers.len() as i64 {
        return Err(Error::not_found("Blocking issue"));
    }
    let list = placeholders(3, blockers.len());
    let sql = format!(
        "WITH RECURSIVE reach(id) AS ( \
           SELECT id FROM issues WHERE company_id = $1 AND id IN ({list}) \
           UNION \
           SELECT b.blocked_by_issue_id FROM issue_blockers b JOIN reach r ON b.issue_id = r.id \
           WHERE r.id <> $2) \
         SELECT CAST(COALESCE(MAX(CASE WHEN id = $2 THEN 1 ELSE 0 END), 0) AS BIGINT) AS cycle, \
         COUNT(*) AS n FROM (SELECT id FROM reach LIMIT {limit}) walked",
        limit = ISSUE_GRAPH_WALK_MAX,
    );
    let mut query = crate::engine::db::query(&sql)
        .bind(company_id)
        .bind(issue_id);
    for b in blockers {
        query = query.bind(*b);
    }
    let row = query.fetch_one(tx.conn()).await?;
    if row.int("cycle")? == 1 {
        return Err(Error::rule("Blocking relationship would create cycle"));
    }
    if row.int("n")? >= ISSUE_GRAPH_WALK_MAX {
        return Err(Error::rule(format!(
            "Blocker graph is too large to check (more than {ISSUE_GRAPH_WALK_MAX} issues upstream)"
        )));
    }
    Ok(())
}

async fn count_in_company(tx: &mut Tx, company_id: &str, ids: &[&str]) -> Result<i64> {
    let sql = format!(
        "SELECT COUNT(*) AS n FROM issues WHERE company_id = $1 AND id IN ({})",
        placeholders(2, ids.len())
    );
    let mut query = crate::engine::db::query(&sql).bind(company_id);
    for id in ids {
        query = query.bind(*id);
    }
    Ok(query.fetch_one(tx.conn()).await?.int("n")?)
}
