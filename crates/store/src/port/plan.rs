//! What an import would do, read before any write: the dry run, and the
//! plan the apply follows.

use std::collections::{BTreeMap, BTreeSet};

use paperclip_core::naming::url_key;
use paperclip_core::package::Package;
use serde::Serialize;

use crate::{Result, Store};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    New { name: Option<String> },
    Existing(String),
}

/// What to do with an agent or project whose name the company already has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collision {
    /// Import it under the first free "Name 2", "Name 3", ...
    Rename,
    /// Keep the existing one; references to it in the package point at it.
    Skip,
}

#[derive(Debug, Clone)]
pub struct Options {
    pub target: Target,
    pub collision: Collision,
    /// Agent slugs to import; `None` is all of them.
    pub agents: Option<BTreeSet<String>>,
    /// Values for env inputs, by `KEY`, `agent:<slug>:<KEY>`: plain values
    /// only (a secret input stays unset; the board binds a secret later).
    pub env_values: BTreeMap<String, String>,
}

/// One entry of the plan, in the original's preview shape.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemPlan {
    pub slug: String,
    /// `create`, `update` or `skip`.
    pub action: &'static str,
    pub planned_name: String,
    pub existing_id: Option<String>,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub target_company_id: Option<String>,
    pub target_company_name: Option<String>,
    /// `create` or `none`.
    pub company_action: &'static str,
    pub agents: Vec<ItemPlan>,
    pub projects: Vec<ItemPlan>,
    pub goals: Vec<ItemPlan>,
    /// Tasks and routines (recurring tasks), as the original lists them.
    pub issues: Vec<ItemPlan>,
    pub warnings: Vec<String>,
}

fn dedupe(name: &str, taken: &BTreeSet<String>) -> String {
    let free = |n: &str| !taken.contains(&url_key(n));
    if free(name) {
        return name.to_string();
    }
    (2..)
        .map(|n| format!("{name} {n}"))
        .find(|c| free(c))
        .expect("an unbounded candidate sequence has a free entry")
}

/// Plans `pkg` into the target. Reads only.
pub async fn plan(store: &Store, pkg: &Package, opts: &Options) -> Result<Plan> {
    let (company, existing_agents, existing_projects, existing_goals) = match &opts.target {
        Target::New { .. } => (None, vec![], vec![], vec![]),
        Target::Existing(id) => (
            Some(crate::org::companies::get(store, id).await?),
            crate::org::agents::list(store, id).await?,
            crate::org::projects::list(store, id).await?,
            crate::org::goals::list(store, id).await?,
        ),
    };
    let mut warnings = pkg.warnings.clone();
    let mut taken: BTreeSet<String> = existing_agents
        .iter()
        .filter(|a| a.status.as_str() != "terminated")
        .map(|a| url_key(&a.name))
        .collect();
    let mut agents = Vec::new();
    for a in &pkg.agents {
        if opts.agents.as_ref().is_some_and(|s| !s.contains(&a.slug)) {
            agents.push(item(&a.slug, "skip", &a.name, None, Some("Not selected")));
            continue;
        }
        let same = existing_agents
            .iter()
            .find(|e| url_key(&e.name) == url_key(&a.name) && e.status.as_str() != "terminated");
        match (same, opts.collision) {
            (Some(e), Collision::Skip) => agents.push(item(
                &a.slug,
                "skip",
                &e.name,
                Some(&e.id),
                Some("An agent of that name exists"),
            )),
            (same, _) => {
                let name = dedupe(&a.name, &taken);
                taken.insert(url_key(&name));
                let reason = same.map(|_| "Renamed: an agent of that name exists");
                agents.push(item(&a.slug, "create", &name, None, reason));
            }
        }
        for input in a.env.iter().filter(|i| i.kind == "secret") {
            warnings.push(format!(
                "Agent {} needs the secret {}: bind it on the agent after the import",
                a.slug, input.key
            ));
        }
    }
    let mut taken_projects: BTreeSet<String> =
        existing_projects.iter().map(|p| url_key(&p.name)).collect();
    let mut projects = Vec::new();
    for p in &pkg.projects {
        let same = existing_projects
            .iter()
            .find(|e| url_key(&e.name) == url_key(&p.name));
        match (same, opts.collision) {
            (Some(e), Collision::Skip) => projects.push(item(
                &p.slug,
                "skip",
                &e.name,
                Some(&e.id),
                Some("A project of that name exists"),
            )),
            (same, _) => {
                let name = dedupe(&p.name, &taken_projects);
                taken_projects.insert(url_key(&name));
                let reason = same.map(|_| "Renamed: a project of that name exists");
                projects.push(item(&p.slug, "create", &name, None, reason));
            }
        }
    }
    let goals = pkg
        .goals
        .iter()
        .map(|g| {
            match existing_goals
                .iter()
                .find(|e| e.title == g.title)
                .filter(|_| opts.collision == Collision::Skip)
            {
                Some(e) => item(
                    &g.slug,
                    "skip",
                    &e.title,
                    Some(&e.id),
                    Some("A goal of that title exists"),
                ),
                None => item(&g.slug, "create", &g.title, None, None),
            }
        })
        .collect();
    let mut issues: Vec<ItemPlan> = pkg
        .tasks
        .iter()
        .map(|t| item(&t.slug, "create", &t.title, None, None))
        .collect();
    issues.extend(pkg.routines.iter().map(|r| {
        item(
            &r.slug,
            "create",
            &r.title,
            None,
            Some("Recurring: a routine"),
        )
    }));
    let (target_company_id, target_company_name, company_action) = match (&opts.target, company) {
        (Target::Existing(_), Some(c)) => (Some(c.id), Some(c.name), "none"),
        (Target::New { name }, _) => (
            None,
            Some(name.clone().unwrap_or_else(|| pkg.company.name.clone())),
            "create",
        ),
        (Target::Existing(_), None) => unreachable!("an existing target was read"),
    };
    Ok(Plan {
        target_company_id,
        target_company_name,
        company_action,
        agents,
        projects,
        goals,
        issues,
        warnings,
    })
}

fn item(
    slug: &str,
    action: &'static str,
    name: &str,
    id: Option<&str>,
    reason: Option<&str>,
) -> ItemPlan {
    ItemPlan {
        slug: slug.to_string(),
        action,
        planned_name: name.to_string(),
        existing_id: id.map(str::to_string),
        reason: reason.map(str::to_string),
    }
}
