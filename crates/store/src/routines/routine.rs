//! Routines: create, read, update with the checks each field needs. Every
//! change writes a revision in the same transaction
//! ([`crate::routines::revisions`]).


use chrono::{DateTime, Utc};
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::{Actor, ActorKind};
use paperclip_core::cron;
use paperclip_core::issue::IssuePriority;
use paperclip_core::routine::{
    ActivityGatePolicy, ActivityGateScope, CatchUpPolicy, ConcurrencyPolicy, LinkedIssue,
    NewRoutine, Routine, RoutinePatch, RoutineStatus, RoutineVariable, TITLE_MAX,
};
use serde_json::{json, Value};

use crate::audit::activity::{self, Entry};
use crate::engine::db::DbRow;
use crate::engine::row::{one_by_id, RowExt};
use crate::routines::revisions::write_revision;
use crate::{new_id, Error, Result, Store, Tx};

pub(crate) const COLUMNS: &str = "id, company_id, project_id, goal_id, parent_issue_id, title, \
     description, assignee_agent_id, priority, status, concurrency_policy, catch_up_policy, \
     variables, latest_revision_id, latest_revision_number, created_by_agent_id, \
     created_by_user_id, updated_by_agent_id, updated_by_user_id, last_triggered_at, \
     last_enqueued_at, created_at, updated_at, activity_gate_policy, activity_gate_scope";

pub(crate) fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

pub(crate) fn by(actor: &Actor) -> (Option<&str>, Option<&str>) {
    match actor.kind {
        ActorKind::Agent => (Some(actor.id.as_str()), None),
        ActorKind::User => (None, Some(actor.id.as_str())),
        ActorKind::System => (None, None),
    }
}

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
    let id = new_id();
    let ts = crate::now();
    let (agent, user) = by(actor);
    crate::engine::db::query(&format!(
        "INSERT INTO routines ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \
         $12, $13, NULL, 0, $14, $15, $14, $15, NULL, NULL, $16, $16, $17, $18)"
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
    .execute(tx.conn())
    .await?;
    record(
        &mut tx,
        actor,
        company_id,
        Action::RoutineCreated,
        EntityType::Routine,
        &id,
        json!({ "title": title, "assigneeAgentId": input.assignee_agent_id, "status": status }),
    )
    .await?;
    write_revision(&mut tx, actor, &id, "Created", None).await?;
    let routine = get_in(&mut tx, &id).await?;
    tx.commit().await?;
    Ok(routine)
}

pub async fn get(store: &Store, id: &str) -> Result<Routine> {
    one_by_id(
        store.pool(),
        &format!("SELECT {COLUMNS} FROM routines WHERE id = $1"),
        id,
        map,
        "Routine",
    )
    .await
}

pub(crate) async fn get_in(tx: &mut Tx, id: &str) -> Result<Routine> {
    one_by_id(
        tx.conn(),
        &format!("SELECT {COLUMNS} FROM routines WHERE id = $1"),
        id,
        map,
        "Routine",
    )
    .await
}

pub async fn list(
    store: &Store,
    company_id: &str,
    project_id: Option<&str>,
) -> Result<Vec<Routine>> {
    let rows = crate::engine::db::query(&format!(
        "SELECT {COLUMNS} FROM routines WHERE company_id = $1 \
         AND ($2 IS NULL OR CAST(project_id AS TEXT) = $2) ORDER BY created_at DESC, id DESC"
    ))
    .bind(company_id)
    .bind(project_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(map).collect()
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
         activity_gate_policy = $16, activity_gate_scope = $17 WHERE id = $1",
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
    .execute(tx.conn())
    .await?;
    if status == RoutineStatus::Active && current.status != RoutineStatus::Active {
        // Resumed: schedules start again from now; ticks missed while
        // paused are not owed.
        crate::routines::triggers::reschedule_in(&mut tx, id, now).await?;
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
    ] {
        if a.get(key) != b.get(key) {
            changed.push(key);
        }
    }
    record(
        &mut tx,
        actor,
        &current.company_id,
        Action::RoutineUpdated,
        EntityType::Routine,
        id,
        json!({ "changedKeys": changed, "status": status }),
    )
    .await?;
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

/// The routine's latest execution whose task is still open.
pub async fn active_issue(store: &Store, routine_id: &str) -> Result<Option<LinkedIssue>> {
    let row = crate::engine::db::query(
        "SELECT i.id, i.identifier, i.title, i.status, i.priority, i.updated_at \
         FROM routine_runs r JOIN issues i ON i.id = r.linked_issue_id \
         WHERE r.routine_id = $1 AND i.status IN ('backlog', 'todo', 'in_progress', \
         'in_review', 'blocked') ORDER BY r.created_at DESC LIMIT 1",
    )
    .bind(routine_id)
    .fetch_optional(store.pool())
    .await?;
    row.as_ref().map(map_linked).transpose()
}

/// [`active_issue`] of every routine of the company in one query: the
/// newest open execution task per routine id.
pub async fn active_issues_of_company(
    store: &Store,
    company_id: &str,
) -> Result<std::collections::HashMap<String, LinkedIssue>> {
    let rows = crate::engine::db::query(
        "SELECT r.routine_id, i.id, i.identifier, i.title, i.status, i.priority, i.updated_at \
         FROM routine_runs r JOIN issues i ON i.id = r.linked_issue_id \
         WHERE r.company_id = $1 AND i.status IN ('backlog', 'todo', 'in_progress', \
         'in_review', 'blocked') ORDER BY r.created_at DESC",
    )
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    let mut out = std::collections::HashMap::new();
    for row in &rows {
        // Rows come newest first: the first one seen per routine wins.
        if let std::collections::hash_map::Entry::Vacant(slot) = out.entry(row.text("routine_id")?)
        {
            slot.insert(map_linked(row)?);
        }
    }
    Ok(out)
}

pub(crate) fn map_linked(row: &DbRow) -> Result<LinkedIssue> {
    Ok(LinkedIssue {
        id: row.text("id")?,
        identifier: row.text("identifier")?,
        title: row.text("title")?,
        status: row.stored("status")?,
        priority: row.stored("priority")?,
        updated_at: row.text("updated_at")?,
    })
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

pub(crate) async fn record(
    tx: &mut Tx,
    actor: &Actor,
    company_id: &str,
    action: Action,
    entity_type: EntityType,
    id: &str,
    details: Value,
) -> Result<()> {
    activity::record(
        tx,
        actor,
        Entry {
            company_id,
            action,
            entity_type,
            entity_id: id,
            details,
        },
    )
    .await
}

pub(crate) fn map(row: &DbRow) -> Result<Routine> {
    let variables = row.json("variables")?;
    Ok(Routine {
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        project_id: row.opt_text("project_id")?,
        goal_id: row.opt_text("goal_id")?,
        parent_issue_id: row.opt_text("parent_issue_id")?,
        title: row.text("title")?,
        description: row.opt_text("description")?,
        assignee_agent_id: row.opt_text("assignee_agent_id")?,
        priority: row.stored("priority")?,
        status: row.stored("status")?,
        concurrency_policy: row.stored("concurrency_policy")?,
        catch_up_policy: row.stored("catch_up_policy")?,
        activity_gate_policy: row.stored("activity_gate_policy")?,
        activity_gate_scope: row.stored("activity_gate_scope")?,
        variables: serde_json::from_value(variables).unwrap_or_default(),
        latest_revision_id: row.opt_text("latest_revision_id")?,
        latest_revision_number: row.int("latest_revision_number")?,
        created_by_agent_id: row.opt_text("created_by_agent_id")?,
        created_by_user_id: row.opt_text("created_by_user_id")?,
        updated_by_agent_id: row.opt_text("updated_by_agent_id")?,
        updated_by_user_id: row.opt_text("updated_by_user_id")?,
        last_triggered_at: row.opt_text("last_triggered_at")?,
        last_enqueued_at: row.opt_text("last_enqueued_at")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}
