//! The door every request passes before routing: who may talk to this
//! server at all, and in what shape.
//!
//! In local trusted mode the person at the machine is the board without a
//! credential. That must not extend to web pages they visit or to agents the
//! server runs, so a request is refused when:
//! - its `Host` is not a loopback name or the configured public URL (a DNS
//!   rebinding page reaches us under its own name): 421;
//! - it comes from another site (`Origin`, `Sec-Fetch-Site`), except a plain
//!   link followed to a page: 403;
//! - it changes state with a body that is not JSON (an HTML form or a
//!   `text/plain` "simple request" needs no CORS preflight): 415. The one
//!   exception is a `multipart/form-data` POST to the attachment or logo
//!   upload route, whose body may be the attachment limit plus the multipart
//!   framing; the Origin and CSRF checks apply to it as to every write;
//! - its id or query contains a NUL (no engine stores one), or a header
//!   it decides on (`Host`, `Origin`, `Sec-Fetch-*`, `Content-Type`) is
//!   not text: 400;
//! - it declares a body over the limit (refused before reading it): 413, or
//!   does not deliver its body in time: 408;
//! - it has no key and comes from inside an agent run ([`crate::local_peer`]): 401.
//!
//! Responses get the headers that keep pages out of frames and scripts from
//! anywhere but here.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::error::ApiError;
use crate::extract::header_text;
use crate::AppState;

mod body;

use body::{check_content_type, read_body, upload_limit};
pub use body::{is_json, MULTIPART_OVERHEAD};

/// Connection-level limits; tests shorten them to see them act.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Time to send a request's headers, and the longest a keep-alive
    /// connection may sit idle between requests.
    pub header_timeout: Duration,
    /// Time to send a whole request body.
    pub body_timeout: Duration,
    /// Live event subscribers (SSE and WebSocket) per company.
    pub max_subscribers_per_company: usize,
    /// Largest issue attachment, in bytes; the upload route's body may be
    /// this plus [`MULTIPART_OVERHEAD`].
    pub attachment_max_bytes: u64,
    /// S3-compatible storage for new attachments; `None`: the data dir.
    pub s3: Option<crate::storage_s3::S3Config>,
    /// Open connections (live streams included) served normally; `None`:
    /// derived from the descriptor limit (see [`crate::serve`]).
    pub max_connections: Option<usize>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(20),
            body_timeout: Duration::from_secs(30),
            max_subscribers_per_company: 1000,
            attachment_max_bytes: paperclip_core::attachment::DEFAULT_MAX_BYTES,
            s3: None,
            max_connections: None,
        }
    }
}

/// What the guard needs to know about this instance.
pub struct Security {
    pub limits: Limits,
    /// `scheme://host[:port]` of a configured public URL, lowercase.
    public_origin: Option<String>,
    public_host: Option<String>,
    subscribers: Mutex<std::collections::HashMap<String, usize>>,
    /// Local trusted or authenticated, and how people sign in.
    pub team: crate::people::TeamConfig,
    /// Sign-in, invite and key-creation attempts.
    pub limiter: crate::people::RateLimiter,
}

impl Security {
    pub fn new(limits: Limits, public_url: Option<&str>) -> Security {
        let public_origin = public_url.map(|u| u.trim_end_matches('/').to_ascii_lowercase());
        let public_host = public_origin
            .as_deref()
            .and_then(|o| o.split_once("://"))
            .map(|(_, authority)| host_name(authority.split('/').next().unwrap_or("")));
        Security {
            limits,
            public_origin,
            public_host,
            subscribers: Mutex::new(Default::default()),
            team: Default::default(),
            limiter: Default::default(),
        }
    }

    /// The same instance with people signing in as `team` says.
    pub fn with_team(mut self, team: crate::people::TeamConfig) -> Security {
        self.team = team;
        self
    }

    /// `scheme://host[:port]` of the configured public URL.
    pub fn public_origin(&self) -> Option<&str> {
        self.public_origin.as_deref()
    }

    fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host);
        is_loopback_name(&name)
            || self.public_host.as_deref() == Some(name.as_str())
            || self.team.allowed_hosts.contains(&name)
    }

    fn origin_allowed(&self, origin: &str, host: &str) -> bool {
        let origin = origin.to_ascii_lowercase();
        origin == format!("http://{}", host.to_ascii_lowercase())
            || self.public_origin.as_deref() == Some(origin.as_str())
    }

    /// A place among the company's live subscribers, or `None` when full.
    /// The place is given back when the returned slot is dropped.
    pub fn subscribe(self: &Arc<Self>, company_id: &str) -> Option<SubscriberSlot> {
        let mut subs = self.subscribers.lock().expect("subscribers lock");
        let count = subs.entry(company_id.to_string()).or_insert(0);
        if *count >= self.limits.max_subscribers_per_company {
            return None;
        }
        *count += 1;
        Some(SubscriberSlot {
            security: self.clone(),
            company_id: company_id.to_string(),
        })
    }
}

pub struct SubscriberSlot {
    security: Arc<Security>,
    company_id: String,
}

impl Drop for SubscriberSlot {
    fn drop(&mut self) {
        let mut subs = self.security.subscribers.lock().expect("subscribers lock");
        if let Some(count) = subs.get_mut(&self.company_id) {
            *count -= 1;
            if *count == 0 {
                subs.remove(&self.company_id);
            }
        }
    }
}

/// Per-connection state. Whether a connection's client is outside every run
/// is decided once: a process started for a later run cannot take over a
/// socket another process opened earlier.
#[derive(Default)]
pub struct Connection {
    outside_runs: OnceLock<()>,
    /// This server's end of the connection: with the peer's, it names the
    /// client's socket exactly (see [`crate::local_peer`]).
    server: Option<SocketAddr>,
}

impl Connection {
    /// A connection accepted on `server` (this side's address).
    pub fn accepted_on(server: Option<SocketAddr>) -> Connection {
        Connection {
            outside_runs: OnceLock::new(),
            server,
        }
    }
}

/// Marks a request the guard let in as the local board (no credential).
#[derive(Clone, Copy)]
pub struct LocalBoard;

pub async fn guard(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let is_page = !request.uri().path().starts_with("/api/");
    let mut response = match check(&app, request).await {
        Ok(request) => next.run(request).await,
        Err(err) => {
            let busy = err.status == StatusCode::SERVICE_UNAVAILABLE;
            let mut response = err.into_response();
            if busy {
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            }
            response
        }
    };
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if is_page {
        // Pages load only their own script and stylesheet; maud escapes all
        // data, and the few computed `style=` attributes (chart bars, label
        // colours) are the only inline styling.
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'self'; script-src 'self'; style-src 'self'; \
                 style-src-attr 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
                 object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
            ),
        );
    }
    response
}

async fn check(app: &AppState, request: Request) -> Result<Request, ApiError> {
    let (mut parts, body) = request.into_parts();
    let Some(ConnectInfo(peer)) = parts.extensions.get::<ConnectInfo<SocketAddr>>().copied() else {
        // Only the accept loop attaches the peer; a request without one did
        // not come through it, and nothing about it can be trusted.
        return Err(ApiError::forbidden(
            "Request has no peer address; it did not come through the server's listener",
        ));
    };
    let host = header_text(&parts.headers, header::HOST.as_str())?
        .map(str::to_string)
        .or_else(|| parts.uri.authority().map(|a| a.to_string()))
        .ok_or_else(|| ApiError::new(StatusCode::BAD_REQUEST, "Host header required"))?;
    if !app.security.host_allowed(&host) {
        return Err(ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            format!(
                "Host '{host}' is not served here: open Paperclip at a loopback address \
                 (http://127.0.0.1:<port>) or set --public-url"
            ),
        )
        .with_details(json!({ "code": "host_not_allowed" })));
    }
    check_origin(app, &parts.method, &parts.headers, &host)?;
    if contains_nul(parts.uri.path()) || parts.uri.query().is_some_and(contains_nul) {
        return Err(ApiError::validation(json!([{
            "code": "invalid_string",
            "path": [],
            "message": "The URL contains a NUL character (%00)",
        }])));
    }
    let body = if changes_state(&parts.method) {
        let limit = match upload_limit(app, &parts.method, parts.uri.path(), &parts.headers)? {
            Some(limit) => limit,
            None => {
                check_content_type(&parts.headers)?;
                crate::MAX_BODY_BYTES
            }
        };
        read_body(app, &parts.headers, body, limit).await?
    } else {
        body
    };
    // An authenticated instance has no implicit board: people sign in.
    // A routine's public webhook is authenticated by its signature alone
    // and is nobody's board, whoever calls it.
    if !parts.headers.contains_key(header::AUTHORIZATION)
        && !app.security.team.authenticated()
        && !is_public_webhook(parts.uri.path())
    {
        local_board(app, &mut parts, peer).await?;
    }
    Ok(Request::from_parts(parts, body))
}

fn is_public_webhook(path: &str) -> bool {
    path.strip_prefix("/api/routine-triggers/public/")
        .and_then(|rest| rest.strip_suffix("/fire"))
        .is_some_and(|id| !id.contains('/'))
}

fn changes_state(method: &Method) -> bool {
    !matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    )
}

fn check_origin(
    app: &AppState,
    method: &Method,
    headers: &HeaderMap,
    host: &str,
) -> Result<(), ApiError> {
    let cross = |what: String| {
        Err(ApiError::forbidden(format!(
            "Cross-site request refused ({what}): only pages served by this Paperclip may call its API"
        ))
        .with_details(json!({ "code": "cross_site" })))
    };
    if let Some(origin) = header_text(headers, header::ORIGIN.as_str())? {
        if !app.security.origin_allowed(origin, host) {
            return cross(format!("Origin {origin}"));
        }
    }
    if let Some(site @ ("cross-site" | "same-site")) = header_text(headers, "sec-fetch-site")? {
        // Following a link to a page from elsewhere is fine: it reads
        // nothing the other site can see and changes nothing.
        let navigation = matches!(*method, Method::GET | Method::HEAD)
            && header_text(headers, "sec-fetch-mode")? == Some("navigate");
        if !navigation {
            return cross(format!("Sec-Fetch-Site: {site}"));
        }
    }
    Ok(())
}

/// Lets a credential-less request in as the board unless it comes from
/// inside an agent run.
async fn local_board(
    app: &AppState,
    parts: &mut axum::http::request::Parts,
    peer: SocketAddr,
) -> Result<(), ApiError> {
    if !peer.ip().is_loopback() {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "Local trusted mode accepts requests from loopback only",
        ));
    }
    let connection = parts.extensions.get::<Arc<Connection>>().cloned();
    let known_outside = connection
        .as_ref()
        .is_some_and(|c| c.outside_runs.get().is_some());
    if !known_outside {
        use crate::local_peer::Verdict;
        let runs = app.runtime.live_run_processes();
        let server = connection.as_ref().and_then(|c| c.server);
        // On the lookup pool, never on the async executor; a full pool is a
        // 503 to retry, not a wait (see `local_peer`).
        let verdict = match crate::local_peer::resolve(peer, server, runs).await {
            Verdict::Outside => Ok(None),
            Verdict::Run(run) => Ok(Some(run)),
            Verdict::Unknown(reason) => Err(reason),
            Verdict::Busy => {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Too many new local connections to check at once; retry shortly",
                )
                .with_details(json!({ "code": "local_peer_busy" })))
            }
        };
        match verdict {
            Ok(None) => {
                if let Some(c) = &connection {
                    let _ = c.outside_runs.set(());
                }
            }
            Ok(Some(run_id)) => {
                return Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    format!(
                        "This request comes from inside agent run {run_id} without its key; \
                         agents are never the board"
                    ),
                )
                .with_details(json!({
                    "code": "run_credentials_required",
                    "runId": run_id,
                    "hint": "Send Authorization: Bearer $PAPERCLIP_API_KEY (and X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID)",
                })))
            }
            Err(reason) => {
                tracing::warn!(%peer, %reason, "could not tell whether a local caller is an agent run");
                return Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "Could not verify that this local request is not from an agent run; send an API key",
                ));
            }
        }
    }
    parts.extensions.insert(LocalBoard);
    Ok(())
}

fn contains_nul(text: &str) -> bool {
    text.as_bytes()
        .windows(3)
        .any(|w| w[0] == b'%' && w[1] == b'0' && w[2] == b'0')
}

/// `127.0.0.1:3100` → `127.0.0.1`, `[::1]:3100` → `::1`, lowercase, no trailing dot.
fn host_name(host: &str) -> String {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
            _ => host,
        }
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

fn is_loopback_name(name: &str) -> bool {
    name == "localhost"
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_names_and_the_public_host_are_served() {
        let s = Security::new(Limits::default(), Some("https://Board.Example.com/"));
        for ok in [
            "127.0.0.1:3100",
            "localhost:3100",
            "LOCALHOST",
            "[::1]:3100",
            "127.0.0.2",
            "localhost.",
            "board.example.com",
            "board.example.com:443",
        ] {
            assert!(s.host_allowed(ok), "{ok}");
        }
        for bad in [
            "evil.test:3100",
            "127.0.0.1.evil.test",
            "localhost.evil.test",
            "0.0.0.0:3100",
            "192.168.1.2",
            "",
        ] {
            assert!(!s.host_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn an_origin_must_be_this_very_server() {
        let s = Security::new(Limits::default(), None);
        assert!(s.origin_allowed("http://127.0.0.1:3100", "127.0.0.1:3100"));
        assert!(!s.origin_allowed("http://127.0.0.1:8080", "127.0.0.1:3100"));
        assert!(!s.origin_allowed("http://localhost:3100", "127.0.0.1:3100"));
        assert!(!s.origin_allowed("null", "127.0.0.1:3100"));
        assert!(!s.origin_allowed("https://evil.test", "127.0.0.1:3100"));
    }

    #[test]
    fn json_content_types_are_recognised() {
        assert!(is_json("application/json"));
        assert!(is_json("Application/JSON; charset=utf-8"));
        assert!(is_json("application/merge-patch+json"));
        assert!(!is_json("text/plain"));
        assert!(!is_json("application/x-www-form-urlencoded"));
        assert!(!is_json("multipart/form-data; boundary=x"));
        assert!(!is_json(""));
    }

    #[test]
    fn nul_is_found_in_any_case() {
        assert!(contains_nul("/api/issues/ACM-1%00"));
        assert!(!contains_nul("/api/issues/ACM-100"));
        assert!(!contains_nul("q=%20"));
    }

    #[test]
    fn subscriber_slots_are_given_back() {
        let s = Arc::new(Security::new(
            Limits {
                max_subscribers_per_company: 2,
                ..Limits::default()
            },
            None,
        ));
        let a = s.subscribe("c").unwrap();
        let _b = s.subscribe("c").unwrap();
        assert!(s.subscribe("c").is_none());
        assert!(s.subscribe("other").is_some());
        drop(a);
        assert!(s.subscribe("c").is_some());
    }
}
