//! One push to one device (RFC 8030): the encrypted body POSTed to the
//! subscription's endpoint with its TTL, urgency and VAPID authorization.
//! A 404 or 410 means the browser dropped the subscription: it is removed.

use std::sync::OnceLock;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use paperclip_core::push::NoticeKind;
use paperclip_store::push::Subscription;
use paperclip_store::Store;

use crate::push::{ece, links, vapid::Keys};

/// How long a push service keeps a message for a device that is offline.
const TTL_SECS: u64 = 12 * 3600;
const TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub enum Outcome {
    Delivered,
    /// The subscription is gone (and was removed).
    Gone,
    Failed(String),
}

fn client() -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        reqwest::Client::builder()
            .timeout(TIMEOUT)
            .connect_timeout(Duration::from_secs(5))
            // A push service answers; it does not send us elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("the push HTTP client builds")
    })
}

/// Base64url as browsers give it, with or without padding.
pub fn b64url(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok()
}

pub async fn send(
    store: &Store,
    keys: &Keys,
    subject: &str,
    sub: &Subscription,
    plaintext: &[u8],
    kind: NoticeKind,
) -> Outcome {
    let outcome = try_send(keys, subject, sub, plaintext, kind).await;
    match &outcome {
        Outcome::Delivered => {
            if let Err(err) = paperclip_store::push::subscriptions::mark_sent(store, &sub.id).await
            {
                tracing::warn!(error = %err, "recording a sent push failed");
            }
        }
        Outcome::Gone => {
            if let Err(err) =
                paperclip_store::push::subscriptions::forget(store, &sub.id, &sub.p256dh).await
            {
                tracing::warn!(error = %err, "removing a gone push subscription failed");
            }
        }
        Outcome::Failed(why) => {
            tracing::warn!(subscription = %sub.id, why = %why, "a push was not delivered")
        }
    }
    outcome
}

async fn try_send(
    keys: &Keys,
    subject: &str,
    sub: &Subscription,
    plaintext: &[u8],
    kind: NoticeKind,
) -> Outcome {
    let (Some(p256dh), Some(auth)) = (b64url(&sub.p256dh), b64url(&sub.auth)) else {
        return Outcome::Failed("its keys are not base64url".into());
    };
    let body = match ece::encrypt_fresh(plaintext, &p256dh, &auth) {
        Ok(body) => body,
        Err(err) => return Outcome::Failed(format!("encrypting: {err:?}")),
    };
    let Ok(url) = reqwest::Url::parse(&sub.endpoint) else {
        return Outcome::Failed("its endpoint is no URL".into());
    };
    let audience = url.origin().ascii_serialization();
    let urgency = match kind {
        NoticeKind::Question | NoticeKind::Approval => "high",
        _ => "normal",
    };
    let sent = client()
        .post(url)
        .header("TTL", TTL_SECS.to_string())
        .header("Urgency", urgency)
        .header("Content-Encoding", "aes128gcm")
        .header("Content-Type", "application/octet-stream")
        .header(
            "Authorization",
            keys.authorization(&audience, subject, links::now_secs()),
        )
        .body(body)
        .send()
        .await;
    match sent {
        Ok(resp) if resp.status().is_success() => Outcome::Delivered,
        Ok(resp) if matches!(resp.status().as_u16(), 404 | 410) => Outcome::Gone,
        Ok(resp) => Outcome::Failed(format!("the push service answered {}", resp.status())),
        Err(err) => Outcome::Failed(format!("{err}")),
    }
}
