//! Signing in to an authenticated instance, on upstream's paths (its
//! better-auth routes under `/api/auth`): sign up, sign in, sign out, the
//! current session, the profile and a password change. A session is a random
//! token in an HttpOnly cookie; the store keeps its SHA-256.

use std::time::Duration;

use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::JsonBody;
use crate::people::{self, MAX_PASSWORD, MIN_PASSWORD};
use crate::routes::members::PersonRecord;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(sign_up))
        .routes(routes!(sign_in))
        .routes(routes!(sign_out))
        .routes(routes!(get_session))
        .routes(routes!(profile, update_profile))
        .routes(routes!(change_password))
}

/// Failed sign-ins an account takes before it is locked for a while.
const LOCKOUT_FAILURES: usize = 5;
const LOCKOUT_WINDOW: Duration = Duration::from_secs(15 * 60);
/// Sign-in and sign-up attempts per client address.
const ATTEMPTS_PER_IP: usize = 20;
const ATTEMPT_WINDOW: Duration = Duration::from_secs(60);

type Peer = ConnectInfo<std::net::SocketAddr>;

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct SignUp {
    /// The invite being accepted: with sign-up disabled, only people holding
    /// a usable invite may create an account.
    invite_token: Option<String>,
    name: Option<String>,
    email: Option<String>,
    password: Option<String>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct SignIn {
    email: Option<String>,
    password: Option<String>,
}

fn authenticated_only(app: &AppState) -> ApiResult<()> {
    if app.security.team.authenticated() {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "This instance runs in local_trusted mode: nobody signs in (start it with --deployment-mode authenticated)",
        ))
    }
}

pub(crate) fn too_many(message: String, wait_secs: u64) -> ApiError {
    ApiError::new(StatusCode::TOO_MANY_REQUESTS, message)
        .with_details(json!({ "code": "rate_limited", "retryAfterSeconds": wait_secs }))
}

/// Counts an attempt from this address; refuses past the limit.
pub(crate) fn limit_ip(app: &AppState, peer: &Peer, what: &str) -> ApiResult<()> {
    app.security
        .limiter
        .hit(
            &format!("{what}:{}", peer.0.ip()),
            ATTEMPTS_PER_IP,
            ATTEMPT_WINDOW,
        )
        .map_err(|wait| {
            too_many(
                format!("Too many requests from your address: try again in {wait} s"),
                wait,
            )
        })
}

fn field_error(field: &str, code: &str, message: &str) -> ApiError {
    ApiError::validation(json!([{ "code": code, "path": [field], "message": message }]))
}

fn check_email(email: Option<&str>) -> ApiResult<String> {
    let email = email.map(str::trim).unwrap_or("");
    let valid = email.len() <= 254
        && email.split_once('@').is_some_and(|(user, host)| {
            !user.is_empty() && host.contains('.') && !host.starts_with('.')
        })
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    if valid {
        Ok(email.to_string())
    } else {
        Err(field_error(
            "email",
            "INVALID_EMAIL",
            "Enter a valid email address",
        ))
    }
}

fn check_password(field: &str, password: Option<&str>) -> ApiResult<String> {
    let password = password.unwrap_or("");
    let n = password.chars().count();
    if n < MIN_PASSWORD {
        return Err(field_error(
            field,
            "PASSWORD_TOO_SHORT",
            "Password must be at least 8 characters",
        ));
    }
    if n > MAX_PASSWORD {
        return Err(field_error(
            field,
            "PASSWORD_TOO_LONG",
            "Password must be at most 128 characters",
        ));
    }
    Ok(password.to_string())
}

/// The account as better-auth answers it. No email is verified and no
/// avatar kept, and the store keeps no update time (`updatedAt` repeats
/// `createdAt`). Fields in name order, as the JSON object this replaced
/// serialized them.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct Account {
    created_at: String,
    email: String,
    email_verified: bool,
    id: String,
    image: Option<String>,
    name: String,
    updated_at: String,
}

impl From<&paperclip_store::org::people::BoardUser> for Account {
    fn from(user: &paperclip_store::org::people::BoardUser) -> Account {
        Account {
            created_at: user.created_at.clone(),
            email: user.email.clone(),
            email_verified: false,
            id: user.id.clone(),
            image: None,
            name: user.name.clone(),
            updated_at: user.created_at.clone(),
        }
    }
}

impl From<&paperclip_store::org::people::BoardUser> for PersonRecord {
    fn from(user: &paperclip_store::org::people::BoardUser) -> PersonRecord {
        PersonRecord {
            email: user.email.clone(),
            id: user.id.clone(),
            image: None,
            name: user.name.clone(),
        }
    }
}

/// A sign-up's or sign-in's answer, next to the session cookie (`token` is
/// its value). `redirect` is upstream's sign-in field; sign-up has none.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct SignedIn {
    /// Sent back in `x-paperclip-csrf` with the session's writes.
    csrf_token: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    redirect: Option<bool>,
    token: String,
    user: Account,
}

async fn start_session(
    app: &AppState,
    headers: &HeaderMap,
    user: &paperclip_store::org::people::BoardUser,
    redirect: Option<bool>,
) -> ApiResult<Response> {
    let token = people::new_token("");
    let ttl = chrono::Duration::from_std(app.security.team.session_ttl)
        .unwrap_or(chrono::Duration::days(7));
    let expires = (chrono::Utc::now() + ttl)
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string();
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    paperclip_store::org::people::create_session(
        &app.store,
        &user.id,
        &people::hash_token(&token),
        &expires,
        agent,
    )
    .await?;
    tracing::info!(user_id = %user.id, "signed in");
    let cookie = people::session_cookie(&app.security.team, Some(&token));
    let body = SignedIn {
        // The page that signed in sends this with its writes (see `signin::check_csrf`).
        csrf_token: people::csrf_token(&token),
        redirect,
        token,
        user: Account::from(user),
    };
    Ok(([(header::SET_COOKIE, cookie)], Json(body)).into_response())
}

/// Creates an account and signs it in. The account belongs to no company
/// until an invite is accepted.
#[utoipa::path(post, path = "/api/auth/sign-up/email", tag = "auth", request_body = SignUp,
    responses((status = 200, description = "Signed up and signed in", body = SignedIn),
        (status = 400, description = "Invalid field", body = ErrorBody),
        (status = 403, description = "Sign-up disabled", body = ErrorBody), (status = 409, description = "Email taken", body = ErrorBody),
        (status = 404, description = "Local trusted mode: nobody signs in", body = ErrorBody),
        (status = 429, description = "Too many attempts", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn sign_up(
    State(app): State<AppState>,
    peer: Peer,
    headers: HeaderMap,
    JsonBody(body): JsonBody<SignUp>,
) -> ApiResult<Response> {
    authenticated_only(&app)?;
    limit_ip(&app, &peer, "sign-up")?;
    let invited = match body.invite_token.as_deref() {
        Some(token) => {
            paperclip_store::org::members::invite_by_token(&app.store, &people::hash_token(token))
                .await
                .ok()
                .is_some_and(|i| i.unusable(&paperclip_store::now()).is_none())
        }
        None => false,
    };
    if !app.security.team.sign_up && !invited {
        return Err(ApiError::forbidden(
            "Sign-up is disabled on this instance: open the invite link you were sent, or ask an administrator for one",
        )
        .with_details(json!({ "code": "EMAIL_PASSWORD_SIGN_UP_DISABLED" })));
    }
    let email = check_email(body.email.as_deref())?;
    let name = body.name.as_deref().map(str::trim).unwrap_or("");
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(field_error(
            "name",
            "invalid_string",
            "Name must be 1 to 100 characters",
        ));
    }
    let password = check_password("password", body.password.as_deref())?;
    let hash = tokio::task::spawn_blocking(move || people::hash_password(&password))
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let user = paperclip_store::org::people::create(
        &app.store,
        &paperclip_store::org::people::NewUser {
            email: &email,
            name,
            password_hash: &hash,
        },
    )
    .await?;
    start_session(&app, &headers, &user, None).await
}

/// Signs in with email and password. Five failures lock the account for
/// fifteen minutes; every address is limited too.
#[utoipa::path(post, path = "/api/auth/sign-in/email", tag = "auth", request_body = SignIn,
    responses((status = 200, description = "Signed in; the session cookie is set", body = SignedIn),
        (status = 401, description = "Invalid email or password", body = ErrorBody),
        (status = 404, description = "Local trusted mode: nobody signs in", body = ErrorBody),
        (status = 429, description = "Locked out", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn sign_in(
    State(app): State<AppState>,
    peer: Peer,
    headers: HeaderMap,
    JsonBody(body): JsonBody<SignIn>,
) -> ApiResult<Response> {
    authenticated_only(&app)?;
    limit_ip(&app, &peer, "sign-in")?;
    let email = paperclip_store::org::people::normal_email(body.email.as_deref().unwrap_or(""));
    let lock_key = format!("sign-in-failures:{email}");
    let limiter = &app.security.limiter;
    if let Some(wait) = limiter.blocked(&lock_key, LOCKOUT_FAILURES, LOCKOUT_WINDOW) {
        return Err(too_many(
            format!(
                "Too many failed sign-ins for this account: it is locked for {} more minute(s)",
                wait.div_ceil(60)
            ),
            wait,
        ));
    }
    let password = body.password.unwrap_or_default();
    let found = paperclip_store::org::people::by_email(&app.store, &email).await?;
    let hash = found
        .as_ref()
        .map(|(_, h)| h.clone())
        .unwrap_or_else(|| people::decoy_hash().to_string());
    let ok = tokio::task::spawn_blocking(move || people::verify_password(&hash, &password))
        .await
        .unwrap_or(false);
    match found {
        Some((user, _)) if ok => {
            limiter.clear(&lock_key);
            start_session(&app, &headers, &user, Some(false)).await
        }
        _ => {
            let _ = limiter.hit(&lock_key, LOCKOUT_FAILURES, LOCKOUT_WINDOW);
            tracing::info!(%email, "failed sign-in");
            Err(
                ApiError::new(StatusCode::UNAUTHORIZED, "Invalid email or password")
                    .with_details(json!({ "code": "INVALID_EMAIL_OR_PASSWORD" })),
            )
        }
    }
}

/// Ends this browser's session.
#[utoipa::path(post, path = "/api/auth/sign-out", tag = "auth",
    responses((status = 200, description = "Signed out", body = SignedOut),
        (status = 403, description = "Missing or wrong CSRF token", body = ErrorBody),
        (status = 404, description = "Local trusted mode: nobody signs in", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn sign_out(State(app): State<AppState>, headers: HeaderMap) -> ApiResult<Response> {
    authenticated_only(&app)?;
    if let Some(token) = people::session_token(&headers)? {
        crate::signin::check_csrf(&headers, &token)?;
        paperclip_store::org::people::revoke_session(&app.store, &people::hash_token(&token))
            .await?;
    }
    let cookie = people::session_cookie(&app.security.team, None);
    Ok((
        [(header::SET_COOKIE, cookie)],
        Json(SignedOut { success: true }),
    )
        .into_response())
}

#[derive(Serialize, ToSchema)]
struct SignedOut {
    success: bool,
}

fn signed_in(caller: &Caller) -> ApiResult<&crate::auth::Person> {
    caller
        .person()
        .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "Board authentication required"))
}

/// A session as better-auth names it: with a board API key, a made-up id
/// naming the key's person (the key is no session).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct SessionRef {
    id: String,
    user_id: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CurrentSession {
    session: SessionRef,
    user: PersonRecord,
    /// Where the original's board reports its errors: we report to no
    /// Sentry, so always null (as the original answers when unconfigured).
    sentry_dsn: Option<String>,
}

#[utoipa::path(get, path = "/api/auth/get-session", tag = "auth",
    responses((status = 200, description = "The session and its user", body = CurrentSession),
        (status = 401, description = "Board authentication required", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn get_session(
    State(app): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<CurrentSession>> {
    let person = crate::signin::board_person(&app, &caller).await?;
    let source = match (&person.key, &person.session_id) {
        (Some(_), _) => "board_key",
        (None, Some(_)) => "session",
        (None, None) => "local_implicit",
    };
    let id = person
        .session_id
        .clone()
        .unwrap_or_else(|| format!("paperclip:{source}:{}", person.user.id));
    Ok(Json(CurrentSession {
        session: SessionRef {
            id,
            user_id: person.user.id.clone(),
        },
        user: PersonRecord::from(&person.user),
        sentry_dsn: None,
    }))
}

#[utoipa::path(get, path = "/api/auth/profile", tag = "auth",
    responses((status = 200, description = "The signed-in user", body = PersonRecord),
        (status = 401, description = "Board authentication required", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn profile(State(app): State<AppState>, caller: Caller) -> ApiResult<Json<PersonRecord>> {
    let person = crate::signin::board_person(&app, &caller).await?;
    Ok(Json(PersonRecord::from(&person.user)))
}

#[derive(Deserialize, utoipa::ToSchema)]
struct ProfilePatch {
    name: Option<String>,
}

#[utoipa::path(patch, path = "/api/auth/profile", tag = "auth", request_body = ProfilePatch,
    responses((status = 200, description = "The signed-in user", body = PersonRecord),
        (status = 400, description = "Invalid name", body = ErrorBody),
        (status = 401, description = "Board authentication required", body = ErrorBody),
        (status = 403, description = "A key scoped to companies", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn update_profile(
    State(app): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ProfilePatch>,
) -> ApiResult<Json<PersonRecord>> {
    let person = crate::signin::board_person(&app, &caller).await?;
    // The name shows in every company: not for a key that acts in some only.
    if person.company_scoped() {
        return Err(ApiError::forbidden(
            "This API key is scoped to companies: change the profile from a signed-in session or with a key naming no company",
        )
        .with_details(json!({ "reason": "deny_key_scope" })));
    }
    let name = body.name.as_deref().map(str::trim).unwrap_or("");
    if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
        return Err(field_error(
            "name",
            "invalid_string",
            "Name must be 1 to 100 characters",
        ));
    }
    let u = paperclip_store::org::people::update_name(&app.store, &person.user.id, name).await?;
    Ok(Json(PersonRecord::from(&u)))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
struct PasswordChange {
    current_password: Option<String>,
    new_password: Option<String>,
}

/// Changes the password and ends every other session of the user.
#[utoipa::path(post, path = "/api/auth/change-password", tag = "auth", request_body = PasswordChange,
    responses((status = 200, description = "Changed", body = PasswordChanged),
        (status = 400, description = "Invalid new password", body = ErrorBody),
        (status = 401, description = "Wrong current password", body = ErrorBody),
        (status = 403, description = "Not from a signed-in browser", body = ErrorBody),
        (status = 429, description = "Too many attempts", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn change_password(
    State(app): State<AppState>,
    peer: Peer,
    caller: Caller,
    JsonBody(body): JsonBody<PasswordChange>,
) -> ApiResult<Json<PasswordChanged>> {
    let person = signed_in(&caller)?;
    limit_ip(&app, &peer, "change-password")?;
    let session_id = person.session_id.clone().ok_or_else(|| {
        ApiError::forbidden("Change a password from a signed-in browser, not with an API key")
    })?;
    let new = check_password("newPassword", body.new_password.as_deref())?;
    let (_, hash) = paperclip_store::org::people::by_email(&app.store, &person.user.email)
        .await?
        .ok_or_else(|| ApiError::new(StatusCode::UNAUTHORIZED, "Board authentication required"))?;
    let current = body.current_password.unwrap_or_default();
    let (ok, new_hash) = tokio::task::spawn_blocking(move || {
        let ok = people::verify_password(&hash, &current);
        (ok, ok.then(|| people::hash_password(&new)))
    })
    .await
    .unwrap_or((false, None));
    let Some(new_hash) = new_hash.filter(|_| ok) else {
        return Err(
            ApiError::new(StatusCode::UNAUTHORIZED, "The current password is wrong")
                .with_details(json!({ "code": "INVALID_PASSWORD" })),
        );
    };
    paperclip_store::org::people::set_password(&app.store, &person.user.id, &new_hash, &session_id)
        .await?;
    Ok(Json(PasswordChanged { status: true }))
}

/// better-auth's answer to a password change.
#[derive(Serialize, ToSchema)]
struct PasswordChanged {
    status: bool,
}
