//! Task lists: the filters, full-text search, the page and its count.
//!
//! A page is chosen in two steps: the numbers and text sizes of the matching
//! tasks, newest first, read from the index of the filter, then the chosen
//! rows by their numbers, so neither a sparse filter nor a page of long
//! descriptions reads more than the page.

use paperclip_core::limits::ISSUE_PAGE_TEXT_BUDGET;

use crate::engine::row::RowExt;
use crate::engine::sql::{json_array, json_values, Bind, ListOf};
use crate::issues::list::filter::*;
use crate::issues::list::matching::*;
use crate::issues::list::page::{bind_all, page_rows};
use crate::issues::table::{attach_flagged, flagged, COLUMNS, HAS_RELATIONS};
use crate::{Error, Result, Store};

/// Newest first (by issue number), so a cursor pages without skips or repeats
/// while new issues are being created; a search in rank order (see [`Band`]).
pub async fn list(store: &Store, company_id: &str, filter: &Filter) -> Result<Page> {
    check_cursor(filter)?;
    let ranked = ranks(filter);
    let sort = if ranked {
        Sort::Relevance
    } else {
        Sort::Newest
    };
    let page = list_sorted(
        store,
        company_id,
        &Filter {
            cursor: None,
            ..filter.clone()
        },
        sort,
        filter.cursor.as_ref().map(|p| (p, Direction::After)),
    )
    .await?;
    let next_cursor = if page.more { page.last } else { None };
    Ok(Page {
        issues: page.issues,
        next_cursor,
    })
}

/// Up to this many matches, a filtered list in a keyed order is sorted in
/// memory on SQLite rather than found by walking the order's index.
const SORT_IN_MEMORY: i64 = 10_000;

/// A page of the tasks `filter` matches (its `cursor` aside) in `sort`
/// order, after or before `at` (from the start without it).
pub async fn list_sorted(
    store: &Store,
    company_id: &str,
    filter: &Filter,
    sort: Sort,
    at: Option<(&Position, Direction)>,
) -> Result<SortedPage> {
    let empty = || SortedPage {
        issues: Vec::new(),
        first: None,
        last: None,
        more: false,
    };
    let sort = match sort {
        Sort::Relevance if ranks(filter) => {
            // Boxed: a rank is read by this function again.
            return Box::pin(list_ranked(store, company_id, filter, at)).await;
        }
        Sort::Relevance => Sort::Newest,
        sort => sort,
    };
    let use_for = if sort.key().is_none() {
        Use::Walk
    } else {
        Use::Page
    };
    let backward = matches!(at, Some((_, Direction::Before)));
    let down = sort.descending() != backward;
    let reach = (use_for == Use::Walk).then(|| Reach {
        past: at.map(|(position, _)| position.number),
        down,
        rows: filter.limit + 1,
    });
    let Some(Matching {
        mut from,
        mut binds,
        walk,
    }) = matching(store, company_id, filter, use_for, reach).await?
    else {
        return Ok(empty());
    };
    let (dir, cmp) = if down { ("DESC", "<") } else { ("ASC", ">") };
    // SQLite plans without statistics: it would walk the order's index
    // testing each task against the filter, a walk of the company's whole
    // history for a filter matching few tasks. Those few are read by the
    // filter's own index and sorted instead (a unary `+` keeps SQLite off
    // the order's index); a filter matching many walks it to a page.
    let few = match (sort.key(), store.backend()) {
        (Some(_), crate::Backend::Sqlite) if filtered(filter) => {
            !count(store, company_id, filter, SORT_IN_MEMORY).await?.1
        }
        _ => false,
    };
    let key = sort.key().map(|expr| {
        if few {
            format!("+{expr}")
        } else {
            expr.to_string()
        }
    });
    let key = key.as_deref();
    let (key_col, order) = match key {
        Some(expr) => (
            // A time is read as the store's text on both engines; a rank
            // is made text for the page link.
            match sort {
                Sort::Priority => format!("CAST({expr} AS TEXT)"),
                _ => expr.to_string(),
            },
            format!("{expr} {dir}, issue_number {dir}"),
        ),
        None => ("''".to_string(), format!("issue_number {dir}")),
    };
    // Past a position in a keyed order, two index ranges in turn: the rest
    // of the position's key (key equal, number past it), then the keys past
    // it. As one condition (`key <= k AND (key < k OR number < n)`) the walk
    // would step over every task of the key already shown: 95 ms among a
    // million tasks on Postgres.
    // Parameters are numbered in the order they first appear in the text:
    // SQLite numbers `$n` names by appearance, not by their digits.
    let mut parts: Vec<(String, Vec<Bind>)> = Vec::new();
    match (at, key) {
        (None, _) => parts.push((from, binds)),
        (Some((position, _)), Some(expr)) => {
            let value = position.key.clone().unwrap_or_default();
            let bind = || match sort {
                Sort::Priority => Bind::Int(value.parse().unwrap_or(0)),
                _ => Bind::Text(value.clone()),
            };
            let mut same = binds.clone();
            same.push(bind());
            same.push(Bind::Int(position.number));
            let (k, n) = (same.len() - 1, same.len());
            parts.push((
                format!("{from} AND {expr} = ${k} AND issue_number {cmp} ${n}"),
                same,
            ));
            binds.push(bind());
            let k = binds.len();
            parts.push((format!("{from} AND {expr} {cmp} ${k}"), binds));
        }
        (Some((position, _)), None) => {
            binds.push(Bind::Int(position.number));
            from.push_str(&format!(" AND issue_number {cmp} ${}", binds.len()));
            parts.push((from, binds));
        }
    }
    let mut conn = store.pool().acquire().await?;
    // First the sizes only, to choose the page's rows without loading their
    // text: the page stops at `limit` or once its titles and descriptions
    // pass the budget, whichever comes first.
    let mut rows: Vec<(i64, i64, String)> = Vec::new();
    if let Some(search) = &walk {
        let start = at.map(|(position, _)| position.number);
        let (from, binds) = &parts[0];
        let window = Window {
            company_id,
            from,
            binds,
            search,
            down,
        };
        rows = walk_search(&mut conn, &window, start, filter.limit + 1).await?;
        parts.clear();
    }
    for (from, binds) in &parts {
        let wanted = filter.limit + 1 - rows.len() as i64;
        if wanted <= 0 {
            break;
        }
        let sizes_sql = format!(
            "SELECT issue_number, CAST(OCTET_LENGTH(title) + COALESCE(OCTET_LENGTH(description), 0) AS BIGINT) \
             AS size, {key_col} AS sort_key {from} ORDER BY {order} LIMIT ${}",
            binds.len() + 1
        );
        // Read to the end (at most `limit + 1` small rows): a SQLite fetch
        // stream dropped part way has been seen to leave the connection's
        // worker reading rows of the wrong statement (sqlx-sqlite row.rs panic).
        let part: Vec<(i64, i64, String)> = bind_all(crate::engine::db::query(&sizes_sql), binds)
            .bind(wanted)
            .fetch_map(&mut conn, number_size_key, number_size_key)
            .await?;
        rows.extend(part);
    }
    let sizes: Vec<(i64, i64)> = rows.iter().map(|(n, s, _)| (*n, *s)).collect();
    let (count, more) = page_rows(&sizes, filter.limit, ISSUE_PAGE_TEXT_BUDGET);
    if count == 0 {
        return Ok(empty());
    }
    let mut chosen: Vec<&(i64, i64, String)> = rows[..count].iter().collect();
    if backward {
        chosen.reverse();
    }
    let place = |r: &(i64, i64, String)| Position {
        key: key.map(|_| r.2.clone()),
        number: r.0,
    };
    // Each row says whether it has labels or blockers, so only those few
    // are looked up (for a page of 1,000 the lookup of all of them was a
    // third of the list's time).
    let page = if sort.key().is_none() && !filtered(filter) {
        // Unfiltered in number order: the page is exactly a number range
        // of the company, one walk of its index.
        let (low, high) = chosen.iter().fold((i64::MAX, i64::MIN), |(lo, hi), r| {
            (lo.min(r.0), hi.max(r.0))
        });
        let shown = if sort.descending() { "DESC" } else { "ASC" };
        let sql = format!(
            "SELECT {COLUMNS}, {HAS_RELATIONS} FROM issues WHERE company_id = $1 \
             AND issue_number BETWEEN $2 AND $3 ORDER BY issue_number {shown}"
        );
        crate::engine::db::query(&sql)
            .bind(company_id)
            .bind(low)
            .bind(high)
            .fetch_map(&mut conn, flagged, flagged)
            .await?
    } else {
        // By their numbers (unique in the company): a sparse filter (one
        // assignee among a million tasks) spans the company's whole history,
        // and re-reading its number range would walk all of it again.
        let numbers = json_array(chosen.iter().map(|r| r.0));
        let sql = format!(
            "SELECT {COLUMNS}, {HAS_RELATIONS} FROM issues WHERE company_id = $1 AND issue_number IN {}",
            json_values(store.backend(), "$2", ListOf::Numbers)
        );
        let mut rows = crate::engine::db::query(&sql)
            .bind(company_id)
            .bind(numbers)
            .fetch_map(&mut conn, flagged, flagged)
            .await?;
        let rank: std::collections::HashMap<i64, usize> =
            chosen.iter().enumerate().map(|(i, r)| (r.0, i)).collect();
        rows.sort_by_key(|(i, _)| rank.get(&i.issue_number).copied().unwrap_or(usize::MAX));
        rows
    };
    let mut issues = attach_flagged(&mut conn, page).await?;
    if filter.q.as_deref().is_none_or(|q| q.trim().is_empty()) {
        // The page's rows leave chats out (see `matching`); a page read as a
        // number range may span one.
        issues.retain(|i| i.conversation_agent_id.is_none());
    }
    Ok(SortedPage {
        issues,
        first: chosen.first().map(|r| place(r)),
        last: chosen.last().map(|r| place(r)),
        more,
    })
}

/// A search walked in number order: the tasks of `from` (in `down` order)
/// that match `search`.
struct Window<'a> {
    company_id: &'a str,
    from: &'a str,
    binds: &'a [Bind],
    search: &'a Walk,
    down: bool,
}

/// The first `wanted` tasks of a [`Window`] past `start`, as `(number, size,
/// '')`. The company's numbers are read a range at a time, and each range is
/// matched against the search index within the rowids it spans: the rowids
/// only bound the index read (the join decides), and since tasks are numbered
/// in the order they are inserted the bound is tight. Ranges grow fourfold,
/// so a rare match far back costs few rounds.
async fn walk_search(
    conn: &mut crate::engine::db::Conn,
    w: &Window<'_>,
    mut start: Option<i64>,
    wanted: i64,
) -> Result<Vec<(i64, i64, String)>> {
    let (dir, cmp) = if w.down { ("DESC", "<") } else { ("ASC", ">") };
    let mut rows = Vec::new();
    let mut span: i64 = 1024;
    loop {
        let past = if start.is_some() {
            format!("AND issue_number {cmp} $2")
        } else {
            String::new()
        };
        let limit = if start.is_some() { "$3" } else { "$2" };
        let range_sql = format!(
            "SELECT COUNT(*), COALESCE(MIN(issue_number), 0), COALESCE(MAX(issue_number), 0), \
             COALESCE(MIN(rowid), 0), COALESCE(MAX(rowid), 0) FROM \
             (SELECT issue_number, rowid FROM issues WHERE company_id = $1 {past} \
             ORDER BY issue_number {dir} LIMIT {limit})"
        );
        let mut range = crate::engine::db::query(&range_sql).bind(w.company_id);
        if let Some(start) = start {
            range = range.bind(start);
        }
        let row = range.bind(span).fetch_one(&mut *conn).await?;
        let n = row.int(0)?;
        if n == 0 {
            break;
        }
        let (low, high, first, last) = (row.int(1)?, row.int(2)?, row.int(3)?, row.int(4)?);
        // Parameters in the order they appear: SQLite numbers `$n` names by
        // appearance.
        let k = w.binds.len();
        let table = w.search.table;
        let except = if w.search.except {
            format!(
                " AND rowid NOT IN (SELECT rowid FROM task_titles WHERE task_titles MATCH ${} \
                 AND rowid BETWEEN ${} AND ${})",
                k + 6,
                k + 7,
                k + 8
            )
        } else {
            String::new()
        };
        let sql = format!(
            "SELECT issue_number, CAST(OCTET_LENGTH(title) + COALESCE(OCTET_LENGTH(description), 0) AS BIGINT) \
             AS size, '' AS sort_key {} AND issue_number BETWEEN ${} AND ${} AND rowid IN \
             (SELECT rowid FROM {table} WHERE {table} MATCH ${} AND rowid BETWEEN ${} AND ${}){except} \
             ORDER BY issue_number {dir} LIMIT ${}",
            w.from,
            k + 1,
            k + 2,
            k + 3,
            k + 4,
            k + 5,
            if w.search.except { k + 9 } else { k + 6 }
        );
        let mut query = bind_all(crate::engine::db::query(&sql), w.binds)
            .bind(low)
            .bind(high)
            .bind(&w.search.query)
            .bind(first)
            .bind(last);
        if w.search.except {
            query = query.bind(&w.search.query).bind(first).bind(last);
        }
        let part: Vec<(i64, i64, String)> = query
            .bind(wanted - rows.len() as i64)
            .fetch_map(&mut *conn, number_size_key, number_size_key)
            .await?;
        rows.extend(part);
        if rows.len() as i64 >= wanted || n < span {
            break;
        }
        start = Some(if w.down { low } else { high });
        span = (span * 4).min(65_536);
    }
    Ok(rows)
}

fn number_size_key<R: RowExt>(row: &R) -> Result<(i64, i64, String)> {
    Ok((row.int(0)?, row.int(1)?, row.text(2)?))
}

/// How many tasks `filter` matches (its cursor and limit aside), counted up
/// to `cap`: `(count, whether there are more)`. Unfiltered or by status only,
/// the kept counts answer at once at any size; other filters count their
/// index entries, at most `cap + 1` of them.
pub async fn count(
    store: &Store,
    company_id: &str,
    filter: &Filter,
    cap: i64,
) -> Result<(i64, bool)> {
    let filter = Filter {
        cursor: None,
        ..filter.clone()
    };
    let only_status = filter.assignee_agent_id.is_none()
        && filter.assignee_user_id.is_none()
        && filter.project_id.is_none()
        && filter.goal_id.is_none()
        && filter.parent_id.is_none()
        && filter.label_id.is_none()
        && filter.q.as_deref().map(str::trim).unwrap_or("").is_empty();
    if only_status {
        let rows: Vec<(String, i64)> = crate::engine::db::query_as(
            "SELECT status, n FROM issue_status_counts WHERE company_id = $1",
        )
        .bind(company_id)
        .fetch_all(store.pool())
        .await?;
        // Less the company's chats (a few rows of the chat index).
        let chats: Vec<(String, i64)> = crate::engine::db::query_as(
            "SELECT status, COUNT(*) FROM issues WHERE company_id = $1 \
             AND conversation_agent_id IS NOT NULL GROUP BY status",
        )
        .bind(company_id)
        .fetch_all(store.pool())
        .await?;
        let wanted = |status: &str| {
            filter.statuses.is_empty() || filter.statuses.iter().any(|s| s.as_str() == status)
        };
        let n: i64 = rows
            .iter()
            .filter(|(status, _)| wanted(status))
            .map(|(_, n)| n)
            .sum();
        let chats: i64 = chats
            .iter()
            .filter(|(status, _)| wanted(status))
            .map(|(_, n)| n)
            .sum();
        return Ok(((n - chats).max(0), false));
    }
    // On SQLite a prefix query gathers the matches of every word it starts
    // before the first is counted (a common word among a million tasks:
    // ~15 ms); the whole words are read a match at a time. They are a
    // subset of the matches, so if they pass the cap the count is done.
    if store.backend() == crate::Backend::Sqlite && searches_words(&filter) {
        let whole = count_as(store, company_id, &filter, Use::CountWholeWords, cap).await?;
        if whole.1 {
            return Ok(whole);
        }
    }
    count_as(store, company_id, &filter, Use::Count, cap).await
}

async fn count_as(
    store: &Store,
    company_id: &str,
    filter: &Filter,
    use_for: Use,
    cap: i64,
) -> Result<(i64, bool)> {
    let Some(Matching { from, binds, .. }) =
        matching(store, company_id, filter, use_for, None).await?
    else {
        return Ok((0, false));
    };
    let sql = format!(
        "SELECT COUNT(*) FROM (SELECT 1 AS one {from} LIMIT ${}) capped",
        binds.len() + 1
    );
    let (n,): (i64,) = bind_all(crate::engine::db::query_as(&sql), &binds)
        .bind(cap + 1)
        .fetch_one(store.pool())
        .await?;
    Ok((n.min(cap), n > cap))
}

// ---- a search in rank order ------------------------------------------------
//
// A search's matches in rank order: the tasks whose identifier or title
// hold every word, then the others, newest first within each rank
// ([`Band`]).
//
// Each rank is a search of its own, walked or driven like any search, so a
// page costs what a newest-first page does: the title rank reads an index
// of identifiers and titles only (`task_titles` on both engines, migration
// 23), the rest the whole index less those.
// Scoring every match instead (as `bm25()` or `ts_rank` would) reads all of
// them: ~90,000 for a common word among a million tasks. A place in the
// order is the rank and the number (`title~812345`).

/// A page of `filter`'s search (not yet limited to a rank) in rank order,
/// after or before `at`; a place without a rank is in the title rank.
pub(crate) async fn list_ranked(
    store: &Store,
    company_id: &str,
    filter: &Filter,
    at: Option<(&Position, Direction)>,
) -> Result<SortedPage> {
    let backward = matches!(at, Some((_, Direction::Before)));
    // The ranks in the direction of reading.
    let order = if backward {
        [Band::Rest, Band::Title]
    } else {
        [Band::Title, Band::Rest]
    };
    let start = match at {
        Some((position, _)) => match position.key.as_deref() {
            None => Band::Title,
            Some(key) => {
                Band::parse(key).ok_or_else(|| Error::invalid("cursor", "Unknown cursor"))?
            }
        },
        None => order[0],
    };
    let bands = &order[order.iter().position(|b| *b == start).unwrap_or(0)..];
    let mut parts: Vec<(Band, SortedPage)> = Vec::new();
    let mut shown: i64 = 0;
    let mut text: usize = 0;
    let mut more = false;
    for (i, band) in bands.iter().enumerate() {
        let rank = Filter {
            band: Some(*band),
            cursor: None,
            limit: filter.limit - shown,
            ..filter.clone()
        };
        if rank.limit <= 0 || text as i64 > ISSUE_PAGE_TEXT_BUDGET {
            // The page is full: more follow if this rank has any match.
            more = count(store, company_id, &rank, 0).await?.1;
            break;
        }
        // Within a rank, newest first: past the place in its own rank, from
        // the start of the next one (or, backwards, from its end: the tasks
        // numbered above 0 in ascending order, the last of them shown first).
        let edge = Position {
            key: None,
            number: 0,
        };
        let within = match at {
            Some((position, direction)) if i == 0 => Some((
                Position {
                    key: None,
                    number: position.number,
                },
                direction,
            )),
            _ if backward => Some((edge, Direction::Before)),
            _ => None,
        };
        let page = list_sorted(
            store,
            company_id,
            &rank,
            Sort::Newest,
            within.as_ref().map(|(p, d)| (p, *d)),
        )
        .await?;
        shown += page.issues.len() as i64;
        text += page
            .issues
            .iter()
            .map(|issue| issue.title.len() + issue.description.as_deref().map_or(0, str::len))
            .sum::<usize>();
        let page_more = page.more;
        parts.push((*band, page));
        if page_more {
            more = true;
            break;
        }
    }
    if backward {
        parts.reverse();
    }
    let place = |band: Band, p: Option<Position>| {
        p.map(|p| Position {
            key: Some(band.as_str().to_string()),
            number: p.number,
        })
    };
    let mut first = None;
    let mut last = None;
    let mut issues = Vec::new();
    for (band, page) in parts {
        if page.issues.is_empty() {
            continue;
        }
        if first.is_none() {
            first = place(band, page.first);
        }
        last = place(band, page.last);
        issues.extend(page.issues);
    }
    Ok(SortedPage {
        issues,
        first,
        last,
        more,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_place_in_the_updated_order_is_a_time_and_a_number() {
        let place = Position::parse(Sort::Updated, "2026-12-04T21:18:32.123Z~5").unwrap();
        assert_eq!(place.key.as_deref(), Some("2026-12-04T21:18:32.123Z"));
        assert_eq!(place.number, 5);
        assert_eq!(place.to_string(), "2026-12-04T21:18:32.123Z~5");
        for odd in [
            "not-a-time~5",
            "~5",
            "2026-12-04~5",
            "2026-12-04T21:18:32.123Z~x",
        ] {
            assert_eq!(Position::parse(Sort::Updated, odd), None, "{odd}");
        }
        assert_eq!(Position::parse(Sort::Priority, "3~7").unwrap().number, 7);
    }
}
