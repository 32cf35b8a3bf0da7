//! Companies: the tenant boundary. Every other row carries a `company_id`.

use crate::engine::db::DbRow;
use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::company::CompanyStatus;
use paperclip_core::input::{CompanyPatch, NewCompany};
use paperclip_core::model::Company;
use paperclip_core::naming::{base_issue_prefix, issue_prefix_candidate};
use serde_json::{json, Map};

use crate::audit::activity::{self, Entry};
use crate::engine::row::RowExt;
use crate::engine::sql::diff;
use crate::org::company_assets::Released;
use crate::{new_id, now, Error, Result, Store, Tx};

pub async fn create(store: &Store, actor: &Actor, input: NewCompany) -> Result<Company> {
    let name = input.name.trim().to_string();
    if name.is_empty() {
        return Err(Error::invalid("name", "Name must not be empty"));
    }
    let base = base_issue_prefix(&name);
    let mut tx = store.begin().await?;
    // The prefix must be unique per instance: take the first free candidate.
    // Under Postgres a concurrent create can still win the race for it; the
    // unique index then refuses ours and the caller sees a 409, never a duplicate.
    let taken: Vec<(String,)> = crate::engine::db::query_as(
        "SELECT issue_prefix FROM companies WHERE issue_prefix = $1 OR issue_prefix LIKE $2",
    )
    .bind(&base)
    .bind(format!("{base}%"))
    .fetch_all(tx.conn())
    .await?;
    let prefix = (0..)
        .map(|n| issue_prefix_candidate(&base, n))
        .find(|p| !taken.iter().any(|(t,)| t == p))
        .expect("an unbounded candidate sequence has a free entry");
    let id = new_id();
    let ts = now();
    crate::engine::db::query(
        "INSERT INTO companies (id, name, description, status, issue_prefix, issue_counter, \
         budget_monthly_cents, spent_monthly_cents, require_board_approval_for_new_agents, \
         default_responsible_user_id, created_at, updated_at) \
         VALUES ($1, $2, $3, 'active', $4, 0, $5, 0, $6, $7, $8, $8)",
    )
    .bind(&id)
    .bind(&name)
    .bind(input.description.as_deref())
    .bind(&prefix)
    .bind(i64::from(input.budget_monthly_cents.unwrap_or(0)))
    .bind(i64::from(
        input.require_board_approval_for_new_agents.unwrap_or(false),
    ))
    .bind(
        input
            .default_responsible_user_id
            .as_deref()
            .or(actor.user_id()),
    )
    .bind(&ts)
    .execute(tx.conn())
    .await
    .map_err(|e| match Error::from(e) {
        e if e.is_unique_violation() => Error::conflict("Issue prefix already taken, retry", None),
        e => e,
    })?;
    if let Some(user_id) = actor.user_id() {
        crate::org::members::add_owner(&mut tx, &id, user_id).await?;
    }
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: &id,
            action: Action::CompanyCreated,
            entity_type: EntityType::Company,
            entity_id: &id,
            details: json!({ "name": name, "issuePrefix": prefix }),
        },
    )
    .await?;
    let company = get_in(&mut tx, &id).await?;
    tx.commit().await?;
    Ok(company)
}

pub async fn list(store: &Store) -> Result<Vec<Company>> {
    let (start, _, _) = paperclip_core::budget::month_window(chrono::Utc::now());
    let rows = crate::engine::db::query("SELECT c.*, l.asset_id AS logo_asset_id, \
         CAST(COALESCE((SELECT SUM(t.cost_cents) FROM cost_month_totals t \
         WHERE t.company_id = c.id AND t.month = $1 AND t.dim = 'task'), 0) AS BIGINT) AS month_spend \
         FROM companies c LEFT JOIN company_logos l ON l.company_id = c.id ORDER BY c.created_at, c.id")
        .bind(&start[..7])
        .fetch_all(store.pool())
        .await?;
    rows.iter().map(map).collect()
}

/// A company with its month's spend, from the kept monthly totals (migration
/// 13: its `task` rows split the month's whole spend in two), not a sum of
/// the month's cost events (2.3 ms at a million tasks, on every load),
/// and its logo.
const LOAD: &str = "SELECT c.*, l.asset_id AS logo_asset_id, \
     CAST(COALESCE((SELECT SUM(t.cost_cents) FROM cost_month_totals t \
     WHERE t.company_id = c.id AND t.month = $2 AND t.dim = 'task'), 0) AS BIGINT) AS month_spend \
     FROM companies c LEFT JOIN company_logos l ON l.company_id = c.id WHERE c.id = $1";

pub async fn get(store: &Store, id: &str) -> Result<Company> {
    let (start, _, _) = paperclip_core::budget::month_window(chrono::Utc::now());
    let row = crate::engine::db::query(LOAD)
        .bind(id)
        .bind(&start[..7])
        .fetch_optional(store.pool())
        .await?;
    row.as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| Error::not_found("Company"))
}

pub(crate) async fn get_in(tx: &mut Tx, id: &str) -> Result<Company> {
    let (start, _, _) = paperclip_core::budget::month_window(chrono::Utc::now());
    let row = crate::engine::db::query(LOAD)
        .bind(id)
        .bind(&start[..7])
        .fetch_optional(tx.conn())
        .await?;
    row.as_ref()
        .map(map)
        .transpose()?
        .ok_or_else(|| Error::not_found("Company"))
}

/// That the company exists (inside a write, before something is added to it);
/// no spend is summed for it.
pub(crate) async fn exists_in(tx: &mut Tx, id: &str) -> Result<()> {
    exists_on(tx.conn(), id).await
}

/// Whether the company exists, without its month's spend: the check of
/// every company-scoped route.
pub async fn exists(store: &Store, id: &str) -> Result<()> {
    exists_on(store.pool(), id).await
}

async fn exists_on<'e>(db: impl crate::engine::db::Exec<'e>, id: &str) -> Result<()> {
    let row: Option<(String,)> =
        crate::engine::db::query_as("SELECT id FROM companies WHERE id = $1")
            .bind(id)
            .fetch_all(db)
            .await?
            .pop();
    row.map(|_| ()).ok_or_else(|| Error::not_found("Company"))
}

pub async fn update(
    store: &Store,
    actor: &Actor,
    id: &str,
    patch: CompanyPatch,
) -> Result<Company> {
    Ok(update_as(store, actor, id, patch, Action::CompanyUpdated)
        .await?
        .0)
}

/// An update logged as `action` (`company.updated`, or
/// `company.branding_updated` from the branding route); also returns the
/// file of a logo it replaced, for the caller to delete once committed.
pub async fn update_as(
    store: &Store,
    actor: &Actor,
    id: &str,
    patch: CompanyPatch,
    action: Action,
) -> Result<(Company, Option<Released>)> {
    let mut tx = store.begin().await?;
    tx.lock_row(crate::Locked::Company, id).await?;
    let before = get_in(&mut tx, id).await?;
    let mut changes = Map::new();
    let mut after = before.clone();
    if let Some(name) = patch.name {
        let name = name.trim().to_string();
        if name.is_empty() {
            return Err(Error::invalid("name", "Name must not be empty"));
        }
        diff(&mut changes, "name", &before.name, &name);
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
        diff(&mut changes, "status", &before.status, &status);
        after.status = status;
    }
    if let Some(cents) = patch.budget_monthly_cents {
        let cents = i64::from(cents);
        diff(
            &mut changes,
            "budgetMonthlyCents",
            &before.budget_monthly_cents,
            &cents,
        );
        after.budget_monthly_cents = cents;
    }
    if let Some(user) = patch.default_responsible_user_id {
        diff(
            &mut changes,
            "defaultResponsibleUserId",
            &before.default_responsible_user_id,
            &user,
        );
        after.default_responsible_user_id = user;
    }
    if let Some(flag) = patch.require_board_approval_for_new_agents {
        diff(
            &mut changes,
            "requireBoardApprovalForNewAgents",
            &before.require_board_approval_for_new_agents,
            &flag,
        );
        after.require_board_approval_for_new_agents = flag;
    }
    if let Some(days) = patch.run_log_retention_days {
        if days == Some(0) {
            return Err(Error::invalid(
                "runLogRetentionDays",
                "Run log retention must be at least 1 day (null keeps logs for good)",
            ));
        }
        let days = days.map(i64::from);
        diff(
            &mut changes,
            "runLogRetentionDays",
            &before.run_log_retention_days,
            &days,
        );
        after.run_log_retention_days = days;
    }
    if let Some(days) = patch.workspace_retention_days {
        if days == Some(0) {
            return Err(Error::invalid(
                "workspaceRetentionDays",
                "Workspace retention must be at least 1 day (null is the default, 7)",
            ));
        }
        let days = days.map(i64::from);
        diff(
            &mut changes,
            "workspaceRetentionDays",
            &before.workspace_retention_days,
            &days,
        );
        after.workspace_retention_days = days;
    }
    if let Some(mb) = patch.workspace_disk_budget_mb {
        if mb == Some(0) {
            return Err(Error::invalid(
                "workspaceDiskBudgetMb",
                "The workspace disk budget must be at least 1 MiB (null is the default, 10 GiB)",
            ));
        }
        let mb = mb.map(i64::from);
        diff(
            &mut changes,
            "workspaceDiskBudgetMb",
            &before.workspace_disk_budget_mb,
            &mb,
        );
        after.workspace_disk_budget_mb = mb;
    }
    let extras = crate::org::company_settings::Extras {
        governance: patch.interaction_resolver_governance,
        sharing_enabled: patch.feedback_data_sharing_enabled,
        terms_version: patch.feedback_data_sharing_terms_version,
        consent_at: patch.feedback_data_sharing_consent_at,
        consent_by_user_id: patch.feedback_data_sharing_consent_by_user_id,
        logo_asset_id: patch.logo_asset_id,
    };
    let released = crate::org::company_settings::apply(
        &mut tx,
        actor,
        &before,
        &mut after,
        extras,
        &mut changes,
    )
    .await?;
    if changes.is_empty() {
        return Ok((before, None));
    }
    let action = if changes.contains_key("status") && after.status == CompanyStatus::Archived {
        Action::CompanyArchived
    } else {
        action
    };
    write(&mut tx, &after).await?;
    activity::record(
        &mut tx,
        actor,
        Entry {
            company_id: id,
            action,
            entity_type: EntityType::Company,
            entity_id: id,
            details: json!({ "changes": changes }),
        },
    )
    .await?;
    let company = get_in(&mut tx, id).await?;
    tx.commit().await?;
    Ok((company, released))
}

pub async fn archive(store: &Store, actor: &Actor, id: &str) -> Result<Company> {
    update(
        store,
        actor,
        id,
        CompanyPatch {
            status: Some(paperclip_core::company::CompanyStatus::Archived),
            ..CompanyPatch::default()
        },
    )
    .await
}

/// Deletes the company and, by cascade, everything it owns.
pub async fn delete(store: &Store, id: &str) -> Result<()> {
    let mut tx = store.begin().await?;
    let result = crate::engine::db::query("DELETE FROM companies WHERE id = $1")
        .bind(id)
        .execute(tx.conn())
        .await?;
    if result.rows_affected() == 0 {
        return Err(Error::not_found("Company"));
    }
    tx.commit().await?;
    Ok(())
}

async fn write(tx: &mut Tx, c: &Company) -> Result<()> {
    let paused_at = match (c.status.as_str(), &c.paused_at) {
        ("paused", None) => Some(now()),
        ("paused", Some(at)) => Some(at.clone()),
        _ => None,
    };
    crate::engine::db::query(
        "UPDATE companies SET name = $2, description = $3, status = $4, budget_monthly_cents = $5, \
         default_responsible_user_id = $6, require_board_approval_for_new_agents = $7, \
         paused_at = $8, updated_at = $9, run_log_retention_days = $10, \
         workspace_retention_days = $11, workspace_disk_budget_mb = $12, \
         interaction_resolver_governance = $13, feedback_data_sharing_enabled = $14, \
         feedback_data_sharing_consent_at = $15, feedback_data_sharing_consent_by_user_id = $16, \
         feedback_data_sharing_terms_version = $17 WHERE id = $1",
    )
    .bind(&c.id)
    .bind(&c.name)
    .bind(c.description.as_deref())
    .bind(c.status)
    .bind(c.budget_monthly_cents)
    .bind(c.default_responsible_user_id.as_deref())
    .bind(i64::from(c.require_board_approval_for_new_agents))
    .bind(paused_at)
    .bind(now())
    .bind(c.run_log_retention_days)
    .bind(c.workspace_retention_days)
    .bind(c.workspace_disk_budget_mb)
    .bind(
        // Options of enums: nothing in it can fail to serialize.
        serde_json::to_string(&c.interaction_resolver_governance)
            .expect("a resolver governance serializes"),
    )
    .bind(i64::from(c.feedback_data_sharing_enabled))
    .bind(c.feedback_data_sharing_consent_at.as_deref())
    .bind(c.feedback_data_sharing_consent_by_user_id.as_deref())
    .bind(c.feedback_data_sharing_terms_version.as_deref())
    .execute(tx.conn())
    .await?;
    Ok(())
}

fn map(row: &DbRow) -> Result<Company> {
    let logo_asset_id = row.opt_text("logo_asset_id")?;
    Ok(Company {
        id: row.text("id")?,
        name: row.text("name")?,
        description: row.opt_text("description")?,
        status: row.stored("status")?,
        pause_reason: row.opt_text("pause_reason")?,
        paused_at: row.opt_text("paused_at")?,
        issue_prefix: row.text("issue_prefix")?,
        issue_counter: row.int("issue_counter")?,
        budget_monthly_cents: row.int("budget_monthly_cents")?,
        spent_monthly_cents: row.int("month_spend")?,
        default_responsible_user_id: row.opt_text("default_responsible_user_id")?,
        require_board_approval_for_new_agents: row.flag("require_board_approval_for_new_agents")?,
        run_log_retention_days: DbRow::try_get(row, "run_log_retention_days")?,
        workspace_retention_days: DbRow::try_get(row, "workspace_retention_days")?,
        workspace_disk_budget_mb: DbRow::try_get(row, "workspace_disk_budget_mb")?,
        // Written only by `write`, from the typed rule: a value it cannot
        // read is a damaged row, not a rule to guess at.
        interaction_resolver_governance: serde_json::from_value(
            row.json("interaction_resolver_governance")?,
        )
        .map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
        feedback_data_sharing_enabled: row.flag("feedback_data_sharing_enabled")?,
        feedback_data_sharing_consent_at: row.opt_text("feedback_data_sharing_consent_at")?,
        feedback_data_sharing_consent_by_user_id: row
            .opt_text("feedback_data_sharing_consent_by_user_id")?,
        feedback_data_sharing_terms_version: row.opt_text("feedback_data_sharing_terms_version")?,
        logo_url: paperclip_core::asset::logo_url(logo_asset_id.as_deref()),
        logo_asset_id,
        created_at: row.text("created_at")?,
        updated_at: row.text("updated_at")?,
    })
}

/// Agents and tasks of one company, for `GET /api/companies/stats`.
#[derive(Debug, Clone, Default, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub agent_count: i64,
    pub issue_count: i64,
}

/// Every company with an agent or a task, by id: upstream's stats. Tasks are
/// counted from the kept per-status counts (migration 9), not the table.
pub async fn stats(store: &Store) -> Result<std::collections::BTreeMap<String, Stats>> {
    let mut out: std::collections::BTreeMap<String, Stats> = Default::default();
    let agents: Vec<(String, i64)> =
        crate::engine::db::query_as("SELECT company_id, COUNT(*) FROM agents GROUP BY company_id")
            .fetch_all(store.pool())
            .await?;
    for (company, n) in agents {
        out.entry(company).or_default().agent_count = n;
    }
    let issues: Vec<(String, i64)> = crate::engine::db::query_as(
        "SELECT company_id, CAST(SUM(n) AS BIGINT) FROM issue_status_counts GROUP BY company_id \
         HAVING SUM(n) > 0",
    )
    .fetch_all(store.pool())
    .await?;
    for (company, n) in issues {
        out.entry(company).or_default().issue_count = n;
    }
    Ok(out)
}
