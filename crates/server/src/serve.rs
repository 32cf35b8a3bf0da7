//! The accept loop. axum's `serve` has no connection timeouts, so a client
//! that sends its headers one byte at a time, or opens connections and never
//! uses them, would hold a socket (and a file descriptor) forever. Here every
//! connection gets hyper's header read timeout, which also runs while a
//! keep-alive connection sits idle between requests; bodies get their own
//! deadline in [`crate::guard`].

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tower::ServiceExt;

use crate::guard::Connection;
use crate::AppState;

/// How long in-flight requests may take to finish once shutdown is asked for
/// (live streams never finish on their own).
const DRAIN: Duration = Duration::from_secs(3);

/// Serves the app on `listener` until `shutdown` resolves. Each request
/// carries its peer address and its connection's state (see
/// [`crate::guard::Connection`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = state.security.limits.clone();
    let security = state.security.clone();
    let app = crate::app(state);
    let mut builder = auto::Builder::new(TokioExecutor::new()).http1_only();
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true)
        // Bounds what one connection may buffer (headers included).
        .max_buf_size(64 * 1024);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(err) => {
                    // Out of file descriptors (or similar): back off instead
                    // of spinning; idle connections time out and free some.
                    tracing::warn!(error = %err, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let connection = Arc::new(Connection::default());
        let service = app.clone().map_request(
            move |mut req: axum::extract::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
                req.extensions_mut().insert(connection.clone());
                req.map(axum::body::Body::new)
            },
        );
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let first_byte = limits.header_timeout;
        tokio::spawn(async move {
            // hyper's header timer starts only once bytes arrive; a client
            // that connects and sends nothing is dropped here instead.
            let mut probe = [0u8; 1];
            if !matches!(
                tokio::time::timeout(first_byte, stream.peek(&mut probe)).await,
                Ok(Ok(1..))
            ) {
                return;
            }
            let conn = builder.serve_connection_with_upgrades(
                TokioIo::new(stream),
                TowerToHyperService::new(service),
            );
            if let Err(err) = watcher.watch(conn.into_owned()).await {
                tracing::debug!(error = %err, "connection closed with an error");
            }
        });
    }
    drop(listener);
    security.begin_shutdown();
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(DRAIN) => {}
    }
    Ok(())
}
