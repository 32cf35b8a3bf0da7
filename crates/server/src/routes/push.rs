//! Web Push for people on the board: the instance's public VAPID key, a
//! person's subscriptions (one per device) and preferences, a test
//! notification, and the action links notifications carry
//! (`POST /api/push/actions/{token}`), which approve, reject or reply once,
//! as the person the link was made for, while that person may still do it.
//! No upstream counterpart: Paperclip's own paths, under `/api/push`.
//!
//! Subscriptions are personal, account-wide settings: a board key naming
//! companies may not change them, as it may not change the profile.

use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use paperclip_core::actor::{Actor, ActorKind, LOCAL_BOARD_USER_ID};
use paperclip_core::approval::ApprovalAction;
use paperclip_core::input::ApprovalDecision;
use paperclip_core::interaction::InteractionStatus;
use paperclip_core::push::{LinkAction, Preferences};
use paperclip_core::team::{MembershipStatus, Permission};
use paperclip_store::push::Subscription;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult, ErrorBody};
use crate::extract::JsonBody;
use crate::push::links::{self, Refused};
use crate::routes::accounts::too_many;
use crate::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(public_key))
        .routes(routes!(list_subscriptions, subscribe))
        .routes(routes!(unsubscribe))
        .routes(routes!(get_preferences, set_preferences))
        .routes(routes!(send_test))
        .routes(routes!(act))
}

const ENDPOINT_MAX_CHARS: usize = 2048;
const USER_AGENT_MAX_CHARS: usize = 200;
const TESTS_PER_MINUTE: usize = 6;
/// A quick reply is a short answer; the task page takes long ones.
const REPLY_MAX_CHARS: usize = 4000;

/// The person a request acts as: the local board, or a signed-in person by
/// a session or a key naming no company.
fn person(caller: &Caller) -> ApiResult<String> {
    let actor = caller.require_board()?;
    if caller.person().is_some_and(|p| p.company_scoped()) {
        return Err(ApiError::forbidden(
            "This API key is scoped to companies: notification settings are your account's; use a signed-in session or a key naming no company",
        )
        .with_details(json!({ "reason": "deny_key_scope" })));
    }
    Ok(actor.id.clone())
}

fn unavailable(err: anyhow::Error) -> ApiError {
    tracing::error!(error = %format!("{err:#}"), "the push keys are unavailable");
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "Notifications are unavailable: the server cannot read its push key (see its log)",
    )
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct PublicKey {
    /// The VAPID public key, base64url: `applicationServerKey` for
    /// `pushManager.subscribe`.
    public_key: String,
}

#[utoipa::path(get, path = "/api/push/vapid-public-key", tag = "push",
    responses((status = 200, body = PublicKey),
        (status = 403, description = "Board access required", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn public_key(State(app): State<AppState>, caller: Caller) -> ApiResult<Json<PublicKey>> {
    person(&caller)?;
    let keys = crate::push::keys(&app).await.map_err(unavailable)?;
    Ok(Json(PublicKey {
        public_key: keys.public_b64(),
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct NewSubscription {
    /// The push service's URL for this browser: https (http only to a
    /// loopback address on a local trusted instance).
    endpoint: String,
    keys: SubscriptionKeys,
    /// As `PushSubscription.toJSON()` gives it; not used.
    #[allow(dead_code)]
    #[schema(value_type = Option<i64>)]
    expiration_time: Option<Value>,
}

#[derive(Deserialize, ToSchema)]
struct SubscriptionKeys {
    /// The browser's P-256 public key, base64url (65 bytes).
    p256dh: String,
    /// The browser's auth secret, base64url (16 bytes).
    auth: String,
}

/// A subscription as its person sees it (never its keys).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct SubscriptionRecord {
    id: String,
    endpoint: String,
    user_agent: Option<String>,
    created_at: String,
    last_sent_at: Option<String>,
}

impl From<Subscription> for SubscriptionRecord {
    fn from(s: Subscription) -> SubscriptionRecord {
        SubscriptionRecord {
            id: s.id,
            endpoint: s.endpoint,
            user_agent: s.user_agent,
            created_at: s.created_at,
            last_sent_at: s.last_sent_at,
        }
    }
}

/// What is wrong with a subscription, one entry per field.
fn check_subscription(body: &NewSubscription, local: bool) -> Vec<Value> {
    let mut errors = Vec::new();
    let mut bad = |path: Value, message: &str| {
        errors.push(json!({ "code": "invalid_value", "path": path, "message": message }));
    };
    if let Some(why) = endpoint_problem(&body.endpoint, local) {
        bad(json!(["endpoint"]), why);
    }
    let p256dh = crate::push::b64url(&body.keys.p256dh);
    let point = p256dh
        .as_deref()
        .filter(|b| b.len() == 65 && b[0] == 4)
        .and_then(|b| p256::PublicKey::from_sec1_bytes(b).ok());
    if point.is_none() {
        bad(
            json!(["keys", "p256dh"]),
            "keys.p256dh must be the browser's P-256 public key: 65 bytes, base64url",
        );
    }
    if crate::push::b64url(&body.keys.auth).is_none_or(|b| b.len() != 16) {
        bad(
            json!(["keys", "auth"]),
            "keys.auth must be the browser's auth secret: 16 bytes, base64url",
        );
    }
    errors
}

fn endpoint_problem(endpoint: &str, local: bool) -> Option<&'static str> {
    if endpoint.chars().count() > ENDPOINT_MAX_CHARS {
        return Some("endpoint is longer than 2048 characters");
    }
    let Ok(url) = reqwest::Url::parse(endpoint) else {
        return Some("endpoint must be an absolute URL");
    };
    if url.host().is_none() || !url.username().is_empty() || url.password().is_some() {
        return Some("endpoint must name a host, without credentials");
    }
    let host = url.host_str().unwrap_or("");
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match url.scheme() {
        "https" => None,
        "http" if loopback && local => None,
        "http" if loopback => {
            Some("endpoint must be https: plain http is taken only on a local trusted instance")
        }
        _ => Some("endpoint must be an https URL (a browser's push service)"),
    }
}

#[utoipa::path(get, path = "/api/push/subscriptions", tag = "push",
    responses((status = 200, body = [SubscriptionRecord]),
        (status = 403, description = "Board access required", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn list_subscriptions(
    State(app): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<SubscriptionRecord>>> {
    let user = person(&caller)?;
    let subs = paperclip_store::push::subscriptions::of_user(&app.store, &user).await?;
    Ok(Json(subs.into_iter().map(Into::into).collect()))
}

#[utoipa::path(post, path = "/api/push/subscriptions", tag = "push", request_body = NewSubscription,
    responses((status = 201, description = "Subscribed (or the endpoint's keys replaced)", body = SubscriptionRecord),
        (status = 400, description = "A bad endpoint or key, by field", body = ErrorBody),
        (status = 403, description = "Board access required", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn subscribe(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<NewSubscription>,
) -> ApiResult<(StatusCode, Json<SubscriptionRecord>)> {
    let user = person(&caller)?;
    let local = !app.security.team.authenticated();
    let errors = check_subscription(&body, local);
    if !errors.is_empty() {
        return Err(ApiError::validation(Value::Array(errors)));
    }
    let agent: Option<String> = headers
        .get(axum::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|ua| ua.chars().take(USER_AGENT_MAX_CHARS).collect());
    let sub = paperclip_store::push::subscriptions::upsert(
        &app.store,
        &user,
        &paperclip_store::push::subscriptions::NewSubscription {
            endpoint: &body.endpoint,
            p256dh: body.keys.p256dh.trim_end_matches('='),
            auth: body.keys.auth.trim_end_matches('='),
            user_agent: agent.as_deref(),
        },
    )
    .await?;
    Ok((StatusCode::CREATED, Json(sub.into())))
}

#[utoipa::path(delete, path = "/api/push/subscriptions/{id}", tag = "push",
    params(("id" = String, Path)),
    responses((status = 204, description = "Removed"),
        (status = 404, description = "Not one of yours", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn unsubscribe(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let user = person(&caller)?;
    paperclip_store::push::subscriptions::remove(&app.store, &user, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/api/push/preferences", tag = "push",
    responses((status = 200, body = Preferences)))]
#[paperclip_macros::handler]
async fn get_preferences(
    State(app): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Preferences>> {
    let user = person(&caller)?;
    Ok(Json(
        paperclip_store::push::preferences::get(&app.store, &user).await?,
    ))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PreferencesPatch {
    questions: Option<bool>,
    approvals: Option<bool>,
    failed_runs: Option<bool>,
    budget_stops: Option<bool>,
}

#[utoipa::path(patch, path = "/api/push/preferences", tag = "push", request_body = PreferencesPatch,
    responses((status = 200, body = Preferences),
        (status = 400, description = "An unknown kind or a value that is not true or false", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn set_preferences(
    State(app): State<AppState>,
    caller: Caller,
    JsonBody(patch): JsonBody<PreferencesPatch>,
) -> ApiResult<Json<Preferences>> {
    let user = person(&caller)?;
    let now = paperclip_store::push::preferences::get(&app.store, &user).await?;
    let next = Preferences {
        questions: patch.questions.unwrap_or(now.questions),
        approvals: patch.approvals.unwrap_or(now.approvals),
        failed_runs: patch.failed_runs.unwrap_or(now.failed_runs),
        budget_stops: patch.budget_stops.unwrap_or(now.budget_stops),
    };
    Ok(Json(
        paperclip_store::push::preferences::set(&app.store, &user, next).await?,
    ))
}

#[utoipa::path(post, path = "/api/push/test", tag = "push",
    responses((status = 200, description = "Sent to each of your devices", body = crate::push::Sent),
        (status = 429, description = "Too many tests", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn send_test(
    State(app): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<crate::push::Sent>> {
    let user = person(&caller)?;
    app.security
        .limiter
        .hit(
            &format!("push-test:{user}"),
            TESTS_PER_MINUTE,
            Duration::from_secs(60),
        )
        .map_err(|wait| {
            too_many(
                format!("Too many test notifications: try again in {wait} s"),
                wait,
            )
        })?;
    let sent = crate::push::send_to_person(&app, &user, &crate::push::test_notice())
        .await
        .map_err(unavailable)?;
    Ok(Json(sent))
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ActionInput {
    /// The answer typed into the notification (a reply link only).
    reply: Option<String>,
}

fn refused(why: Refused) -> ApiError {
    match why {
        Refused::Expired => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "This notification's action has expired: open the board to act",
        )
        .with_details(json!({ "reason": "action_link_expired" })),
        Refused::Forged => ApiError::forbidden("This is not a valid notification action link")
            .with_details(json!({ "reason": "action_link_invalid" })),
    }
}

/// Who a link acts as, if they may still act on `company_id` with `need`.
async fn link_actor(
    app: &AppState,
    user: &str,
    company_id: &str,
    need: Permission,
) -> ApiResult<Actor> {
    let authenticated = app.security.team.authenticated();
    if user == LOCAL_BOARD_USER_ID {
        if authenticated {
            return Err(refused(Refused::Forged));
        }
        return Ok(Actor::local_board());
    }
    if !authenticated {
        return Err(refused(Refused::Forged));
    }
    let memberships = paperclip_store::org::members::of_user(&app.store, user).await?;
    let role = memberships
        .iter()
        .find(|m| m.company_id == company_id && m.status == MembershipStatus::Active)
        .map(|m| m.role);
    match role {
        Some(role) if role.grants(need) => Ok(Actor {
            kind: ActorKind::User,
            id: user.to_string(),
            run_id: None,
            company_id: None,
        }),
        _ => Err(ApiError::forbidden(format!(
            "You may no longer {} in this company",
            need.describe()
        ))
        .with_details(json!({ "reason": "deny_missing_grant", "permission": need.key() }))),
    }
}

fn link_expiry(claims: &links::Claims) -> String {
    chrono::DateTime::from_timestamp(claims.exp as i64, 0)
        .unwrap_or_default()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}

#[utoipa::path(post, path = "/api/push/actions/{token}", tag = "push",
    params(("token" = String, Path, description = "The signed action link from a notification")),
    request_body = ActionInput,
    responses((status = 200, description = "Done, once"),
        (status = 400, description = "A reply link without a reply", body = ErrorBody),
        (status = 401, description = "The link expired", body = ErrorBody),
        (status = 403, description = "Not a link of this server, or its person may no longer act", body = ErrorBody),
        (status = 404, description = "What it acts on is gone", body = ErrorBody),
        (status = 409, description = "The link was used, or the approval or card was decided already", body = ErrorBody)))]
#[paperclip_macros::handler]
async fn act(
    State(app): State<AppState>,
    Path(token): Path<String>,
    JsonBody(input): JsonBody<ActionInput>,
) -> ApiResult<Json<Value>> {
    let keys = crate::push::keys(&app).await.map_err(unavailable)?;
    let claims =
        links::verify(&keys.link_key, &token, crate::push::link_clock(&app)).map_err(refused)?;
    let expires = link_expiry(&claims);
    match claims.act {
        LinkAction::Approve | LinkAction::Reject => {
            let approval = paperclip_store::approvals::get(&app.store, &claims.target).await?;
            let actor = link_actor(
                &app,
                &claims.sub,
                &approval.company_id,
                Permission::ApprovalsDecide,
            )
            .await?;
            // Used first, then acted on: a second use changes nothing even
            // if the approval were to become pending again; a decision that
            // then fails (decided meanwhile on the board) is a 409 either way.
            paperclip_store::push::link_uses::use_once(
                &app.store,
                &claims.jti,
                &claims.sub,
                &expires,
            )
            .await?;
            let action = if claims.act == LinkAction::Approve {
                ApprovalAction::Approve
            } else {
                ApprovalAction::Reject
            };
            let decided = paperclip_store::approvals::decide(
                &app.store,
                &actor,
                &approval.id,
                action,
                ApprovalDecision::default(),
            )
            .await?;
            Ok(Json(
                json!({ "action": claims.act, "approval": { "id": decided.id, "status": decided.status } }),
            ))
        }
        LinkAction::Reply => {
            let reply = input.reply.as_deref().map(str::trim).unwrap_or("");
            if reply.is_empty() || reply.chars().count() > REPLY_MAX_CHARS {
                return Err(ApiError::validation(json!([{ "code": "invalid_string",
                    "path": ["reply"], "message": "reply must be 1 to 4000 characters" }])));
            }
            let issue_id = claims
                .issue
                .clone()
                .ok_or_else(|| refused(Refused::Forged))?;
            let card =
                paperclip_store::thread::interactions::get(&app.store, &issue_id, &claims.target)
                    .await?;
            let actor =
                link_actor(&app, &claims.sub, &card.company_id, Permission::TasksMutate).await?;
            if card.status != InteractionStatus::Pending {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    format!("This question is already {}", card.status.as_str()),
                )
                .with_details(json!({ "reason": "interaction_already_resolved" })));
            }
            paperclip_store::push::link_uses::use_once(
                &app.store,
                &claims.jti,
                &claims.sub,
                &expires,
            )
            .await?;
            let comment = paperclip_store::thread::comments::create(
                &app.store,
                &actor,
                &issue_id,
                reply.to_string(),
                Some(claims.jti.clone()),
            )
            .await?;
            Ok(Json(
                json!({ "action": claims.act, "comment": { "id": comment.id, "issueId": issue_id } }),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_must_be_https_or_loopback_http_on_a_local_instance() {
        assert_eq!(
            endpoint_problem("https://fcm.googleapis.com/fcm/send/abc", false),
            None
        );
        assert_eq!(endpoint_problem("http://127.0.0.1:9000/push/1", true), None);
        assert_eq!(endpoint_problem("http://localhost:9000/push/1", true), None);
        assert!(endpoint_problem("http://127.0.0.1:9000/push/1", false).is_some());
        assert!(endpoint_problem("http://push.example.com/1", true).is_some());
        assert!(endpoint_problem("ftp://push.example.com/1", true).is_some());
        assert!(endpoint_problem("https://user:pw@push.example.com/1", true).is_some());
        assert!(endpoint_problem("not a url", true).is_some());
        assert!(endpoint_problem(&format!("https://a.b/{}", "x".repeat(2048)), true).is_some());
    }
}
