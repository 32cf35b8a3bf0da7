//! The company a request's path is about, found before any handler runs.
//!
//! Handlers check the company boundary as they load what they act on
//! ([`crate::access`]). For a person that check is made again, up front, from
//! the path alone, so a handler written when the only board was the local one
//! (every company) cannot act for a member of one company on another. An
//! entity that does not exist is left to the handler's 404.

use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::request::Parts;

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
    let store = &app.store;
    match root {
        "companies" => param("companyId"),
        "issues" => {
            let id = param("id").or_else(|| param("issueId"))?;
            paperclip_store::issues::get(store, &id)
                .await
                .ok()
                .map(|i| i.company_id)
        }
        "agents" => {
            let id = param("id").or_else(|| param("agentId"))?;
            paperclip_store::agents::get(store, &id)
                .await
                .ok()
                .map(|a| a.company_id)
        }
        "approvals" => paperclip_store::approvals::get(store, &param("id")?)
            .await
            .ok()
            .map(|a| a.company_id),
        "heartbeat-runs" => paperclip_store::runs::get(store, &param("runId")?)
            .await
            .ok()
            .map(|r| r.company_id),
        "projects" => {
            let id = param("id").or_else(|| param("projectId"))?;
            paperclip_store::projects::get(store, &id)
                .await
                .ok()
                .map(|p| p.company_id)
        }
        "goals" => paperclip_store::goals::get(store, &param("id")?)
            .await
            .ok()
            .map(|g| g.company_id),
        "labels" => paperclip_store::labels::get(store, &param("labelId")?)
            .await
            .ok()
            .map(|l| l.company_id),
        "secrets" => paperclip_store::secrets::get(store, &param("id")?)
            .await
            .ok()
            .map(|s| s.company_id),
        _ => None,
    }
}
