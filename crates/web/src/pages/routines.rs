//! Routines (`/{prefix}/routines`): recurring work an agent is given on a
//! schedule, a webhook or an API call. Each routine with its assignee, its
//! triggers in words, when it next runs and how its last run went (the task
//! it made, by identifier); and the form that makes one (the routine, then
//! its schedule trigger, through upstream's routes).

use std::collections::HashMap;

use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use maud::{html, Markup};
use paperclip_core::agent::AgentStatus;
use paperclip_core::model::Agent;
use paperclip_core::routine::{RoutineRunSummary, RoutineStatus, RoutineTrigger, TriggerKind};
use paperclip_core::team::{Permission, Role};

use super::by_id;
use crate::fmt::{pill, time};
use crate::{html, layout, store_failure, viewer, PageResult, Web};

/// Whether the person looking may change routines (the local board may).
pub(crate) fn can_edit(company_id: &str) -> bool {
    let viewer = viewer::current();
    viewer.companies.is_none()
        || viewer
            .role_in(company_id)
            .is_some_and(|r| r != Role::Viewer && r.grants(Permission::TasksAssign))
}

#[paperclip_macros::handler]
pub async fn page(State(web): State<Web>, Path(prefix): Path<String>) -> PageResult {
    let ctx = web.ctx(&prefix).await?;
    let cid = &ctx.company.id;
    let p = &ctx.company.issue_prefix;
    let now = Utc::now();
    let routines = paperclip_store::routines::list(&web.store, cid, None)
        .await
        .map_err(store_failure)?;
    let agents = paperclip_store::org::agents::list(&web.store, cid)
        .await
        .map_err(store_failure)?;
    let names = by_id(&agents);
    // Every routine's triggers and last run: one query each, grouped here.
    let mut triggers_of: std::collections::HashMap<String, Vec<_>> =
        std::collections::HashMap::new();
    for t in paperclip_store::routines::triggers::of_company(&web.store, cid)
        .await
        .map_err(store_failure)?
    {
        triggers_of.entry(t.routine_id.clone()).or_default().push(t);
    }
    let mut latest = paperclip_store::routines::run_list::latest_of_company(&web.store, cid)
        .await
        .map_err(store_failure)?;
    let rows: Vec<_> = routines
        .iter()
        .map(|r| {
            let triggers = triggers_of.remove(&r.id).unwrap_or_default();
            (r, triggers, latest.remove(&r.id))
        })
        .collect();
    // Grouped by folder (by path, so a subfolder follows its parent), the
    // unfiled last; no headings while the company has no folders.
    let mut folders = paperclip_store::routines::folders::of_company(&web.store, cid)
        .await
        .map_err(store_failure)?;
    folders.sort_by(|a, b| a.path.cmp(&b.path));
    // A folder by its names from the root ("Reports / Finance").
    let label = |f: &paperclip_core::folder::Folder| {
        let mut names = vec![f.name.as_str()];
        let mut at = f;
        while let Some(parent) = at
            .parent_id
            .as_deref()
            .and_then(|p| folders.iter().find(|x| x.id == p))
        {
            if names.len() > folders.len() {
                break;
            }
            names.push(parent.name.as_str());
            at = parent;
        }
        names.reverse();
        names.join(" / ")
    };
    let mut groups: Vec<(Option<String>, Vec<&_>)> = folders
        .iter()
        .map(|f| {
            let filed = rows
                .iter()
                .filter(|(r, _, _)| r.folder_id.as_deref() == Some(f.id.as_str()))
                .collect();
            (Some(label(f)), filed)
        })
        .collect();
    let known = |id: &str| folders.iter().any(|f| f.id == id);
    let unfiled: Vec<&_> = rows
        .iter()
        .filter(|(r, _, _)| !r.folder_id.as_deref().is_some_and(known))
        .collect();
    groups.push((None, unfiled));
    let headed = !folders.is_empty();
    let editable = can_edit(cid);
    let body = html! {
        header.page-head {
            h1 { "Routines" }
            p.muted { "Recurring work: on each trigger a routine makes a task from its template and wakes its agent." }
        }
        @if routines.is_empty() {
            section.card #routines-empty {
                h2 { "No routines yet" }
                p { "A routine is work that comes back: a daily report, a weekly dependency check, a triage pass when a webhook arrives. "
                    "It has a title and instructions, an agent it is assigned to, and triggers: a schedule (cron, in a timezone), a webhook, or an API call. "
                    "Each time it fires, it creates a tracked task for its agent and wakes it." }
                @if editable { p.muted { "Create one with the form below." } }
            }
        } @else {
            table.data.routines #routines {
                thead { tr { th { "Routine" } th { "Status" } th { "Triggers" } th { "Next run" } th { "Last run" } } }
                tbody {
                    @for (folder, filed) in &groups {
                    @if headed {
                        tr.folder-row {
                            th colspan="5" {
                                (folder.as_deref().unwrap_or("Unfiled"))
                                " " span.muted { "(" (filed.len()) ")" }
                            }
                        }
                    }
                    @for (r, triggers, last) in filed.iter().copied() {
                        tr data-routine-id=(r.id) {
                            td {
                                a href={"/" (p) "/routines/" (r.id)} { strong { (r.title) } }
                                div.muted { (assignee(r.assignee_agent_id.as_deref(), &names)) }
                            }
                            td { (pill(r.status.as_str())) }
                            td.triggers { (summary(triggers)) }
                            td.next-run { (next_run(r.status, triggers, now)) }
                            td.last-run { (last_run(last.as_ref(), p, now)) }
                        }
                    }
                    }
                }
            }
        }
    };
    let fixed = if editable {
        form(cid, &agents)
    } else {
        html! {}
    };
    html(layout::page_with(&ctx, "routines", "Routines", body, fixed))
}

fn assignee(id: Option<&str>, names: &HashMap<&str, &Agent>) -> Markup {
    match id.and_then(|id| names.get(id)) {
        Some(a) => html! { "for " (a.name) },
        None => html! { "no agent assigned" },
    }
}

/// Each trigger in a line: a schedule in words with its cron and zone, a
/// webhook or API trigger by kind; a disabled one says so.
pub(crate) fn summary(triggers: &[RoutineTrigger]) -> Markup {
    html! {
        @if triggers.is_empty() { span.muted { "No triggers: runs only when started by hand" } }
        @for t in triggers {
            div.trigger-line {
                (trigger_words(t))
                @if !t.enabled { " " span.pill { "disabled" } }
            }
        }
    }
}

pub(crate) fn trigger_words(t: &RoutineTrigger) -> Markup {
    match t.kind {
        TriggerKind::Schedule => {
            let cron = t.cron_expression.as_deref().unwrap_or("");
            let tz = t.timezone.as_deref().unwrap_or("UTC");
            html! {
                @if let Some(words) = describe_cron(cron) { (words) " " }
                code { (cron) } " " span.muted { (tz) }
            }
        }
        TriggerKind::Webhook => html! { "Webhook" @if let Some(l) = &t.label { " · " (l) } },
        TriggerKind::Api => html! { "API call" @if let Some(l) = &t.label { " · " (l) } },
    }
}

/// The soonest enabled schedule of an active routine.
fn next_run(status: RoutineStatus, triggers: &[RoutineTrigger], now: DateTime<Utc>) -> Markup {
    if status != RoutineStatus::Active {
        return html! { span.muted { "— (" (status.as_str()) ")" } };
    }
    let next = triggers
        .iter()
        .filter(|t| t.enabled && t.kind == TriggerKind::Schedule)
        .filter_map(|t| t.next_run_at.as_deref())
        .min();
    match next {
        Some(ts) => ahead(ts, now),
        None => html! { span.muted { "—" } },
    }
}

/// A future time as "in 5 min", "in 3 h", "in 2 d" (with the exact time on
/// hover); a past one as how long ago.
pub(crate) fn ahead(ts: &str, now: DateTime<Utc>) -> Markup {
    let Ok(t) = DateTime::parse_from_rfc3339(ts) else {
        return html! { (ts) };
    };
    let secs = (t.with_timezone(&Utc) - now).num_seconds();
    if secs < 0 {
        return time(ts, now);
    }
    let words = match secs {
        s if s < 60 => "in under a minute".to_string(),
        s if s < 3600 => format!("in {} min", (s + 30) / 60),
        s if s < 86_400 => format!("in {} h", (s + 1800) / 3600),
        s => format!("in {} d", (s + 43_200) / 86_400),
    };
    html! { time datetime=(ts) title=(ts) { (words) } }
}

/// Outcome first: the run's status, the task it made, when.
pub(crate) fn last_run(run: Option<&RoutineRunSummary>, p: &str, now: DateTime<Utc>) -> Markup {
    let Some(s) = run else {
        return html! { span.muted { "never run" } };
    };
    html! {
        (pill(s.run.status.as_str()))
        @if let Some(i) = &s.linked_issue {
            " " a href={"/" (p) "/tasks/" (i.identifier)} title=(i.title) { span.ident { (i.identifier) } }
        }
        " " span.muted { (time(&s.run.triggered_at, now)) }
        @if let Some(why) = &s.run.failure_reason { div.muted { (why) } }
    }
}

const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// Common cron shapes in words ("Every weekday 09:00"); `None` for the
/// rest, which are shown as their expression alone.
pub(crate) fn describe_cron(expr: &str) -> Option<String> {
    let f: Vec<&str> = expr.split_whitespace().collect();
    let [min, hour, dom, month, dow] = f.as_slice() else {
        return None;
    };
    let num = |s: &str, max: u32| s.parse::<u32>().ok().filter(|n| *n <= max);
    if *dom != "*" || *month != "*" {
        return None;
    }
    if let (Some(step), "*", "*") = (min.strip_prefix("*/"), *hour, *dow) {
        return num(step, 59).map(|n| format!("Every {n} minutes"));
    }
    if let (Some(m), "*", "*") = (num(min, 59), *hour, *dow) {
        return Some(format!("Every hour at :{m:02}"));
    }
    let (m, h) = (num(min, 59)?, num(hour, 23)?);
    let at = format!("{h:02}:{m:02}");
    match *dow {
        "*" => Some(format!("Every day {at}")),
        "1-5" => Some(format!("Every weekday {at}")),
        "0,6" | "6,0" => Some(format!("Every weekend day {at}")),
        d => num(d, 7).map(|d| format!("Every {} {at}", DAYS[d as usize % 7])),
    }
}

fn form(company_id: &str, agents: &[Agent]) -> Markup {
    html! {
        form.card.routine-form #routine-form data-api-form="new-routine" data-company-id=(company_id) autocomplete="off" {
            h2 { "New routine" }
            label { "Title" input name="title" required maxlength="200" placeholder="Weekly dependency check"; }
            label { "Instructions (Markdown; becomes the task's description)"
                textarea name="description" rows="4" placeholder="What the agent should do each time" {}
            }
            div.row {
                label { "Assigned to"
                    select name="assigneeAgentId" required {
                        option value="" { "Choose an agent…" }
                        @for a in agents.iter().filter(|a| a.status != AgentStatus::Terminated) {
                            option value=(a.id) { (a.name) }
                        }
                    }
                }
                label { "Priority"
                    select name="priority" {
                        option value="low" { "Low" }
                        option value="medium" selected { "Medium" }
                        option value="high" { "High" }
                        option value="critical" { "Critical" }
                    }
                }
            }
            div.row {
                label { "Schedule (cron: minute hour day month weekday)"
                    input name="cronExpression" required value="0 9 * * 1-5" placeholder="0 9 * * 1-5" spellcheck="false";
                }
                label { "Timezone"
                    input name="timezone" value="UTC" list="timezones" data-browser-timezone spellcheck="false";
                }
            }
            datalist #timezones {}
            p.muted.cron-hint { "Examples: " code { "0 9 * * 1-5" } " every weekday at 09:00, " code { "*/30 * * * *" } " every half hour, " code { "0 8 * * 1" } " Mondays at 08:00." }
            div.row {
                label { "If the last one is still running"
                    select name="concurrencyPolicy" {
                        option value="coalesce_if_active" selected { "Fold into the running one" }
                        option value="skip_if_active" { "Skip while one is running" }
                        option value="always_enqueue" { "Always start a new one" }
                    }
                }
                label { "After downtime"
                    select name="catchUpPolicy" {
                        option value="skip_missed" selected { "Run once after downtime" }
                        option value="enqueue_missed_with_cap" { "Run each missed time, up to 25" }
                    }
                }
                label { "When nothing has happened since the last run"
                    select name="activityGatePolicy" {
                        option value="always" selected { "Run anyway" }
                        option value="require_external_activity" { "Skip it (no task, no tokens)" }
                    }
                }
            }
            p.form-error #routine-form-error role="alert" hidden {}
            div.actions { button.primary type="submit" { "Create routine" } }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::describe_cron;

    #[test]
    fn common_schedules_read_in_words() {
        assert_eq!(
            describe_cron("0 9 * * 1-5").as_deref(),
            Some("Every weekday 09:00")
        );
        assert_eq!(
            describe_cron("30 7 * * *").as_deref(),
            Some("Every day 07:30")
        );
        assert_eq!(
            describe_cron("0 8 * * 1").as_deref(),
            Some("Every Monday 08:00")
        );
        assert_eq!(
            describe_cron("*/15 * * * *").as_deref(),
            Some("Every 15 minutes")
        );
        assert_eq!(
            describe_cron("5 * * * *").as_deref(),
            Some("Every hour at :05")
        );
        assert_eq!(describe_cron("0 9 1 * *"), None);
        assert_eq!(describe_cron("0 25 * * *"), None);
        assert_eq!(describe_cron("nonsense"), None);
    }
}
