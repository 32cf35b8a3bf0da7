//! The company a request's path is about, found before any handler runs.
//!
//! Handlers check the company boundary as they load what they act on
//! ([`crate::access`]). For a person that check is made again, up front, from
//! the path alone, so a handler written when the only board was the local one
//! (every company) cannot act for a member of one company on another. An
//! entity that does not exist is left to the handler's 404.

use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::request::Parts;

use paperclip_store::org::company_of::Owned;

use crate::AppState;

pub async fn company_of(app: &AppState, parts: &mut Parts, route: &str) -> Option<String> {
    let params = RawPathParams::from_request_parts(parts, app).await.ok()?;
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    };
    let root = route.strip_prefix("/api/")?.split('/').next()?;
    let (kind, id) = match root {
        "companies" => return param("companyId"),
        "issues" => (Owned::Issue, param("id").or_else(|| param("issueId"))?),
        "agents" => (Owned::Agent, param("id").or_else(|| param("agentId"))?),
        "approvals" => (Owned::Approval, param("id")?),
        "heartbeat-runs" => (Owned::Run, param("runId")?),
        "projects" => (Owned::Project, param("id").or_else(|| param("projectId"))?),
        "goals" => (Owned::Goal, param("id")?),
        "labels" => (Owned::Label, param("labelId")?),
        "secrets" => (Owned::Secret, param("id")?),
        "routines" => (Owned::Routine, param("id")?),
        "routine-triggers" => (Owned::RoutineTrigger, param("id")?),
        _ => return None,
    };
    paperclip_store::org::company_of::company_of(&app.store, kind, &id)
        .await
        .ok()
        .flatten()
}
