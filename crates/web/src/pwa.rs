//! The board as an installable web app: its manifest, icons, the service
//! worker (`/sw.js`, at the root so its scope is the whole board) and the
//! offline shell it shows when the server cannot be reached. All compiled
//! into the binary like the other assets. The manifest and the worker are
//! public on an authenticated instance (the browser fetches them without
//! asking the person): they say nothing about any company.

use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use maud::{html, DOCTYPE};

/// Paths the server serves to anyone, signed in or not.
pub const PWA_PATHS: &[&str] = &["/manifest.webmanifest", "/sw.js"];

const SW: &str = include_str!("../assets/sw.js");

/// The app's colour (the favicon's) and the light page background.
const THEME: &str = "#3b5bdb";
const BACKGROUND: &str = "#f6f7f9";

const ICONS: &[(&str, &[u8])] = &[
    (
        "icon-192.png",
        include_bytes!("../assets/icons/icon-192.png"),
    ),
    (
        "icon-512.png",
        include_bytes!("../assets/icons/icon-512.png"),
    ),
    (
        "icon-maskable-512.png",
        include_bytes!("../assets/icons/icon-maskable-512.png"),
    ),
];

pub fn routes<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router
        .route("/manifest.webmanifest", get(manifest))
        .route("/sw.js", get(service_worker))
        .route("/ui/offline.html", get(offline))
        .route("/ui/icons/{name}", get(icon))
}

async fn manifest() -> impl IntoResponse {
    let body = serde_json::json!({
        "id": "/",
        "name": "Paperclip",
        "short_name": "Paperclip",
        "description": "The board of your AI agent companies: tasks, approvals, runs and costs.",
        "start_url": "/",
        "scope": "/",
        "display": "standalone",
        "background_color": BACKGROUND,
        "theme_color": THEME,
        "icons": [
            { "src": "/ui/icons/icon-192.png", "sizes": "192x192", "type": "image/png", "purpose": "any" },
            { "src": "/ui/icons/icon-512.png", "sizes": "512x512", "type": "image/png", "purpose": "any" },
            { "src": "/ui/icons/icon-maskable-512.png", "sizes": "512x512", "type": "image/png", "purpose": "maskable" },
            { "src": "/ui/favicon.svg", "sizes": "any", "type": "image/svg+xml" },
        ],
    });
    (
        [
            (header::CONTENT_TYPE, "application/manifest+json"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        body.to_string(),
    )
}

/// The worker with its cache name and precache list filled in. The name
/// changes with the scripts and the worker, so such a binary makes the
/// browser install the new worker, which drops the old cache. (The cache
/// is only the offline fallback: online, every asset is fetched fresh.)
fn worker_text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        let mut shell = vec![
            "/ui/offline.html".to_string(),
            "/ui/app.css".to_string(),
            "/ui/favicon.svg".to_string(),
            "/ui/icons/icon-192.png".to_string(),
        ];
        shell.extend(
            crate::assets::SCRIPTS
                .iter()
                .map(|(n, _)| format!("/ui/{n}")),
        );
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        env!("CARGO_PKG_VERSION").hash(&mut hasher);
        for (name, body) in crate::assets::SCRIPTS {
            (name, body).hash(&mut hasher);
        }
        SW.hash(&mut hasher);
        SW.replace("__VERSION__", &format!("{:016x}", hasher.finish()))
            .replace(
                "__PRECACHE__",
                &serde_json::to_string(&shell).expect("a list of paths"),
            )
    })
}

async fn service_worker() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            // Browsers check the worker for updates; never from a cache.
            (header::CACHE_CONTROL, "no-cache"),
        ],
        worker_text(),
    )
}

async fn offline() -> impl IntoResponse {
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { "Offline · Paperclip" }
                link rel="icon" type="image/svg+xml" href="/ui/favicon.svg";
                link rel="stylesheet" href="/ui/app.css";
            }
            body {
                main.offline-shell #offline {
                    img src="/ui/icons/icon-192.png" alt="" width="64" height="64";
                    h1 { "You are offline" }
                    p.muted { "The board comes back when the server does." }
                    button.primary type="button" onclick="location.reload()" { "Try again" }
                }
            }
        }
    };
    ([(header::CACHE_CONTROL, "public, max-age=300")], page)
}

async fn icon(Path(name): Path<String>) -> Response {
    match ICONS.iter().find(|(n, _)| *n == name) {
        Some((_, bytes)) => (
            [
                (header::CONTENT_TYPE, "image/png"),
                (header::CACHE_CONTROL, "public, max-age=86400"),
            ],
            *bytes,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worker_has_its_version_and_precache_filled_in() {
        let text = worker_text();
        assert!(!text.contains("__VERSION__") && !text.contains("__PRECACHE__"));
        assert!(text.contains("\"/ui/offline.html\"") && text.contains("\"/ui/app.js\""));
    }

    #[test]
    fn every_icon_is_a_png_of_its_size() {
        for (name, bytes) in ICONS {
            assert_eq!(&bytes[1..4], b"PNG", "{name}");
            let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
            let size: u32 = name
                .trim_end_matches(".png")
                .rsplit('-')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(width, size, "{name}");
        }
    }
}
