//! Errors as upstream reports them: `{"error": "...", "details": ...}` with
//! 400 (validation), 401, 403, 404, 409 (state conflict), 413 and 422 (rule).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

pub type ApiResult<T> = Result<T, ApiError>;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            details: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> ApiError {
        self.details = Some(details);
        self
    }

    pub fn validation(details: Value) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "Validation error").with_details(details)
    }

    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }
}

impl From<paperclip_store::Error> for ApiError {
    fn from(err: paperclip_store::Error) -> ApiError {
        use paperclip_store::Error as E;
        match err {
            E::NotFound(message) => ApiError::new(StatusCode::NOT_FOUND, message),
            E::Conflict { message, details } => ApiError {
                status: StatusCode::CONFLICT,
                message,
                details,
            },
            E::Forbidden(message) => ApiError::forbidden(message),
            E::Rule(message) => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message),
            E::Invalid { message, path } => ApiError::validation(json!([{
                "code": "invalid_value",
                "path": path,
                "message": message,
            }])),
            E::Database(db) => {
                tracing::error!(error = %db, "database error");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error")
            }
        }
    }
}

/// What every error answers, and its schema in `/api/openapi.json` (the
/// 4xx responses reference it, so a generated client types errors). Fields
/// in name order, as the JSON object they replaced serialized.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// A machine-readable reason (e.g. `budget_blocked`), repeated from
    /// `details.code` when the details carry one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub code: Option<Value>,
    /// What went wrong in detail: the failing fields of a validation error
    /// (`[{code, path, message}]`), the state a conflict found, ...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// The message, e.g. `Issue not found`.
    pub error: String,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            code: self.details.as_ref().and_then(|d| d.get("code")).cloned(),
            details: self.details,
            error: self.message,
        };
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::PAYLOAD_TOO_LARGE {
            // The unread rest of the body is still on the wire; tell the client
            // not to reuse this connection rather than let its next request fail.
            response.headers_mut().insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
        }
        response
    }
}
