//! The tasks a filter matches: the SQL of its conditions and, for a search,
//! whether its words are rare enough to read their index first.

use crate::engine::sql::Bind;
use crate::issues::list::filter::*;
use crate::{Result, Store};

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
    pub(crate) table: &'static str,
    pub(crate) query: String,
    pub(crate) except: bool,
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
    // Chats are found by search only (upstream's lists leave them out). Left
    // out here, where the page is chosen, so a page with chats is not short;
    // only for a company that has any (a probe of the chat index), so the
    // rest keep their index-only counts.
    if filter.q.as_deref().is_none_or(|q| q.trim().is_empty())
        && crate::issues::chat::company_has_chats(store, company_id).await?
    {
        sql.push_str(" AND conversation_agent_id IS NULL");
    }
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
