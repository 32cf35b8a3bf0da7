//! The work part of an import, in the caller's transaction: tasks (parents
//! and blockers before the tasks that name them) with their comment threads,
//! and routines with their triggers.

use std::collections::BTreeMap;

use paperclip_core::actor::Actor;
use paperclip_core::input::NewIssue;
use paperclip_core::issue::{IssuePriority, IssueStatus};
use paperclip_core::package::Package;
use paperclip_core::routine::{
    CatchUpPolicy, ConcurrencyPolicy, NewTrigger, RoutineStatus, RoutineVariable, TriggerKind,
};

use super::apply::{done, Done};
use crate::routines::table::COLUMNS;
use crate::{new_id, now, Backend, Error, Result, Tx};

pub(super) struct Refs<'a> {
    pub company_id: &'a str,
    pub agents: &'a BTreeMap<String, String>,
    pub projects: &'a BTreeMap<String, String>,
    pub goals: &'a BTreeMap<String, String>,
}

fn parse<T: serde::de::DeserializeOwned>(
    value: Option<&String>,
    field: String,
) -> Result<Option<T>> {
    value
        .map(|v| {
            serde_json::from_value(serde_json::json!(v))
                .map_err(|_| Error::invalid(&field, format!("Unknown value '{v}'")))
        })
        .transpose()
}

/// A package timestamp in our stored form; `None` when it does not read.
fn stamp(value: Option<&String>) -> Option<String> {
    let t = chrono::DateTime::parse_from_rfc3339(value?).ok()?;
    Some(
        t.with_timezone(&chrono::Utc)
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string(),
    )
}

pub(super) async fn tasks(
    tx: &mut Tx,
    backend: Backend,
    actor: &Actor,
    pkg: &Package,
    refs: &Refs<'_>,
    warnings: &mut Vec<String>,
) -> Result<(Vec<Done>, usize)> {
    let in_pkg = |slug: &String| pkg.tasks.iter().any(|t| &t.slug == slug);
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    let mut left: Vec<usize> = (0..pkg.tasks.len()).collect();
    let mut out = Vec::new();
    let mut comments = 0;
    while !left.is_empty() {
        // Tasks whose parent and blockers exist go first; what is left when
        // nothing can go is a cycle, imported without its loop's edges.
        let ready: Vec<usize> = left
            .iter()
            .copied()
            .filter(|&i| {
                let t = &pkg.tasks[i];
                t.parent
                    .iter()
                    .chain(&t.blocked_by)
                    .all(|s| ids.contains_key(s) || !in_pkg(s))
            })
            .collect();
        let (batch, relaxed) = match ready.is_empty() {
            true => (vec![left[0]], true),
            false => (ready, false),
        };
        for i in batch {
            left.retain(|&j| j != i);
            let t = &pkg.tasks[i];
            let field = format!("tasks.{}", t.slug);
            let mut status: Option<IssueStatus> =
                parse(t.status.as_ref(), format!("{field}.status"))?;
            // No run holds an imported task: work in progress starts over.
            if status == Some(IssueStatus::InProgress) {
                status = Some(IssueStatus::Todo);
            }
            let assignee = t
                .assignee
                .as_ref()
                .and_then(|s| refs.agents.get(s))
                .cloned();
            if assignee.is_none()
                && status.is_some_and(|s| {
                    !matches!(
                        s,
                        IssueStatus::Backlog | IssueStatus::Done | IssueStatus::Cancelled
                    )
                })
            {
                status = Some(IssueStatus::Backlog);
            }
            if relaxed {
                warnings.push(format!(
                    "Task {} is in a parent/blocker cycle: imported without those links",
                    t.slug
                ));
            }
            let blockers: Vec<String> = match relaxed {
                true => vec![],
                false => t
                    .blocked_by
                    .iter()
                    .filter_map(|s| ids.get(s).cloned())
                    .collect(),
            };
            if !t.labels.is_empty() {
                warnings.push(format!("Task {} labels were not imported", t.slug));
            }
            let input = NewIssue {
                title: t.title.clone(),
                description: (!t.description.is_empty()).then(|| t.description.clone()),
                status,
                priority: parse::<IssuePriority>(t.priority.as_ref(), format!("{field}.priority"))?,
                project_id: t
                    .project
                    .as_ref()
                    .and_then(|s| refs.projects.get(s))
                    .cloned(),
                goal_id: t.goal.as_ref().and_then(|s| refs.goals.get(s)).cloned(),
                parent_id: t
                    .parent
                    .as_ref()
                    .and_then(|s| ids.get(s))
                    .cloned()
                    .filter(|_| !relaxed),
                assignee_agent_id: assignee,
                assignee_user_id: None,
                billing_code: t.billing_code.clone(),
                label_ids: None,
                blocked_by_issue_ids: (!blockers.is_empty()).then_some(blockers),
            };
            // A package's tree is imported as it was made, at any depth.
            let issue = crate::issues::create::create_in_placed(
                tx,
                backend,
                actor,
                refs.company_id,
                &input,
                true,
                false,
            )
            .await?;
            for c in &t.comments {
                let author = c.author_agent.as_ref().and_then(|s| refs.agents.get(s));
                let kind = match author {
                    Some(_) => "agent",
                    None if c.author_type == "system" => "system",
                    None => "user",
                };
                let ts = stamp(c.created_at.as_ref()).unwrap_or_else(now);
                // Written as they were, waking nobody: an imported thread is
                // history, not news.
                crate::engine::db::query(
                    "INSERT INTO issue_comments (id, company_id, issue_id, author_agent_id, \
                     author_user_id, author_type, created_by_run_id, body, created_at, updated_at, \
                     client_request_id) VALUES ($1, $2, $3, $4, NULL, $5, NULL, $6, $7, $7, NULL)",
                )
                .bind(new_id())
                .bind(refs.company_id)
                .bind(&issue.id)
                .bind(author)
                .bind(kind)
                .bind(&c.body)
                .bind(&ts)
                .execute(tx.conn())
                .await?;
                comments += 1;
            }
            ids.insert(t.slug.clone(), issue.id.clone());
            out.push(done(
                &t.slug,
                Some(issue.id),
                "created",
                &issue.identifier,
                None,
            ));
        }
    }
    Ok((out, comments))
}

pub(super) async fn routines(
    tx: &mut Tx,
    actor: &Actor,
    pkg: &Package,
    refs: &Refs<'_>,
    warnings: &mut Vec<String>,
) -> Result<Vec<Done>> {
    let mut out = Vec::new();
    for r in &pkg.routines {
        let field = format!("routines.{}", r.slug);
        let assignee = r.assignee.as_ref().and_then(|s| refs.agents.get(s));
        let mut status = parse::<RoutineStatus>(r.status.as_ref(), format!("{field}.status"))?
            .unwrap_or(RoutineStatus::Active);
        if status == RoutineStatus::Active && assignee.is_none() {
            status = RoutineStatus::Paused;
        }
        let variables: Vec<RoutineVariable> = match &r.variables {
            None => vec![],
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| Error::invalid(&format!("{field}.variables"), e.to_string()))?,
        };
        let id = new_id();
        let ts = now();
        let (agent, user) = crate::routines::table::by(actor);
        crate::engine::db::query(&format!(
            "INSERT INTO routines ({COLUMNS}) VALUES ($1, $2, $3, NULL, NULL, $4, $5, $6, $7, $8, \
             $9, $10, $11, NULL, 0, $12, $13, $12, $13, NULL, NULL, $14, $14, 'always', 'company')"
        ))
        .bind(&id)
        .bind(refs.company_id)
        .bind(r.project.as_ref().and_then(|s| refs.projects.get(s)))
        .bind(r.title.trim())
        .bind((!r.description.is_empty()).then_some(r.description.as_str()))
        .bind(assignee)
        .bind(
            parse::<IssuePriority>(r.priority.as_ref(), format!("{field}.priority"))?
                .unwrap_or(IssuePriority::Medium)
                .as_str(),
        )
        .bind(status.as_str())
        .bind(
            parse::<ConcurrencyPolicy>(
                r.concurrency_policy.as_ref(),
                format!("{field}.concurrencyPolicy"),
            )?
            .unwrap_or(ConcurrencyPolicy::CoalesceIfActive)
            .as_str(),
        )
        .bind(
            parse::<CatchUpPolicy>(r.catch_up_policy.as_ref(), format!("{field}.catchUpPolicy"))?
                .unwrap_or(CatchUpPolicy::SkipMissed)
                .as_str(),
        )
        .bind(serde_json::to_string(&variables).expect("variables serialise"))
        .bind(agent)
        .bind(user)
        .bind(&ts)
        .execute(tx.conn())
        .await?;
        let routine = crate::routines::table::get_in(tx, &id).await?;
        for (n, t) in r.triggers.iter().enumerate() {
            let kind = parse::<TriggerKind>(Some(&t.kind), format!("{field}.triggers.{n}.kind"))?
                .expect("given");
            if kind == TriggerKind::Webhook {
                warnings.push(format!("Routine {}: its webhook trigger needs a new signing secret; add it on the routine", r.slug));
                continue;
            }
            let input = NewTrigger {
                kind,
                label: t.label.clone(),
                enabled: Some(t.enabled),
                cron_expression: t.cron_expression.clone(),
                timezone: t.timezone.clone(),
                signing_mode: None,
                replay_window_sec: None,
            };
            crate::routines::trigger_table::create_in(
                tx,
                actor,
                &routine,
                &input,
                None,
                chrono::Utc::now(),
            )
            .await?;
        }
        crate::routines::revisions::write_revision(tx, actor, &id, "Imported", None).await?;
        out.push(done(&r.slug, Some(id), "created", r.title.trim(), None));
    }
    Ok(out)
}
