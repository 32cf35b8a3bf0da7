//! Bodies that are checked against `paperclip_core::limits` before the
//! handler runs, so an oversized field or list is a 400 naming it and never
//! reaches the store (or its write lock).

use axum::extract::{FromRequest, Request};
use paperclip_core::limits::{Validate, Violation};
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::error::ApiError;
use crate::extract::JsonBody;

/// Like [`JsonBody`], then [`Validate::validate`].
pub struct ValidJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Validate> FromRequest<S> for ValidJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<ValidJson<T>, ApiError> {
        let JsonBody(value) = JsonBody::<T>::from_request(req, state).await?;
        value.validate().map_err(violation)?;
        Ok(ValidJson(value))
    }
}

pub fn violation(v: Violation) -> ApiError {
    ApiError::validation(json!([v.to_json()]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use paperclip_core::input::NewAgent;

    #[tokio::test]
    async fn an_oversized_name_is_a_400_naming_it() {
        let body = json!({ "name": "n".repeat(60_000) }).to_string();
        let req = Request::builder()
            .method("POST")
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body))
            .unwrap();
        let err = ValidJson::<NewAgent>::from_request(req, &())
            .await
            .err()
            .unwrap();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        let details = err.details.unwrap();
        assert_eq!(details[0]["path"], json!(["name"]));
        assert_eq!(details[0]["code"], "too_big");
    }
}
