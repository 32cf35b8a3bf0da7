//! A search's matches in rank order: the tasks whose identifier or title
//! hold every word, then the others, newest first within each rank
//! ([`Band`]).
//!
//! Each rank is a search of its own, walked or driven like any search, so a
//! page costs what a newest-first page does: the title rank reads an index
//! of identifiers and titles only (`task_titles` on both engines, migration
//! 23), the rest the whole index less those.
//! Scoring every match instead (as `bm25()` or `ts_rank` would) reads all of
//! them: ~90,000 for a common word among a million tasks. A place in the
//! order is the rank and the number (`title~812345`).

use paperclip_core::limits::ISSUE_PAGE_TEXT_BUDGET;

use crate::issues::list::query::{count, list_sorted, Band, Direction, Filter, Position, Sort, SortedPage};
use crate::{Error, Result, Store};

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
