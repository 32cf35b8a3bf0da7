//! Interaction cards in a task's thread: what an agent asked the board
//! (questions, a confirmation, a plan to approve, suggested tasks, items to
//! judge) with the form to answer it, or, once resolved, the answer. The
//! forms post to upstream's routes through `assets/cards.js`.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use maud::{html, Markup};
use paperclip_core::interaction::{Interaction, InteractionKind as K, InteractionStatus as S};
use paperclip_core::model::Agent;
use serde_json::Value;

use crate::fmt::{pill, time};
use crate::markdown;

/// What a person calls the card.
pub fn kind_label(card: &Interaction) -> &'static str {
    let plan = paperclip_core::interaction_payload::document_target(&card.payload)
        .is_some_and(|(key, _)| key == "plan");
    match card.kind {
        K::AskUserQuestions => "Question",
        K::RequestConfirmation if plan => "Plan approval",
        K::RequestConfirmation => "Confirmation",
        K::RequestCheckboxConfirmation => "Checklist",
        K::RequestItemVerdicts => "Review",
        K::SuggestTasks => "Suggested tasks",
        K::ConnectionIntent => "Connection",
    }
}

/// The one-line "what is asked": the card's title, else its prompt.
pub fn headline(card: &Interaction) -> String {
    card.title
        .clone()
        .or_else(|| card.payload["title"].as_str().map(str::to_string))
        .or_else(|| card.payload["prompt"].as_str().map(str::to_string))
        .or_else(|| {
            card.payload["questions"][0]["prompt"]
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_else(|| kind_label(card).to_string())
}

/// Pending cards first (they wait on the reader), then the rest, newest first.
pub fn section(
    issue_id: &str,
    cards: &[Interaction],
    agents: &HashMap<&str, &Agent>,
    people: &HashMap<String, String>,
    can_answer: bool,
    now: DateTime<Utc>,
) -> Markup {
    if cards.is_empty() {
        return html! {};
    }
    let mut ordered: Vec<&Interaction> = cards.iter().collect();
    ordered.sort_by_key(|c| {
        (
            c.status != S::Pending,
            std::cmp::Reverse(c.created_at.clone()),
        )
    });
    let pending = cards.iter().filter(|c| c.status == S::Pending).count();
    html! {
        section.interactions #interactions {
            h2 { "Requests to the board"
                @if pending > 0 { " " span.badge data-pending-interactions=(pending) { (pending) " waiting" } } }
            @for card in ordered {
                (one(issue_id, card, agents, people, can_answer, now))
            }
        }
    }
}

fn who(
    agent: Option<&str>,
    user: Option<&str>,
    agents: &HashMap<&str, &Agent>,
    people: &HashMap<String, String>,
) -> String {
    if let Some(a) = agent {
        return agents.get(a).map_or("An agent".into(), |a| a.name.clone());
    }
    match user {
        Some(u) => people.get(u).cloned().unwrap_or_else(|| "Board".into()),
        None => "Board".into(),
    }
}

fn one(
    issue_id: &str,
    card: &Interaction,
    agents: &HashMap<&str, &Agent>,
    people: &HashMap<String, String>,
    can_answer: bool,
    now: DateTime<Utc>,
) -> Markup {
    let url = format!("/api/issues/{issue_id}/interactions/{}", card.id);
    let asker = who(
        card.created_by_agent_id.as_deref(),
        card.created_by_user_id.as_deref(),
        agents,
        people,
    );
    let open = card.status == S::Pending && can_answer;
    html! {
        article.interaction id={"interaction-" (card.id)} data-interaction-id=(card.id)
            data-interaction-kind=(card.kind.as_str()) data-interaction-status=(card.status.as_str()) {
            header {
                span.kind { (kind_label(card)) } " " (pill(card.status.as_str())) " "
                strong { (headline(card)) }
                div.muted { "asked by " (asker) " " (time(&card.created_at, now)) }
            }
            @if let Some(summary) = &card.summary { p { (summary) } }
            @if let Some(details) = card.payload["detailsMarkdown"].as_str() { div.details { (markdown::render(details)) } }
            @if let Some(href) = card.payload["target"]["href"].as_str().and_then(markdown::safe_link) {
                p { a href=(href) rel="noopener noreferrer" { "Open what this is about" } " " span.muted { (href) } }
            }
            @else if let Some((key, _)) = paperclip_core::interaction_payload::document_target(&card.payload) {
                p { a href={"#document-" (key)} { "Read the " (key) " document" } }
            }
            @if open { (form(&url, card)) } @else { (outcome(card, agents, people, now)) }
        }
    }
}

fn form(url: &str, card: &Interaction) -> Markup {
    let p = &card.payload;
    let plan = kind_label(card) == "Plan approval";
    let accept = p["acceptLabel"]
        .as_str()
        .unwrap_or(if plan { "Approve plan" } else { "Accept" });
    let reject =
        p["rejectLabel"]
            .as_str()
            .unwrap_or(if plan { "Request changes" } else { "Reject" });
    let reason_required = p["rejectRequiresReason"] == Value::Bool(true);
    let reason_label = p["rejectReasonLabel"].as_str().unwrap_or(if plan {
        "What should change"
    } else {
        "Reason"
    });
    let reject_part = html! {
        details.reject {
            summary { (reject) "…" }
            form data-interaction-form="reject" data-url={(url) "/reject"} {
                label { (reason_label) @if !reason_required { " (optional)" }
                    textarea name="reason" rows="3" required[reason_required]
                        placeholder=(p["declineReasonPlaceholder"].as_str().unwrap_or("")) {} }
                button type="submit" { (reject) }
            }
        }
    };
    let skip = html! {
        button.small.link type="button" data-action="POST" data-url={(url) "/skip"} data-body="{}"
            data-confirm="Close this request without an answer? The agent is not woken." data-done="Dismissed" { "Dismiss" }
    };
    match card.kind {
        K::AskUserQuestions => html! {
            form data-interaction-form="respond" data-url={(url) "/respond"} {
                @for q in p["questions"].as_array().into_iter().flatten() {
                    @let qid = q["id"].as_str().unwrap_or("");
                    @let multi = q["selectionMode"] == "multi";
                    fieldset data-question=(qid) data-required[q["required"] == Value::Bool(true)] {
                        legend { (q["prompt"].as_str().unwrap_or("")) @if q["required"] == Value::Bool(true) { " *" } }
                        @if let Some(help) = q["helpText"].as_str() { p.muted { (help) } }
                        @for o in q["options"].as_array().into_iter().flatten() {
                            @let oid = o["id"].as_str().unwrap_or("");
                            label.option {
                                input type=(if multi { "checkbox" } else { "radio" }) name={"q:" (qid)} value=(oid)
                                    data-free-text[o["freeText"] == Value::Bool(true)];
                                " " (o["label"].as_str().unwrap_or(oid))
                                @if let Some(d) = o["description"].as_str() { " " span.muted { "— " (d) } }
                            }
                        }
                        @let takes_text = q["allowOther"] == Value::Bool(true)
                            || q["options"].as_array().into_iter().flatten().any(|o| o["freeText"] == Value::Bool(true));
                        @if takes_text { input type="text" name={"text:" (qid)} placeholder="Your answer" maxlength="20000"; }
                    }
                }
                div.actions { button.primary type="submit" { (p["submitLabel"].as_str().unwrap_or("Send answers")) } " " (skip) }
            }
        },
        K::RequestConfirmation => html! {
            p.prompt { (p["prompt"].as_str().unwrap_or("")) }
            div.actions {
                button.primary type="button" data-action="POST" data-url={(url) "/accept"} data-body="{}" data-done="Accepted" { (accept) }
                " " (skip)
            }
            (reject_part)
        },
        K::RequestCheckboxConfirmation => html! {
            form data-interaction-form="checkbox" data-url={(url) "/accept"} {
                p.prompt { (p["prompt"].as_str().unwrap_or("")) }
                @let defaults = p["defaultSelectedOptionIds"].as_array().cloned().unwrap_or_default();
                @for o in p["options"].as_array().into_iter().flatten() {
                    label.option { input type="checkbox" name="option" value=(o["id"].as_str().unwrap_or("")) checked[defaults.contains(&o["id"])];
                        " " (o["label"].as_str().unwrap_or("")) }
                }
                div.actions { button.primary type="submit" { (accept) } " " (skip) }
            }
            (reject_part)
        },
        K::RequestItemVerdicts => html! {
            form data-interaction-form="verdicts" data-url={(url) "/verdicts"} {
                p.prompt { (p["prompt"].as_str().unwrap_or("")) }
                @for item in p["items"].as_array().into_iter().flatten() {
                    @let iid = item["id"].as_str().unwrap_or("");
                    fieldset data-item=(iid) {
                        legend { (item["label"].as_str().unwrap_or(iid)) }
                        @if let Some(m) = item["previewMarkdown"].as_str() { div.details { (markdown::render(m)) } }
                        @for v in p["verdicts"].as_array().into_iter().flatten() {
                            @let v = v.as_str().unwrap_or("");
                            label.option { input type="radio" name={"v:" (iid)} value=(v); " " (v) }
                        }
                        input type="text" name={"r:" (iid)} placeholder=(p["reasonLabel"].as_str().unwrap_or("Reason")) maxlength="4000";
                    }
                }
                div.actions { button.primary type="submit" { "Send verdicts" } " " (skip) }
            }
        },
        K::SuggestTasks => html! {
            form data-interaction-form="suggest" data-url={(url) "/accept"} {
                @for t in p["tasks"].as_array().into_iter().flatten() {
                    label.option {
                        input type="checkbox" name="task" value=(t["clientKey"].as_str().unwrap_or("")) checked;
                        " " strong { (t["title"].as_str().unwrap_or("")) }
                        @if let Some(parent) = t["parentClientKey"].as_str() { span.muted { " (under " (parent) ")" } }
                        @if let Some(d) = t["description"].as_str() { div.muted { (d.chars().take(300).collect::<String>()) } }
                    }
                }
                div.actions { button.primary type="submit" { "Create selected tasks" } " " (skip) }
            }
            (reject_part)
        },
        K::ConnectionIntent => html! { div.actions { (skip) } },
    }
}

fn outcome(
    card: &Interaction,
    agents: &HashMap<&str, &Agent>,
    people: &HashMap<String, String>,
    now: DateTime<Utc>,
) -> Markup {
    let result = card.result.clone().unwrap_or_default();
    let by = who(
        card.resolved_by_agent_id.as_deref(),
        card.resolved_by_user_id.as_deref(),
        agents,
        people,
    );
    let when = card.resolved_at.as_deref().map(|t| time(t, now));
    html! {
        div.outcome {
            @match card.status {
                S::Pending => p.muted { "Waiting for the board." },
                S::Answered if card.kind == K::AskUserQuestions => {
                    p { strong { "Answered by " (by) } " " @if let Some(w) = &when { (w) } }
                    div.answer { (markdown::render(result["summaryMarkdown"].as_str().unwrap_or(""))) }
                }
                S::Accepted => {
                    p { strong { "Accepted by " (by) } " " @if let Some(w) = &when { (w) } }
                    @if let Some(tasks) = result["createdTasks"].as_array() {
                        ul { @for t in tasks { li { a href={"./" (t["identifier"].as_str().unwrap_or(""))} { (t["identifier"].as_str().unwrap_or("")) } " " (t["title"].as_str().unwrap_or("")) } } }
                    }
                }
                S::Rejected => {
                    p { strong { (if kind_label(card) == "Plan approval" { "Changes requested by " } else { "Rejected by " }) (by) } " " @if let Some(w) = &when { (w) } }
                    @if let Some(r) = result["reason"].as_str().or(result["rejectionReason"].as_str()) { blockquote { (r) } }
                }
                S::Expired => p.muted { "Expired: " (result["expirationReason"].as_str().or(result["outcome"].as_str()).unwrap_or("no longer current").replace('_', " ")) },
                S::Cancelled => p.muted { "Closed without an answer"
                    @if let Some(o) = result["outcome"].as_str() { " (" (o) ")" } },
                _ => p { strong { (card.status.as_str()) } " by " (by) },
            }
        }
    }
}
