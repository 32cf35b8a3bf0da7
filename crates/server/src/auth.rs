//! Who is calling. In local trusted mode (the only mode so far) the server
//! listens on loopback only and every loopback request acts as the implicit
//! board user `local-board`. A request from anywhere else is refused rather
//! than trusted, so a misconfigured proxy cannot grant board access.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::StatusCode;
use paperclip_core::actor::Actor;

use crate::error::ApiError;

/// Header by which an agent ties a request to its heartbeat run.
pub const RUN_ID_HEADER: &str = "x-paperclip-run-id";

/// The authenticated caller of a request.
pub struct Caller(pub Actor);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Caller, ApiError> {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0);
        match peer {
            Some(addr) if addr.ip().is_loopback() => {}
            // Without connection info the app is being driven in-process (tests
            // of the router itself); that is as local as it gets.
            None => {}
            Some(_) => {
                return Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "Local trusted mode accepts requests from loopback only",
                ))
            }
        }
        let mut actor = Actor::local_board();
        actor.run_id = parts
            .headers
            .get(RUN_ID_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string);
        Ok(Caller(actor))
    }
}

impl Caller {
    /// Board-only operations (force-release, company deletion, ...).
    pub fn require_board(&self) -> Result<&Actor, ApiError> {
        if self.0.is_board() {
            Ok(&self.0)
        } else {
            Err(ApiError::forbidden("Board access required"))
        }
    }
}
