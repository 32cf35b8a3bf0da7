//! The accept loop. axum's `serve` has no connection timeouts, so a client
//! that sends its headers one byte at a time, or opens connections and never
//! uses them, would hold a socket (and a file descriptor) forever. Here every
//! connection gets hyper's header read timeout, which also runs while a
//! keep-alive connection sits idle between requests; bodies get their own
//! deadline in [`crate::guard`].
//!
//! Open connections are capped, live streams (SSE, WebSocket) included, so
//! a flood of them cannot use up the process's descriptors and take the
//! board and `/api/health` down. The cap (`--max-connections`, by default
//! derived from the descriptor limit: [`connection_cap`]) acts on a new
//! connection, in this order:
//! 1. under the cap it is served;
//! 2. at the cap, the connection idle the longest (no request in flight, not
//!    a stream) is closed to make room, and the new one is served;
//! 3. with none idle, up to a small reserve above the cap is served one
//!    request each (`Connection: close`), streams refused with 503: pages,
//!    API calls and health keep answering;
//! 4. past the reserve it gets a minimal 503 with `Retry-After` and is closed.
//!
//! If the process runs out of descriptors anyway (runs, logs, database), a
//! spare one kept open is given up to answer the next connection with that
//! same 503 instead of leaving it in the backlog.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use axum::http::{header, Response, StatusCode};
use hyper::body::{Frame, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tower::ServiceExt;

use crate::guard::Connection;
use crate::AppState;

/// How long in-flight requests may take to finish once shutdown is asked for
/// (live streams never finish on their own).
const DRAIN: Duration = Duration::from_secs(3);

/// The most connections the default cap allows, whatever the descriptor limit.
pub const DEFAULT_CEILING: usize = 10_000;

/// Descriptors the default cap leaves for everything but connections: the
/// database, run logs, child processes' pipes, peer lookups, the listener.
pub fn descriptor_reserve(soft_limit: u64) -> u64 {
    (soft_limit / 8).max(64)
}

/// Connections above the cap served one request each (see the module docs).
pub fn overflow_reserve(cap: usize) -> usize {
    (cap / 32).clamp(4, 64)
}

/// The cap and its reserve: `configured`, or from the soft descriptor limit
/// (`soft_limit`, `None` when unknown): the limit less
/// [`descriptor_reserve`], of which [`overflow_reserve`] is kept for the
/// reserve, at most [`DEFAULT_CEILING`].
pub fn connection_cap(configured: Option<usize>, soft_limit: Option<u64>) -> (usize, usize) {
    if let Some(cap) = configured {
        let cap = cap.max(1);
        return (cap, overflow_reserve(cap));
    }
    let soft = soft_limit.unwrap_or(1024).min(1 << 24);
    let usable = soft.saturating_sub(descriptor_reserve(soft)) as usize;
    let reserve = overflow_reserve(usable);
    let cap = usable.saturating_sub(reserve).clamp(1, DEFAULT_CEILING);
    (cap, reserve)
}

/// The process's soft limit on open descriptors, read each time (an
/// operator may change it with `prlimit` while the server runs).
pub fn soft_descriptor_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return None;
    }
    Some(if limit.rlim_cur == libc::RLIM_INFINITY {
        u64::MAX
    } else {
        limit.rlim_cur
    })
}

/// Serves the app on `listener` until the state's lifecycle shuts down
/// (then in-flight requests get [`DRAIN`]; live streams end on the same
/// token). Each request carries its peer address and its connection's state
/// (see [`crate::guard::Connection`]).
#[cfg(not(test))]
pub async fn serve(listener: tokio::net::TcpListener, state: AppState) -> std::io::Result<()> {
    let limits = state.security.limits.clone();
    let lifecycle = state.lifecycle.clone();
    let app = crate::app(state);
    let mut builder = auto::Builder::new(TokioExecutor::new()).http1_only();
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true)
        // Bounds what one connection may buffer (headers included).
        .max_buf_size(64 * 1024);
    let mut one_request = builder.clone();
    one_request.http1().keep_alive(false);
    let open = Arc::new(Open::default());
    let refusing = Arc::new(AtomicUsize::new(0));
    let mut spare = std::fs::File::open("/dev/null").ok();
    let mut warned: Option<Instant> = None;
    let mut shutdown = std::pin::pin!(lifecycle.stopping());
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    // Out of descriptors: give up the spare one to answer the
                    // waiting client with a 503, then take it back.
                    if spare.take().is_some() {
                        if let Ok(Ok((stream, _))) =
                            tokio::time::timeout(Duration::from_millis(10), listener.accept()).await
                        {
                            let _ = stream.try_write(refusal().as_bytes());
                        }
                        spare = std::fs::File::open("/dev/null").ok();
                        continue;
                    }
                    // No spare either: back off instead of spinning; idle
                    // connections time out and free some.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    spare = std::fs::File::open("/dev/null").ok();
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let (cap, reserve) = connection_cap(limits.max_connections, soft_descriptor_limit());
        // Connections asked to close to make room still hold their sockets
        // until their tasks drop them: in a burst, wait for them (briefly)
        // instead of counting them, or of running out of descriptors.
        if open.leaving() > reserve {
            let dropped = open.dropped.notified();
            if open.leaving() > reserve {
                let _ = tokio::time::timeout(Duration::from_millis(50), dropped).await;
            }
        }
        let count = open.count().saturating_sub(open.leaving());
        let served_fully = count < cap || open.close_longest_idle();
        if !served_fully {
            if warned.is_none_or(|at| at.elapsed() > Duration::from_secs(10)) {
                warned = Some(Instant::now());
                tracing::warn!(open = count, cap, reserve, "connection cap reached");
            }
            if count >= cap + reserve {
                refuse(stream, &refusing);
                continue;
            }
        }
        let _ = stream.set_nodelay(true);
        let slot = open.enter();
        let track = slot.track.clone();
        let connection = Arc::new(Connection::accepted_on(stream.local_addr().ok()));
        let app = app.clone();
        let service =
            tower::service_fn(move |req: axum::extract::Request<hyper::body::Incoming>| {
                let app = app.clone();
                let connection = connection.clone();
                let track = track.clone();
                async move {
                    let busy = Busy::enter(track.clone());
                    if !served_fully && is_stream(&req) {
                        return Ok::<_, Infallible>(busy_response().map(|body| Tracked {
                            inner: body,
                            _busy: busy,
                        }));
                    }
                    let mut req = req.map(axum::body::Body::new);
                    req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                    req.extensions_mut().insert(connection);
                    let response = match app.oneshot(req).await {
                        Ok(response) => response,
                        Err(never) => match never {},
                    };
                    if response.status() == StatusCode::SWITCHING_PROTOCOLS {
                        // The socket now carries a WebSocket until it closes.
                        track.stream.store(true, Ordering::Relaxed);
                    }
                    Ok(response.map(|body| Tracked {
                        inner: body,
                        _busy: busy,
                    }))
                }
            });
        let builder = if served_fully {
            builder.clone()
        } else {
            one_request.clone()
        };
        let first_byte = limits.header_timeout;
        let stopping = lifecycle.stopping();
        tokio::spawn(async move {
            let track = slot.track.clone();
            // hyper's header timer starts only once bytes arrive; a client
            // that connects and sends nothing is dropped here instead (or
            // sooner, closed to make room).
            let mut probe = [0u8; 1];
            tokio::select! {
                peeked = tokio::time::timeout(first_byte, stream.peek(&mut probe)) => {
                    if !matches!(peeked, Ok(Ok(1..))) {
                        return;
                    }
                }
                _ = track.close.notified() => return,
            }
            // The slot travels with the socket, into a WebSocket if it
            // becomes one, and is given back when the socket closes.
            let io = TokioIo::new(Counted {
                stream,
                _slot: slot,
            });
            let conn =
                builder.serve_connection_with_upgrades(io, TowerToHyperService::new(service));
            let mut conn = std::pin::pin!(conn);
            let mut stopping = std::pin::pin!(stopping);
            let result = tokio::select! {
                result = conn.as_mut() => result,
                _ = track.close.notified() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
                _ = &mut stopping => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(err) = result {
                tracing::debug!(error = %err, "connection closed with an error");
            }
        });
    }
    drop(listener);
    let deadline = tokio::time::Instant::now() + DRAIN;
    while open.count() > 0 && tokio::time::Instant::now() < deadline {
        let _ = tokio::time::timeout(Duration::from_millis(50), open.closed.notified()).await;
    }
    Ok(())
}

/// The open connections, and which of them may be closed to make room.
#[derive(Default)]
struct Open {
    count: AtomicUsize,
    next_id: AtomicU64,
    tracks: Mutex<HashMap<u64, Arc<Track>>>,
    /// Woken when the last connection closes.
    closed: tokio::sync::Notify,
    /// Connections asked to close that have not closed yet.
    leaving: AtomicUsize,
    /// Woken whenever a connection closes.
    dropped: tokio::sync::Notify,
    /// What idle times are measured from.
    epoch: std::sync::OnceLock<Instant>,
}

/// One connection's state as the cap sees it.
struct Track {
    /// Requests whose response is not fully sent.
    busy: AtomicUsize,
    /// Carries a WebSocket: never idle.
    stream: AtomicBool,
    /// When it last became idle, in ms since `epoch`.
    idle_since: AtomicU64,
    epoch: Instant,
    /// Asked to close to make room.
    closing: AtomicBool,
    close: tokio::sync::Notify,
}

impl Open {
    fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    fn leaving(&self) -> usize {
        self.leaving.load(Ordering::Acquire)
    }

    fn enter(self: &Arc<Self>) -> Slot {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let epoch = *self.epoch.get_or_init(Instant::now);
        let track = Arc::new(Track {
            busy: AtomicUsize::new(0),
            stream: AtomicBool::new(false),
            idle_since: AtomicU64::new(epoch.elapsed().as_millis() as u64),
            epoch,
            closing: AtomicBool::new(false),
            close: tokio::sync::Notify::new(),
        });
        self.tracks
            .lock()
            .expect("connections lock")
            .insert(id, track.clone());
        self.count.fetch_add(1, Ordering::AcqRel);
        Slot {
            open: self.clone(),
            id,
            track,
        }
    }

    /// Asks the connection idle the longest to close; `false` if none is.
    /// Linear in open connections, and only run at the cap.
    fn close_longest_idle(&self) -> bool {
        let tracks = self.tracks.lock().expect("connections lock");
        let idlest = tracks
            .values()
            .filter(|t| {
                t.busy.load(Ordering::Acquire) == 0
                    && !t.stream.load(Ordering::Relaxed)
                    && !t.closing.load(Ordering::Relaxed)
            })
            .min_by_key(|t| t.idle_since.load(Ordering::Relaxed));
        match idlest {
            Some(track) => {
                track.closing.store(true, Ordering::Relaxed);
                self.leaving.fetch_add(1, Ordering::AcqRel);
                // Stored if the connection is not waiting yet.
                track.close.notify_one();
                true
            }
            None => false,
        }
    }
}

/// A connection's place among the open ones, given back when its socket
/// (or the WebSocket it became) is dropped.
struct Slot {
    open: Arc<Open>,
    id: u64,
    track: Arc<Track>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.open
            .tracks
            .lock()
            .expect("connections lock")
            .remove(&self.id);
        if self.track.closing.load(Ordering::Relaxed) {
            self.open.leaving.fetch_sub(1, Ordering::AcqRel);
        }
        self.open.dropped.notify_waiters();
        if self.open.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.open.closed.notify_waiters();
        }
    }
}

/// A request in flight on a connection, until its response is sent.
struct Busy(Arc<Track>);

impl Busy {
    fn enter(track: Arc<Track>) -> Busy {
        track.busy.fetch_add(1, Ordering::AcqRel);
        Busy(track)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let now = self.0.epoch.elapsed().as_millis() as u64;
        self.0.idle_since.store(now, Ordering::Relaxed);
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its request counted as in flight until it
/// has been sent (or dropped).
struct Tracked {
    inner: axum::body::Body,
    _busy: Busy,
}

impl hyper::body::Body for Tracked {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A socket holding its connection's [`Slot`].
struct Counted {
    stream: TcpStream,
    _slot: Slot,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// A live event stream (SSE or WebSocket): not served above the cap.
fn is_stream<B>(req: &axum::http::Request<B>) -> bool {
    let path = req.uri().path();
    req.headers().contains_key(header::UPGRADE)
        || path.ends_with("/events")
        || path.ends_with("/events/ws")
        || req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/event-stream"))
}

const BUSY_JSON: &str =
    r#"{"error":"Too many open connections; retry shortly","code":"connection_limit"}"#;

fn busy_response() -> Response<axum::body::Body> {
    let mut response = Response::new(axum::body::Body::from(BUSY_JSON));
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// The whole answer to a connection past the cap and its reserve.
fn refusal() -> String {
    format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{BUSY_JSON}",
        BUSY_JSON.len()
    )
}

/// Connections being refused at once; past it they are dropped unanswered.
const MAX_REFUSING: usize = 64;

/// Answers a connection past the cap with a 503 and closes it. Its request
/// is read (briefly) before closing, so the client gets the answer instead
/// of a reset.
fn refuse(mut stream: TcpStream, refusing: &Arc<AtomicUsize>) {
    let _ = stream.try_write(refusal().as_bytes());
    if refusing.fetch_add(1, Ordering::AcqRel) >= MAX_REFUSING {
        refusing.fetch_sub(1, Ordering::AcqRel);
        return;
    }
    let refusing = refusing.clone();
    tokio::spawn(async move {
        let _ = stream.shutdown().await;
        let mut sink = [0u8; 1024];
        let _ = tokio::time::timeout(Duration::from_millis(500), async {
            while matches!(stream.read(&mut sink).await, Ok(1..)) {}
        })
        .await;
        refusing.fetch_sub(1, Ordering::AcqRel);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cap_leaves_descriptors_and_a_reserve() {
        // 1024: 128 kept for the rest, 896 for connections, 28 of them the reserve.
        assert_eq!(connection_cap(None, Some(1024)), (868, 28));
        assert_eq!(connection_cap(None, Some(256)), (186, 6));
        // Tiny limits still serve someone; huge ones stop at the ceiling.
        assert_eq!(connection_cap(None, Some(16)).0, 1);
        assert_eq!(connection_cap(None, Some(u64::MAX)).0, DEFAULT_CEILING);
        assert_eq!(connection_cap(Some(50), Some(1024)), (50, 4));
        assert_eq!(connection_cap(Some(0), None), (1, 4));
    }

    #[test]
    fn the_longest_idle_connection_is_closed_first_and_streams_never() {
        let open = Arc::new(Open::default());
        let a = open.enter();
        let b = open.enter();
        let c = open.enter();
        a.track.idle_since.store(5, Ordering::Relaxed);
        b.track.idle_since.store(1, Ordering::Relaxed);
        c.track.idle_since.store(0, Ordering::Relaxed);
        c.track.stream.store(true, Ordering::Relaxed);
        let busy = Busy::enter(a.track.clone());
        assert!(open.close_longest_idle());
        assert!(b.track.closing.load(Ordering::Relaxed));
        // a is busy, b already closing, c a stream: none left to close.
        assert!(!open.close_longest_idle());
        drop(busy);
        assert!(open.close_longest_idle());
        assert!(a.track.closing.load(Ordering::Relaxed));
        assert_eq!(open.count(), 3);
        drop((a, b, c));
        assert_eq!(open.count(), 0);
        assert!(open.tracks.lock().unwrap().is_empty());
    }
}
