//! Live events per company, as a WebSocket and as Server-Sent Events. Both
//! send the envelope `{eventId, companyId, type, entityType, entityId,
//! occurredAt, payload}` and, on reconnect with the last event id seen,
//! first replay what was missed (from a bounded buffer).

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream, StreamExt};
use paperclip_runtime::hub::LiveEvent;
use serde::Deserialize;
use tokio_stream::wrappers::BroadcastStream;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::access;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::QueryParams;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(events_ws))
        .routes(routes!(events_sse))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct StreamQuery {
    /// Replay events after this id (SSE clients may send `Last-Event-ID` instead).
    last_event_id: Option<u64>,
}

/// WebSocket stream of the company's live events (JSON text frames).
#[utoipa::path(get, path = "/api/companies/{companyId}/events/ws", tag = "events",
    params(("companyId" = String, Path), StreamQuery),
    responses((status = 101, description = "Switching to WebSocket")))]
#[paperclip_macros::handler]
async fn events_ws(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    QueryParams(q): QueryParams<StreamQuery>,
    upgrade: WebSocketUpgrade,
) -> ApiResult<Response> {
    access::company_scope(&app, &caller, &company_id).await?;
    let events = event_stream(&app, &company_id, q.last_event_id)?;
    // The stream only sends; small buffers keep a subscriber's memory near
    // an SSE one's (tungstenite's defaults are 128 KiB each way).
    Ok(upgrade
        .read_buffer_size(4 * 1024)
        .write_buffer_size(0)
        .max_write_buffer_size(1024 * 1024)
        .max_message_size(64 * 1024)
        .max_frame_size(64 * 1024)
        .on_upgrade(move |socket| pump(socket, events))
        .into_response())
}

async fn pump(mut socket: WebSocket, events: impl Stream<Item = Arc<LiveEvent>> + Send + 'static) {
    let mut events = Box::pin(events);
    // Pings keep a quiet stream from looking idle to proxies and let a dead
    // peer be noticed when the write fails.
    let mut ping = tokio::time::interval(std::time::Duration::from_secs(30));
    ping.tick().await;
    loop {
        tokio::select! {
            _ = ping.tick() => {
                if socket.send(Message::Ping(Default::default())).await.is_err() {
                    return;
                }
            }
            event = events.next() => match event {
                Some(event) => {
                    let text = event.json.clone();
                    if socket.send(Message::Text(text.into())).await.is_err() {
                        return;
                    }
                }
                None => return,
            },
            incoming = socket.recv() => match incoming {
                // The stream is one-way; pings are answered by axum, anything else is ignored.
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                Some(Ok(_)) => {}
            },
        }
    }
}

/// Server-Sent Events stream of the company's live events; `id:` is the event id.
#[utoipa::path(get, path = "/api/companies/{companyId}/events", tag = "events",
    params(("companyId" = String, Path), StreamQuery),
    responses((status = 200, description = "text/event-stream")))]
#[paperclip_macros::handler]
async fn events_sse(
    State(app): State<AppState>,
    caller: Caller,
    Path(company_id): Path<String>,
    QueryParams(q): QueryParams<StreamQuery>,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    access::company_scope(&app, &caller, &company_id).await?;
    let last = q.last_event_id.or_else(|| {
        headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
    });
    let events = event_stream(&app, &company_id, last)?.map(|event| {
        let data = event.json.clone();
        Ok(Event::default()
            .id(event.event_id.to_string())
            .event(event.kind.clone())
            .data(data))
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

/// Missed events first, then live ones. A subscriber too slow to keep up
/// skips what it lagged behind on rather than stalling everyone else. Each
/// company has a bounded number of subscribers (429 beyond it); the place
/// is held until the stream is dropped.
fn event_stream(
    app: &AppState,
    company_id: &str,
    last: Option<u64>,
) -> ApiResult<impl Stream<Item = Arc<LiveEvent>> + Send + 'static> {
    let slot = app.security.subscribe(company_id).ok_or_else(|| {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "Too many live subscribers for this company (at most {}); close other board tabs or streams",
                app.security.limits.max_subscribers_per_company
            ),
        )
    })?;
    let sub = app.runtime.hub().subscribe(company_id, last);
    let live = BroadcastStream::new(sub.live).filter_map(|e| async move { e.ok() });
    let newest_missed = sub.missed.last().map(|e| e.event_id).unwrap_or(0);
    Ok(stream::iter(sub.missed)
        .chain(live.filter(move |e| std::future::ready(e.event_id > newest_missed)))
        .take_until(app.lifecycle.stopping())
        .map(move |event| {
            let _held = &slot;
            event
        }))
}
