//! The HTTP API of Paperclip. Routes are grouped per resource in [`routes`];
//! each handler authenticates the caller ([`auth`]), parses its input
//! ([`extract`]), calls the store and maps store errors to upstream's status
//! codes ([`error`]). The OpenAPI document is generated from the same route
//! registrations, so a route cannot exist without its schema.
//!
//! The crate's unit-test build leaves the app's assembly out ([`app`],
//! [`serve`], [`routes::router`]): the unit tests test pure parts, the
//! black-box suite drives the real router through the binary, and without
//! it the test build skips the router's monomorphisation (23 CPU-s instead
//! of 62 on CI's machine). Handlers are dead code there, hence the allow.
#![cfg_attr(test, allow(dead_code, unused_imports))]

pub mod access;
pub mod agent_view;
pub mod auth;
pub mod bootstrap;
mod clone;
pub mod error;
pub mod extract;
pub mod guard;
pub mod limits;
pub mod local_peer;
pub mod metrics;
pub mod multipart;
pub mod people;
pub mod permissions;
pub mod push;
pub mod routes;
pub mod sample;
pub mod scope;
mod serve;
pub mod signin;
pub mod storage;
pub mod storage_s3;
pub mod traces;

pub use guard::{Limits, Security};
#[cfg(not(test))]
pub use serve::serve;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::Router;
use paperclip_store::Store;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

/// Request bodies above this are refused with 413 before they are parsed.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub runtime: paperclip_runtime::Runtime,
    pub info: Arc<ServerInfo>,
    pub security: Arc<Security>,
    /// The process's life, owned by `main`: the accept loop and live
    /// streams end on its shutdown.
    pub lifecycle: paperclip_runtime::Lifecycle,
}

pub struct ServerInfo {
    pub version: &'static str,
    pub started_at: String,
    pub data_dir: String,
    /// The commit the binary was built from, when it was built in a git
    /// checkout (see the binary's build script).
    pub build: Option<BuildCommit>,
    /// When start-up (restart recovery included) was done. The listener
    /// serves only after it, so the health answer is never `starting`.
    pub ready_at: String,
    /// The automatic database backups, when they are on.
    pub backups: Option<paperclip_runtime::backups::Backups>,
    /// Backups a person asks for (`POST /api/instance/database-backups`),
    /// on or off the schedule: the same owner, so two never overlap.
    pub backup_service: Option<paperclip_runtime::backups::Backups>,
}

/// What the build recorded of its commit.
#[derive(Debug, Clone)]
pub struct BuildCommit {
    pub full_sha: String,
    pub short_sha: String,
    /// `None` on a detached HEAD.
    pub branch: Option<String>,
    pub subject: String,
    pub committed_at: Option<String>,
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Paperclip API", description = "Control plane for companies staffed by AI agents; compatible with upstream Paperclip's /api."),
    tags(
        (name = "health"), (name = "companies"), (name = "agents"), (name = "goals"),
        (name = "projects"), (name = "issues"), (name = "comments"), (name = "labels"),
        (name = "documents"), (name = "activity"), (name = "heartbeats"), (name = "events"), (name = "approvals"), (name = "costs"), (name = "secrets"),
        (name = "routines"), (name = "workspaces")
    )
)]
struct ApiDoc;

/// The whole application: API routes, the OpenAPI document at
/// `/api/openapi.json`, and the body limit.
#[cfg(not(test))]
pub fn app(state: AppState) -> Router {
    let (router, api) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(routes::router())
        .split_for_parts();
    let api = Arc::new(api);
    let logs = state.runtime.logs().clone();
    let read_log: paperclip_web::LogReader = Arc::new(move |log_ref, offset, limit| {
        logs.read(log_ref, offset, limit)
            .map(|page| (page.content, page.next_offset))
    });
    let logs = state.runtime.logs().clone();
    let log_cut: paperclip_web::LogCutReader = Arc::new(move |log_ref| {
        Ok(logs.cut(log_ref)?.map(|c| paperclip_web::LogCut {
            head_bytes: c.head_bytes,
            tail_start: c.tail_start,
            max_bytes: c.max_bytes,
        }))
    });
    let hub = state.runtime.hub().clone();
    let live_position: paperclip_web::LivePosition = Arc::new(move || hub.position());
    let web = paperclip_web::router(state.store.clone(), read_log, log_cut, live_position).layer(
        axum::middleware::from_fn_with_state(state.clone(), board_only),
    );
    use metrics::WithMetrics;
    use traces::WithTraces;
    router
        .merge(web)
        .route(
            "/api/openapi.json",
            axum::routing::get(move || {
                let api = api.clone();
                async move { axum::Json(api.as_ref().clone()) }
            }),
        )
        .fallback(routes::not_found)
        .with_metrics()
        .with_traces()
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::guard,
        ))
        .with_state(state)
}

/// The UI is the board's: an agent's key gets a 403 with the reason, and a
/// path under `/api` that no API route took stays a JSON 404.
async fn board_only(
    axum::extract::State(state): axum::extract::State<AppState>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::extract::FromRequestParts;
    use axum::response::IntoResponse;
    if request.uri().path().starts_with("/api/") {
        return routes::not_found(request.uri().clone())
            .await
            .into_response();
    }
    let path = request.uri().path().to_string();
    let public = path == "/login"
        || path.starts_with("/invite/")
        || path.starts_with("/ui/")
        || path == "/favicon.ico"
        || paperclip_web::PWA_PATHS.contains(&path.as_str());
    if public && state.security.team.authenticated() {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let caller = match auth::Caller::from_request_parts(&mut parts, &state).await {
        Ok(caller) => caller,
        // Pages send a person who is not signed in to the sign-in page.
        Err(err)
            if err.status == axum::http::StatusCode::UNAUTHORIZED
                && state.security.team.authenticated()
                && parts.method == axum::http::Method::GET =>
        {
            let back = parts
                .uri
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or_default();
            let to = format!("/login?next={}", urlencode(&back));
            return axum::response::Redirect::to(&to).into_response();
        }
        Err(err) => return err.into_response(),
    };
    if let Err(err) = caller.require_board() {
        return err.into_response();
    }
    let viewer = match caller.person() {
        None => paperclip_web::Viewer::default(),
        Some(person) => paperclip_web::Viewer {
            companies: Some(
                person
                    .memberships
                    .iter()
                    .filter_map(|m| {
                        person
                            .role_in(&m.company_id)
                            .map(|r| (m.company_id.clone(), r))
                    })
                    .collect(),
            ),
            name: Some(person.user.name.clone()),
            // A session caller's cookie was read as text above; a key
            // caller with a garbled cookie has no session to protect.
            csrf: people::session_token(&parts.headers)
                .ok()
                .flatten()
                .map(|t| people::csrf_token(&t)),
            user_id: Some(person.user.id.clone()),
            instance_admin: person.user.is_instance_admin,
        },
    };
    paperclip_web::as_viewer(
        viewer,
        next.run(axum::extract::Request::from_parts(parts, body)),
    )
    .await
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
