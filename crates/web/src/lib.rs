//! The board UI: pages rendered on the server with maud from the same store
//! the API uses, styles and a small script embedded in the binary. Actions
//! (create a task, approve, pause ...) call the JSON API from the browser;
//! pages follow the company's live event stream and re-render their main
//! region in place. Mounted by the server behind the board-only check.

mod assets;
mod charts;
mod fmt;
mod layout;
mod markdown;
mod pages;
mod pwa;
pub mod thrift;
mod viewer;

pub use pwa::PWA_PATHS;
pub use viewer::{scope as as_viewer, Viewer};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;
use maud::Markup;
use paperclip_core::model::Company;
use paperclip_store::Store;

#[derive(Clone)]
pub(crate) struct Web {
    pub store: Store,
    pub logs: LogReader,
    pub log_cut: LogCutReader,
    pub live_position: LivePosition,
}

/// The id of the newest live event. A page records it before it reads
/// anything, and its event stream starts after it: an event between the
/// render and the subscription is replayed, not lost.
pub type LivePosition = std::sync::Arc<dyn Fn() -> u64 + Send + Sync>;

/// Reads part of a run's log (NDJSON lines) by its `logRef`: `(ref, offset,
/// limit)` to `(whole lines, next offset)`. The runtime's log store behind a
/// function, so the UI does not depend on the runtime.
pub type LogReader =
    std::sync::Arc<dyn Fn(&str, u64, u64) -> std::io::Result<(String, u64)> + Send + Sync>;

/// Where a run log that outgrew its limit was cut: `[head_bytes,
/// tail_start)` was left out (a marker line stands for it).
#[derive(Debug, Clone, Copy)]
pub struct LogCut {
    pub head_bytes: u64,
    pub tail_start: u64,
    pub max_bytes: u64,
}

/// Whether a run's log (by its `logRef`) was cut for its size.
pub type LogCutReader =
    std::sync::Arc<dyn Fn(&str) -> std::io::Result<Option<LogCut>> + Send + Sync>;

/// The UI's routes, with their state applied so the server can merge them.
pub fn router<S: Clone + Send + Sync + 'static>(
    store: Store,
    logs: LogReader,
    log_cut: LogCutReader,
    live_position: LivePosition,
) -> Router<S> {
    pwa::routes(Router::new())
        .route("/", get(home))
        .route("/ui/app.css", get(assets::css))
        .route("/ui/{script}", get(assets::script))
        .route("/favicon.ico", get(assets::favicon))
        .route("/login", get(login))
        .route("/invite/{token}", get(invite))
        .route("/ui/preview", axum::routing::post(preview))
        .route("/ui/favicon.svg", get(assets::favicon))
        .route("/{prefix}", get(company_root))
        .route("/{prefix}/dashboard", get(pages::dashboard::page))
        .route("/{prefix}/inbox", get(pages::inbox::page))
        .route("/{prefix}/chats", get(pages::chat::list))
        .route("/{prefix}/chats/{agent_key}", get(pages::chat::page))
        .route("/{prefix}/tasks", get(pages::tasks::list))
        .route("/{prefix}/tasks/{identifier}", get(pages::task::page))
        .route("/{prefix}/projects", get(pages::misc::projects))
        .route("/{prefix}/projects/{key}", get(pages::project::page))
        .route(
            "/{prefix}/projects/{key}/{tab}",
            get(pages::links::project_tab),
        )
        .route("/{prefix}/goals", get(pages::misc::goals))
        .route("/{prefix}/goals/{id}", get(pages::goal::page))
        .route("/{prefix}/agents", get(pages::agents::list))
        .route("/{prefix}/agents/{url_key}", get(pages::agent::page))
        .route("/{prefix}/agents/{url_key}/runs", get(pages::runs::list))
        .route(
            "/{prefix}/agents/{url_key}/runs/{run_id}",
            get(pages::run::page),
        )
        .route(
            "/{prefix}/agents/{url_key}/runs/{run_id}/log",
            get(pages::run::full_log),
        )
        .route(
            "/{prefix}/agents/{url_key}/{tab}",
            get(pages::links::agent_tab),
        )
        .route("/{prefix}/issues", get(pages::links::issues))
        .route("/{prefix}/issues/{identifier}", get(pages::links::issue))
        .route("/{prefix}/org", get(pages::org::page))
        .route("/{prefix}/routines", get(pages::routines::page))
        .route("/{prefix}/routines/{id}", get(pages::routine::page))
        .route("/{prefix}/approvals", get(pages::approvals::page))
        .route("/{prefix}/approvals/{id}", get(pages::approval::page))
        .route("/{prefix}/costs", get(pages::costs::page))
        .route("/{prefix}/activity", get(pages::activity::page))
        .route("/{prefix}/artifacts", get(pages::artifacts::page))
        .route("/{prefix}/company/settings", get(pages::settings::page))
        .route("/{prefix}/company/members", get(pages::members::page))
        .route("/{prefix}/company/secrets", get(pages::secrets::page))
        .route("/{prefix}/skills", get(pages::skills::page))
        .route("/{prefix}/account", get(pages::account::page))
        .layer(axum::middleware::from_fn(server_timing))
        .layer(tower_http::compression::CompressionLayer::new())
        .with_state(Web {
            store,
            logs,
            log_cut,
            live_position,
        })
}

/// `Server-Timing: render;dur=<ms>` on every page: the time from the request
/// reaching the UI to its response being ready (queries and rendering), so
/// the browser's dev tools and the benchmark see the server's share.
async fn server_timing(request: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let started = std::time::Instant::now();
    let mut response = next.run(request).await;
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    if let Ok(value) = axum::http::HeaderValue::from_str(&format!("render;dur={ms:.2}")) {
        response.headers_mut().insert("server-timing", value);
    }
    response
}

/// Everything the layout needs about where the board is.
pub(crate) struct Ctx {
    pub companies: Vec<Company>,
    pub company: Company,
    pub pending_approvals: usize,
    /// Failed runs in the board's inbox (not dismissed, not since fixed).
    pub open_failures: usize,
    /// Cards agents put in open tasks' threads that wait on the board.
    pub pending_questions: i64,
    /// The live event id the page's data is at least as new as.
    pub live_from: u64,
}

/// A page or a page-shaped error.
pub(crate) type PageResult = Result<Response, Response>;

pub(crate) fn html(markup: Markup) -> PageResult {
    Ok(markup.into_response())
}

pub(crate) fn failure(status: StatusCode, title: &str, detail: &str) -> Response {
    (status, layout::bare(title, detail)).into_response()
}

/// The 404 page of something a link named that is not there.
pub(crate) fn not_found(title: &str, detail: &str) -> Response {
    failure(StatusCode::NOT_FOUND, title, detail)
}

pub(crate) fn store_failure(err: paperclip_store::Error) -> Response {
    match err {
        paperclip_store::Error::NotFound(what) => {
            failure(StatusCode::NOT_FOUND, "Something went wrong", &what)
        }
        // The database's own words name tables and columns: they go to the
        // server's log, and the page says where to find them.
        paperclip_store::Error::Database(db) => {
            tracing::error!(error = %db, "database error on a board page");
            failure(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Something went wrong",
                "The database could not answer this page. Its cause is in the server's log \
                 (\"database error on a board page\"); reload to try again.",
            )
        }
        other => failure(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Something went wrong",
            &other.to_string(),
        ),
    }
}

impl Web {
    /// The company whose issue prefix is `prefix` (any case), or a 404 page.
    pub(crate) async fn ctx(&self, prefix: &str) -> Result<Ctx, Response> {
        let live_from = (self.live_position)();
        let mut companies = paperclip_store::org::companies::list(&self.store)
            .await
            .map_err(store_failure)?;
        // A person sees only their companies; another's is as absent as one
        // that does not exist.
        let viewer = viewer::current();
        companies.retain(|c| viewer.allows(&c.id));
        let Some(company) = companies
            .iter()
            .find(|c| c.issue_prefix.eq_ignore_ascii_case(prefix))
            .cloned()
        else {
            return Err(failure(
                StatusCode::NOT_FOUND,
                "No such company",
                &format!("No company uses the prefix {prefix}."),
            ));
        };
        let pending = paperclip_store::approvals::list(&self.store, &company.id, Some("pending"))
            .await
            .map_err(store_failure)?
            .len();
        let open_failures = paperclip_store::views::inbox_badge::open_failures(
            &self.store,
            &company.id,
            viewer.user_id(),
        )
        .await
        .map_err(store_failure)?;
        let pending_questions =
            paperclip_store::thread::interactions::pending_count(&self.store, &company.id)
                .await
                .map_err(store_failure)?;
        Ok(Ctx {
            companies,
            company,
            pending_approvals: pending,
            open_failures,
            pending_questions,
            live_from,
        })
    }
}

#[paperclip_macros::handler]
async fn home(State(web): State<Web>) -> PageResult {
    let mut companies = paperclip_store::org::companies::list(&web.store)
        .await
        .map_err(store_failure)?;
    let viewer = viewer::current();
    companies.retain(|c| viewer.allows(&c.id));
    match companies.first() {
        Some(c) => Ok(Redirect::to(&format!("/{}/dashboard", c.issue_prefix)).into_response()),
        None if viewer.companies.is_some() && !viewer.instance_admin => {
            html(layout::no_company(&viewer))
        }
        None => html(layout::welcome()),
    }
}

#[paperclip_macros::handler]
async fn login() -> PageResult {
    html(layout::login())
}

#[paperclip_macros::handler]
async fn invite(Path(token): Path<String>) -> PageResult {
    html(layout::invite(&token))
}

/// Longest description the preview renders: the API's own cap on a
/// description is far above what a person previews while typing.
const PREVIEW_MAX: usize = 256 * 1024;

/// Renders Markdown exactly as the task page will (the editor's Preview tab),
/// so what a person sees before saving is what everyone sees after.
/// JSON like every other write, so the server's cross-site checks (JSON
/// only, same origin) cover it too.
#[paperclip_macros::handler]
async fn preview(axum::Json(body): axum::Json<Preview>) -> Response {
    if body.markdown.len() > PREVIEW_MAX {
        return (StatusCode::PAYLOAD_TOO_LARGE, "Too long to preview").into_response();
    }
    markdown::render(&body.markdown).into_response()
}

#[derive(serde::Deserialize)]
struct Preview {
    markdown: String,
}

#[paperclip_macros::handler]
async fn company_root(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    Ok(Redirect::to(&format!("/{}/dashboard", ctx.company.issue_prefix)).into_response())
}
