//! A notification's action links: `/api/push/actions/<token>`, where the
//! token names one action (approve or reject an approval, reply to a card)
//! for one person, expires within a day and is signed with the instance's
//! link key (HMAC-SHA256). It carries no credential: it can do its one
//! action, once ([`paperclip_store::push::link_uses`]), as its person, while
//! that person may still do it.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use paperclip_core::push::LinkAction;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// How long a notification's actions stay usable.
pub const LIFETIME_SECS: u64 = 24 * 3600;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The link's id: a used id is refused.
    pub jti: String,
    /// The person it acts as.
    pub sub: String,
    pub act: LinkAction,
    /// What it acts on: an approval's id, or a card's id.
    pub target: String,
    /// A card's task (for a reply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue: Option<String>,
    /// Expiry, seconds since the epoch.
    pub exp: u64,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not made by this instance, or changed since.
    Forged,
    Expired,
}

fn mac(key: &[u8; 32]) -> Hmac<Sha256> {
    Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length")
}

pub fn sign(key: &[u8; 32], claims: &Claims) -> String {
    let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).expect("claims serialize"));
    let mut m = mac(key);
    m.update(body.as_bytes());
    let tag = URL_SAFE_NO_PAD.encode(m.finalize().into_bytes());
    format!("{body}.{tag}")
}

/// The claims of a token this instance signed, unexpired at `now_secs`.
/// The signature is checked first (in constant time), so a forged token
/// learns nothing about expiry.
pub fn verify(key: &[u8; 32], token: &str, now_secs: u64) -> Result<Claims, Refused> {
    let (body, tag) = token.split_once('.').ok_or(Refused::Forged)?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| Refused::Forged)?;
    let mut m = mac(key);
    m.update(body.as_bytes());
    m.verify_slice(&tag).map_err(|_| Refused::Forged)?;
    let bytes = URL_SAFE_NO_PAD.decode(body).map_err(|_| Refused::Forged)?;
    let claims: Claims = serde_json::from_slice(&bytes).map_err(|_| Refused::Forged)?;
    if claims.exp <= now_secs {
        return Err(Refused::Expired);
    }
    Ok(claims)
}

pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(exp: u64) -> Claims {
        Claims {
            jti: "0190c0de-0000-7000-8000-000000000001".into(),
            sub: "local-board".into(),
            act: LinkAction::Approve,
            target: "a1".into(),
            issue: None,
            exp,
        }
    }

    #[test]
    fn a_signed_link_verifies_until_it_expires() {
        let key = [9u8; 32];
        let token = sign(&key, &claims(2_000));
        assert_eq!(verify(&key, &token, 1_999), Ok(claims(2_000)));
        assert_eq!(verify(&key, &token, 2_000), Err(Refused::Expired));
    }

    #[test]
    fn another_key_a_changed_body_or_garbage_is_forged() {
        let key = [9u8; 32];
        let token = sign(&key, &claims(2_000));
        assert_eq!(verify(&[8u8; 32], &token, 1), Err(Refused::Forged));
        let (_, tag) = token.split_once('.').unwrap();
        let mut other = claims(2_000);
        other.act = LinkAction::Reject;
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&other).unwrap());
        assert_eq!(
            verify(&key, &format!("{body}.{tag}"), 1),
            Err(Refused::Forged)
        );
        assert_eq!(verify(&key, "nodot", 1), Err(Refused::Forged));
        assert_eq!(verify(&key, "a.b", 1), Err(Refused::Forged));
        // Signed but expired long ago: expired, never forged.
        assert_eq!(
            verify(&key, &sign(&key, &claims(5)), 10),
            Err(Refused::Expired)
        );
    }
}
