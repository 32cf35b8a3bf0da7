//! A company's rows as a package: ids become slugs, an agent's env becomes
//! named inputs (secret values and secret refs never travel), and what is
//! tied to this machine (a working directory, an absolute command) is left
//! out with a warning, as the original does.

use std::collections::{BTreeMap, BTreeSet};

use paperclip_core::package::{
    unique_slug, EnvInput, Package, PkgAgent, PkgComment, PkgCompany, PkgGoal, PkgProject,
    PkgRoutine, PkgSkill, PkgTask, PkgTrigger,
};
use paperclip_store::port::Snapshot;
use serde_json::{Map, Value};

/// What an export carries (the original's `include`).
#[derive(Debug, Clone, Copy)]
pub struct Include {
    pub agents: bool,
    pub projects: bool,
    pub issues: bool,
}

/// Adapter config keys that only mean something on the exporting machine.
const LOCAL_KEYS: &[&str] = &[
    "cwd",
    "instructionsFilePath",
    "instructionsBundleMode",
    "instructionsRootPath",
    "instructionsEntryFile",
    "promptTemplate",
    "bootstrapPromptTemplate",
    "paperclipSkillSync",
    "env",
];

fn is_absolute(s: &str) -> bool {
    s.starts_with('/')
        || (s.len() > 2 && s.as_bytes()[1] == b':' && matches!(s.as_bytes()[2], b'\\' | b'/'))
}

fn env_inputs(slug: &str, env: Option<&Value>, warnings: &mut Vec<String>) -> Vec<EnvInput> {
    let Some(Value::Object(env)) = env else {
        return vec![];
    };
    let mut out = Vec::new();
    for (key, binding) in env {
        if key.eq_ignore_ascii_case("PATH") {
            warnings.push(format!("Agent {slug} PATH override was omitted from export because it is system-dependent."));
            continue;
        }
        let plain = binding.as_str().map(str::to_string).or_else(|| {
            (binding.get("type").and_then(Value::as_str) == Some("plain")
                && binding.get("fromSecret").is_none())
            .then(|| {
                binding
                    .get("value")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .flatten()
        });
        let secret = plain.is_none() || paperclip_core::package::is_sensitive_env_key(key);
        let system = plain.as_deref().is_some_and(is_absolute);
        if system && !secret {
            warnings.push(format!(
                "Agent {slug} env {key} default was exported as system-dependent."
            ));
        }
        out.push(EnvInput {
            key: key.clone(),
            description: Some(match secret {
                true => format!("Provide {key} for agent {slug}"),
                false => format!("Optional default for {key} on agent {slug}"),
            }),
            agent_slug: Some(slug.to_string()),
            project_slug: None,
            kind: if secret { "secret" } else { "plain" }.into(),
            requirement: "optional".into(),
            default_value: Some(if secret {
                String::new()
            } else {
                plain.unwrap_or_default()
            }),
            portability: if system {
                "system_dependent"
            } else {
                "portable"
            }
            .into(),
        });
    }
    out
}

/// The config as it travels: no machine-bound keys, no env, and no value
/// the redactor would hide (those paths are dropped, not masked, so the
/// importer never stores a placeholder as a value).
fn portable_config(slug: &str, config: &Value, warnings: &mut Vec<String>) -> Map<String, Value> {
    let (mut redacted, paths) = paperclip_core::secrets::redact_config(config);
    for path in &paths {
        if path.first().is_some_and(|p| p == "env") {
            continue;
        }
        warnings.push(format!(
            "Agent {slug} {} holds a secret and was omitted from export.",
            path.join(".")
        ));
        remove_path(&mut redacted, path);
    }
    let mut map = redacted.as_object().cloned().unwrap_or_default();
    for key in LOCAL_KEYS {
        map.remove(*key);
    }
    if let Some(cmd) = map
        .get("command")
        .and_then(Value::as_str)
        .filter(|c| is_absolute(c))
    {
        warnings.push(format!(
            "Agent {slug} command {cmd} was omitted from export because it is system-dependent."
        ));
        map.remove("command");
    }
    map
}

fn remove_path(value: &mut Value, path: &[String]) {
    match path {
        [] => {}
        [last] => {
            if let Some(obj) = value.as_object_mut() {
                obj.remove(last);
            }
        }
        [first, rest @ ..] => {
            if let Some(next) = value.get_mut(first.as_str()) {
                remove_path(next, rest);
            }
        }
    }
}

fn text<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Where an agent's managed instructions bundle lives: the place the
/// instructions routes and the runtime read.
pub use super::instructions::files::managed_root as managed_instructions;

/// The agent's instructions: its configured file, else its managed bundle's
/// `AGENTS.md`; none is an empty body.
fn instructions(data_dir: &str, a: &paperclip_core::model::Agent) -> String {
    let configured = a
        .adapter_config
        .get("instructionsFilePath")
        .and_then(Value::as_str)
        .filter(|p| is_absolute(p))
        .map(std::path::PathBuf::from);
    let path = configured
        .unwrap_or_else(|| managed_instructions(data_dir, &a.company_id, &a.id).join("AGENTS.md"));
    std::fs::read_to_string(path).unwrap_or_default()
}

pub fn to_package(snap: &Snapshot, inc: Include, data_dir: &str) -> (Package, Vec<String>) {
    let mut warnings = Vec::new();
    let mut used = BTreeSet::new();
    let agent_slug: BTreeMap<&str, String> = match inc.agents {
        true => snap
            .agents
            .iter()
            .map(|a| (a.id.as_str(), unique_slug(&a.name, &mut used)))
            .collect(),
        false => BTreeMap::new(),
    };
    let slug_of = |id: &Option<String>| id.as_deref().and_then(|id| agent_slug.get(id)).cloned();
    let mut used = BTreeSet::new();
    let goal_slug: BTreeMap<&str, String> = snap
        .goals
        .iter()
        .map(|g| (g.id.as_str(), unique_slug(&g.title, &mut used)))
        .collect();
    let goal_of = |id: &Option<String>| id.as_deref().and_then(|id| goal_slug.get(id)).cloned();
    let mut used = BTreeSet::new();
    let project_slug: BTreeMap<&str, String> = match inc.projects || inc.issues {
        true => snap
            .projects
            .iter()
            .map(|p| (p.id.as_str(), unique_slug(&p.name, &mut used)))
            .collect(),
        false => BTreeMap::new(),
    };
    let project_of =
        |id: &Option<String>| id.as_deref().and_then(|id| project_slug.get(id)).cloned();
    let agents = snap
        .agents
        .iter()
        .filter(|_| inc.agents)
        .map(|a| {
            let slug = agent_slug[a.id.as_str()].clone();
            let env = env_inputs(&slug, a.adapter_config.get("env"), &mut warnings);
            let adapter_config = portable_config(&slug, &a.adapter_config, &mut warnings);
            let (runtime, _) = paperclip_core::secrets::redact_config(&a.runtime_config);
            PkgAgent {
                name: a.name.clone(),
                title: a.title.clone(),
                reports_to: slug_of(&a.reports_to),
                skills: paperclip_core::skill::desired_keys(&a.adapter_config),
                instructions: instructions(data_dir, a),
                role: Some(a.role.as_str().to_string()),
                icon: a.icon.clone(),
                capabilities: a.capabilities.clone(),
                adapter_type: a.adapter_type.clone(),
                adapter_config,
                runtime_config: runtime.as_object().cloned().unwrap_or_default(),
                permissions: a.permissions.as_object().cloned().unwrap_or_default(),
                budget_monthly_cents: a.budget_monthly_cents,
                metadata: a.metadata.clone(),
                env,
                slug,
            }
        })
        .collect();
    let goals = snap
        .goals
        .iter()
        .map(|g| PkgGoal {
            slug: goal_slug[g.id.as_str()].clone(),
            title: g.title.clone(),
            description: g.description.clone(),
            level: Some(g.level.as_str().to_string()),
            status: Some(g.status.as_str().to_string()),
            parent: goal_of(&g.parent_id),
            owner: slug_of(&g.owner_agent_id),
        })
        .collect();
    let projects = snap
        .projects
        .iter()
        .filter(|p| project_slug.contains_key(p.id.as_str()))
        .map(|p| PkgProject {
            slug: project_slug[p.id.as_str()].clone(),
            name: p.name.clone(),
            description: p.description.clone(),
            lead_agent: slug_of(&p.lead_agent_id),
            target_date: p.target_date.clone(),
            color: p.color.clone(),
            status: Some(p.status.as_str().to_string()),
            goal: goal_of(&p.goal_id),
        })
        .collect();
    let mut used = BTreeSet::new();
    let task_slug: BTreeMap<&str, String> = snap
        .issues
        .iter()
        .map(|(i, _)| (i.id.as_str(), unique_slug(&i.identifier, &mut used)))
        .collect();
    let tasks = snap
        .issues
        .iter()
        .filter(|_| inc.issues)
        .map(|(i, comments)| PkgTask {
            slug: task_slug[i.id.as_str()].clone(),
            identifier: Some(i.identifier.clone()),
            title: i.title.clone(),
            description: i.description.clone().unwrap_or_default(),
            project: project_of(&i.project_id),
            assignee: slug_of(&i.assignee_agent_id),
            goal: goal_of(&i.goal_id),
            status: Some(i.status.as_str().to_string()),
            priority: Some(text(&i.priority)),
            parent: i
                .parent_id
                .as_deref()
                .and_then(|p| task_slug.get(p))
                .cloned(),
            billing_code: i.billing_code.clone(),
            labels: i.labels.iter().map(|l| l.name.clone()).collect(),
            blocked_by: i
                .blocked_by
                .iter()
                .filter_map(|b| task_slug.get(b.id.as_str()).cloned())
                .collect(),
            comments: comments
                .iter()
                .map(|c| PkgComment {
                    body: c.body.clone(),
                    author_type: c.author_type.clone(),
                    author_agent: slug_of(&c.author_agent_id),
                    created_at: Some(c.created_at.clone()),
                })
                .collect(),
            created_at: Some(i.created_at.clone()),
        })
        .collect();
    let routines = snap
        .routines
        .iter()
        .filter(|_| inc.issues)
        .map(|(r, triggers)| PkgRoutine {
            slug: unique_slug(&r.title, &mut used),
            title: r.title.clone(),
            description: r.description.clone().unwrap_or_default(),
            project: project_of(&r.project_id),
            assignee: slug_of(&r.assignee_agent_id),
            status: Some(text(&r.status)),
            priority: Some(text(&r.priority)),
            concurrency_policy: Some(text(&r.concurrency_policy)),
            catch_up_policy: Some(text(&r.catch_up_policy)),
            variables: (!r.variables.is_empty())
                .then(|| serde_json::to_value(&r.variables).unwrap_or_default()),
            triggers: triggers
                .iter()
                .map(|t| PkgTrigger {
                    kind: text(&t.kind),
                    label: t.label.clone(),
                    enabled: t.enabled,
                    cron_expression: t.cron_expression.clone(),
                    timezone: t.timezone.clone(),
                    signing_mode: t.signing_mode.as_ref().map(text),
                    replay_window_sec: t.replay_window_sec,
                })
                .collect(),
        })
        .collect();
    let company = &snap.company;
    let pkg = Package {
        slug: paperclip_core::naming::url_key(&company.name),
        company: PkgCompany {
            name: company.name.clone(),
            description: company.description.clone(),
            require_board_approval_for_new_agents: company.require_board_approval_for_new_agents,
        },
        goals,
        agents,
        projects,
        tasks,
        routines,
        skills: snap
            .skills
            .iter()
            .map(|sk| PkgSkill {
                slug: sk.skill.slug.clone(),
                key: sk.skill.key.clone(),
                files: sk
                    .files
                    .iter()
                    .map(|f| (f.path.clone(), f.content.clone()))
                    .collect(),
            })
            .collect(),
        warnings: vec![],
    };
    (pkg, warnings)
}
