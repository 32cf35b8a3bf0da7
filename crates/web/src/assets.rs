//! The stylesheet, scripts and icon, compiled into the binary so the product
//! runs without a build step or files beside it.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// One stylesheet, served as one file: the design system (tokens, type,
/// components) first, then one file per feature, so each feature's styles
/// live beside its script and build only on the shared tokens.
const CSS: &str = concat!(
    include_str!("../assets/app.css"),
    include_str!("../assets/thread.css"),
    include_str!("../assets/board.css"),
    include_str!("../assets/hire.css"),
    include_str!("../assets/localmodels.css"),
    include_str!("../assets/push.css"),
    include_str!("../assets/runs.css"),
    include_str!("../assets/chat.css"),
);

/// The board's scripts, loaded in this order by every page. `app.js` is the
/// core (API calls, toasts, forms, live updates) and exposes its helpers as
/// `window.Paperclip`; each other file is one feature built on them.
pub const SCRIPTS: &[(&str, &str)] = &[
    ("app.js", include_str!("../assets/app.js")),
    ("theme.js", include_str!("../assets/theme.js")),
    ("task-edit.js", include_str!("../assets/task-edit.js")),
    ("notices.js", include_str!("../assets/notices.js")),
    ("sample.js", include_str!("../assets/sample.js")),
    ("hire.js", include_str!("../assets/hire.js")),
    ("hire-models.js", include_str!("../assets/hire-models.js")),
    ("localmodels.js", include_str!("../assets/localmodels.js")),
    ("settings.js", include_str!("../assets/settings.js")),
    ("company-port.js", include_str!("../assets/company-port.js")),
    ("detail.js", include_str!("../assets/detail.js")),
    ("palette.js", include_str!("../assets/palette.js")),
    ("account.js", include_str!("../assets/account.js")),
    ("members.js", include_str!("../assets/members.js")),
    ("cards.js", include_str!("../assets/cards.js")),
    ("secrets.js", include_str!("../assets/secrets.js")),
    ("skills.js", include_str!("../assets/skills.js")),
    ("account-page.js", include_str!("../assets/account-page.js")),
    ("attachments.js", include_str!("../assets/attachments.js")),
    ("routines.js", include_str!("../assets/routines.js")),
    ("workspaces.js", include_str!("../assets/workspaces.js")),
    ("thread.js", include_str!("../assets/thread.js")),
    ("chat.js", include_str!("../assets/chat.js")),
    ("chief.js", include_str!("../assets/chief.js")),
    ("board.js", include_str!("../assets/board.js")),
    ("push.js", include_str!("../assets/push.js")),
    ("live-poll.js", include_str!("../assets/live-poll.js")),
    (
        "agent-instructions.js",
        include_str!("../assets/agent-instructions.js"),
    ),
    (
        "prompt-preview.js",
        include_str!("../assets/prompt-preview.js"),
    ),
];

/// Loaded blocking in `<head>`, outside [`SCRIPTS`]: it must set the theme
/// before the first paint.
pub const THEME_BOOT: &str = include_str!("../assets/theme-boot.js");

const FAVICON: &str = include_str!("../assets/favicon.svg");

// Short max-age: the binary can be replaced under the same URL; a reload
// after an upgrade should pick the new assets up within minutes.
const CACHE: &str = "public, max-age=300";

#[paperclip_macros::handler]
pub async fn css() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, CACHE),
        ],
        CSS,
    )
}

#[paperclip_macros::handler]
pub async fn script(Path(name): Path<String>) -> Response {
    const BOOT: &[(&str, &str)] = &[("theme-boot.js", THEME_BOOT)];
    match SCRIPTS.iter().chain(BOOT).find(|(n, _)| *n == name) {
        Some((_, body)) => (
            [
                (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
                (header::CACHE_CONTROL, CACHE),
            ],
            *body,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[paperclip_macros::handler]
pub async fn favicon() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, CACHE),
        ],
        FAVICON,
    )
}

#[cfg(test)]
mod tests {
    /// Every script parses: one syntax error stops every page's behaviour,
    /// which the browser tests then report as thirty unrelated timeouts.
    /// Needs `node` (CI has it: PAPERCLIP_REQUIRE_BROWSER=1).
    #[test]
    fn every_script_parses() {
        let node = std::process::Command::new("node").arg("--version").output();
        if node.is_err() {
            assert_ne!(
                std::env::var("PAPERCLIP_REQUIRE_BROWSER").as_deref(),
                Ok("1"),
                "node is needed to check the scripts"
            );
            return;
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
        let names = super::SCRIPTS
            .iter()
            .map(|(n, _)| *n)
            .chain(["theme-boot.js"]);
        for name in names {
            let out = std::process::Command::new("node")
                .arg("--check")
                .arg(dir.join(name))
                .output()
                .expect("run node --check");
            assert!(
                out.status.success(),
                "{name} does not parse:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
