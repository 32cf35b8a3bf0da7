//! Activity: the audit stream, newest first, filterable by entity, actor and
//! action. Each row is a sentence ("Coder moved ACM-3 Fix login to done")
//! naming and linking what it is about; repeats in a row (same actor, action
//! and item) collapse into one with a count, and so do creations in a row
//! (a script that made 230 tasks is one row). No action code is shown.

use paperclip_core::activity::Action;
use paperclip_core::words as say;
use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::response::Response;
use chrono::Utc;
use maud::{html, Markup};
use paperclip_core::model::{ActivityEntry, Agent};
use paperclip_store::{audit::activity, org::agents, thread::mentions, Store};
use serde::Deserialize;
use serde_json::Value;

use super::by_id;
use crate::fmt::{money, time};
use crate::{html, layout, store_failure, PageResult, Web};

#[derive(Deserialize, Default)]
pub struct Params {
    entity: Option<String>,
    actor: Option<String>,
    action: Option<String>,
    /// Older rows: those before this entry id.
    before: Option<String>,
}

const PAGE: i64 = 200;

/// Everything a feed's sentences name, loaded once for a page of rows.
pub struct Names<'a> {
    agents: HashMap<&'a str, &'a Agent>,
    items: mentions::Named,
    /// People of an authenticated instance, by user id.
    people: HashMap<String, String>,
    /// Routine id -> title, read only when a row is about a routine.
    routines: HashMap<String, String>,
}

/// The names `entries` mention: agents from `agents`, the rest in one
/// query per kind.
pub async fn names<'a>(
    store: &Store,
    company_id: &str,
    agents: &'a [Agent],
    entries: &[ActivityEntry],
) -> Result<Names<'a>, Response> {
    let mut wanted = mentions::Wanted::default();
    let mut people: Vec<String> = Vec::new();
    for e in entries {
        if e.actor_type == "user" {
            people.push(e.actor_id.clone());
        }
        if e.entity_type == "user" {
            people.push(e.entity_id.clone());
        }
        let id = e.entity_id.clone();
        match e.entity_type.as_str() {
            "issue" => wanted.issues.push(id),
            "approval" => wanted.approvals.push(id),
            "project" => wanted.projects.push(id),
            "goal" => wanted.goals.push(id),
            _ => {}
        }
        if let Some(issue) = detail(e, "issueId") {
            wanted.issues.push(issue.to_string());
        }
    }
    let items = mentions::load(store, company_id, &wanted)
        .await
        .map_err(store_failure)?;
    let routines = match entries.iter().any(|e| e.entity_type.starts_with("routine")) {
        true => paperclip_store::routines::list(store, company_id, None)
            .await
            .map_err(store_failure)?
            .into_iter()
            .map(|r| (r.id, r.title))
            .collect(),
        false => HashMap::new(),
    };
    people.sort();
    people.dedup();
    let people = paperclip_store::org::people::names(store, &people)
        .await
        .map_err(store_failure)?
        .into_iter()
        .collect();
    Ok(Names {
        agents: by_id(agents),
        items,
        people,
        routines,
    })
}

fn detail<'e>(e: &'e ActivityEntry, key: &str) -> Option<&'e str> {
    e.details.get(key).and_then(Value::as_str)
}

fn words(s: &str) -> String {
    s.replace(['_', '.'], " ")
}

fn task(id: &str, e: &ActivityEntry, names: &Names, p: &str) -> Markup {
    match names.items.issues.get(id) {
        Some((ident, title)) => html! {
            a.item href={"/" (p) "/tasks/" (ident)} { span.ident { (ident) } " " (title) }
        },
        // Deleted since: its identifier and title were kept in the row.
        None => match detail(e, "identifier") {
            Some(ident) => {
                html! { span.item { span.ident { (ident) } " " (detail(e, "title").unwrap_or("")) } }
            }
            None => html! { span.muted { "a task" } },
        },
    }
}

fn agent(id: Option<&str>, e: &ActivityEntry, names: &Names, p: &str) -> Markup {
    match id.and_then(|id| names.agents.get(id)) {
        Some(a) => html! { a.item href={"/" (p) "/agents/" (a.url_key)} { (a.name) } },
        None => match detail(e, "name") {
            Some(name) => html! { span.item { (name) } },
            None => html! { span.muted { "an agent" } },
        },
    }
}

/// "the hire of Coder", "the CEO strategy": what an approval asks for.
fn approval(id: &str, e: &ActivityEntry, names: &Names, p: &str) -> Markup {
    let (kind, name) = match names.items.approvals.get(id) {
        Some((kind, name)) => (kind.as_str(), name.as_deref()),
        None => (detail(e, "type").unwrap_or("request"), None),
    };
    let what = match (kind, name) {
        ("hire_agent", Some(name)) => format!("the hire of {name}"),
        ("hire_agent", None) => "a hire".to_string(),
        ("approve_ceo_strategy", _) => "the CEO strategy".to_string(),
        (other, _) => format!("the {} request", words(other)),
    };
    html! { a.item href={"/" (p) "/approvals"} { (what) } }
}

/// The item a row is about, named and linked.
fn item(e: &ActivityEntry, names: &Names, p: &str) -> Markup {
    let id = e.entity_id.as_str();
    match e.entity_type.as_str() {
        "issue" => task(id, e, names, p),
        "agent" => agent(Some(id), e, names, p),
        "approval" => approval(id, e, names, p),
        "project" => match names.items.projects.get(id) {
            Some(name) => html! { "project " a.item href={"/" (p) "/projects"} { (name) } },
            None => html! { "project " (detail(e, "name").unwrap_or("(deleted)")) },
        },
        "goal" => match names.items.goals.get(id) {
            Some(title) => html! { "goal " a.item href={"/" (p) "/goals"} { (title) } },
            None => html! { "goal " (detail(e, "title").unwrap_or("(deleted)")) },
        },
        "heartbeat_run" => html! {
            "a run of " (agent(detail(e, "agentId"), e, names, p))
            @if let Some(issue) = detail(e, "issueId") { " on " (task(issue, e, names, p)) }
        },
        "cost_event" => agent(detail(e, "agentId"), e, names, p),
        "company" => html! { "the company" },
        "label" => html! { "label " (detail(e, "name").unwrap_or("")) },
        "user" => match names.people.get(id) {
            Some(name) => html! { (name) },
            None => html! { "a person" },
        },
        "invite" => html! { "an invite (" (detail(e, "role").unwrap_or("")) ")" },
        "secret" => html! { "secret " (detail(e, "name").unwrap_or("")) },
        "routine" | "routine_run" | "routine_trigger" => routine(e, names, p),
        other => html! { span.muted { (words(other)) } },
    }
}

/// "routine Daily digest", linked; the routine of a run or trigger row is in
/// its details.
fn routine(e: &ActivityEntry, names: &Names, p: &str) -> Markup {
    let id = match e.entity_type.as_str() {
        "routine" => Some(e.entity_id.as_str()),
        _ => detail(e, "routineId"),
    };
    match id.and_then(|id| names.routines.get(id).map(|t| (id, t))) {
        Some((id, title)) => {
            html! { "routine " a.item href={"/" (p) "/routines/" (id)} { (title) } }
        }
        None => html! { "routine " (detail(e, "title").unwrap_or("(deleted)")) },
    }
}

/// What changed, in words: "to done", "(title, priority)".
fn changes(e: &ActivityEntry) -> Option<String> {
    let changes = e.details.get("changes")?.as_object()?;
    if let Some(status) = changes.get("status") {
        let to = status
            .get("to")
            .and_then(Value::as_str)
            .or(status.as_str())?;
        return Some(format!("to {}", words(to)));
    }
    let keys: Vec<String> = changes.keys().map(|k| camel_words(k)).collect();
    (!keys.is_empty()).then(|| format!("({})", keys.join(", ")))
}

/// `assigneeAgentId` as "assignee agent".
fn camel_words(k: &str) -> String {
    let k = k.strip_suffix("Ids").or(k.strip_suffix("Id")).unwrap_or(k);
    let mut out = String::new();
    for c in k.chars() {
        if c.is_ascii_uppercase() {
            out.push(' ');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// "Coder moved ACM-3 Fix login to done": the actor, what happened, and a
/// link to the item, named (identifier and title, agent name, what an
/// approval requests), never by id.
pub fn describe(e: &ActivityEntry, names: &Names, p: &str) -> Markup {
    let actor = match e.actor_type.as_str() {
        "agent" => names
            .agents
            .get(e.actor_id.as_str())
            .map(|a| a.name.clone())
            .unwrap_or_else(|| "An agent".into()),
        "system" => "Paperclip".into(),
        // A person of an authenticated instance by name; the local board is "Board".
        _ => names
            .people
            .get(&e.actor_id)
            .cloned()
            .unwrap_or_else(|| "Board".into()),
    };
    let it = item(e, names, p);
    let on_task = |word: &'static str| {
        detail(e, "issueId").map(|issue| html! { " " (word) " " (task(issue, e, names, p)) })
    };
    let (verb, after): (String, Option<Markup>) = match Action::parse(&e.action) {
        Some(Action::IssueCreated) => ("created".into(), None),
        Some(Action::IssueUpdated) => match changes(e) {
            Some(c) if c.starts_with("to ") => ("moved".into(), Some(html! { " " (c) })),
            Some(c) => ("edited".into(), Some(html! { " " span.muted { (c) } })),
            None => ("edited".into(), None),
        },
        Some(Action::IssueCommentAdded) => ("commented on".into(), None),
        Some(Action::IssueCommentDeleted) => ("deleted a comment on".into(), None),
        Some(Action::IssueCheckedOut) => ("started work on".into(), None),
        Some(Action::IssueReleased) => ("released".into(), None),
        Some(Action::IssueAdminForceRelease) => ("force-released".into(), None),
        Some(Action::IssueDocumentCreated) => ("added a document to".into(), None),
        Some(Action::IssueDocumentUpdated) => ("revised a document of".into(), None),
        Some(Action::IssueDocumentDeleted) => ("deleted a document of".into(), None),
        Some(Action::IssueWakeLoopHeld) => ("held repeated wakes on".into(), None),
        Some(Action::IssueWakeLoopReleased) => ("released held wakes on".into(), None),
        Some(Action::AgentCreated) => ("added".into(), None),
        Some(Action::AgentUpdated) => (
            "updated".into(),
            changes(e).map(|c| html! { " " span.muted { (c) } }),
        ),
        Some(Action::AgentDeleted) => ("removed".into(), None),
        Some(Action::AgentKeyCreated) => ("created an API key for".into(), None),
        Some(Action::AgentKeyRevoked) => ("revoked an API key of".into(), None),
        Some(Action::AgentUsageLimited) => ("noted a usage limit of".into(), None),
        Some(Action::AgentConfigRolledBack) => ("rolled back the configuration of".into(), None),
        Some(Action::AgentSessionReset) => ("reset the session of".into(), None),
        Some(Action::HeartbeatQueued) => ("woke".into(), on_task("for")),
        Some(Action::HeartbeatSkipped) => ("skipped a wake of".into(), on_task("for")),
        Some(Action::HeartbeatCoalesced) => ("merged a wake of".into(), on_task("for")),
        Some(Action::HeartbeatFinished) => {
            let status = detail(e, "status").unwrap_or("finished");
            ("finished".into(), Some(html! { " — " (words(status)) }))
        }
        Some(Action::ApprovalCreated) => ("requested".into(), None),
        Some(Action::ApprovalRevisionRequested) => ("asked for a revision of".into(), None),
        Some(Action::ApprovalCommentAdded) => ("commented on".into(), None),
        Some(Action::ApprovalIssueLinked) => ("linked".into(), on_task("to")),
        Some(Action::ApprovalIssueUnlinked) => ("unlinked".into(), on_task("for")),
        Some(Action::CostReported) => {
            let cents = e
                .details
                .get("costCents")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            (format!("reported {} spent by", money(cents)), None)
        }
        Some(Action::BudgetSoftAlert) => {
            ("warned that the budget is nearly spent for".into(), None)
        }
        Some(Action::BudgetHardStop) => ("stopped work: the budget is spent for".into(), None),
        Some(Action::BudgetIncidentResolved) => ("resolved a budget stop of".into(), None),
        Some(Action::BudgetMonthRollover) => ("started a new budget month for".into(), None),
        Some(
            Action::CompanyBudgetUpdated
            | Action::AgentBudgetUpdated
            | Action::ProjectBudgetUpdated,
        ) => {
            let cents = e
                .details
                .get("budgetMonthlyCents")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            (
                "set the monthly budget of".into(),
                Some(html! { " to " (money(cents)) }),
            )
        }
        Some(Action::MemberJoined) => {
            let role = detail(e, "role").unwrap_or("member");
            return html! { span.actor { (actor) } " " span.action { "joined the company as " (role) } };
        }
        Some(Action::MemberRoleChanged) => (
            "changed the role of".into(),
            detail(e, "to").map(|to| html! { " to " (to) }),
        ),
        Some(Action::MemberSuspended) => ("suspended".into(), None),
        Some(Action::MemberReactivated) => ("reactivated".into(), None),
        Some(Action::MemberRemoved) => ("removed".into(), Some(html! { " from the company" })),
        Some(Action::InviteCreated) => ("created".into(), None),
        Some(Action::InviteRevoked) => ("revoked".into(), None),
        Some(Action::BoardKeyCreated) => ("created a board API key for".into(), None),
        Some(Action::BoardKeyRevoked) => ("revoked a board API key of".into(), None),
        Some(Action::CompanyUpdated | Action::CompanyArchived) => {
            ("changed the settings of".into(), None)
        }
        Some(Action::RoutineTriggerCreated) => match detail(e, "kind") {
            Some(kind) => (format!("added a {} trigger to", words(kind)), None),
            None => ("added a trigger to".into(), None),
        },
        Some(a) => (say::action_verb(a).into(), None),
        // Actions the board posted itself: the action's last word says it.
        None => (say::free_action(&e.action), None),
    };
    html! {
        span.actor { (actor) } " " span.action { (verb) } " " (it)
        @if let Some(after) = after { (after) }
    }
}

/// Runs of identical rows (same actor, action and item), and of creations
/// (same actor, action and kind: many new tasks), newest first, each with
/// how many it stands for.
pub fn collapse(entries: &[ActivityEntry]) -> Vec<(&ActivityEntry, usize)> {
    let mut out: Vec<(&ActivityEntry, usize)> = Vec::new();
    let same = |a: &ActivityEntry, b: &ActivityEntry| {
        a.actor_type == b.actor_type
            && a.actor_id == b.actor_id
            && a.action == b.action
            && a.entity_type == b.entity_type
            && (a.entity_id == b.entity_id || creation(a))
            // "moved to todo" and "moved to blocked" are two rows.
            && a.details.get("changes") == b.details.get("changes")
    };
    for e in entries {
        match out.last_mut() {
            Some((first, n)) if same(first, e) => *n += 1,
            _ => out.push((e, 1)),
        }
    }
    out
}

fn creation(e: &ActivityEntry) -> bool {
    e.action.ends_with(".created")
}

/// One feed row's sentence with its repeat count: "×5" for one item, "and
/// 229 more tasks" for a run of creations (the newest is the one named).
pub fn row(e: &ActivityEntry, n: usize, names: &Names, p: &str) -> Markup {
    let noun = say::entity_noun(&e.entity_type);
    html! {
        (describe(e, names, p))
        @if n > 1 && creation(e) {
            " " span.repeat.muted data-repeat=(n) { "and " (n - 1) " more " (noun) @if n > 2 { "s" } }
        } @else if n > 1 {
            " " span.repeat.muted title={(n) " times in a row"} data-repeat=(n) { "×" (n) }
        }
    }
}

#[paperclip_macros::handler]
pub async fn page(
    State(web): State<Web>,
    Path(prefix): Path<String>,
    Query(q): Query<Params>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let cid = &ctx.company.id;
    let blank = |s: &Option<String>| s.clone().filter(|v| !v.is_empty());
    let filter = activity::Filter {
        entity_type: blank(&q.entity),
        actor_type: blank(&q.actor),
        before: blank(&q.before),
        limit: PAGE,
        ..activity::Filter::default()
    };
    let mut entries = activity::list(&web.store, cid, &filter)
        .await
        .map_err(store_failure)?;
    let older = (entries.len() as i64 == PAGE)
        .then(|| entries.last().map(|e| e.id.clone()))
        .flatten();
    if let Some(action) = blank(&q.action) {
        entries.retain(|e| e.action.contains(&action));
    }
    let agents = agents::list(&web.store, cid).await.map_err(store_failure)?;
    let names = names(&web.store, cid, &agents, &entries).await?;
    let rows = collapse(&entries);
    let now = Utc::now();
    let p = &ctx.company.issue_prefix;
    let sel = |v: &Option<String>, x: &str| v.as_deref() == Some(x);
    let query: String = [
        ("entity", &q.entity),
        ("actor", &q.actor),
        ("action", &q.action),
    ]
    .iter()
    .filter_map(|(k, v)| blank(v).map(|v| format!("{k}={}", super::tasks::urlencode(&v))))
    .collect::<Vec<_>>()
    .join("&");
    let body = html! {
        header.page-head { h1 { "Activity" } }
        form.filters method="get" {
            label { "Item" select name="entity" {
                option value="" { "All items" }
                @for k in ["issue", "agent", "approval", "company", "project", "goal", "heartbeat_run", "budget"] {
                    option value=(k) selected[sel(&q.entity, k)] { (if k == "issue" { "task".to_string() } else { words(k) }) }
                }
            } }
            label { "Actor" select name="actor" {
                option value="" { "Anyone" }
                @for (k, label) in [("user", "board"), ("agent", "agents"), ("system", "Paperclip")] {
                    option value=(k) selected[sel(&q.actor, k)] { (label) }
                }
            } }
            label { "Action contains" input name="action" placeholder="e.g. comment" value=[q.action.as_deref()]; }
            button type="submit" { "Filter" }
        }
        table.data.activity {
            thead { tr { th { "What happened" } th { "When" } } }
            tbody {
                @for (e, n) in &rows {
                    tr data-activity=(e.action) { td { (row(e, *n, &names, p)) } td { (time(&e.created_at, now)) } }
                }
                @if rows.is_empty() { tr { td colspan="2" .empty { "Nothing matches." } } }
            }
        }
        @if let Some(before) = older {
            nav.pager aria-label="Pages" {
                a data-next-page href={"/" (p) "/activity?" (query) "&before=" (before)} { "Older activity →" }
            }
        }
    };
    html(layout::page(&ctx, "activity", "Activity", body))
}
