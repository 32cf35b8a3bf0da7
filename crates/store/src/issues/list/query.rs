//! Task lists: the filters, full-text search, the page and its count.
//!
//! A page is chosen in two steps: the numbers and text sizes of the matching
//! tasks, newest first, read from the index of the filter, then the chosen
//! rows by their numbers, so neither a sparse filter nor a page of long
//! descriptions reads more than the page.


use paperclip_core::issue::IssueStatus;
use paperclip_core::limits::ISSUE_PAGE_TEXT_BUDGET;
use paperclip_core::model::Issue;

use crate::engine::sql::{json_array, json_values, Bind, ListOf};
use crate::engine::row::RowExt;
use crate::issues::list::page::{bind_all, page_rows};
use crate::issues::table::{attach_flagged, flagged, COLUMNS, HAS_RELATIONS};
use crate::{Result, Store};

#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub statuses: Vec<IssueStatus>,
    pub assignee_agent_id: Option<String>,
    pub assignee_user_id: Option<String>,
    pub project_id: Option<String>,
    pub goal_id: Option<String>,
    pub parent_id: Option<String>,
    pub label_id: Option<String>,
    pub q: Option<String>,
    /// Of a search's matches, only one rank's (see [`Band`]).
    pub band: Option<Band>,
    /// Past this place (the previous page's `nextCursor`): issues numbered
    /// below it, or for a ranked search, past it in rank order.
    pub cursor: Option<Position>,
    pub limit: i64,
}

/// The ranks of a search's matches, best first: tasks whose identifier or
/// title hold every word, then the tasks that match elsewhere (description,
/// comments). Newest first within each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Band {
    Title,
    Rest,
}

impl Band {
    pub fn as_str(self) -> &'static str {
        match self {
            Band::Title => "title",
            Band::Rest => "rest",
        }
    }

    pub fn parse(s: &str) -> Option<Band> {
        match s {
            "title" => Some(Band::Title),
            "rest" => Some(Band::Rest),
            _ => None,
        }
    }
}

pub struct Page {
    pub issues: Vec<Issue>,
    /// Set when more issues match than fit on this page.
    pub next_cursor: Option<Position>,
}

/// `FROM issues WHERE ...` of the tasks `filter` matches, with its binds;
/// `None` when nothing can match (a search of punctuation only).
pub(crate) struct Matching {
    pub(crate) from: String,
    pub(crate) binds: Vec<Bind>,
    /// A search left out of `from`, to be matched one number range of the
    /// company at a time ([`walk_search`]).
    pub(crate) walk: Option<Walk>,
}

/// A full-text query matched a number range at a time: in which index, and
/// whether the title index's matches of it are left out (the rest rank).
pub(crate) struct Walk {
    table: &'static str,
    query: String,
    except: bool,
}

pub(crate) async fn matching(
    store: &Store,
    company_id: &str,
    filter: &Filter,
    use_for: Use,
    reach: Option<Reach>,
) -> Result<Option<Matching>> {
    let mut sql = "FROM issues WHERE company_id = $1".to_string();
    let mut binds: Vec<Bind> = vec![Bind::Text(company_id.to_string())];
    let mut walk = None;
    let param = |binds: &mut Vec<Bind>, value: Bind| {
        binds.push(value);
        format!("${}", binds.len())
    };
    if !filter.statuses.is_empty() {
        let list: Vec<String> = filter
            .statuses
            .iter()
            .map(|s| param(&mut binds, Bind::Text(s.as_str().to_string())))
            .collect();
        sql.push_str(&format!(" AND status IN ({})", list.join(", ")));
    }
    for (column, value) in [
        ("assignee_agent_id", &filter.assignee_agent_id),
        ("assignee_user_id", &filter.assignee_user_id),
        ("project_id", &filter.project_id),
        ("goal_id", &filter.goal_id),
        ("parent_id", &filter.parent_id),
    ] {
        if let Some(value) = value {
            let p = param(&mut binds, Bind::Text(value.clone()));
            sql.push_str(&format!(" AND {column} = {p}"));
        }
    }
    let fts = store.backend() == crate::Backend::Sqlite
        && filter.q.as_deref().is_some_and(|q| !q.trim().is_empty())
        && filter.q.as_deref().and_then(as_identifier).is_none();
    let label_only = filter.statuses.is_empty()
        && filter.assignee_agent_id.is_none()
        && filter.assignee_user_id.is_none()
        && filter.project_id.is_none()
        && filter.goal_id.is_none()
        && filter.parent_id.is_none()
        && filter.q.as_deref().is_none_or(|q| q.trim().is_empty());
    if let Some(label) = &filter.label_id {
        let p = param(&mut binds, Bind::Text(label.clone()));
        let clause = match store.backend() {
            _ if use_for == Use::Walk && label_only && reach.is_some() => {
                // The label's next numbers past the place, from its own
                // index (migration 24): exactly the page's tasks.
                let reach = reach.expect("checked");
                let (cmp, dir) = if reach.down {
                    ("<", "DESC")
                } else {
                    (">", "ASC")
                };
                let past = match reach.past {
                    Some(number) => {
                        let b = param(&mut binds, Bind::Int(number));
                        format!(" AND task_number {cmp} {b}")
                    }
                    None => String::new(),
                };
                let rows = param(&mut binds, Bind::Int(reach.rows));
                // Numbers name tasks within a company: another company's
                // label must not pick this one's tasks by its numbers.
                format!(
                    "issue_number IN (SELECT task_number FROM issue_labels WHERE label_id = {p}{past} \
                     AND EXISTS (SELECT 1 FROM labels WHERE labels.id = {p} AND labels.company_id = $1) \
                     ORDER BY task_number {dir} LIMIT {rows})"
                )
            }
            _ if use_for.counts() && label_only => {
                // Counted from the label's own index, no task read.
                sql = format!(
                    "FROM issue_labels WHERE EXISTS (SELECT 1 FROM labels WHERE labels.company_id = $1 \
                     AND labels.id = issue_labels.label_id) AND label_id = {p}"
                );
                String::new()
            }
            crate::Backend::Sqlite if use_for.counts() && !fts => {
                // The label's tasks drive, each looked up by id, until the cap.
                sql = sql.replacen(
                    "FROM issues WHERE",
                    &format!(
                        "FROM issue_labels CROSS JOIN issues ON issues.id = issue_labels.issue_id \
                              WHERE issue_labels.label_id = {p} AND"
                    ),
                    1,
                );
                String::new()
            }
            crate::Backend::Sqlite if !label_is_rare(store, label).await? => {
                // A label on many tasks: each task of the walk is probed by
                // the relation's key (a page among a million tasks ~10 ms),
                // where the set of all its tasks took ~90 ms to build.
                format!(
                    "EXISTS (SELECT 1 FROM issue_labels l WHERE l.issue_id = issues.id AND l.label_id = {p})"
                )
            }
            crate::Backend::Sqlite => {
                // A label on few tasks: they drive (the unary `+` keeps
                // SQLite off the company's index, as for a rare word).
                sql = sql.replacen("WHERE company_id = $1", "WHERE +company_id = $1", 1);
                format!("id IN (SELECT issue_id FROM issue_labels WHERE label_id = {p})")
            }
            crate::Backend::Postgres => {
                format!("id IN (SELECT issue_id FROM issue_labels WHERE label_id = {p})")
            }
        };
        if !clause.is_empty() {
            sql.push_str(" AND ");
            sql.push_str(&clause);
        }
    }
    if let Some(ident) = filter.q.as_deref().and_then(as_identifier) {
        // `ACM-12` names one task: the identifier index finds it at once.
        let p = param(&mut binds, Bind::Text(ident));
        sql.push_str(&format!(" AND identifier = {p}"));
    } else if let Some(q) = filter.q.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
        let words = search_words(q);
        if words.is_empty() {
            // Nothing searchable (only punctuation): nothing matches.
            return Ok(None);
        }
        match store.backend() {
            crate::Backend::Sqlite => {
                // Each word a prefix, but for a count of the whole words
                // (see [`count`]).
                let star = if use_for == Use::CountWholeWords {
                    ""
                } else {
                    "*"
                };
                let all = words
                    .iter()
                    .map(|w| format!("\"{w}\"{star}"))
                    .collect::<Vec<_>>()
                    .join(" AND ");
                // A rank reads another index: the title rank the index of
                // identifiers and titles (migration 23), the rest the whole
                // index less the title rank's matches.
                let (table, except) = match filter.band {
                    None => ("task_search", false),
                    Some(Band::Title) => ("task_titles", false),
                    Some(Band::Rest) => ("task_search", true),
                };
                let clause = if use_for.counts() {
                    // The matches drive, each looked up by rowid, until the
                    // cap: a common word among a million tasks counts its
                    // first 10,000 in ~15 ms, where testing the company's
                    // tasks against the set of matches took ~45 ms.
                    sql = sql.replacen(
                        "FROM issues WHERE",
                        &format!(
                            "FROM {table} CROSS JOIN issues ON issues.rowid = {table}.rowid WHERE"
                        ),
                        1,
                    );
                    format!("{table} MATCH {{p}}")
                } else if rare_sqlite(store, table, &words).await? {
                    // Few matches: they drive (rowid lookups) rather than a
                    // walk of the company's index testing each task; the
                    // unary `+` keeps SQLite off that index.
                    sql = sql.replacen("WHERE company_id = $1", "WHERE +company_id = $1", 1);
                    format!("issues.rowid IN (SELECT rowid FROM {table} WHERE {table} MATCH {{p}})")
                } else if use_for == Use::Walk {
                    // Many, in number order: matched a range of numbers at a
                    // time (a page among a million tasks ~6 ms, against
                    // ~25 ms to build the set of all matches first).
                    walk = Some(Walk {
                        table,
                        query: all.clone(),
                        except,
                    });
                    String::new()
                } else {
                    format!("issues.rowid IN (SELECT rowid FROM {table} WHERE {table} MATCH {{p}})")
                };
                if !clause.is_empty() {
                    let p = param(&mut binds, Bind::Text(all.clone()));
                    sql.push_str(" AND ");
                    sql.push_str(&clause.replace("{p}", &p));
                    if except {
                        let p = param(&mut binds, Bind::Text(all));
                        sql.push_str(&format!(
                            " AND issues.rowid NOT IN (SELECT rowid FROM task_titles WHERE task_titles MATCH {p})"
                        ));
                    }
                }
            }
            crate::Backend::Postgres => {
                let query = words
                    .iter()
                    .map(|w| format!("{w}:*"))
                    .collect::<Vec<_>>()
                    .join(" & ");
                // Each task's words are kept in `task_search` (migration 21),
                // those of its identifier and title in `task_titles` as well
                // (migration 23): a rank reads one, the rest rank the first
                // less the second's matches.
                let (table, except) = match filter.band {
                    None => ("task_search", false),
                    Some(Band::Title) => ("task_titles", false),
                    Some(Band::Rest) => ("task_search", true),
                };
                let but = |task: &str| {
                    if except {
                        format!(
                            " AND NOT EXISTS (SELECT 1 FROM task_titles t WHERE t.issue_id = {task} \
                             AND t.words @@ to_tsquery('simple', {{p}}))"
                        )
                    } else {
                        String::new()
                    }
                };
                let clause = if estimated_rare(store, table, &words).await? {
                    // Few matches: they drive, collected through the GIN
                    // index first (as an array, so the planner cannot turn
                    // them into a walk of the company testing each task).
                    format!(
                        "id = ANY(ARRAY(SELECT issue_id FROM {table} m WHERE m.words @@ to_tsquery('simple', {{p}}){}))",
                        but("m.issue_id")
                    )
                } else if use_for.counts() {
                    // Many, counted up to the cap: joined in id order.
                    format!(
                        "id IN (SELECT issue_id FROM {table} m WHERE m.words @@ to_tsquery('simple', {{p}}){})",
                        but("m.issue_id")
                    )
                } else {
                    // Many, walked to a page: each task of the walk has its
                    // kept words tested (~2 µs a task).
                    format!(
                        "EXISTS (SELECT 1 FROM {table} m WHERE m.issue_id = issues.id \
                         AND m.words @@ to_tsquery('simple', {{p}})){}",
                        but("issues.id")
                    )
                };
                let p = param(&mut binds, Bind::Text(query));
                sql.push_str(" AND ");
                sql.push_str(&clause.replace("{p}", &p));
            }
        }
    }
    if let Some(cursor) = &filter.cursor {
        let p = param(&mut binds, Bind::Int(cursor.number));
        sql.push_str(&format!(" AND issue_number < {p}"));
    }
    Ok(Some(Matching {
        from: sql,
        binds,
        walk,
    }))
}

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

/// A cursor names a rank only in a ranked search.
pub(crate) fn check_cursor(filter: &Filter) -> Result<()> {
    let known = match filter.cursor.as_ref().and_then(|c| c.key.as_deref()) {
        None => true,
        Some(key) => ranks(filter) && Band::parse(key).is_some(),
    };
    if known {
        Ok(())
    } else {
        Err(crate::Error::invalid("cursor", "Unknown cursor"))
    }
}

/// Whether `filter` is a search of words whose matches come in ranks: not
/// an identifier (one task) nor already one rank.
pub(crate) fn ranks(filter: &Filter) -> bool {
    filter.band.is_none() && searches_words(filter)
}

/// Whether `filter` searches words (not an identifier, not punctuation).
fn searches_words(filter: &Filter) -> bool {
    filter
        .q
        .as_deref()
        .is_some_and(|q| as_identifier(q).is_none() && !search_words(q).is_empty())
}

/// How a list is ordered. Each order walks an index `(company_id, key,
/// issue_number)`, so a page costs the same at any size; the issue number
/// breaks ties, so paging never skips or repeats a task.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    #[default]
    Newest,
    /// Also the identifier order: a company numbers its tasks in sequence.
    Oldest,
    Updated,
    Priority,
    /// A search's best matches first ([`Band`]); newest first otherwise.
    Relevance,
}

/// The priority order, highest first: the expression of migration 12's
/// index exactly, so both engines walk that index.
const PRIORITY_RANK: &str =
    "(CASE priority WHEN 'critical' THEN 3 WHEN 'high' THEN 2 WHEN 'medium' THEN 1 ELSE 0 END)";

impl Sort {
    pub const ALL: [Sort; 4] = [Sort::Newest, Sort::Oldest, Sort::Updated, Sort::Priority];

    /// `identifier` is another name for oldest first (ACM-1, ACM-2, ...).
    pub fn parse(s: &str) -> Option<Sort> {
        match s {
            "newest" => Some(Sort::Newest),
            "oldest" | "identifier" => Some(Sort::Oldest),
            "updated" => Some(Sort::Updated),
            "priority" => Some(Sort::Priority),
            "relevance" => Some(Sort::Relevance),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Sort::Newest => "newest",
            Sort::Oldest => "oldest",
            Sort::Updated => "updated",
            Sort::Priority => "priority",
            Sort::Relevance => "relevance",
        }
    }

    /// What is ordered on before the issue number, if anything.
    fn key(self) -> Option<&'static str> {
        match self {
            Sort::Newest | Sort::Oldest | Sort::Relevance => None,
            Sort::Updated => Some("updated_at"),
            Sort::Priority => Some(PRIORITY_RANK),
        }
    }

    fn descending(self) -> bool {
        self != Sort::Oldest
    }
}

/// A task's place in a sort order: its key (for orders with one) and number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub key: Option<String>,
    pub number: i64,
}

impl Position {
    /// As a page link writes it: `number`, or `key~number`.
    pub fn parse(sort: Sort, s: &str) -> Option<Position> {
        let (key, number) = match sort.key() {
            None if sort == Sort::Relevance => match s.rsplit_once('~') {
                Some((band, number)) => (Some(Band::parse(band)?.as_str().to_string()), number),
                None => (None, s),
            },
            None => (None, s),
            Some(_) => {
                let (key, number) = s.rsplit_once('~')?;
                // A time on both engines (Postgres compares it as one).
                let ok = match sort {
                    Sort::Priority => key.parse::<i64>().is_ok(),
                    _ => key.len() <= 40 && chrono::DateTime::parse_from_rfc3339(key).is_ok(),
                };
                if !ok {
                    return None;
                }
                (Some(key.to_string()), number)
            }
        };
        Some(Position {
            key,
            number: number.parse().ok()?,
        })
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.key {
            Some(key) => write!(f, "{key}~{}", self.number),
            None => write!(f, "{}", self.number),
        }
    }
}

/// Which side of a position a page lies on, in the sort order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    After,
    Before,
}

pub struct SortedPage {
    /// In the sort order, whichever way the page was read.
    pub issues: Vec<Issue>,
    /// The places of the page's first and last tasks.
    pub first: Option<Position>,
    pub last: Option<Position>,
    /// Whether more tasks match beyond the page, in the direction it was read.
    pub more: bool,
}

/// Up to this many matches, a filtered list in a keyed order is sorted in
/// memory on SQLite rather than found by walking the order's index.
const SORT_IN_MEMORY: i64 = 10_000;

pub(crate) fn filtered(f: &Filter) -> bool {
    !f.statuses.is_empty()
        || f.assignee_agent_id.is_some()
        || f.assignee_user_id.is_some()
        || f.project_id.is_some()
        || f.goal_id.is_some()
        || f.parent_id.is_some()
        || f.label_id.is_some()
        || f.q.as_deref().is_some_and(|q| !q.trim().is_empty())
}

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
            return Box::pin(crate::issues::list::rank::list_ranked(
                store, company_id, filter, at,
            ))
            .await;
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
    let issues = attach_flagged(&mut conn, page).await?;
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
        let n = rows
            .iter()
            .filter(|(status, _)| {
                filter.statuses.is_empty() || filter.statuses.iter().any(|s| s.as_str() == status)
            })
            .map(|(_, n)| n)
            .sum();
        return Ok((n, false));
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

/// `acm-12` as the identifier `ACM-12`: letters, a dash, digits, nothing else.
fn as_identifier(q: &str) -> Option<String> {
    let (prefix, number) = q.trim().split_once('-')?;
    let ok = !prefix.is_empty()
        && prefix.len() <= 10
        && prefix.chars().all(|c| c.is_ascii_alphabetic())
        && !number.is_empty()
        && number.len() <= 18
        && number.chars().all(|c| c.is_ascii_digit());
    ok.then(|| format!("{}-{number}", prefix.to_ascii_uppercase()))
}

/// Up to this many matches, a search is driven by its matches.
const RARE_MATCHES: i64 = 5_000;

/// Whether a search of `words` (each a prefix, all required) matches at most
/// [`RARE_MATCHES`] tasks of the SQLite index `table`, counted up to that
/// bound. The words as they are count first: a prefix query gathers the
/// matches of every word it starts (a common one among a million tasks:
/// ~15 ms), the whole words are read a match at a time, and if they alone
/// pass the bound the prefixes do too.
async fn rare_sqlite(store: &Store, table: &str, words: &[String]) -> Result<bool> {
    let count =
        format!("SELECT COUNT(*) FROM (SELECT rowid FROM {table} WHERE {table} MATCH $1 LIMIT $2)");
    let exact = words
        .iter()
        .map(|w| format!("\"{w}\""))
        .collect::<Vec<_>>()
        .join(" AND ");
    if !rare(store, &count, &exact).await? {
        return Ok(false);
    }
    let prefixes = words
        .iter()
        .map(|w| format!("\"{w}\"*"))
        .collect::<Vec<_>>()
        .join(" AND ");
    rare(store, &count, &prefixes).await
}
/// Whether the planner expects a full-text query to match at most
/// [`RARE_MATCHES`] tasks, from the statistics `ANALYZE` keeps of the words
/// (their most common elements). Counting the matches instead, as on SQLite,
/// costs ~40 ms for a common word on Postgres (a GIN scan of a prefix, or a
/// scan of the table until the bound), more than the search itself.
///
/// Each plan is ruinous for the other kind of word (a rare word walked
/// through a million tasks: ~2 s; a common one driven as an array of its
/// 91,000 matches: ~8 s), so the estimates are read with care, word by word
/// in `table`: each as a prefix and as it is (a subset of the matches)
/// apart, the larger taken (a prefix has been estimated at 440 where its
/// whole word alone was at 6,000); an estimate that is one of Postgres'
/// default guesses (a word outside the most common elements, or no
/// statistics yet) counts as rare, which such a word is. Words in titles
/// are few, so there every prefix is a guess and the whole word decides.
async fn estimated_rare(store: &Store, table: &str, words: &[String]) -> Result<bool> {
    let (tasks,): (i64,) = crate::engine::db::query_as(
        "SELECT CAST(GREATEST(reltuples, 0) AS BIGINT) FROM pg_class \
         WHERE oid = CAST($1 AS regclass)",
    )
    .bind(table)
    .fetch_one(store.pool())
    .await?;
    let tasks = (tasks as f64).max(1.0);
    // Postgres' guesses where it knows nothing: a word outside the most
    // common elements (0.5 %), and any prefix when fewer than 100 words are
    // common enough to be kept (2 %: titles use few words).
    let guesses = [(tasks * 0.005).round(), (tasks * 0.02).round()];
    let mut share = 1.0;
    for word in words {
        let mut most: f64 = 0.0;
        for form in [format!("{word}:*"), word.clone()] {
            let rows = estimated_rows(store, table, &form).await?;
            if guesses.iter().all(|g| (rows - g).abs() > 1.0) {
                most = most.max(rows);
            }
        }
        // Every word must match: as independent events.
        share *= most / tasks;
    }
    Ok(share * tasks <= RARE_MATCHES as f64)
}

/// The planner's estimate of the tasks `words` match.
async fn estimated_rows(store: &Store, table: &str, words: &str) -> Result<f64> {
    // The plan's top line: `Seq Scan on task_search  (cost=.. rows=N width=4)`
    // (the JSON format comes back typed `json`, which the text reader refuses).
    let sql = format!("EXPLAIN SELECT 1 FROM {table} WHERE words @@ to_tsquery('simple', $1)");
    let (plan,): (String,) = crate::engine::db::query_as(&sql)
        .bind(words)
        .fetch_one(store.pool())
        .await?;
    plan.split_once(" rows=")
        .and_then(|(_, rest)| rest.split(' ').next())
        .and_then(|n| n.parse::<f64>().ok())
        .ok_or_else(|| {
            crate::Error::Database(sqlx::Error::Protocol(format!(
                "unreadable query plan: {plan}"
            )))
        })
}

/// Whether a label is on at most [`RARE_MATCHES`] tasks (of any company).
async fn label_is_rare(store: &Store, label: &str) -> Result<bool> {
    let (n,): (i64,) = crate::engine::db::query_as(
        "SELECT COUNT(*) FROM (SELECT 1 FROM issue_labels WHERE label_id = $1 LIMIT $2)",
    )
    .bind(label)
    .bind(RARE_MATCHES + 1)
    .fetch_one(store.pool())
    .await?;
    Ok(n <= RARE_MATCHES)
}

/// Whether a full-text query matches at most [`RARE_MATCHES`] tasks and
/// comments (counted up to that bound, so a common word costs no more to
/// count than a rare one).
async fn rare(store: &Store, count_sql: &str, query: &str) -> Result<bool> {
    let (n,): (i64,) = crate::engine::db::query_as(count_sql)
        .bind(query)
        .bind(RARE_MATCHES + 1)
        .fetch_one(store.pool())
        .await?;
    Ok(n <= RARE_MATCHES)
}

/// The words of a search, lower-cased: letters and digits, everything else
/// separates (as both engines' tokenizers split `ACM-12` into `acm`, `12`).
/// Each word matches as a prefix; all must match. Bounded, so a pasted
/// essay cannot become a huge query.
fn search_words(q: &str) -> Vec<String> {
    q.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().chars().take(64).collect())
        .take(8)
        .collect()
}

/// The part of a walk in number order a page can reach: past which number
/// (if any), in which direction, how many rows at most. A condition may use
/// it to read no further (a label's tasks).
#[derive(Clone, Copy)]
pub(crate) struct Reach {
    pub(crate) past: Option<i64>,
    pub(crate) down: bool,
    pub(crate) rows: i64,
}

/// What a filter's condition is for: a page in a keyed order, a page in
/// number order, or counting.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    Page,
    Walk,
    Count,
    /// Counting the tasks a search's words match as whole words (SQLite).
    CountWholeWords,
}

impl Use {
    fn counts(self) -> bool {
        matches!(self, Use::Count | Use::CountWholeWords)
    }
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
