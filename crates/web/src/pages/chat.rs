//! Agent Chat pages: the person's chats with a picker to start one, and a
//! chat as a conversation (the person's messages on the right, the agent's
//! on the left), its agent's live output streaming in through the task
//! thread's stream box (`thread.js`), `/new` as a "New session" divider, and
//! "Make this a task" on a message (`chat.js`), whose task shows as a card.

use axum::extract::{Path, State};
use maud::{html, Markup};
use paperclip_core::actor::LOCAL_BOARD_USER_ID;
use paperclip_core::chat;
use paperclip_core::model::{Agent, Comment, Issue, RunEvent};
use paperclip_store::thread::comments::{self, Order};
use paperclip_store::{issues, org::agents, runs};

use crate::fmt::time;
use crate::{html, layout, markdown, store_failure, PageResult, Web};

/// A live turn shows its last steps; the run page has them all.
const LIVE_STEPS: usize = 30;
/// Events read per live turn (steps and their results, notices).
const LIVE_EVENTS: i64 = 400;

/// What a "Make this a task" link comment starts with (`chat.js` writes it).
const MADE_TASK: &str = "Made this a task: ";

fn person() -> String {
    crate::viewer::current()
        .user_id
        .unwrap_or_else(|| LOCAL_BOARD_USER_ID.to_string())
}

fn picker(agents: &[Agent], cid: &str) -> Markup {
    html! {
        form.inline-form #chat-start data-api-form="chat-open" data-company-id=(cid) {
            label.visually-hidden for="chat-agent" { "Agent" }
            select #chat-agent name="agent" required {
                @for a in agents { option value=(a.url_key) { (a.name) } }
            }
            button.primary type="submit" { "Start chat" }
        }
    }
}

#[paperclip_macros::handler]
pub async fn list(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let cid = &ctx.company.id;
    let chats = issues::chat::list_for(&web.store, cid, &person())
        .await
        .map_err(store_failure)?;
    let all = agents::list(&web.store, cid).await.map_err(store_failure)?;
    let keys: std::collections::HashMap<&str, &str> = all
        .iter()
        .map(|a| (a.id.as_str(), a.url_key.as_str()))
        .collect();
    let p = &ctx.company.issue_prefix;
    let body = html! {
        header.page-head { h1 { "Chat" } }
        p.muted { "Talk with one of your agents. Real work it agrees to do becomes ordinary tasks." }
        (picker(&all, cid))
        ul.chat-list {
            @for c in &chats {
                @let key = c.issue.conversation_agent_id.as_deref().and_then(|a| keys.get(a)).copied().unwrap_or("");
                li.chat-row {
                    a href={"/" (p) "/chats/" (key)} {
                        strong { (c.agent_name) }
                        span.muted { " · " (c.issue.identifier) }
                        span.pill { (state_words(&c.issue)) }
                    }
                    div.muted.chat-last {
                        @match &c.last_body {
                            Some(b) => { @if c.last_by_agent { (c.agent_name) ": " } @else { "You: " } (excerpt(b)) }
                            None => "No messages yet.",
                        }
                        @if let Some(at) = &c.last_at { " · " (time(at, chrono::Utc::now())) }
                    }
                }
            }
            @if chats.is_empty() { li.empty { "No chats yet: pick an agent above." } }
        }
    };
    html(layout::page(&ctx, "chats", "Chat", body))
}

fn state_words(issue: &Issue) -> &'static str {
    match issue.conversation_state {
        Some(chat::ConversationState::Active) => "replying",
        _ => "waiting for you",
    }
}

fn excerpt(body: &str) -> String {
    let line = body.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut out: String = line.chars().take(100).collect();
    if line.chars().count() > 100 {
        out.push('…');
    }
    out
}

#[paperclip_macros::handler]
pub async fn page(
    State(web): State<Web>,
    Path((prefix, agent_key)): Path<(String, String)>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let cid = &ctx.company.id;
    let store = &web.store;
    let Some(agent) = agents::by_key(store, cid, &agent_key)
        .await
        .map_err(store_failure)?
    else {
        return Err(crate::failure(
            axum::http::StatusCode::NOT_FOUND,
            "No such agent",
            &format!("{agent_key} is not an agent of {}.", ctx.company.name),
        ));
    };
    let title = format!("Chat with {}", agent.name);
    let Some(issue) = issues::chat::find(store, cid, &agent.id, &person())
        .await
        .map_err(store_failure)?
    else {
        let body = html! {
            header.page-head { h1 { (title) } }
            p.muted { "You have no chat with " (agent.name) " yet." }
            button.primary type="button" data-chat-open=(agent.url_key) data-company-id=(cid) { "Start chat" }
        };
        return html(layout::page(&ctx, "chats", &title, body));
    };
    let thread = comments::list(store, &issue.id, None, Order::Asc, 500)
        .await
        .map_err(store_failure)?;
    let live = runs::list(
        store,
        cid,
        &runs::Filter {
            issue_id: Some(issue.id.clone()),
            live_only: true,
            limit: 5,
            ..runs::Filter::default()
        },
    )
    .await
    .map_err(store_failure)?;
    // The steps of the live turns (at most five runs, each its latest steps).
    let mut live_events = Vec::with_capacity(live.len());
    for run in &live {
        live_events.push(
            runs::events(store, &run.id, 0, LIVE_EVENTS)
                .await
                .map_err(store_failure)?,
        );
    }
    let p = &ctx.company.issue_prefix;
    let mut known = super::thread_ids::Known::default();
    known.task(p, &issue.id, &issue.identifier);
    known.agent(p, &agent.id, &agent.name, &agent.url_key);
    let cards = super::chief::chat_cards(store, &issue, &agent).await?;
    let body = html! {
        header.page-head {
            h1 { (title) }
            span.muted { (issue.identifier) " · " (state_words(&issue)) }
        }
        section.chat-thread #chat-thread {
            @for c in &thread { (message(c, &agent, p)) }
            @if thread.is_empty() { p.muted.chat-empty { "Say hello to " (agent.name) ". Type /new to start a fresh session." } }
            @for (run, events) in live.iter().zip(&live_events) {
                @let run_page = format!("/{p}/agents/{}/runs/{}", agent.url_key, run.id);
                div.chat-msg.agent.chat-live data-run-id=(run.id) {
                    div.chat-who { (agent.name) " is replying…" }
                    // A coding CLI's turn reads as its steps (tool rows), not
                    // its raw JSON lines; a process agent's output streams.
                    @if super::thread_steps::is_transcript(events.iter()) {
                        @let of_run: Vec<&RunEvent> = events.iter().collect();
                        (super::thread_steps::steps(run, &of_run, LIVE_STEPS, &run_page, &known))
                    } @else {
                        div.stream-box data-stream-run=(run.id) data-live="1" data-log-from="0" data-run-page=(run_page) {
                            p.stream-note hidden {}
                            pre.stream {}
                        }
                    }
                }
            }
        }
        (cards)
    };
    let composer = html! {
        form.composer.chat-composer #chat-composer data-api-form="chat-send" data-issue-id=(issue.id) {
            label.visually-hidden for="chat-body" { "Message" }
            textarea #chat-body name="body" rows="3" required placeholder={"Message " (agent.name) " (/new starts a fresh session)"} {}
            button.primary type="submit" { "Send" }
        }
    };
    html(layout::page_with(&ctx, "chats", &title, body, composer))
}

fn message(c: &Comment, agent: &Agent, prefix: &str) -> Markup {
    let mine = c.author_agent_id.is_none();
    if mine && chat::is_reset(&c.body) {
        return html! { div.chat-divider role="separator" { span { "New session" } } };
    }
    if let Some(rest) = c.body.strip_prefix(MADE_TASK).filter(|_| mine) {
        let (identifier, task_title) = rest.split_once(" · ").unwrap_or((rest, ""));
        return html! {
            div.chat-card {
                span.muted { "Task made from this chat" }
                a href={"/" (prefix) "/tasks/" (identifier.trim())} data-chat-task-link {
                    strong { (identifier.trim()) } " " (task_title)
                }
            }
        };
    }
    html! {
        div.chat-msg.(if mine { "mine" } else { "agent" }) data-comment-id=(c.id) {
            div.chat-who { @if mine { "You" } @else { (agent.name) } " · " (time(&c.created_at, chrono::Utc::now())) }
            div.chat-body { (markdown::render(&c.body)) }
            button.small.chat-make-task type="button" data-chat-make-task=(c.id)
                data-title=(chat::task_title(&c.body)) data-body=(c.body) { "Make this a task" }
        }
    }
}
