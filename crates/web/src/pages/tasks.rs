//! Tasks: a filterable list paged newest first with a count, and a board
//! with a column per status (each its own newest cards and count; see
//! `board.rs`). Both select tasks for bulk changes; "Me" in the assignee
//! filter is the person looking (the local board's own tasks).

use axum::extract::{Path, Query, State};
use maud::{html, Markup};
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::{Issue, Project};
use paperclip_store::{issues, issues::labels, org::agents, org::members, org::projects};
use serde::Deserialize;

use super::board::{self, Column, Group};
use super::board_parts::{self as parts, Live, Names};
use crate::fmt::pill;
use crate::{html, layout, store_failure, PageResult, Web};

#[derive(Deserialize, Default)]
pub struct Params {
    status: Option<String>,
    assignee: Option<String>,
    project: Option<String>,
    label: Option<String>,
    q: Option<String>,
    view: Option<String>,
    /// The board's lanes: `assignee` or `project`.
    group: Option<String>,
    /// `newest` (default), `oldest`, `identifier` (oldest), `updated`,
    /// `priority`, `relevance` (a search's default: title matches first).
    sort: Option<String>,
    /// The list's next page: tasks after this place in the sort order.
    cursor: Option<String>,
    /// The list's previous page: tasks before this place.
    before: Option<String>,
}

/// Rows of a list page, cards of a board column.
const LIST_PAGE: i64 = 200;
const COLUMN_CARDS: i64 = 50;
/// Counts stop here (a filter counts its index entries, at most this many).
const COUNT_CAP: i64 = 10_000;
/// A search's count stops sooner: each match is looked up to be counted
/// (a common word among a million tasks: ~15 ms for 10,000), and "1,000+"
/// says as much to someone searching.
const SEARCH_COUNT_CAP: i64 = 1_000;

/// The board's columns, in working order.
pub const COLUMNS: [IssueStatus; 7] = [
    IssueStatus::Backlog,
    IssueStatus::Todo,
    IssueStatus::InProgress,
    IssueStatus::InReview,
    IssueStatus::Blocked,
    IssueStatus::Done,
    IssueStatus::Cancelled,
];

/// Statuses a task may move to from `status` (the transition table).
pub fn allowed_moves(from: IssueStatus) -> Vec<&'static str> {
    COLUMNS
        .into_iter()
        .filter(|to| *to != from && from.can_transition_to(*to))
        .map(IssueStatus::as_str)
        .collect()
}

#[paperclip_macros::handler]
pub async fn list(
    State(web): State<Web>,
    Path(prefix): Path<String>,
    Query(q): Query<Params>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let store = &web.store;
    let cid = &ctx.company.id;
    let blank = |s: &Option<String>| s.clone().filter(|v| !v.is_empty());
    let board = q.view.as_deref() == Some("board");
    let group = blank(&q.group).and_then(|g| Group::parse(&g));
    let viewer = crate::viewer::current();
    let me = viewer.user_id().to_string();
    // The assignee filter: "me", a person (`user:<id>`) or an agent's id.
    let (assignee_agent_id, assignee_user_id) = match blank(&q.assignee) {
        Some(a) if a == "me" => (None, Some(me.clone())),
        Some(a) => match a.strip_prefix("user:") {
            Some(user) => (None, Some(user.to_string())),
            None => (Some(a), None),
        },
        None => (None, None),
    };
    // A search lists its best matches first unless another order is chosen.
    let searching = blank(&q.q).is_some();
    let default_sort = if searching {
        issues::Sort::Relevance
    } else {
        issues::Sort::default()
    };
    let sort = blank(&q.sort)
        .and_then(|s| issues::Sort::parse(&s))
        .unwrap_or(default_sort);
    let at = match (blank(&q.before), blank(&q.cursor)) {
        (Some(b), _) => issues::Position::parse(sort, &b).map(|p| (p, issues::Direction::Before)),
        (None, Some(c)) => issues::Position::parse(sort, &c).map(|p| (p, issues::Direction::After)),
        _ => None,
    };
    let filter = issues::Filter {
        statuses: blank(&q.status)
            .and_then(|s| IssueStatus::parse(&s))
            .into_iter()
            .collect(),
        assignee_agent_id,
        assignee_user_id,
        project_id: blank(&q.project),
        label_id: blank(&q.label),
        q: blank(&q.q),
        limit: LIST_PAGE,
        ..issues::Filter::default()
    };
    let cap = if filter.q.is_some() {
        SEARCH_COUNT_CAP
    } else {
        COUNT_CAP
    };
    let (page, columns, total) = if board {
        // Each column's cards and count at once, each on a connection of its
        // own: fourteen small reads one after the other were most of the
        // board's time.
        let shown = COLUMNS
            .into_iter()
            .filter(|status| filter.statuses.is_empty() || filter.statuses.contains(status));
        let columns = futures::future::try_join_all(shown.map(|status| {
            let column = issues::Filter {
                statuses: vec![status],
                cursor: None,
                limit: COLUMN_CARDS,
                ..filter.clone()
            };
            async move {
                let (cards, total) = tokio::try_join!(
                    issues::list(store, cid, &column),
                    issues::count(store, cid, &column, cap),
                )?;
                Ok::<_, paperclip_store::Error>(Column {
                    status,
                    cards: cards.issues,
                    total,
                })
            }
        }))
        .await
        .map_err(store_failure)?;
        (None, columns, None)
    } else {
        // Independent reads, each on a connection of its own: a search's
        // page and its count of up to 1,000 matches are ~15 ms each at a
        // million tasks, and one after the other made the page ~40 ms.
        let (page, total) = tokio::try_join!(
            issues::list_sorted(store, cid, &filter, sort, at.as_ref().map(|(p, d)| (p, *d))),
            issues::count(store, cid, &filter, cap),
        )
        .map_err(store_failure)?;
        (Some(page), Vec::new(), Some(total))
    };
    let (agents, projects, labels, members, live) = tokio::try_join!(
        agents::list(store, cid),
        projects::list(store, cid),
        labels::list(store, cid),
        members::list(store, cid),
        parts::live_runs(&web, cid),
    )
    .map_err(store_failure)?;
    let live = parts::named(live, &agents, &ctx.company.issue_prefix);
    let people: Vec<(String, String)> = members
        .into_iter()
        .filter(|m| m.status == paperclip_core::team::MembershipStatus::Active)
        .map(|m| (m.user_id, m.user_name))
        .collect();
    let names = Names {
        agents: super::by_id(&agents),
        people: &people,
        me: &me,
    };
    let p = &ctx.company.issue_prefix;
    let sel = |v: &Option<String>, x: &str| v.as_deref() == Some(x);
    let query_without_view = {
        let mut parts = Vec::new();
        for (k, v) in [
            ("status", &q.status),
            ("assignee", &q.assignee),
            ("project", &q.project),
            ("label", &q.label),
            ("q", &q.q),
            ("group", &q.group),
        ] {
            if let Some(v) = blank(v) {
                parts.push(format!("{k}={}", urlencode(&v)));
            }
        }
        if sort != default_sort {
            parts.push(format!("sort={}", sort.as_str()));
        }
        parts.join("&")
    };
    let query_without_status = query_without_view
        .split('&')
        .filter(|part| !part.starts_with("status="))
        .collect::<Vec<_>>()
        .join("&");
    let body = html! {
        header.page-head {
            h1 { "Tasks" }
            nav.tabs {
                a href={"/" (p) "/tasks?" (query_without_view)} class=@if !board { "active" } { "List" }
                a href={"/" (p) "/tasks?view=board&" (query_without_view)} class=@if board { "active" } { "Board" }
            }
        }
        form.filters method="get" data-autosubmit {
            @if board { input type="hidden" name="view" value="board"; }
            select name="status" aria-label="Status" {
                option value="" { "Any status" }
                @for s in COLUMNS { option value=(s.as_str()) selected[sel(&q.status, s.as_str())] { (s.as_str().replace('_', " ")) } }
            }
            select name="assignee" aria-label="Assignee" {
                option value="" { "Anyone" }
                option value="me" selected[sel(&q.assignee, "me")] { @if me == paperclip_core::actor::LOCAL_BOARD_USER_ID { "Me (board)" } @else { "Me" } }
                @for (uid, name) in people.iter().filter(|(u, _)| *u != me) {
                    @let v = format!("user:{uid}");
                    option value=(v) selected[sel(&q.assignee, &v)] { (name) }
                }
                @for a in &agents { option value=(a.id) selected[sel(&q.assignee, &a.id)] { (a.name) } }
            }
            select name="project" aria-label="Project" {
                option value="" { "Any project" }
                @for pr in &projects { option value=(pr.id) selected[sel(&q.project, &pr.id)] { (pr.name) } }
            }
            select name="label" aria-label="Label" {
                option value="" { "Any label" }
                @for l in &labels { option value=(l.id) selected[sel(&q.label, &l.id)] { (l.name) } }
            }
            input type="search" name="q" placeholder="Text" value=[q.q.as_deref()] aria-label="Text";
            @if board {
                select name="group" aria-label="Lanes" {
                    option value="" { "No lanes" }
                    option value="assignee" selected[group == Some(Group::Assignee)] { "Lanes by assignee" }
                    option value="project" selected[group == Some(Group::Project)] { "Lanes by project" }
                }
            }
            @if !board {
                select name="sort" aria-label="Sort" {
                    @if searching { option value=(issues::Sort::Relevance.as_str()) selected[sort == issues::Sort::Relevance] { (sort_label(issues::Sort::Relevance)) } }
                    @for s in issues::Sort::ALL { option value=(s.as_str()) selected[s == sort] { (sort_label(s)) } }
                }
            }
            button type="submit" { "Filter" }
        }
        @if let (Some(page), Some(total)) = (&page, total) {
            p.count.muted data-task-count=(total.0) { (count_text(total)) " " @if total == (1, false) { "task" } @else { "tasks" } }
            (list_view(&page.issues, &names, &projects, &live, p))
            (pager(page, sort, at.as_ref().map(|(_, d)| *d), &format!("/{p}/tasks?{query_without_view}")))
        } @else {
            (board::view(&columns, group, &board::Ctx {
                prefix: p,
                query: &query_without_status,
                names: &names,
                projects: &projects,
                live: &live,
            }))
        }
    };
    // The board may use the whole width (board.css); the bulk bar sits
    // outside the live region, so a choice half made survives a re-render.
    let body = html! { div.tasks-page.board-page[board] { (body) } };
    let bar = parts::bulk_bar(&agents, &people, &me, &labels);
    html(layout::page_with(&ctx, "tasks", "Tasks", body, bar))
}

fn sort_label(sort: issues::Sort) -> &'static str {
    match sort {
        issues::Sort::Newest => "Newest first",
        issues::Sort::Oldest => "Oldest first (by identifier)",
        issues::Sort::Updated => "Recently updated",
        issues::Sort::Priority => "Priority, highest first",
        issues::Sort::Relevance => "Best match (title first)",
    }
}

/// Previous / next links of a list page read `dir` of a cursor (from the
/// start without one), each carrying the filters and sort in `base`.
fn pager(
    page: &issues::SortedPage,
    sort: issues::Sort,
    dir: Option<issues::Direction>,
    base: &str,
) -> Markup {
    use issues::Direction::{After, Before};
    let link =
        |name: &str, at: &issues::Position| format!("{base}&{name}={}", urlencode(&at.to_string()));
    // Read backwards, `more` means more before; forwards, more after. The
    // other side has tasks whenever the page was reached by a cursor.
    let (prev, next) = match dir {
        None => (None, page.more.then_some(()).and(page.last.as_ref())),
        Some(After) => (
            page.first.as_ref(),
            page.more.then_some(()).and(page.last.as_ref()),
        ),
        Some(Before) => (
            page.more.then_some(()).and(page.first.as_ref()),
            page.last.as_ref(),
        ),
    };
    html! {
        nav.pager aria-label="Pages" {
            @if dir.is_some() { a data-first-page href=(base) { "⇤ " (sort_label(sort)) } }
            @if let Some(at) = prev { a data-prev-page href=(link("before", at)) rel="prev" { "← Previous" } }
            @if let Some(at) = next { a data-next-page href=(link("cursor", at)) rel="next" { "Next →" } }
        }
    }
}

fn list_view(
    issues: &[Issue],
    names: &Names,
    projects: &[Project],
    live: &std::collections::HashMap<String, Live>,
    p: &str,
) -> Markup {
    html! {
        table.data.tasks data-task-list {
            thead { tr {
                th.select-col { input type="checkbox" data-select-all aria-label="Select every task on this page"; }
                th { "Task" } th { "Status" } th { "Priority" } th { "Assignee" } th { "Project" }
            } }
            tbody {
                @for i in issues {
                    tr data-issue-id=(i.id) data-identifier=(i.identifier) data-status=(i.status) data-label-ids=(i.label_ids.join(" ")) {
                        td.select-col { (parts::select_box(i)) }
                        td {
                            a href={"/" (p) "/tasks/" (i.identifier)} { span.ident { (i.identifier) } " " (i.title) }
                            @if !i.labels.is_empty() || !parts::open_blockers(i).is_empty() || live.contains_key(&i.id) {
                                div.row-extras { (parts::blocked_mark(i)) (parts::labels(&i.labels)) (parts::running(live.get(&i.id))) }
                            }
                        }
                        td { (pill(&i.status)) }
                        td { (parts::priority(i.priority)) }
                        td { (parts::assignee_chip(i, names)) }
                        td { @match i.project_id.as_deref().and_then(|id| projects.iter().find(|x| x.id == id)) {
                            Some(x) => (x.name), None => span.muted { "—" } } }
                    }
                }
                @if issues.is_empty() { tr { td colspan="6" .empty { "No tasks match." } } }
            }
        }
    }
}

pub(crate) fn count_text((n, more): (i64, bool)) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if more {
        out.push('+');
    }
    out
}

pub fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_follow_the_transition_table() {
        assert_eq!(allowed_moves(IssueStatus::Backlog), ["todo", "cancelled"]);
        // Closed work only goes back to work (reopening).
        assert_eq!(
            allowed_moves(IssueStatus::Done),
            ["backlog", "todo", "in_progress"]
        );
        assert!(allowed_moves(IssueStatus::InProgress).contains(&"done"));
    }

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(urlencode("a b&c"), "a%20b%26c");
    }
}
