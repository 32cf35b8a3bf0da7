//! The stylesheet and script, compiled into the binary so the product runs
//! without a build step or files beside it.

use axum::http::header;
use axum::response::IntoResponse;

const CSS: &str = include_str!("../assets/app.css");
const JS: &str = include_str!("../assets/app.js");

// Short max-age: the binary can be replaced under the same URL; a reload
// after an upgrade should pick the new assets up within minutes.
const CACHE: &str = "public, max-age=300";

pub async fn css() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, CACHE),
        ],
        CSS,
    )
}

pub async fn js() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, CACHE),
        ],
        JS,
    )
}
