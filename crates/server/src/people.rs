//! The parts of an authenticated instance that are not routes: how it is
//! deployed, passwords, tokens, the session cookie and its CSRF token, and
//! the rate limiter that guards sign-in, invites and key creation.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use paperclip_core::team::{DeploymentMode, Exposure};
use sha2::{Digest, Sha256};

/// Upstream's session cookie (instance `default`); the value is the token.
pub const SESSION_COOKIE: &str = "paperclip-default.session_token";
/// Header the board UI sends its session's CSRF token in.
pub const CSRF_HEADER: &str = "x-paperclip-csrf";

pub const BOARD_KEY_PREFIX: &str = "pcp_board_";
pub const INVITE_PREFIX: &str = "pcp_invite_";
pub const BOOTSTRAP_PREFIX: &str = "pcp_bootstrap_";

pub const MIN_PASSWORD: usize = 8;
pub const MAX_PASSWORD: usize = 128;

/// How this instance lets people in.
#[derive(Debug, Clone)]
pub struct TeamConfig {
    pub mode: DeploymentMode,
    pub exposure: Exposure,
    /// Host names served besides loopback and the public URL's.
    pub allowed_hosts: Vec<String>,
    /// Whether anyone may create an account (they see nothing until invited).
    pub sign_up: bool,
    pub session_ttl: Duration,
    /// Cookies get `Secure` (the public URL is https).
    pub secure_cookies: bool,
    /// The URL invites are printed with.
    pub base_url: String,
    /// `/api/mcp` on an authenticated instance (`--mcp`); local trusted always serves it.
    pub mcp: bool,
}

impl Default for TeamConfig {
    fn default() -> TeamConfig {
        TeamConfig {
            mode: DeploymentMode::LocalTrusted,
            exposure: Exposure::Private,
            allowed_hosts: Vec::new(),
            sign_up: true,
            session_ttl: Duration::from_secs(7 * 24 * 3600),
            secure_cookies: false,
            base_url: "http://127.0.0.1:3100".into(),
            mcp: false,
        }
    }
}

impl TeamConfig {
    pub fn authenticated(&self) -> bool {
        self.mode == DeploymentMode::Authenticated
    }
}

/// An argon2id hash of `password` (PHC string, random salt). Slow on purpose:
/// callers run it off the async threads.
pub fn hash_password(password: &str) -> String {
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .unwrap_or_default()
}

pub fn verify_password(hash: &str, password: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// A hash to verify against when no account has the address, so a sign-in
/// takes as long whether or not the account exists.
pub fn decoy_hash() -> &'static str {
    static DECOY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DECOY.get_or_init(|| hash_password("no account has this password"))
}

/// `prefix` and 24 random bytes, hex.
pub fn new_token(prefix: &str) -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 24];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("{prefix}{}", hex::encode(bytes))
}

pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// The CSRF token of a session: derived from its secret token, so a page
/// can be given it without the server storing another secret, and another
/// site (which cannot read our cookie) cannot compute it.
pub fn csrf_token(session_token: &str) -> String {
    hex::encode(Sha256::digest(format!("csrf:{session_token}").as_bytes()))
}

/// The session token in a request's cookies, if any. Other cookies are not
/// ours to judge (a browser sends every app's on this host, in whatever
/// bytes they were set); ours must be text, else 400 rather than "signed out".
pub fn session_token(
    headers: &axum::http::HeaderMap,
) -> Result<Option<String>, crate::error::ApiError> {
    let ours = headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .flat_map(|v| v.as_bytes().split(|b| *b == b';'))
        .filter_map(|pair| {
            let eq = pair.iter().position(|b| *b == b'=')?;
            Some((pair[..eq].trim_ascii(), pair[eq + 1..].trim_ascii()))
        })
        .find(|(name, _)| *name == SESSION_COOKIE.as_bytes() || *name == secure_name().as_bytes());
    let Some((name, value)) = ours else {
        return Ok(None);
    };
    if !value.iter().all(u8::is_ascii_graphic) {
        let name = String::from_utf8_lossy(name);
        return Err(crate::extract::not_text(&format!("cookie {name}")));
    }
    let value = String::from_utf8_lossy(value).into_owned();
    Ok(Some(value).filter(|v| !v.is_empty()))
}

fn secure_name() -> &'static str {
    "__Secure-paperclip-default.session_token"
}

/// `Set-Cookie` for a new session (or, with `None`, one that ends it).
pub fn session_cookie(team: &TeamConfig, token: Option<&str>) -> String {
    let name = if team.secure_cookies {
        secure_name()
    } else {
        SESSION_COOKIE
    };
    let secure = if team.secure_cookies { "; Secure" } else { "" };
    match token {
        Some(token) => format!(
            "{name}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
            team.session_ttl.as_secs()
        ),
        None => format!("{name}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}"),
    }
}

/// Fixed-window counters per key, in memory. Bounded: past `MAX_KEYS` keys
/// the expired ones are dropped, and if all are live the oldest go.
pub struct RateLimiter {
    hits: Mutex<HashMap<String, VecDeque<Instant>>>,
}

const MAX_KEYS: usize = 10_000;

impl Default for RateLimiter {
    fn default() -> Self {
        RateLimiter {
            hits: Mutex::new(HashMap::new()),
        }
    }
}

impl RateLimiter {
    /// Counts a hit on `key`; `Err(seconds to wait)` when `limit` hits in
    /// `window` were counted already.
    pub fn hit(&self, key: &str, limit: usize, window: Duration) -> Result<(), u64> {
        let now = Instant::now();
        let mut hits = self.hits.lock().expect("rate limiter lock");
        if hits.len() >= MAX_KEYS && !hits.contains_key(key) {
            hits.retain(|_, q| q.back().is_some_and(|t| now.duration_since(*t) < window));
            while hits.len() >= MAX_KEYS {
                let Some(k) = hits.keys().next().cloned() else {
                    break;
                };
                hits.remove(&k);
            }
        }
        let queue = hits.entry(key.to_string()).or_default();
        while queue
            .front()
            .is_some_and(|t| now.duration_since(*t) >= window)
        {
            queue.pop_front();
        }
        if queue.len() >= limit {
            let oldest = *queue.front().expect("non-empty at limit");
            let wait = window.saturating_sub(now.duration_since(oldest));
            return Err(wait.as_secs().max(1));
        }
        queue.push_back(now);
        Ok(())
    }

    /// Whether `key` is at its limit, without counting a hit.
    pub fn blocked(&self, key: &str, limit: usize, window: Duration) -> Option<u64> {
        let now = Instant::now();
        let hits = self.hits.lock().expect("rate limiter lock");
        let queue = hits.get(key)?;
        let live: Vec<_> = queue
            .iter()
            .filter(|t| now.duration_since(**t) < window)
            .collect();
        (live.len() >= limit).then(|| {
            window
                .saturating_sub(now.duration_since(*live[0]))
                .as_secs()
                .max(1)
        })
    }

    pub fn clear(&self, key: &str) {
        self.hits.lock().expect("rate limiter lock").remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_verify_only_against_their_own_hash() {
        let hash = hash_password("correct horse");
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password(&hash, "correct horse"));
        assert!(!verify_password(&hash, "correct horse "));
        assert!(!verify_password("not a hash", "correct horse"));
    }

    #[test]
    fn the_limiter_refuses_past_its_limit_and_says_how_long() {
        let limiter = RateLimiter::default();
        let window = Duration::from_secs(60);
        for _ in 0..3 {
            assert!(limiter.hit("k", 3, window).is_ok());
        }
        let wait = limiter.hit("k", 3, window).unwrap_err();
        assert!((1..=60).contains(&wait));
        assert!(limiter.blocked("k", 3, window).is_some());
        assert!(limiter.hit("other", 3, window).is_ok());
        limiter.clear("k");
        assert!(limiter.hit("k", 3, window).is_ok());
    }

    #[test]
    fn the_session_token_is_read_from_any_cookie_header() {
        let mut headers = axum::http::HeaderMap::new();
        headers.append("cookie", "a=b".parse().unwrap());
        headers.append(
            "cookie",
            format!("x=y; {SESSION_COOKIE}=tok123").parse().unwrap(),
        );
        assert_eq!(session_token(&headers).unwrap().as_deref(), Some("tok123"));
        assert_ne!(csrf_token("tok123"), csrf_token("tok124"));
    }

    #[test]
    fn only_our_cookie_must_be_text() {
        let cookie = |bytes: &[u8]| {
            let mut headers = axum::http::HeaderMap::new();
            headers.append(
                "cookie",
                axum::http::HeaderValue::from_bytes(bytes).unwrap(),
            );
            headers
        };
        let other_app = format!("theme=caf\u{e9}; {SESSION_COOKIE}=tok1");
        assert_eq!(
            session_token(&cookie(other_app.as_bytes()))
                .unwrap()
                .as_deref(),
            Some("tok1")
        );
        let garbled = [SESSION_COOKIE.as_bytes(), b"=tok\xe9"].concat();
        let err = session_token(&cookie(&garbled)).unwrap_err();
        assert_eq!(err.status, axum::http::StatusCode::BAD_REQUEST);
        assert_eq!(session_token(&cookie(b"a=b")).unwrap(), None);
    }
}
