//! Routines: create, read, update with the checks each field needs. Every
//! change writes a revision in the same transaction
//! ([`crate::routines::revisions`]).

use crate::routines::table::*;

use chrono::{DateTime, Utc};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::cron;
use paperclip_core::issue::IssuePriority;
use paperclip_core::routine::{
    ActivityGatePolicy, ActivityGateScope, CatchUpPolicy, ConcurrencyPolicy, NewRoutine, Routine,
    RoutinePatch, RoutineStatus, RoutineVariable, TITLE_MAX,
};
use serde_json::json;

use crate::engine::row::RowExt;
use crate::routines::checks;
use crate::routines::revisions::write_revision;
use crate::{new_id, Error, Result, Store, Tx};

pub async fn create(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    input: &NewRoutine,
) -> Result<Routine> {
    let title = checked_title(&input.title)?;
    let variables = merged_variables(
        input.variables.clone().unwrap_or_default(),
        &title,
        input.description.as_deref(),
    )?;
    let mut status = input.status.unwrap_or(RoutineStatus::Active);
    if status == RoutineStatus::Active && input.assignee_agent_id.is_none() {
        // Upstream keeps an unassigned routine paused rather than refusing it.
        status = RoutineStatus::Paused;
    }
    project_scope_has_project(input.activity_gate_scope, input.project_id.as_deref())?;
    let mut tx = store.begin().await?;
    crate::org::companies::exists_in(&mut tx, company_id).await?;
    check_refs(
        &mut tx,
        company_id,
        input.assignee_agent_id.as_deref(),
        input.project_id.as_deref(),
        input.goal_id.as_deref(),
        input.parent_issue_id.as_deref(),
    )
    .await?;
    checks::folder(&mut tx, company_id, input.folder_id.as_deref()).await?;
    if let Some(env) = &input.env {
        checks::env(&mut tx, company_id, env).await?;
    }
    let responsible =
        checks::responsible_user(&mut tx, company_id, actor, input.parent_issue_id.as_deref())
            .await?;
    let id = new_id();
    let ts = crate::now();
    let (agent, user) = by(actor);
    crate::engine::db::query(&format!(
        "INSERT INTO routines ({COLUMNS}, folder_id, env, responsible_user_id) VALUES ($1, $2, \
         $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULL, 0, $14, $15, $14, $15, NULL, NULL, \
         $16, $16, $17, $18, $19, $20, $21)"
    ))
    .bind(&id)
    .bind(company_id)
    .bind(input.project_id.as_deref())
    .bind(input.goal_id.as_deref())
    .bind(input.parent_issue_id.as_deref())
    .bind(&title)
    .bind(input.description.as_deref())
    .bind(input.assignee_agent_id.as_deref())
    .bind(input.priority.unwrap_or(IssuePriority::Medium).as_str())
    .bind(status.as_str())
    .bind(
        input
            .concurrency_policy
            .unwrap_or(ConcurrencyPolicy::CoalesceIfActive)
            .as_str(),
    )
    .bind(
        input
            .catch_up_policy
            .unwrap_or(CatchUpPolicy::SkipMissed)
            .as_str(),
    )
    .bind(serde_json::to_string(&variables).expect("variables serialise"))
    .bind(agent)
    .bind(user)
    .bind(&ts)
    .bind(
        input
            .activity_gate_policy
            .unwrap_or(ActivityGatePolicy::Always)
            .as_str(),
    )
    .bind(
        input
            .activity_gate_scope
            .unwrap_or(ActivityGateScope::Company)
            .as_str(),
    )
    .bind(input.folder_id.as_deref())
    .bind(input.env.as_ref().map(|e| e.to_string()))
    .bind(responsible.as_deref())
    .execute(tx.conn())
    .await?;
    let env_keys = checks::env_changes(None, input.env.as_ref());
    record(
        &mut tx,
        actor,
        company_id,
        Action::RoutineCreated,
        EntityType::Routine,
        &id,
        json!({ "title": title, "assigneeAgentId": input.assignee_agent_id, "status": status,
            "folderId": input.folder_id, "env": { "changedKeys": env_keys } }),
    )
    .await?;
    write_revision(&mut tx, actor, &id, "Created", None).await?;
    let routine = get_in(&mut tx, &id).await?;
    tx.commit().await?;
    Ok(routine)
}

/// What changed, for the activity entry; the routine after the change.
pub async fn update(
    store: &Store,
    actor: &Actor,
    id: &str,
    patch: &RoutinePatch,
    now: DateTime<Utc>,
) -> Result<Routine> {
    let mut tx = store.begin().await?;
    let current = get_in(&mut tx, id).await?;
    if let Some(base) = &patch.base_revision_id {
        if current.latest_revision_id.as_deref() != Some(base.as_str()) {
            return Err(Error::conflict(
                "Routine was updated by someone else",
                Some(json!({ "latestRevisionId": current.latest_revision_id })),
            ));
        }
    }
    if current.status == RoutineStatus::Archived {
        return Err(Error::conflict("Routine is archived", None));
    }
    let title = match &patch.title {
        Some(t) => checked_title(t)?,
        None => current.title.clone(),
    };
    let description = match &patch.description {
        Some(d) => d.clone(),
        None => current.description.clone(),
    };
    let pick = |p: &Option<Option<String>>, c: &Option<String>| match p {
        Some(v) => v.clone(),
        None => c.clone(),
    };
    let assignee = pick(&patch.assignee_agent_id, &current.assignee_agent_id);
    let project = pick(&patch.project_id, &current.project_id);
    let goal = pick(&patch.goal_id, &current.goal_id);
    let parent = pick(&patch.parent_issue_id, &current.parent_issue_id);
    let status = patch.status.unwrap_or(current.status);
    if status == RoutineStatus::Active && assignee.is_none() {
        return Err(Error::rule("Default agent required"));
    }
    let folder = pick(&patch.folder_id, &current.folder_id);
    if patch.folder_id.is_some() {
        checks::folder(&mut tx, &current.company_id, folder.as_deref()).await?;
    }
    let env = match &patch.env {
        Some(Some(env)) => {
            checks::env(&mut tx, &current.company_id, env).await?;
            Some(env.clone())
        }
        Some(None) => None,
        None => current.env.clone(),
    };
    let responsible = match &current.responsible_user_id {
        Some(user) => Some(user.clone()),
        None => {
            checks::responsible_user(&mut tx, &current.company_id, actor, parent.as_deref()).await?
        }
    };
    check_refs(
        &mut tx,
        &current.company_id,
        assignee.as_deref(),
        project.as_deref(),
        goal.as_deref(),
        parent.as_deref(),
    )
    .await?;
    project_scope_has_project(
        Some(
            patch
                .activity_gate_scope
                .unwrap_or(current.activity_gate_scope),
        ),
        project.as_deref(),
    )?;
    let variables = merged_variables(
        patch
            .variables
            .clone()
            .unwrap_or_else(|| current.variables.clone()),
        &title,
        description.as_deref(),
    )?;
    let (agent, user) = by(actor);
    crate::engine::db::query(
        "UPDATE routines SET title = $2, description = $3, assignee_agent_id = $4, \
         project_id = $5, goal_id = $6, parent_issue_id = $7, priority = $8, status = $9, \
         concurrency_policy = $10, catch_up_policy = $11, variables = $12, \
         updated_by_agent_id = $13, updated_by_user_id = $14, updated_at = $15, \
         activity_gate_policy = $16, activity_gate_scope = $17, folder_id = $18, env = $19, \
         responsible_user_id = $20 WHERE id = $1",
    )
    .bind(id)
    .bind(&title)
    .bind(description.as_deref())
    .bind(assignee.as_deref())
    .bind(project.as_deref())
    .bind(goal.as_deref())
    .bind(parent.as_deref())
    .bind(patch.priority.unwrap_or(current.priority).as_str())
    .bind(status.as_str())
    .bind(
        patch
            .concurrency_policy
            .unwrap_or(current.concurrency_policy)
            .as_str(),
    )
    .bind(
        patch
            .catch_up_policy
            .unwrap_or(current.catch_up_policy)
            .as_str(),
    )
    .bind(serde_json::to_string(&variables).expect("variables serialise"))
    .bind(agent)
    .bind(user)
    .bind(crate::now())
    .bind(
        patch
            .activity_gate_policy
            .unwrap_or(current.activity_gate_policy)
            .as_str(),
    )
    .bind(
        patch
            .activity_gate_scope
            .unwrap_or(current.activity_gate_scope)
            .as_str(),
    )
    .bind(folder.as_deref())
    .bind(env.as_ref().map(|e| e.to_string()))
    .bind(responsible.as_deref())
    .execute(tx.conn())
    .await?;
    if status == RoutineStatus::Active && current.status != RoutineStatus::Active {
        // Resumed: schedules start again from now; ticks missed while
        // paused are not owed.
        crate::routines::trigger_table::reschedule_in(&mut tx, id, now).await?;
    }
    let mut changed: Vec<&str> = Vec::new();
    let after = get_in(&mut tx, id).await?;
    let (a, b) = (
        serde_json::to_value(&current).unwrap_or_default(),
        serde_json::to_value(&after).unwrap_or_default(),
    );
    for key in [
        "title",
        "description",
        "assigneeAgentId",
        "projectId",
        "goalId",
        "parentIssueId",
        "priority",
        "status",
        "concurrencyPolicy",
        "catchUpPolicy",
        "activityGatePolicy",
        "activityGateScope",
        "variables",
        "env",
        "folderId",
    ] {
        if a.get(key) != b.get(key) {
            changed.push(key);
        }
    }
    let mut details = json!({ "changedKeys": changed, "status": status });
    let env_keys = checks::env_changes(current.env.as_ref(), after.env.as_ref());
    if !env_keys.is_empty() {
        details["env"] = json!({ "changedKeys": env_keys });
    }
    record(
        &mut tx,
        actor,
        &current.company_id,
        Action::RoutineUpdated,
        EntityType::Routine,
        id,
        details,
    )
    .await?;
    // The folder is filing, not part of the routine: moving it writes no
    // revision (as the original's).
    changed.retain(|k| *k != "folderId");
    if !changed.is_empty() {
        write_revision(
            &mut tx,
            actor,
            id,
            &format!("Updated {}", changed.join(", ")),
            None,
        )
        .await?;
    }
    let routine = get_in(&mut tx, id).await?;
    tx.commit().await?;
    Ok(routine)
}

async fn check_refs(
    tx: &mut Tx,
    company_id: &str,
    assignee: Option<&str>,
    project: Option<&str>,
    goal: Option<&str>,
    parent: Option<&str>,
) -> Result<()> {
    for (table, id, what, field) in [
        ("agents", assignee, "Assignee agent", "assigneeAgentId"),
        ("projects", project, "Project", "projectId"),
        ("goals", goal, "Goal", "goalId"),
        ("issues", parent, "Parent issue", "parentIssueId"),
    ] {
        let Some(id) = id else { continue };
        if uuid::Uuid::try_parse(id).is_err() {
            return Err(Error::invalid(field, format!("{what} id must be a UUID")));
        }
        let sql = format!("SELECT 1 FROM {table} WHERE id = $1 AND company_id = $2");
        let found = crate::engine::db::query(&sql)
            .bind(id)
            .bind(company_id)
            .fetch_optional(tx.conn())
            .await?;
        if found.is_none() {
            return Err(Error::rule(format!("{what} not found in this company")));
        }
    }
    if let Some(agent) = assignee {
        let row = crate::engine::db::query("SELECT status FROM agents WHERE id = $1")
            .bind(agent)
            .fetch_one(tx.conn())
            .await?;
        if row.text("status")? == "terminated" {
            return Err(Error::rule("Cannot assign a routine to a terminated agent"));
        }
    }
    Ok(())
}

fn checked_title(title: &str) -> Result<String> {
    let title = title.trim();
    if title.is_empty() || title.chars().count() > TITLE_MAX {
        return Err(Error::invalid(
            "title",
            format!("Title must be 1 to {TITLE_MAX} characters"),
        ));
    }
    Ok(title.to_string())
}

/// A gate that looks at the routine's project needs one: without, it
/// would find nothing and skip every tick.
fn project_scope_has_project(
    scope: Option<ActivityGateScope>,
    project: Option<&str>,
) -> Result<()> {
    if scope == Some(ActivityGateScope::Project) && project.is_none() {
        return Err(Error::rule(
            "activityGateScope 'project' needs the routine's projectId",
        ));
    }
    Ok(())
}

/// The declared variables plus any `{{name}}` the title or description uses
/// (as required text), built-ins excluded; a bad name is refused.
fn merged_variables(
    mut declared: Vec<RoutineVariable>,
    title: &str,
    description: Option<&str>,
) -> Result<Vec<RoutineVariable>> {
    for v in &declared {
        if !cron::valid_variable_name(&v.name) || cron::is_builtin(&v.name) {
            return Err(Error::invalid(
                "variables",
                format!("Invalid variable name: {}", v.name),
            ));
        }
        v.check_definition().map_err(Error::rule)?;
    }
    let mut used = cron::placeholders(title);
    used.extend(cron::placeholders(description.unwrap_or("")));
    for name in used {
        if cron::is_builtin(&name) || declared.iter().any(|v| v.name == name) {
            continue;
        }
        declared.push(RoutineVariable {
            name,
            label: None,
            kind: paperclip_core::routine::VariableType::Text,
            default_value: None,
            required: true,
            options: Vec::new(),
        });
    }
    Ok(declared)
}
