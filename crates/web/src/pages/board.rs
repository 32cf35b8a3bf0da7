//! The task board: a column per status that fits the page's width (Done
//! and Cancelled fold to a labelled strip), rich cards, and lanes by
//! assignee or project. Its script (`board.js`) drags and moves cards,
//! folds columns and acts on the selected cards in bulk.

use std::collections::HashMap;

use maud::{html, Markup};
use paperclip_core::issue::IssueStatus;
use paperclip_core::model::{Issue, Project};

use super::board_parts::{self as parts, Live, Names};
use super::tasks::{allowed_moves, count_text};

/// One board column: its newest cards and how many tasks it has.
pub(crate) struct Column {
    pub status: IssueStatus,
    pub cards: Vec<Issue>,
    pub total: (i64, bool),
}

/// How the board is split into lanes (`?group=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    Assignee,
    Project,
}

impl Group {
    pub fn parse(s: &str) -> Option<Group> {
        match s {
            "assignee" => Some(Group::Assignee),
            "project" => Some(Group::Project),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Group::Assignee => "assignee",
            Group::Project => "project",
        }
    }
}

/// Columns folded to a strip until the person opens them (the script
/// remembers each choice in the browser).
fn folded_by_default(status: IssueStatus) -> bool {
    status == IssueStatus::Cancelled
}

fn collapsible(status: IssueStatus) -> bool {
    matches!(status, IssueStatus::Done | IssueStatus::Cancelled)
}

/// What a board needs besides its columns.
pub(crate) struct Ctx<'a> {
    pub prefix: &'a str,
    /// The filters of the page, without the status (for "All N" links).
    pub query: &'a str,
    pub names: &'a Names<'a>,
    pub projects: &'a [Project],
    pub live: &'a HashMap<String, Live>,
}

pub(crate) fn view(columns: &[Column], group: Option<Group>, cx: &Ctx) -> Markup {
    let body = match group {
        None => html! {
            div.board-row {
                @for column in columns {
                    section.column.collapsed[folded(column.status)] data-column=(column.status.as_str())
                        data-column-total=(column.total.0) {
                        (head(column, cx))
                        div.cards {
                            @for i in &column.cards { (card(i, cx)) }
                            @if column.cards.is_empty() { p.column-empty { "No tasks" } }
                        }
                    }
                }
            }
        },
        Some(group) => lanes(columns, group, cx),
    };
    html! {
        div.board data-board data-group=[group.map(Group::as_str)] {
            (body)
        }
        p.hint.muted { "Drag a card to another column, or focus it and press ← / → to move it to the previous or next allowed status. Tick cards (Shift for a range) to change several at once." }
    }
}

fn folded(status: IssueStatus) -> bool {
    folded_by_default(status)
}

fn head(column: &Column, cx: &Ctx) -> Markup {
    let status = column.status;
    let name = parts::status_label(status);
    html! {
        div.column-head data-head=(status.as_str()) {
            h3 {
                span.col-name { (name) }
                " "
                span.col-count { (count_text(column.total)) }
            }
            @if collapsible(status) {
                button.col-toggle type="button" data-collapse=(status.as_str()) aria-expanded=(if folded(status) { "false" } else { "true" })
                    title={"Fold or unfold " (name)} aria-label={"Fold " (name)} { span aria-hidden="true" { "⇆" } }
            }
            @if column.total.0 > column.cards.len() as i64 {
                a.more href={"/" (cx.prefix) "/tasks?" (cx.query) "&status=" (status.as_str())} {
                    "All " (count_text(column.total)) " in the list →"
                }
            }
        }
    }
}

fn card(i: &Issue, cx: &Ctx) -> Markup {
    let live = cx.live.get(&i.id);
    html! {
        article.task-card.running[live.is_some()] tabindex="0" draggable="true" data-issue-id=(i.id)
            data-identifier=(i.identifier) data-status=(i.status) data-allowed=(allowed_moves(i.status).join(" "))
            data-label-ids=(i.label_ids.join(" ")) {
            div.card-top {
                (parts::select_box(i))
                a.card-ident href={"/" (cx.prefix) "/tasks/" (i.identifier)} tabindex="-1" { span.ident { (i.identifier) } }
                (parts::priority(i.priority))
            }
            a.card-title href={"/" (cx.prefix) "/tasks/" (i.identifier)} { (i.title) }
            (parts::blocked_mark(i))
            (parts::labels(&i.labels))
            (parts::running(live))
            div.card-foot { (parts::assignee_chip(i, cx.names)) }
        }
    }
}

/// A lane: its key (`data-lane`), its title, and its cards by column.
struct Lane {
    key: String,
    title: String,
    cards: Vec<Vec<usize>>,
}

/// Lanes of the cards on the board (each column's newest), in the order
/// of the company's agents, then its people, then the unassigned; or of
/// its projects, then the tasks in none.
fn lanes(columns: &[Column], group: Group, cx: &Ctx) -> Markup {
    let lane_of = |i: &Issue| -> (String, String, usize) {
        match group {
            Group::Assignee => match (&i.assignee_agent_id, &i.assignee_user_id) {
                (Some(a), _) => {
                    let at = cx.names.agents.get(a.as_str()).map(|x| x.name.clone());
                    (a.clone(), at.unwrap_or_else(|| "An agent".into()), 1)
                }
                (None, Some(u)) => (
                    format!("user:{u}"),
                    parts::person_name(u, cx.names),
                    if *u == cx.names.me { 0 } else { 2 },
                ),
                _ => ("none".into(), "Unassigned".into(), 3),
            },
            Group::Project => match i.project_id.as_deref() {
                Some(p) => {
                    let name = cx
                        .projects
                        .iter()
                        .find(|x| x.id == p)
                        .map(|x| x.name.clone());
                    (p.to_string(), name.unwrap_or_else(|| "A project".into()), 1)
                }
                None => ("none".into(), "No project".into(), 3),
            },
        }
    };
    let mut lanes: Vec<(usize, Lane)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for (c, column) in columns.iter().enumerate() {
        for (n, i) in column.cards.iter().enumerate() {
            let (key, title, rank) = lane_of(i);
            let slot = *at.entry(key.clone()).or_insert_with(|| {
                lanes.push((
                    rank,
                    Lane {
                        key,
                        title,
                        cards: vec![Vec::new(); columns.len()],
                    },
                ));
                lanes.len() - 1
            });
            lanes[slot].1.cards[c].push(n);
        }
    }
    // Me first, then by kind and name; stable within a name.
    lanes.sort_by(|(ra, a), (rb, b)| {
        ra.cmp(rb)
            .then_with(|| a.title.to_lowercase().cmp(&b.title.to_lowercase()))
    });
    html! {
        div.board-row.board-heads {
            @for column in columns {
                div.column.column-head-cell.collapsed[folded(column.status)] data-head-cell=(column.status.as_str()) { (head(column, cx)) }
            }
        }
        @for (_, lane) in &lanes {
            @let count: usize = lane.cards.iter().map(Vec::len).sum();
            section.lane data-lane=(lane.key) {
                h3.lane-title { (lane.title) " " span.col-count { (count) } }
                div.board-row {
                    @for (c, column) in columns.iter().enumerate() {
                        section.column.collapsed[folded(column.status)] data-column=(column.status.as_str()) {
                            div.cards { @for n in &lane.cards[c] { (card(&column.cards[*n], cx)) } }
                        }
                    }
                }
            }
        }
        @if lanes.is_empty() { p.empty { "No tasks match." } }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_named_and_unknown_ones_are_none() {
        for g in [Group::Assignee, Group::Project] {
            assert_eq!(Group::parse(g.as_str()), Some(g));
        }
        assert_eq!(Group::parse("status"), None);
    }

    #[test]
    fn only_closed_columns_fold() {
        let folding: Vec<_> = super::super::tasks::COLUMNS
            .into_iter()
            .filter(|s| collapsible(*s))
            .collect();
        assert_eq!(folding, [IssueStatus::Done, IssueStatus::Cancelled]);
        assert!(folded_by_default(IssueStatus::Cancelled) && !folded_by_default(IssueStatus::Done));
    }
}
