//! Web Push: the one component that sends notifications to people's
//! devices. It follows the store's commit events (as the runtime's bridge
//! does), turns what waits on a person into a notice ([`notice`]), and
//! sends each subscriber's copy encrypted for their browser ([`ece`], RFC
//! 8291) and signed with the instance's VAPID key ([`vapid`], RFC 8292),
//! with action links that act once ([`links`]). Requests and the run engine
//! never wait on it: events reach it through a bounded queue that drops
//! (with a warning) rather than blocks, and sends are bounded in number and
//! time.

mod deliver;
pub mod ece;
pub mod links;
pub mod notice;
pub mod vapid;

use futures::StreamExt;
use paperclip_core::push::{LinkAction, NoticeKind};
use paperclip_core::team::{Permission, Role};
use paperclip_store::push::Recipient;
use paperclip_store::StoreEvent;
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc};

use crate::AppState;
pub use deliver::{b64url, Outcome};
pub use notice::{Notice, Target};
pub use vapid::Keys;

/// Activity waiting to become notices; past this many the newest is dropped.
const QUEUE: usize = 256;
/// Pushes in flight at once, over every notice.
const CONCURRENT_SENDS: usize = 8;

/// Starts following the store's events; stops with the process.
pub fn start(state: &AppState) {
    let (tx, rx) = mpsc::channel(QUEUE);
    let events = state.store.subscribe();
    state.lifecycle.spawn_until_stopped(listen(events, tx));
    state.lifecycle.spawn_until_stopped(work(state.clone(), rx));
}

async fn listen(
    mut events: broadcast::Receiver<StoreEvent>,
    queue: mpsc::Sender<paperclip_core::model::ActivityEntry>,
) {
    loop {
        match events.recv().await {
            Ok(StoreEvent::Activity(entry)) if notice::relevant(&entry) => {
                if queue.try_send(entry).is_err() {
                    tracing::warn!("push notifications are behind: one was dropped");
                }
            }
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "push notifications missed store events");
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

async fn work(state: AppState, mut queue: mpsc::Receiver<paperclip_core::model::ActivityEntry>) {
    while let Some(entry) = queue.recv().await {
        let made = notice::from_activity(&state.store, &entry).await;
        match made {
            Ok(Some(notice)) => {
                if let Err(err) = send_notice(&state, &notice).await {
                    tracing::warn!(error = %format!("{err:#}"), "sending a push notification failed");
                }
            }
            Ok(None) => {}
            Err(err) => {
                tracing::warn!(error = %format!("{err:#}"), action = %entry.action, "reading what to push failed")
            }
        }
    }
}

/// The instance's push keys (made on first need).
pub async fn keys(state: &AppState) -> anyhow::Result<Keys> {
    vapid::load(&state.store, state.runtime.vault()).await
}

/// The time action links are made and checked by: the system's, or the
/// `--test-clock` when a test started the server with one (the flag is
/// refused in authenticated mode), so a test can let a link expire.
pub fn link_clock(state: &AppState) -> u64 {
    state.runtime.routine_clock().now().timestamp().max(0) as u64
}

/// Who the push services may contact about our messages (VAPID `sub`): the
/// public URL when it is https, else a mailto for the local machine.
pub fn subject(state: &AppState) -> String {
    let base = &state.security.team.base_url;
    if base.starts_with("https://") {
        base.trim_end_matches('/').to_string()
    } else {
        "mailto:paperclip@localhost".to_string()
    }
}

/// What came of sending one notice.
#[derive(Debug, Default, Clone, Copy, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sent {
    pub delivered: usize,
    /// Subscriptions the push service said are gone, now removed.
    pub removed: usize,
    pub failed: usize,
}

/// Sends `notice` to everyone who hears about its company and wants it.
pub async fn send_notice(state: &AppState, notice: &Notice) -> anyhow::Result<Sent> {
    let local = !state.security.team.authenticated();
    let recipients =
        paperclip_store::push::subscriptions::recipients(&state.store, &notice.company_id, local)
            .await?;
    let recipients: Vec<Recipient> = recipients
        .into_iter()
        .filter(|r| r.preferences.wants(notice.kind))
        .filter(|r| {
            notice
                .only_user
                .as_deref()
                .is_none_or(|u| u == r.subscription.user_id)
        })
        .collect();
    send_to(state, notice, recipients).await
}

/// Sends `notice` to every device of one person (the test notification).
pub async fn send_to_person(
    state: &AppState,
    user_id: &str,
    notice: &Notice,
) -> anyhow::Result<Sent> {
    let recipients =
        paperclip_store::push::subscriptions::recipients_of(&state.store, user_id).await?;
    send_to(state, notice, recipients).await
}

async fn send_to(
    state: &AppState,
    notice: &Notice,
    recipients: Vec<Recipient>,
) -> anyhow::Result<Sent> {
    if recipients.is_empty() {
        return Ok(Sent::default());
    }
    let keys = keys(state).await?;
    let subject = subject(state);
    let now = link_clock(state);
    let outcomes: Vec<Outcome> = futures::stream::iter(recipients)
        .map(|r| {
            let body = payload(&keys, notice, &r, now).to_string();
            let (keys, subject, store) = (&keys, &subject, &state.store);
            async move {
                deliver::send(
                    store,
                    keys,
                    subject,
                    &r.subscription,
                    body.as_bytes(),
                    notice.kind,
                )
                .await
            }
        })
        .buffer_unordered(CONCURRENT_SENDS)
        .collect()
        .await;
    let mut sent = Sent::default();
    for outcome in outcomes {
        match outcome {
            Outcome::Delivered => sent.delivered += 1,
            Outcome::Gone => sent.removed += 1,
            Outcome::Failed(_) => sent.failed += 1,
        }
    }
    Ok(sent)
}

/// One recipient's copy: the notice, and the actions their role allows,
/// each a signed link bound to them.
pub fn payload(keys: &Keys, notice: &Notice, r: &Recipient, now: u64) -> Value {
    let may = |need: Permission| r.role.is_none_or(|role: Role| role.grants(need));
    let link = |act: LinkAction, target: &str, issue: Option<&str>| {
        let claims = links::Claims {
            jti: uuid::Uuid::new_v4().to_string(),
            sub: r.subscription.user_id.clone(),
            act,
            target: target.to_string(),
            issue: issue.map(str::to_string),
            exp: now + links::LIFETIME_SECS,
        };
        format!("/api/push/actions/{}", links::sign(&keys.link_key, &claims))
    };
    let mut actions = Vec::new();
    match &notice.target {
        Target::Approval { id } if may(Permission::ApprovalsDecide) => {
            actions.push(json!({ "action": "approve", "title": "Approve",
                "link": link(LinkAction::Approve, id, None) }));
            actions.push(json!({ "action": "reject", "title": "Reject",
                "link": link(LinkAction::Reject, id, None) }));
        }
        Target::Card { issue_id, id } if may(Permission::TasksMutate) => {
            actions.push(json!({ "action": "reply", "title": "Reply", "type": "text",
                "placeholder": "Your answer", "link": link(LinkAction::Reply, id, Some(issue_id)) }));
        }
        _ => {}
    }
    actions.push(json!({ "action": "open", "title": "Open" }));
    json!({
        "v": 1,
        "kind": notice.kind,
        "title": notice.title,
        "body": notice.body,
        "url": notice.url,
        "tag": notice.tag,
        "actions": actions,
    })
}

/// The notice "Send a test notification" sends.
pub fn test_notice() -> Notice {
    Notice {
        kind: NoticeKind::Test,
        company_id: String::new(),
        title: "Paperclip notifications work".into(),
        body: "This device will hear about questions, approvals, failed runs and budget stops you chose.".into(),
        url: "/".into(),
        tag: "test".into(),
        target: Target::None,
        only_user: None,
    }
}
