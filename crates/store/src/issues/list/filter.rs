//! What a task list asks for (filter, sort, position, page) and the pure
//! rules about it: cursors, whether a search ranks, which index it uses.

use crate::Result;
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::Issue;

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
pub(crate) fn searches_words(filter: &Filter) -> bool {
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
    pub(crate) fn key(self) -> Option<&'static str> {
        match self {
            Sort::Newest | Sort::Oldest | Sort::Relevance => None,
            Sort::Updated => Some("updated_at"),
            Sort::Priority => Some(PRIORITY_RANK),
        }
    }

    pub(crate) fn descending(self) -> bool {
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

/// `acm-12` as the identifier `ACM-12`: letters, a dash, digits, nothing else.
pub(crate) fn as_identifier(q: &str) -> Option<String> {
    let (prefix, number) = q.trim().split_once('-')?;
    let ok = !prefix.is_empty()
        && prefix.len() <= 10
        && prefix.chars().all(|c| c.is_ascii_alphabetic())
        && !number.is_empty()
        && number.len() <= 18
        && number.chars().all(|c| c.is_ascii_digit());
    ok.then(|| format!("{}-{number}", prefix.to_ascii_uppercase()))
}

/// The words of a search, lower-cased: letters and digits, everything else
/// separates (as both engines' tokenizers split `ACM-12` into `acm`, `12`).
/// Each word matches as a prefix; all must match. Bounded, so a pasted
/// essay cannot become a huge query.
pub(crate) fn search_words(q: &str) -> Vec<String> {
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
    pub(crate) fn counts(self) -> bool {
        matches!(self, Use::Count | Use::CountWholeWords)
    }
}
