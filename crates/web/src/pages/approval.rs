//! One approval at `/{prefix}/approvals/{approvalId}`: the request in words
//! (labels for its fields, names for the agents and tasks it mentions,
//! budgets in dollars, nothing empty), its status and decision, the tasks
//! linked to it, its comments, and the decision buttons while it waits.

use std::collections::HashMap;

use axum::extract::{Path, State};
use chrono::Utc;
use maud::{html, Markup};
use paperclip_core::approval::ApprovalType;
use paperclip_core::model::{Agent, Approval};
use paperclip_store::{approvals, org::agents, views::detail};
use serde_json::Value;

use super::by_id;
use crate::fmt::{money, pill, time};
use crate::{html, layout, markdown, not_found, store_failure, PageResult, Web};

/// Fields shown first, in this order; the rest follow.
const FIRST: &[&str] = &[
    "name",
    "title",
    "role",
    "reportsTo",
    "adapterType",
    "budgetMonthlyCents",
    "capabilities",
];
/// Fields that say nothing to a person.
const HIDDEN: &[&str] = &["icon", "agentId"];

#[paperclip_macros::handler]
pub async fn page(
    State(web): State<Web>,
    Path((prefix, id)): Path<(String, String)>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let store = &web.store;
    let cid = &ctx.company.id;
    let approval = match approvals::get(store, &id).await {
        Ok(a) if a.company_id == *cid => a,
        Ok(_) | Err(paperclip_store::Error::NotFound(_)) => {
            return Err(not_found(
                "No such approval",
                &format!("{} has no approval {id}.", ctx.company.name),
            ))
        }
        Err(e) => return Err(store_failure(e)),
    };
    let all = agents::list(store, cid).await.map_err(store_failure)?;
    let names = by_id(&all);
    let thread = approvals::comments(store, &approval.id)
        .await
        .map_err(store_failure)?;
    let linked = detail::approval_tasks(store, &approval.id)
        .await
        .map_err(store_failure)?;
    let payload = approval.redacted_payload();
    // Task ids the request mentions, named by identifier in one lookup.
    let mut strings = Vec::new();
    collect_strings(&payload, &mut strings, 0);
    let idents = detail::identifiers(store, cid, &strings)
        .await
        .map_err(store_failure)?;
    let now = Utc::now();
    let p = &ctx.company.issue_prefix;
    let names_of = Names {
        agents: &names,
        tasks: &idents,
        prefix: p,
    };
    let requester = approval
        .requested_by_agent_id
        .as_deref()
        .and_then(|a| names.get(a));
    let subject = payload
        .get("agentId")
        .and_then(Value::as_str)
        .and_then(|a| names.get(a));
    let open = approval.status.is_open();
    let body = html! {
        header.page-head {
            div.muted { a href={"/" (p) "/approvals"} { "Approvals" } " / " (kind_words(approval.kind)) }
            h1 { (headline(&approval, &payload)) " " (pill(&approval.status)) }
            p.muted { "Requested by "
                @match requester { Some(a) => a href={"/" (p) "/agents/" (a.url_key)} { (a.name) }, None => "the board" }
                " " (time(&approval.created_at, now)) }
        }
        section.card.approval data-approval-id=(approval.id) {
            h2 { "The request" }
            @if let Some(agent) = subject {
                p { "Agent: " a href={"/" (p) "/agents/" (agent.url_key)} { (agent.name) } " " (pill(&agent.status)) }
            }
            (fields(&payload, &names_of, 0))
        }
        section {
            h2 { "Decision" }
            @match &approval.decided_at {
                Some(at) => p data-decision=(approval.status) { (pill(&approval.status)) " by "
                    (if approval.decided_by_user_id.is_some() { "the board" } else { "an agent" }) " " (time(at, now))
                    @if let Some(note) = approval.decision_note.as_deref().filter(|n| !n.is_empty()) { ": " q { (note) } } },
                None => p.muted { @if open { "Waiting for the board." } @else { "No decision recorded." } },
            }
            @if open { (decide_form(&approval.id)) }
        }
        section {
            h2 { "Linked tasks" }
            @if linked.is_empty() { p.muted { "No tasks are linked to this approval." } }
            ul.tasklist { @for t in &linked { li { a href={"/" (p) "/tasks/" (t.identifier)} { span.ident { (t.identifier) } " " (t.title) } " " (pill(&t.status)) } } }
        }
        section.comments {
            h2 { "Comments" }
            @for c in &thread {
                article.comment data-comment-id=(c.id) id={"comment-" (c.id)} {
                    header { strong { @match c.author_agent_id.as_deref().and_then(|a| names.get(a)) { Some(a) => (a.name), None => "Board" } } " " (time(&c.created_at, now)) }
                    div.comment-body { (markdown::render(&c.body)) }
                }
            }
            @if thread.is_empty() { p.muted { "No comments yet." } }
        }
    };
    // Outside the live region, so typing survives live updates.
    let composer = html! {
        form.composer data-api-form="approval-comment" data-approval-id=(approval.id) {
            label { "Comment (Markdown)" textarea name="body" rows="3" required {} }
            button type="submit" { "Comment" }
        }
    };
    let title = format!("{} · approval", kind_words(approval.kind));
    html(layout::page_with(&ctx, "approvals", &title, body, composer))
}

/// Approve / request revision / reject with an optional note (app.js sends
/// the decision).
pub(crate) fn decide_form(approval_id: &str) -> Markup {
    html! {
        form.decide data-approval=(approval_id) {
            label { "Note" input name="decisionNote" placeholder="Optional note"; }
            div.actions {
                button.primary type="button" data-decide="approve" { "Approve" }
                button type="button" data-decide="request-revision" { "Request revision" }
                button.danger type="button" data-decide="reject" { "Reject" }
            }
        }
    }
}

pub(crate) fn kind_words(kind: ApprovalType) -> String {
    match kind {
        ApprovalType::HireAgent => "Hire an agent",
        ApprovalType::ApproveCeoStrategy => "CEO strategy",
        ApprovalType::BudgetOverrideRequired => "Budget override",
        ApprovalType::RequestBoardApproval => "Board approval",
    }
    .into()
}

pub(crate) fn headline(a: &Approval, payload: &Value) -> String {
    let text = |k: &str| {
        payload
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    match (a.kind, text("name"), text("title")) {
        (ApprovalType::HireAgent, Some(name), _) => format!("Hire {name}"),
        (_, _, Some(title)) => format!("{}: {title}", kind_words(a.kind)),
        _ => kind_words(a.kind),
    }
}

/// What names ids in a request.
pub(crate) struct Names<'a> {
    pub agents: &'a HashMap<&'a str, &'a Agent>,
    pub tasks: &'a HashMap<String, String>,
    pub prefix: &'a str,
}

pub(crate) fn collect_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>, depth: usize) {
    match v {
        Value::String(s) if s.len() <= 64 => out.push(s),
        Value::Object(map) if depth < 3 => map
            .values()
            .for_each(|x| collect_strings(x, out, depth + 1)),
        Value::Array(list) if depth < 3 => list
            .iter()
            .take(50)
            .for_each(|x| collect_strings(x, out, depth + 1)),
        _ => {}
    }
}

fn empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Object(m) => m.values().all(empty),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// The request's fields as a list of labels and values.
pub(crate) fn fields(v: &Value, names: &Names, depth: usize) -> Markup {
    let Value::Object(map) = v else {
        return html! { span.muted { "No details." } };
    };
    let mut keys: Vec<&String> = map
        .keys()
        .filter(|k| {
            let hidden = depth == 0 && HIDDEN.contains(&k.as_str());
            !hidden && !empty(&map[*k])
        })
        .collect();
    keys.sort_by_key(|k| FIRST.iter().position(|f| f == k).unwrap_or(FIRST.len()));
    if keys.is_empty() {
        return html! { span.muted { "No details." } };
    }
    html! {
        dl.kv { @for k in keys {
            dt { (label(k)) }
            dd data-field=(k) { (value(k, &map[k], names, depth)) }
        } }
    }
}

fn value(key: &str, v: &Value, names: &Names, depth: usize) -> Markup {
    let p = names.prefix;
    match v {
        Value::Number(n) if key.ends_with("Cents") => {
            html! { (money(n.as_i64().unwrap_or(0))) @if key.contains("Monthly") { " a month" } }
        }
        Value::Number(n) => html! { (n.to_string()) },
        Value::Bool(b) => html! { (if *b { "yes" } else { "no" }) },
        Value::String(s) => {
            if let Some(a) = names.agents.get(s.as_str()) {
                html! { a href={"/" (p) "/agents/" (a.url_key)} { (a.name) } }
            } else if let Some(ident) = names.tasks.get(s) {
                html! { a href={"/" (p) "/tasks/" (ident)} { span.ident { (ident) } } }
            } else if key == "role" || key == "status" {
                html! { (s.replace('_', " ")) }
            } else if s.contains('\n') {
                markdown::render(s)
            } else {
                html! { (s) }
            }
        }
        Value::Object(_) if depth < 2 => fields(v, names, depth + 1),
        Value::Array(list) if list.iter().all(|x| !x.is_object() && !x.is_array()) => html! {
            @for (i, x) in list.iter().enumerate() { @if i > 0 { ", " } (value(key, x, names, depth)) }
        },
        other => html! { code { (other.to_string()) } },
    }
}

/// A field's label: `reportsTo` reads "Reports to".
fn label(key: &str) -> String {
    match key {
        "adapterType" => "Adapter".into(),
        "adapterConfig" => "Adapter settings".into(),
        "runtimeConfig" => "Runtime settings".into(),
        "budgetMonthlyCents" => "Monthly budget".into(),
        "issueId" => "Task".into(),
        "agentId" => "Agent".into(),
        "projectId" => "Project".into(),
        "goalId" => "Goal".into(),
        "cwd" => "Working directory".into(),
        "timeoutSec" => "Time limit (seconds)".into(),
        "graceSec" => "Grace (seconds)".into(),
        "intervalSec" => "Every (seconds)".into(),
        k => {
            let k = k.strip_suffix("Id").unwrap_or(k);
            let mut words = String::new();
            for c in k.chars() {
                if c.is_ascii_uppercase() {
                    words.push(' ');
                }
                words.push(c.to_ascii_lowercase());
            }
            sentence(&words)
        }
    }
}

/// `hire_agent` / `some words` as "Hire agent" / "Some words".
fn sentence(s: &str) -> String {
    let s = s.replace('_', " ");
    let mut chars = s.trim().chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_read_as_words() {
        assert_eq!(label("reportsTo"), "Reports to");
        assert_eq!(label("budgetMonthlyCents"), "Monthly budget");
        assert_eq!(label("maxConcurrentRuns"), "Max concurrent runs");
        assert_eq!(label("ownerAgentId"), "Owner agent");
        assert_eq!(kind_words(ApprovalType::HireAgent), "Hire an agent");
        assert!(empty(&serde_json::json!({ "a": null, "b": "" })));
        assert!(!empty(&serde_json::json!({ "a": 0 })));
    }
}
