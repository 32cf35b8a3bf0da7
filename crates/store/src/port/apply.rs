//! An import in one transaction: the company (new or existing), its goals,
//! agents, projects, tasks with their threads and routines with their
//! schedules, and one `company.imported` activity row. Any refusal rolls all
//! of it back.

use std::collections::{BTreeMap, BTreeSet};

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::agent::AgentStatus;
use paperclip_core::input::NewAgent;
use paperclip_core::model::Company;
use paperclip_core::naming::{base_issue_prefix, issue_prefix_candidate, url_key};
use paperclip_core::package::{Package, PkgAgent};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::plan::{plan, Options, Plan, Target};
use crate::audit::activity::{self, Entry};
use crate::{new_id, now, Error, Result, Store, Tx};

/// What was done, entry by entry (the original's import result, with goals).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Done {
    pub slug: String,
    pub id: Option<String>,
    /// `created` or `skipped`.
    pub action: &'static str,
    pub name: String,
    pub reason: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Imported {
    pub company: Company,
    /// Keys of the skills added or brought up to date.
    pub skills: Vec<String>,
    pub company_action: &'static str,
    pub agents: Vec<Done>,
    pub projects: Vec<Done>,
    pub goals: Vec<Done>,
    pub tasks: Vec<Done>,
    pub routines: Vec<Done>,
    pub comments: usize,
    pub warnings: Vec<String>,
}

/// A package value read as one of our enums; an unknown value is a 400
/// naming where it came from.
fn parse<T: DeserializeOwned>(value: &str, field: &str) -> Result<T> {
    serde_json::from_value(json!(value))
        .map_err(|_| Error::invalid(field, format!("Unknown value '{value}'")))
}

fn opt<T: DeserializeOwned>(value: Option<&String>, field: &str) -> Result<Option<T>> {
    value.map(|v| parse(v, field)).transpose()
}

pub async fn apply(
    store: &Store,
    actor: &Actor,
    pkg: &Package,
    opts: &Options,
) -> Result<Imported> {
    let plan = plan(store, pkg, opts).await?;
    let skills = skills_of(pkg)?;
    let mut tx = store.begin().await?;
    let mut imported = apply_in(&mut tx, store, actor, pkg, opts, plan).await?;
    // The skills go in the same transaction: a clash of slugs with the
    // company's own skills refuses the whole import, and says which.
    if !skills.is_empty() {
        let done = crate::org::skills::upsert_many_in(
            &mut tx,
            actor,
            &imported.company.id,
            skills,
            "package",
            false,
        )
        .await?;
        imported.skills = done.iter().map(|s| s.skill.key.clone()).collect();
    }
    tx.commit().await?;
    Ok(imported)
}

async fn apply_in(
    tx: &mut Tx,
    store: &Store,
    actor: &Actor,
    pkg: &Package,
    opts: &Options,
    plan: Plan,
) -> Result<Imported> {
    let mut warnings = plan.warnings.clone();
    let (company_id, company_action) = match &opts.target {
        Target::Existing(id) => {
            crate::org::companies::exists_in(tx, id).await?;
            (id.clone(), "unchanged")
        }
        Target::New { name } => {
            let name = name.clone().unwrap_or_else(|| pkg.company.name.clone());
            (insert_company(tx, actor, &name, pkg).await?, "created")
        }
    };
    let cid = company_id.as_str();
    // Agents first (everything else points at them), managers after.
    let mut agent_ids: BTreeMap<String, String> = BTreeMap::new();
    let mut agents = Vec::new();
    for (a, p) in pkg.agents.iter().zip(&plan.agents) {
        if p.action == "skip" {
            if let Some(id) = &p.existing_id {
                agent_ids.insert(a.slug.clone(), id.clone());
            }
            agents.push(done(
                &a.slug,
                p.existing_id.clone(),
                "skipped",
                &p.planned_name,
                p.reason.clone(),
            ));
            continue;
        }
        let input = new_agent(a, &p.planned_name, opts)?;
        let agent = crate::org::agents::create_in(tx, actor, cid, input, AgentStatus::Idle).await?;
        agent_ids.insert(a.slug.clone(), agent.id.clone());
        agents.push(done(
            &a.slug,
            Some(agent.id),
            "created",
            &agent.name,
            p.reason.clone(),
        ));
    }
    for (a, p) in pkg.agents.iter().zip(&plan.agents) {
        let (Some(manager), "create") = (&a.reports_to, p.action) else {
            continue;
        };
        match agent_ids.get(manager) {
            Some(m) if reports_without_cycle(pkg, &a.slug) => {
                crate::engine::db::query("UPDATE agents SET reports_to = $1 WHERE id = $2")
                    .bind(m)
                    .bind(&agent_ids[&a.slug])
                    .execute(tx.conn())
                    .await?;
            }
            _ => warnings.push(format!(
                "Agent {} reports to {manager}, who is not in the import",
                a.slug
            )),
        }
    }
    let mut goal_ids = BTreeMap::new();
    let mut goals = Vec::new();
    for (g, p) in pkg.goals.iter().zip(&plan.goals) {
        if let (Some(id), "skip") = (&p.existing_id, p.action) {
            goal_ids.insert(g.slug.clone(), id.clone());
            goals.push(done(
                &g.slug,
                Some(id.clone()),
                "skipped",
                &p.planned_name,
                p.reason.clone(),
            ));
            continue;
        }
        let field = format!("goals.{}", g.slug);
        let level: Option<paperclip_core::goal::GoalLevel> =
            opt(g.level.as_ref(), &format!("{field}.level"))?;
        let status: Option<paperclip_core::goal::GoalStatus> =
            opt(g.status.as_ref(), &format!("{field}.status"))?;
        let id = new_id();
        crate::engine::db::query(
            "INSERT INTO goals (id, company_id, title, description, level, status, parent_id, \
             owner_agent_id, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8, $8)",
        )
        .bind(&id)
        .bind(cid)
        .bind(g.title.trim())
        .bind(g.description.as_deref())
        .bind(level.unwrap_or(paperclip_core::goal::GoalLevel::Task).as_str())
        .bind(status.unwrap_or(paperclip_core::goal::GoalStatus::Planned).as_str())
        .bind(g.owner.as_ref().and_then(|s| agent_ids.get(s)))
        .bind(now())
        .execute(tx.conn())
        .await?;
        goal_ids.insert(g.slug.clone(), id.clone());
        goals.push(done(&g.slug, Some(id), "created", &g.title, None));
    }
    for g in &pkg.goals {
        if let (Some(parent), Some(id)) = (
            g.parent.as_ref().and_then(|p| goal_ids.get(p)),
            goal_ids.get(&g.slug),
        ) {
            if parent != id {
                crate::engine::db::query(
                    "UPDATE goals SET parent_id = $1 WHERE id = $2 AND company_id = $3",
                )
                .bind(parent)
                .bind(id)
                .bind(cid)
                .execute(tx.conn())
                .await?;
            }
        }
    }
    let mut project_ids = BTreeMap::new();
    let mut projects = Vec::new();
    for (pr, p) in pkg.projects.iter().zip(&plan.projects) {
        if let (Some(id), "skip") = (&p.existing_id, p.action) {
            project_ids.insert(pr.slug.clone(), id.clone());
            projects.push(done(
                &pr.slug,
                Some(id.clone()),
                "skipped",
                &p.planned_name,
                p.reason.clone(),
            ));
            continue;
        }
        let status: Option<paperclip_core::project::ProjectStatus> =
            opt(pr.status.as_ref(), &format!("projects.{}.status", pr.slug))?;
        let id = new_id();
        crate::engine::db::query(
            "INSERT INTO projects (id, company_id, goal_id, name, url_key, description, status, \
             lead_agent_id, target_date, color, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)",
        )
        .bind(&id)
        .bind(cid)
        .bind(pr.goal.as_ref().and_then(|g| goal_ids.get(g)))
        .bind(&p.planned_name)
        .bind(url_key(&p.planned_name))
        .bind(pr.description.as_deref())
        .bind(
            status
                .unwrap_or(paperclip_core::project::ProjectStatus::Backlog)
                .as_str(),
        )
        .bind(pr.lead_agent.as_ref().and_then(|s| agent_ids.get(s)))
        .bind(pr.target_date.as_deref())
        .bind(pr.color.as_deref())
        .bind(now())
        .execute(tx.conn())
        .await?;
        project_ids.insert(pr.slug.clone(), id.clone());
        projects.push(done(&pr.slug, Some(id), "created", &p.planned_name, None));
    }
    let refs = super::apply_work::Refs {
        company_id: cid,
        agents: &agent_ids,
        projects: &project_ids,
        goals: &goal_ids,
    };
    let (tasks, comments) =
        super::apply_work::tasks(tx, store.backend(), actor, pkg, &refs, &mut warnings).await?;
    let routines = super::apply_work::routines(tx, actor, pkg, &refs, &mut warnings).await?;
    let created = |list: &[Done]| list.iter().filter(|d| d.action == "created").count();
    activity::record(
        tx,
        actor,
        Entry {
            company_id: cid,
            action: Action::CompanyImported,
            entity_type: EntityType::Company,
            entity_id: cid,
            details: json!({
                "companyAction": company_action,
                "agentCount": created(&agents),
                "projectCount": created(&projects),
                "goalCount": created(&goals),
                "taskCount": created(&tasks),
                "routineCount": created(&routines),
                "commentCount": comments,
                "warningCount": warnings.len(),
            }),
        },
    )
    .await?;
    let company = crate::org::companies::get_in(tx, cid).await?;
    Ok(Imported {
        company,
        skills: vec![],
        company_action,
        agents,
        projects,
        goals,
        tasks,
        routines,
        comments,
        warnings,
    })
}

pub(super) fn done(
    slug: &str,
    id: Option<String>,
    action: &'static str,
    name: &str,
    reason: Option<String>,
) -> Done {
    Done {
        slug: slug.to_string(),
        id,
        action,
        name: name.to_string(),
        reason,
    }
}

/// Whether following `slug`'s managers in the package comes back to it.
fn reports_without_cycle(pkg: &Package, slug: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut at = slug;
    while let Some(next) = pkg
        .agents
        .iter()
        .find(|a| a.slug == at)
        .and_then(|a| a.reports_to.as_deref())
    {
        if next == slug || !seen.insert(next) {
            return false;
        }
        at = next;
    }
    true
}

/// The package's skills as the library takes them; a bad file is a 400
/// naming it, before anything is written.
fn skills_of(pkg: &Package) -> Result<Vec<crate::org::skills::NewSkill>> {
    let mut out = Vec::new();
    for sk in &pkg.skills {
        let files: Vec<(String, String)> = sk
            .files
            .iter()
            .map(|(p, c)| (p.clone(), c.clone()))
            .collect();
        let files = paperclip_core::skill::check_files(files)
            .map_err(|e| Error::invalid(&format!("skills/{}", sk.slug), e))?;
        let (name, description) = paperclip_core::skill::frontmatter(&sk.files["SKILL.md"]);
        out.push(crate::org::skills::NewSkill {
            key: sk.key.clone(),
            slug: sk.slug.clone(),
            name: name.unwrap_or_else(|| sk.slug.clone()),
            description,
            source_type: paperclip_core::skill::SourceType::LocalPath,
            source_locator: None,
            source_ref: None,
            metadata: None,
            files,
        });
    }
    Ok(out)
}

fn new_agent(a: &PkgAgent, name: &str, opts: &Options) -> Result<NewAgent> {
    let field = format!("agents.{}", a.slug);
    let mut config = a.adapter_config.clone();
    let mut env = Map::new();
    for input in &a.env {
        let scoped = format!("agent:{}:{}", a.slug, input.key);
        let given = opts
            .env_values
            .get(&scoped)
            .or_else(|| opts.env_values.get(&input.key));
        // A secret input stays unset: its value never rides in an import body
        // into a plain binding.
        let value = match input.kind.as_str() {
            "secret" => None,
            _ => given
                .cloned()
                .or_else(|| input.default_value.clone())
                .filter(|v| !v.is_empty()),
        };
        if let Some(value) = value {
            env.insert(
                input.key.clone(),
                json!({ "type": "plain", "value": value }),
            );
        }
    }
    if !env.is_empty() {
        config.insert("env".into(), Value::Object(env));
    }
    if !a.skills.is_empty() {
        let with = paperclip_core::skill::with_desired(&Value::Object(config), &a.skills);
        config = with.as_object().cloned().unwrap_or_default();
    }
    Ok(NewAgent {
        name: name.to_string(),
        role: opt(a.role.as_ref(), &format!("{field}.role"))?,
        title: a.title.clone(),
        icon: a.icon.clone(),
        reports_to: None,
        capabilities: a.capabilities.clone(),
        adapter_type: Some(a.adapter_type.clone()),
        adapter_config: Some(config),
        runtime_config: Some(a.runtime_config.clone()),
        budget_monthly_cents: Some(
            u32::try_from(a.budget_monthly_cents).map_err(|_| {
                Error::invalid(&format!("{field}.budgetMonthlyCents"), "Out of range")
            })?,
        ),
        permissions: Some(a.permissions.clone()),
        metadata: a.metadata.as_ref().and_then(Value::as_object).cloned(),
    })
}

async fn insert_company(tx: &mut Tx, actor: &Actor, name: &str, pkg: &Package) -> Result<String> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Error::invalid("COMPANY.md.name", "Name must not be empty"));
    }
    let base = base_issue_prefix(name);
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
    crate::engine::db::query(
        "INSERT INTO companies (id, name, description, status, issue_prefix, issue_counter, \
         budget_monthly_cents, spent_monthly_cents, require_board_approval_for_new_agents, \
         default_responsible_user_id, created_at, updated_at) \
         VALUES ($1, $2, $3, 'active', $4, 0, 0, 0, $5, $6, $7, $7)",
    )
    .bind(&id)
    .bind(name)
    .bind(pkg.company.description.as_deref())
    .bind(&prefix)
    .bind(i64::from(pkg.company.require_board_approval_for_new_agents))
    .bind(actor.user_id())
    .bind(now())
    .execute(tx.conn())
    .await
    .map_err(|e| match Error::from(e) {
        e if e.is_unique_violation() => Error::conflict("Issue prefix already taken, retry", None),
        e => e,
    })?;
    if let Some(user_id) = actor.user_id() {
        crate::org::members::add_owner(tx, &id, user_id).await?;
    }
    activity::record(
        tx,
        actor,
        Entry {
            company_id: &id,
            action: Action::CompanyCreated,
            entity_type: EntityType::Company,
            entity_id: &id,
            details: json!({ "name": name, "issuePrefix": prefix, "imported": true }),
        },
    )
    .await?;
    Ok(id)
}
