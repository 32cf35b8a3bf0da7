//! Projects: a unit of work under a goal, with a lead agent and a target date.

use crate::audit::mutate::{mutate, Audited};
use crate::engine::db::DbRow;
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::codebase::{self, Codebase};
use paperclip_core::input::{NewProject, ProjectPatch};
use paperclip_core::model::{BudgetWindowKind, GoalRef, Project, ProjectBudget};
use paperclip_core::naming::url_key;
use paperclip_core::project::{PauseReason, ProjectIcon, ProjectLook, ProjectStatus};
use paperclip_core::workspace::ProjectWorkspace;
use paperclip_core::workspace_ops::ExecutionWorkspacePolicy;
use serde_json::{json, Map};

use crate::audit::activity::{self, Entry};
use crate::engine::row::{one_by_id, RowExt};
use crate::engine::sql::diff;
use crate::org::workspace_rows::{self, Of};
use crate::{new_id, now, Error, Result, Store, Tx};

pub async fn create(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    input: NewProject,
) -> Result<Project> {
    let name = input.name.trim().to_string();
    if name.is_empty() {
        return Err(Error::invalid("name", "Name must not be empty"));
    }
    if let Some(date) = &input.target_date {
        check_date(date)?;
    }
    if let Some(env) = &input.env {
        check_env(env)?;
    }
    let mut input = input;
    match input.goal_ids.take().as_deref() {
        None | Some([]) => {}
        Some([one]) if input.goal_id.as_ref().is_none_or(|g| g == one) => {
            input.goal_id = Some(one.clone());
        }
        Some(_) => {
            return Err(Error::invalid(
                "goalIds",
                "A project serves one goal: give at most one id (the same as goalId if both)",
            ))
        }
    }
    let mut tx = store.begin().await?;
    crate::org::companies::exists_in(&mut tx, company_id).await?;
    if let Some(goal) = &input.goal_id {
        crate::org::goals::get_in_company(&mut tx, company_id, goal).await?;
    }
    if let Some(lead) = &input.lead_agent_id {
        crate::org::agents::get_in_company(&mut tx, company_id, lead).await?;
    }
    let id = new_id();
    let ts = now();
    crate::engine::db::query(
        "INSERT INTO projects (id, company_id, goal_id, name, url_key, description, status, \
         lead_agent_id, target_date, color, created_at, updated_at, execution_workspace_policy, \
         icon, env) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11, $12, $13, $14)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(input.goal_id.as_deref())
    .bind(&name)
    .bind(url_key(&name))
    .bind(input.description.as_deref())
    .bind(input.status.unwrap_or(ProjectStatus::Backlog).as_str())
    .bind(input.lead_agent_id.as_deref())
    .bind(input.target_date.as_deref())
    .bind(input.color.as_deref())
    .bind(&ts)
    .bind(policy_json(input.execution_workspace_policy.as_ref()))
    .bind(input.icon.map(icon_name))
    .bind(input.env.as_ref().map(|e| e.to_string()))
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id,
            action: Action::ProjectCreated,
            entity_type: EntityType::Project,
            entity_id: &id,
            details: json!({ "name": name }),
        },
    )
    .await?;
    let project = get_in(&mut tx, &id).await?;
    tx.commit().await?;
    Ok(project)
}

/// A project with its goal's title (upstream's `goals`), its task count and
/// its pause, in the same read. Upstream pauses a project only for its
/// budget's hard stop and resumes it when the stop is resolved; here that stop
/// is the open hard incident (opened with the cost that crossed the line,
/// resolved by a raise, an override or the month's rollover), so the pause
/// is read from it rather than kept twice.
const SELECT: &str = "SELECT p.*, g.title AS goal_title, \
     (SELECT COUNT(*) FROM issues i WHERE i.project_id = p.id) AS task_count, \
     (SELECT MIN(bi.created_at) FROM budget_incidents bi WHERE bi.scope_type = 'project' \
      AND bi.scope_id = CAST(p.id AS TEXT) AND bi.kind = 'hard' AND bi.status = 'open') AS paused_at \
     FROM projects p LEFT JOIN goals g ON g.id = p.goal_id";
static BY_ID: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("{SELECT} WHERE p.id = $1"));

pub async fn list(store: &Store, company_id: &str) -> Result<Vec<Project>> {
    let rows = crate::engine::db::query(&format!(
        "{SELECT} WHERE p.company_id = $1 ORDER BY p.created_at, p.id"
    ))
    .bind(company_id)
    .fetch_all(store.pool())
    .await?;
    let workspaces = workspace_rows::of(store.pool(), Of::Company, company_id).await?;
    rows.iter()
        .map(|row| Ok(with_workspaces(map(row)?, &workspaces)))
        .collect()
}

pub async fn get(store: &Store, id: &str) -> Result<Project> {
    let project = one_by_id(store.pool(), &BY_ID, id, map, "Project").await?;
    let workspaces = workspace_rows::of(store.pool(), Of::Project, id).await?;
    Ok(with_workspaces(project, &workspaces))
}

async fn get_in(tx: &mut Tx, id: &str) -> Result<Project> {
    let project = one_by_id(tx.conn(), &BY_ID, id, map, "Project").await?;
    let workspaces = workspace_rows::of(tx.conn(), Of::Project, id).await?;
    Ok(with_workspaces(project, &workspaces))
}

/// The project with its workspaces (of `all`, which may hold other
/// projects'), the primary one and the codebase it makes.
fn with_workspaces(mut project: Project, all: &[ProjectWorkspace]) -> Project {
    project.workspaces = all
        .iter()
        .filter(|w| w.project_id == project.id)
        .cloned()
        .collect();
    let primary = codebase::primary(&project.workspaces).cloned();
    project.codebase = Codebase::of(primary.as_ref());
    project.primary_workspace = primary;
    project
}

pub(crate) async fn get_in_company(tx: &mut Tx, company_id: &str, id: &str) -> Result<Project> {
    let project = get_in(tx, id).await?;
    if project.company_id != company_id {
        return Err(Error::not_found("Project"));
    }
    Ok(project)
}

pub async fn update(
    store: &Store,
    actor: &Actor,
    id: &str,
    patch: ProjectPatch,
) -> Result<Project> {
    let mut tx = store.begin().await?;
    let before = get_in(&mut tx, id).await?;
    let mut after = before.clone();
    let mut changes = Map::new();
    if let Some(name) = patch.name {
        let name = name.trim().to_string();
        if name.is_empty() {
            return Err(Error::invalid("name", "Name must not be empty"));
        }
        diff(&mut changes, "name", &before.name, &name);
        after.url_key = url_key(&name);
        after.name = name;
    }
    if let Some(description) = patch.description {
        diff(
            &mut changes,
            "description",
            &before.description,
            &description,
        );
        after.description = description;
    }
    if let Some(status) = patch.status {
        after.status = status;
        diff(&mut changes, "status", &before.status, &after.status);
    }
    if let Some(goal) = patch.goal_id {
        if let Some(goal_id) = &goal {
            crate::org::goals::get_in_company(&mut tx, &before.company_id, goal_id).await?;
        }
        diff(&mut changes, "goalId", &before.goal_id, &goal);
        after.goal_id = goal;
    }
    if let Some(lead) = patch.lead_agent_id {
        if let Some(lead_id) = &lead {
            crate::org::agents::get_in_company(&mut tx, &before.company_id, lead_id).await?;
        }
        diff(&mut changes, "leadAgentId", &before.lead_agent_id, &lead);
        after.lead_agent_id = lead;
    }
    if let Some(date) = patch.target_date {
        if let Some(d) = &date {
            check_date(d)?;
        }
        diff(&mut changes, "targetDate", &before.target_date, &date);
        after.target_date = date;
    }
    if let Some(color) = patch.color {
        diff(&mut changes, "color", &before.color, &color);
        after.color = color;
    }
    if let Some(policy) = patch.execution_workspace_policy {
        diff(
            &mut changes,
            "executionWorkspacePolicy",
            &before.execution_workspace_policy,
            &policy,
        );
        after.execution_workspace_policy = policy;
    }
    if let Some(icon) = patch.icon {
        diff(&mut changes, "icon", &before.look.icon, &icon);
        after.look.icon = icon;
    }
    if let Some(env) = patch.env {
        if let Some(e) = &env {
            check_env(e)?;
        }
        // The activity names the variables that changed, never a value:
        // a plain binding may hold something sensitive all the same.
        let names = env_changes(before.look.env.as_ref(), env.as_ref());
        if !names.is_empty() {
            changes.insert("env".into(), json!({ "changedKeys": names }));
        }
        after.look.env = env;
    }
    if let Some(archived) = patch.archived_at {
        diff(&mut changes, "archivedAt", &before.archived_at, &archived);
        after.archived_at = archived;
    }
    if changes.is_empty() {
        return Ok(before);
    }
    crate::engine::db::query(
        "UPDATE projects SET name = $2, url_key = $3, description = $4, status = $5, goal_id = $6, \
         lead_agent_id = $7, target_date = $8, color = $9, archived_at = $10, updated_at = $11, \
         execution_workspace_policy = $12, icon = $13, env = $14 WHERE id = $1",
    )
    .bind(id)
    .bind(&after.name)
    .bind(&after.url_key)
    .bind(after.description.as_deref())
    .bind(after.status)
    .bind(after.goal_id.as_deref())
    .bind(after.lead_agent_id.as_deref())
    .bind(after.target_date.as_deref())
    .bind(after.color.as_deref())
    .bind(after.archived_at.as_deref())
    .bind(now())
    .bind(policy_json(after.execution_workspace_policy.as_ref()))
    .bind(after.look.icon.map(icon_name))
    .bind(after.look.env.as_ref().map(|e| e.to_string()))
    .execute(tx.conn())
    .await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &before.company_id,
            action: Action::ProjectUpdated,
            entity_type: EntityType::Project,
            entity_id: id,
            details: json!({ "changes": changes }),
        },
    )
    .await?;
    let project = get_in(&mut tx, id).await?;
    tx.commit().await?;
    Ok(project)
}

pub async fn delete(store: &Store, actor: &Actor, id: &str) -> Result<Project> {
    mutate(store, actor, async |tx: &mut Tx| {
        let project = get_in(tx, id).await?;
        crate::engine::db::query("DELETE FROM projects WHERE id = $1")
            .bind(id)
            .execute(tx.conn())
            .await?;
        Ok(Audited {
            company_id: project.company_id.clone(),
            action: Action::ProjectDeleted,
            entity_type: EntityType::Project,
            entity_id: id.to_string(),
            details: json!({ "name": project.name }),
            value: project,
        })
    })
    .await
}

/// Target dates are calendar dates (`2027-03-01`) or full RFC 3339 timestamps.
fn check_date(date: &str) -> Result<()> {
    let ok = chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").is_ok()
        || chrono::DateTime::parse_from_rfc3339(date).is_ok();
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "targetDate",
            "Expected a date like 2027-03-01",
        ))
    }
}

fn map(row: &DbRow) -> Result<Project> {
    let goal_id = row.opt_text("goal_id")?;
    let goals = match (&goal_id, row.opt_text("goal_title")?) {
        (Some(id), Some(title)) => vec![GoalRef {
            id: id.clone(),
            title,
        }],
        _ => Vec::new(),
    };
    let paused_at = row.opt_text("paused_at")?;
    Ok(Project {
        goals,
        id: row.text("id")?,
        company_id: row.text("company_id")?,
        goal_ids: goal_id.iter().cloned().collect(),
        goal_id,
        name: row.text("name")?,
        description: row.opt_text("description")?,
        status: row.stored("status")?,
        lead_agent_id: row.opt_text("lead_agent_id")?,
        target_date: row.opt_text("target_date")?,
        color: row.opt_text("color")?,
        archived_at: row.opt_text("archived_at")?,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
        url_key: row.text("url_key")?,
        task_count: row.int("task_count")?,
        workspaces: Vec::new(),
        primary_workspace: None,
        codebase: Codebase::of(None),
        budget: match row.int("budget_monthly_cents")? {
            cents if cents > 0 => Some(ProjectBudget {
                amount_cents: cents,
                window_kind: BudgetWindowKind::CalendarMonthUtc,
            }),
            _ => None,
        },
        execution_workspace_policy: row
            .opt_json("execution_workspace_policy")?
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| Error::rule(format!("stored workspace policy unreadable: {e}")))?,
        look: ProjectLook {
            icon: row
                .opt_text("icon")?
                .map(|name| serde_json::from_value(serde_json::Value::String(name)))
                .transpose()
                .map_err(|e| Error::rule(format!("stored project icon unreadable: {e}")))?,
            env: row.opt_json("env")?,
            pause_reason: paused_at.as_ref().map(|_| PauseReason::Budget),
            paused_at,
            managed_by_plugin: None,
        },
    })
}

fn check_env(env: &serde_json::Value) -> Result<()> {
    paperclip_core::project::check_env(env).map_err(|why| Error::invalid("env", why))
}

fn icon_name(icon: ProjectIcon) -> String {
    serde_json::to_value(icon)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The variables added, removed or rebound between two envs, sorted.
fn env_changes(
    before: Option<&serde_json::Value>,
    after: Option<&serde_json::Value>,
) -> Vec<String> {
    let empty = Map::new();
    let vars =
        |env: Option<&serde_json::Value>| env.and_then(|e| e.as_object()).unwrap_or(&empty).clone();
    let (before, after) = (vars(before), vars(after));
    let mut names: Vec<String> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect();
    names.sort();
    names.dedup();
    names
}

fn policy_json(policy: Option<&ExecutionWorkspacePolicy>) -> Option<String> {
    policy.map(|p| serde_json::to_value(p).unwrap_or_default().to_string())
}

/// The project of task `issue_id` when that project is paused (its budget's
/// hard stop is open): upstream starts no new work for it. Read in the
/// wake's transaction, with the same rule as the project's `pausedAt`.
pub(crate) async fn paused_project_of(tx: &mut Tx, issue_id: &str) -> Result<Option<String>> {
    let row: Option<(String,)> = crate::engine::db::query_as(
        "SELECT i.project_id FROM issues i WHERE i.id = $1 AND EXISTS (SELECT 1 FROM budget_incidents bi \
         WHERE bi.scope_type = 'project' AND bi.scope_id = CAST(i.project_id AS TEXT) AND bi.kind = 'hard' \
         AND bi.status = 'open')",
    )
    .bind(issue_id)
    .fetch_optional(tx.conn())
    .await?;
    Ok(row.map(|(id,)| id))
}
