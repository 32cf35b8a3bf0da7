//! Responses for large lists.

use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// A JSON array serialised into a buffer sized for it up front: axum's `Json`
/// starts at 128 bytes and doubles, copying a 700 KiB list page about 13
/// times on its way up.
pub struct JsonList<T> {
    pub items: Vec<T>,
    /// About how many bytes one item takes as JSON.
    pub item_bytes: usize,
}

/// The largest buffer reserved ahead; a bigger body grows as usual.
const MAX_RESERVE: usize = 8 << 20;

impl<T: Serialize> IntoResponse for JsonList<T> {
    fn into_response(self) -> Response {
        let reserve = self
            .items
            .len()
            .saturating_mul(self.item_bytes)
            .saturating_add(2)
            .min(MAX_RESERVE);
        let mut body = Vec::with_capacity(reserve);
        match serde_json::to_writer(&mut body, &self.items) {
            Ok(()) => (
                [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
                body,
            )
                .into_response(),
            // The same answer axum's `Json` gives a value that cannot be
            // written (our typed responses always can).
            Err(err) => (StatusCode::INTERNAL_SERVER_ERROR, err.to_string()).into_response(),
        }
    }
}
