//! One routine (`/{prefix}/routines/{id}`): its state and policies, Run
//! now, pause/resume and archive; its triggers (enable, delete, rotate a
//! webhook's secret, add one); its recent runs with the task each made; its
//! revisions with Restore. A webhook's secret is shown once, in the part of
//! the page a live update does not replace.

use axum::extract::{Path, State};
use chrono::Utc;
use maud::{html, Markup};
use paperclip_core::routine::{
    ActivityGatePolicy, ActivityGateScope, CatchUpPolicy, ConcurrencyPolicy, Routine,
    RoutineRevision, RoutineStatus, RoutineTrigger, TriggerKind,
};

use super::by_id;
use super::routines::{ahead, can_edit, trigger_words};
use crate::fmt::{pill, time};
use crate::{html, layout, markdown, not_found, store_failure, PageResult, Web};

#[paperclip_macros::handler]
pub async fn page(
    State(web): State<Web>,
    Path((prefix, id)): Path<(String, String)>,
) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let cid = &ctx.company.id;
    let p = &ctx.company.issue_prefix;
    let missing = || {
        not_found(
            "No such routine",
            "This company has no routine with that id.",
        )
    };
    let routine = match paperclip_store::routines::get(&web.store, &id).await {
        Ok(r) if &r.company_id == cid => r,
        Ok(_) | Err(paperclip_store::Error::NotFound(_)) => return Err(missing()),
        Err(e) => return Err(store_failure(e)),
    };
    let triggers = paperclip_store::routines::triggers::list(&web.store, &id)
        .await
        .map_err(store_failure)?;
    let runs = paperclip_store::routines::runs::list(&web.store, &id, 25)
        .await
        .map_err(store_failure)?;
    let revisions = paperclip_store::routines::revisions::revisions(&web.store, &id)
        .await
        .map_err(store_failure)?;
    let agents = paperclip_store::org::agents::list(&web.store, cid)
        .await
        .map_err(store_failure)?;
    let mut user_ids: Vec<String> = revisions
        .iter()
        .filter_map(|r| r.created_by_user_id.clone())
        .collect();
    user_ids.sort();
    user_ids.dedup();
    let people = paperclip_store::org::people::names(&web.store, &user_ids)
        .await
        .map_err(store_failure)?;
    let names = by_id(&agents);
    let editable = can_edit(cid) && routine.status != RoutineStatus::Archived;
    let now = Utc::now();
    let who = |r: &RoutineRevision| -> String {
        if let Some(a) = r.created_by_agent_id.as_deref().and_then(|a| names.get(a)) {
            return a.name.clone();
        }
        match r.created_by_user_id.as_deref() {
            Some(u) => people
                .iter()
                .find(|(id, _)| id == u)
                .map(|(_, n)| n.clone())
                .unwrap_or_else(|| "the board".into()),
            None => "the system".into(),
        }
    };
    let assignee = routine
        .assignee_agent_id
        .as_deref()
        .and_then(|a| names.get(a));
    let rid = &routine.id;
    let body = html! {
        p.crumbs { a href={"/" (p) "/routines"} { "Routines" } " /" }
        header.page-head.routine-head {
            h1 { (routine.title) " " (pill(routine.status.as_str())) }
            p.muted {
                @match assignee {
                    Some(a) => { "Assigned to " a href={"/" (p) "/agents/" (a.url_key)} { (a.name) } }
                    None => { "No agent assigned: it cannot be activated until one is." }
                }
                " · " (policy_words(&routine))
                @if routine.activity_gate_policy == ActivityGatePolicy::RequireExternalActivity {
                    "; skips a scheduled run when nothing has happened "
                    @if routine.activity_gate_scope == ActivityGateScope::Project { "in its project " }
                    "since its last one"
                }
            }
            @if editable {
                div.actions #routine-actions {
                    button.primary type="button" data-action="POST" data-url={"/api/routines/" (rid) "/run"} data-body="{}" data-done="Run started" { "Run now" }
                    @if routine.status == RoutineStatus::Active {
                        button type="button" data-action="PATCH" data-url={"/api/routines/" (rid)} data-body=r#"{"status":"paused"}"# data-done="Routine paused" { "Pause" }
                    } @else {
                        button type="button" data-action="PATCH" data-url={"/api/routines/" (rid)} data-body=r#"{"status":"active"}"# data-done="Routine resumed" { "Resume" }
                    }
                    button.danger type="button" data-action="PATCH" data-url={"/api/routines/" (rid)} data-body=r#"{"status":"archived"}"#
                        data-confirm={"Archive " (routine.title) "? An archived routine never runs again and cannot be brought back."} data-done="Routine archived" { "Archive" }
                }
            }
        }
        @if let Some(d) = routine.description.as_deref().filter(|d| !d.trim().is_empty()) {
            section.card.routine-instructions { h2 { "Instructions" } (markdown::render(d)) }
        }
        section.card #routine-triggers {
            h2 { "Triggers" }
            @if triggers.is_empty() { p.muted { "No triggers: it runs only when started with Run now or the API." } }
            @else { (trigger_table(&triggers, editable, now)) }
        }
        section.card #routine-runs {
            h2 { "Recent runs" }
            @if runs.is_empty() { p.muted #no-runs { "No runs yet." } }
            @else {
                table.data.runs {
                    thead { tr { th { "Result" } th { "Task" } th { "Source" } th { "When" } } }
                    tbody {
                        @for s in &runs {
                            tr data-routine-run=(s.run.id) {
                                td { (pill(s.run.status.as_str()))
                                    @if let Some(why) = &s.run.failure_reason { div.muted.failure { (reason_words(why)) } } }
                                td { @match &s.linked_issue {
                                    Some(i) => a href={"/" (p) "/tasks/" (i.identifier)} { span.ident { (i.identifier) } " " (i.title) " " (pill(i.status.as_str())) },
                                    None => span.muted { "—" } } }
                                td { (s.run.source.as_str()) @if let Some(t) = &s.trigger { @if let Some(l) = &t.label { span.muted { " · " (l) } } } }
                                td { (time(&s.run.triggered_at, now)) }
                            }
                        }
                    }
                }
            }
        }
        section.card #routine-revisions {
            h2 { "Revisions" }
            table.data.revisions {
                thead { tr { th { "#" } th { "When" } th { "By" } th { "Change" } @if editable { th {} } } }
                tbody {
                    @for r in &revisions {
                        tr data-revision=(r.revision_number) {
                            td { (r.revision_number) }
                            td { (time(&r.created_at, now)) }
                            td { (who(r)) }
                            td { (r.change_summary.as_deref().unwrap_or("—")) }
                            @if editable {
                                td.row-actions {
                                    @if r.revision_number != routine.latest_revision_number {
                                        button.small type="button" data-restore-revision={"/api/routines/" (rid) "/revisions/" (r.id) "/restore"}
                                            data-confirm={"Restore revision " (r.revision_number) "? Its title, instructions, policies and triggers come back as a new revision; a webhook deleted since comes back with a new URL and secret."}
                                            data-done={"Revision " (r.revision_number) " restored"} { "Restore" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    let fixed = if editable {
        add_trigger(rid)
    } else {
        html! {}
    };
    html(layout::page_with(
        &ctx,
        "routines",
        &routine.title,
        body,
        fixed,
    ))
}

/// Why a run did not make a task, in words; an unknown reason as stored.
fn reason_words(reason: &str) -> &str {
    match reason {
        "no_external_activity" => {
            "Nothing had happened since the last run: no task, no agent woken"
        }
        other => other,
    }
}

fn policy_words(r: &Routine) -> &'static str {
    match (r.concurrency_policy, r.catch_up_policy) {
        (ConcurrencyPolicy::CoalesceIfActive, CatchUpPolicy::SkipMissed) => {
            "folds into a running one; runs once after downtime"
        }
        (ConcurrencyPolicy::CoalesceIfActive, CatchUpPolicy::EnqueueMissedWithCap) => {
            "folds into a running one; runs each missed time (up to 25)"
        }
        (ConcurrencyPolicy::SkipIfActive, CatchUpPolicy::SkipMissed) => {
            "skips while one is running; runs once after downtime"
        }
        (ConcurrencyPolicy::SkipIfActive, CatchUpPolicy::EnqueueMissedWithCap) => {
            "skips while one is running; runs each missed time (up to 25)"
        }
        (ConcurrencyPolicy::AlwaysEnqueue, CatchUpPolicy::SkipMissed) => {
            "always starts a new one; runs once after downtime"
        }
        (ConcurrencyPolicy::AlwaysEnqueue, CatchUpPolicy::EnqueueMissedWithCap) => {
            "always starts a new one; runs each missed time (up to 25)"
        }
    }
}

fn trigger_table(
    triggers: &[RoutineTrigger],
    editable: bool,
    now: chrono::DateTime<Utc>,
) -> Markup {
    html! {
        table.data.triggers {
            thead { tr { th { "Trigger" } th { "Next run" } th { "Last fired" } @if editable { th {} } } }
            tbody {
                @for t in triggers {
                    tr data-trigger-id=(t.id) data-kind=(t.kind.as_str()) {
                        td {
                            (trigger_words(t))
                            @if !t.enabled { " " span.pill { "disabled" } }
                            @if let Some(public) = &t.public_id {
                                div.muted.webhook-path { code { "/api/routine-triggers/public/" (public) "/fire" } }
                                @if let Some(mode) = t.signing_mode { div.muted { "signed: " (mode.as_str()) } }
                            }
                        }
                        td { @match (t.enabled, t.next_run_at.as_deref()) {
                            (true, Some(ts)) => (ahead(ts, now)),
                            _ => span.muted { "—" } } }
                        td { @match &t.last_fired_at {
                            Some(ts) => { (time(ts, now)) @if let Some(r) = &t.last_result { div.muted { (r) } } },
                            None => span.muted { "never" } } }
                        @if editable {
                            td.row-actions {
                                @if t.enabled {
                                    button.small type="button" data-action="PATCH" data-url={"/api/routine-triggers/" (t.id)} data-body=r#"{"enabled":false}"# data-done="Trigger disabled" { "Disable" }
                                } @else {
                                    button.small type="button" data-action="PATCH" data-url={"/api/routine-triggers/" (t.id)} data-body=r#"{"enabled":true}"# data-done="Trigger enabled" { "Enable" }
                                }
                                @if t.kind == TriggerKind::Webhook {
                                    button.small type="button" data-rotate-trigger=(t.id)
                                        data-confirm="Rotate this webhook's secret? Senders using the old one are refused from now on." { "Rotate secret" }
                                }
                                button.small.danger type="button" data-action="DELETE" data-url={"/api/routine-triggers/" (t.id)}
                                    data-confirm="Delete this trigger?" data-done="Trigger deleted" { "Delete" }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn add_trigger(routine_id: &str) -> Markup {
    html! {
        div #webhook-secret.card.secret-once hidden {}
        form.card.trigger-form #trigger-form data-api-form="new-trigger" data-routine-id=(routine_id) autocomplete="off" {
            h2 { "Add a trigger" }
            div.row {
                label { "Kind"
                    select name="kind" data-trigger-kind {
                        option value="schedule" selected { "Schedule (cron)" }
                        option value="webhook" { "Webhook (a signed public URL)" }
                        option value="api" { "API call" }
                    }
                }
                label { "Label (optional)" input name="label" maxlength="120"; }
            }
            div.row data-for-kind="schedule" {
                label { "Cron (minute hour day month weekday)" input name="cronExpression" value="0 9 * * 1-5" spellcheck="false"; }
                label { "Timezone" input name="timezone" value="UTC" list="trigger-timezones" data-browser-timezone spellcheck="false"; }
            }
            datalist #trigger-timezones {}
            div.row data-for-kind="webhook" hidden {
                label { "Signature"
                    select name="signingMode" {
                        option value="bearer" selected { "Bearer secret (Authorization header)" }
                        option value="hmac_sha256" { "HMAC-SHA256 with timestamp (replay-safe)" }
                        option value="github_hmac" { "GitHub-style HMAC (X-Hub-Signature-256)" }
                        option value="none" { "None (anyone with the URL)" }
                    }
                }
            }
            p.form-error #trigger-form-error role="alert" hidden {}
            div.actions { button.primary type="submit" { "Add trigger" } }
        }
    }
}
