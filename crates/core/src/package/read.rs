//! Files of a package (from the original or from us) into a [`Package`].

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::model::*;
use super::yaml::{parse_map, parse_markdown};
use super::{is_sensitive_env_key, PackageError};

fn text(map: &Map<String, Value>, key: &str) -> Option<String> {
    match map.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

fn obj(map: &Map<String, Value>, key: &str) -> Map<String, Value> {
    map.get(key)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn strings(map: &Map<String, Value>, key: &str) -> Vec<String> {
    map.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn required(map: &Map<String, Value>, file: &str, key: &str) -> Result<String, PackageError> {
    text(map, key).ok_or_else(|| PackageError::new(file, Some(key), format!("`{key}` is required")))
}

/// The slug of `<dir>/<slug>/<FILE>`.
fn slug_of<'a>(path: &'a str, dir: &str, file: &str) -> Option<&'a str> {
    path.strip_prefix(dir)?
        .strip_prefix('/')?
        .strip_suffix(file)?
        .strip_suffix('/')
        .filter(|s| !s.is_empty() && !s.contains('/'))
}

/// Reads a package. Paths may sit under one folder (the one holding
/// `COMPANY.md`); everything else is relative to it.
pub fn from_files(all: &BTreeMap<String, String>) -> Result<Package, PackageError> {
    let company_path = all
        .keys()
        .filter(|p| *p == "COMPANY.md" || p.ends_with("/COMPANY.md"))
        .min_by_key(|p| p.len())
        .ok_or_else(|| PackageError::new("COMPANY.md", None, "The package has no COMPANY.md"))?;
    let base = company_path.strip_suffix("COMPANY.md").unwrap_or("");
    let files: BTreeMap<&str, &str> = all
        .iter()
        .filter_map(|(p, c)| p.strip_prefix(base).map(|p| (p, c.as_str())))
        .collect();
    let (company_front, _) = parse_markdown(files["COMPANY.md"]);
    let ext = files
        .get(".paperclip.yaml")
        .or_else(|| files.get(".paperclip.yml"))
        .map(|raw| parse_map(raw))
        .unwrap_or_default();
    let mut pkg = Package {
        slug: text(&company_front, "slug").unwrap_or_default(),
        company: PkgCompany {
            name: required(&company_front, "COMPANY.md", "name")?,
            description: text(&company_front, "description"),
            require_board_approval_for_new_agents: obj(&ext, "company")
                .get("requireBoardApprovalForNewAgents")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        },
        ..Package::default()
    };
    let (agents_ext, projects_ext) = (obj(&ext, "agents"), obj(&ext, "projects"));
    let (tasks_ext, routines_ext) = (obj(&ext, "tasks"), obj(&ext, "routines"));
    for (path, raw) in &files {
        if let Some(slug) = slug_of(path, "agents", "AGENTS.md") {
            pkg.agents
                .push(agent(path, slug, raw, &obj(&agents_ext, slug))?);
        } else if let Some(slug) = slug_of(path, "projects", "PROJECT.md") {
            let (front, body) = parse_markdown(raw);
            let e = obj(&projects_ext, slug);
            pkg.projects.push(PkgProject {
                slug: slug.to_string(),
                name: required(&front, path, "name")?,
                description: text(&front, "description")
                    .or_else(|| (!body.is_empty()).then_some(body)),
                lead_agent: text(&e, "leadAgentSlug").or_else(|| text(&front, "owner")),
                target_date: text(&e, "targetDate"),
                color: text(&e, "color"),
                status: text(&e, "status"),
                goal: text(&e, "goal"),
            });
        } else if let Some(slug) = slug_of(path, "tasks", "TASK.md") {
            let (front, body) = parse_markdown(raw);
            let title = text(&front, "name")
                .or_else(|| text(&front, "title"))
                .ok_or_else(|| PackageError::new(path, Some("name"), "`name` is required"))?;
            let recurring = front.get("recurring").and_then(Value::as_bool) == Some(true);
            if recurring || routines_ext.contains_key(slug) {
                pkg.routines.push(routine(
                    path,
                    slug,
                    title,
                    body,
                    &front,
                    &obj(&routines_ext, slug),
                )?);
            } else {
                pkg.tasks.push(task(
                    path,
                    slug,
                    title,
                    body,
                    &front,
                    &obj(&tasks_ext, slug),
                )?);
            }
        } else if let Some((slug, file)) = path
            .strip_prefix("skills/")
            .and_then(|rest| rest.split_once('/'))
            .filter(|(slug, file)| !slug.is_empty() && !file.is_empty())
        {
            let key =
                text(&obj(&obj(&ext, "skills"), slug), "key").unwrap_or_else(|| slug.to_string());
            match pkg.skills.iter_mut().find(|sk| sk.slug == slug) {
                Some(sk) => {
                    sk.files.insert(file.to_string(), raw.to_string());
                }
                None => pkg.skills.push(PkgSkill {
                    slug: slug.to_string(),
                    key,
                    files: [(file.to_string(), raw.to_string())].into(),
                }),
            }
        } else if !is_known_other(path) {
            pkg.warnings.push(format!(
                "{path} was not read (not part of the package format)"
            ));
        }
    }
    for (slug, g) in obj(&ext, "goals") {
        let g = g.as_object().cloned().unwrap_or_default();
        pkg.goals.push(PkgGoal {
            title: text(&g, "title").ok_or_else(|| {
                PackageError::new(
                    ".paperclip.yaml",
                    Some(&format!("goals.{slug}.title")),
                    "a goal needs a title",
                )
            })?,
            slug,
            description: text(&g, "description"),
            level: text(&g, "level"),
            status: text(&g, "status"),
            parent: text(&g, "parent"),
            owner: text(&g, "owner"),
        });
    }
    if let Some(sk) = pkg
        .skills
        .iter()
        .find(|sk| !sk.files.contains_key("SKILL.md"))
    {
        return Err(PackageError::new(
            &format!("skills/{}/SKILL.md", sk.slug),
            None,
            "A skill folder needs its SKILL.md",
        ));
    }
    Ok(pkg)
}

fn is_known_other(path: &str) -> bool {
    path == "COMPANY.md"
        || path == "README.md"
        || path.starts_with(".paperclip.")
        || path.starts_with("images/")
        || path.starts_with("skills/")
        || path.starts_with("blobs/")
        || path.starts_with("agents/")
        || path.starts_with("tasks/")
}

fn agent(
    path: &str,
    slug: &str,
    raw: &str,
    e: &Map<String, Value>,
) -> Result<PkgAgent, PackageError> {
    let (front, body) = parse_markdown(raw);
    let adapter = obj(e, "adapter");
    let mut config = obj(&adapter, "config");
    // An env in the config is a package written by hand: its plain values
    // become inputs like the exporter's, never copied as values.
    let mut env = env_inputs(slug, &obj(&obj(e, "inputs"), "env"));
    if let Some(Value::Object(raw_env)) = config.remove("env") {
        for (key, binding) in raw_env {
            if env.iter().any(|i| i.key == key) {
                continue;
            }
            let value = binding.as_str().map(str::to_string).or_else(|| {
                (binding.get("type").and_then(Value::as_str) == Some("plain"))
                    .then(|| {
                        binding
                            .get("value")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .flatten()
            });
            let secret = value.is_none() || is_sensitive_env_key(&key);
            env.push(EnvInput {
                description: Some(format!("Provide {key} for agent {slug}")),
                agent_slug: Some(slug.to_string()),
                project_slug: None,
                kind: if secret { "secret" } else { "plain" }.into(),
                requirement: "optional".into(),
                default_value: if secret { Some(String::new()) } else { value },
                portability: "portable".into(),
                key,
            });
        }
    }
    let budget = e
        .get("budgetMonthlyCents")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if budget < 0 {
        return Err(PackageError::new(
            ".paperclip.yaml",
            Some(&format!("agents.{slug}.budgetMonthlyCents")),
            "must not be negative",
        ));
    }
    Ok(PkgAgent {
        slug: slug.to_string(),
        name: required(&front, path, "name")?,
        title: text(&front, "title"),
        reports_to: text(&front, "reportsTo"),
        skills: strings(&front, "skills"),
        instructions: body,
        role: text(e, "role"),
        icon: text(e, "icon"),
        capabilities: text(e, "capabilities"),
        adapter_type: text(&adapter, "type").unwrap_or_else(|| "process".into()),
        adapter_config: config,
        runtime_config: obj(e, "runtime"),
        permissions: obj(e, "permissions"),
        budget_monthly_cents: budget,
        metadata: e.get("metadata").cloned().filter(|m| !m.is_null()),
        env,
    })
}

fn env_inputs(slug: &str, env: &Map<String, Value>) -> Vec<EnvInput> {
    env.iter()
        .map(|(key, spec)| {
            let spec = spec.as_object().cloned().unwrap_or_default();
            let kind = text(&spec, "kind").unwrap_or_else(|| "secret".into());
            EnvInput {
                key: key.clone(),
                description: text(&spec, "description"),
                agent_slug: Some(slug.to_string()),
                project_slug: None,
                // A secret's default is never a value, whatever the file says.
                default_value: match kind.as_str() {
                    "secret" => Some(String::new()),
                    _ => spec
                        .get("default")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                },
                kind,
                requirement: text(&spec, "requirement").unwrap_or_else(|| "optional".into()),
                portability: text(&spec, "portability").unwrap_or_else(|| "portable".into()),
            }
        })
        .collect()
}

fn task(
    path: &str,
    slug: &str,
    title: String,
    body: String,
    front: &Map<String, Value>,
    e: &Map<String, Value>,
) -> Result<PkgTask, PackageError> {
    let mut comments = Vec::new();
    for (n, c) in e
        .get("comments")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let c = c.as_object().cloned().unwrap_or_default();
        let body = text(&c, "body").ok_or_else(|| {
            PackageError::new(
                ".paperclip.yaml",
                Some(&format!("tasks.{slug}.comments.{n}.body")),
                "a comment needs a body",
            )
        })?;
        comments.push(PkgComment {
            body,
            author_type: text(&c, "authorType").unwrap_or_else(|| "user".into()),
            author_agent: text(&c, "authorAgentSlug"),
            created_at: text(&c, "createdAt"),
        });
    }
    let _ = path;
    Ok(PkgTask {
        slug: slug.to_string(),
        identifier: text(e, "identifier"),
        title,
        description: body,
        project: text(front, "project"),
        assignee: text(front, "assignee"),
        goal: text(e, "goal"),
        status: text(e, "status"),
        priority: text(e, "priority"),
        parent: text(e, "parent"),
        billing_code: text(e, "billingCode"),
        labels: strings(e, "labels"),
        blocked_by: strings(e, "blockedBy"),
        comments,
        created_at: text(e, "createdAt"),
    })
}

fn routine(
    path: &str,
    slug: &str,
    title: String,
    body: String,
    front: &Map<String, Value>,
    e: &Map<String, Value>,
) -> Result<PkgRoutine, PackageError> {
    let mut triggers = Vec::new();
    for (n, t) in e
        .get("triggers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let t = t.as_object().cloned().unwrap_or_default();
        triggers.push(PkgTrigger {
            kind: text(&t, "kind").ok_or_else(|| {
                PackageError::new(
                    ".paperclip.yaml",
                    Some(&format!("routines.{slug}.triggers.{n}.kind")),
                    "a trigger needs a kind",
                )
            })?,
            label: text(&t, "label"),
            enabled: t.get("enabled").and_then(Value::as_bool).unwrap_or(true),
            cron_expression: text(&t, "cronExpression"),
            timezone: text(&t, "timezone"),
            signing_mode: text(&t, "signingMode"),
            replay_window_sec: t.get("replayWindowSec").and_then(Value::as_i64),
        });
    }
    let _ = path;
    Ok(PkgRoutine {
        slug: slug.to_string(),
        title,
        description: body,
        project: text(front, "project"),
        assignee: text(front, "assignee"),
        status: text(e, "status"),
        priority: text(e, "priority"),
        concurrency_policy: text(e, "concurrencyPolicy"),
        catch_up_policy: text(e, "catchUpPolicy"),
        variables: e.get("variables").cloned().filter(|v| !v.is_null()),
        triggers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::package::to_files;

    fn sample() -> Package {
        Package {
            slug: "acme".into(),
            company: PkgCompany {
                name: "Acme".into(),
                description: Some("We make things".into()),
                require_board_approval_for_new_agents: true,
            },
            goals: vec![PkgGoal {
                slug: "ship".into(),
                title: "Ship v1".into(),
                level: Some("company".into()),
                ..Default::default()
            }],
            agents: vec![PkgAgent {
                slug: "ceo".into(),
                name: "CEO".into(),
                title: Some("Chief".into()),
                instructions: "Lead.".into(),
                role: Some("ceo".into()),
                adapter_type: "process".into(),
                adapter_config: serde_json::json!({ "command": "sh", "args": ["-c", "echo hi"] })
                    .as_object()
                    .unwrap()
                    .clone(),
                budget_monthly_cents: 900,
                env: vec![EnvInput {
                    key: "API_KEY".into(),
                    description: Some("Provide API_KEY for agent ceo".into()),
                    agent_slug: Some("ceo".into()),
                    project_slug: None,
                    kind: "secret".into(),
                    requirement: "optional".into(),
                    default_value: Some(String::new()),
                    portability: "portable".into(),
                }],
                ..Default::default()
            }],
            projects: vec![PkgProject {
                slug: "web".into(),
                name: "Web".into(),
                lead_agent: Some("ceo".into()),
                goal: Some("ship".into()),
                status: Some("planned".into()),
                ..Default::default()
            }],
            tasks: vec![PkgTask {
                slug: "acm-1".into(),
                identifier: Some("ACM-1".into()),
                title: "Build it".into(),
                description: "Steps:\n\n1. go".into(),
                project: Some("web".into()),
                assignee: Some("ceo".into()),
                status: Some("todo".into()),
                priority: Some("high".into()),
                comments: vec![PkgComment {
                    body: "Go: now \"fast\"".into(),
                    author_type: "agent".into(),
                    author_agent: Some("ceo".into()),
                    created_at: Some("2026-01-01T00:00:00.000Z".into()),
                }],
                ..Default::default()
            }],
            routines: vec![PkgRoutine {
                slug: "standup".into(),
                title: "Standup".into(),
                description: "Daily".into(),
                assignee: Some("ceo".into()),
                triggers: vec![PkgTrigger {
                    kind: "schedule".into(),
                    enabled: true,
                    cron_expression: Some("0 9 * * *".into()),
                    timezone: Some("UTC".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            skills: vec![PkgSkill {
                slug: "review".into(),
                key: "company/acme/review".into(),
                files: [
                    (
                        "SKILL.md".to_string(),
                        "---\nname: review\n---\n\nReview well.\n".to_string(),
                    ),
                    ("notes/a.md".to_string(), "A".to_string()),
                ]
                .into(),
            }],
            warnings: vec![],
        }
    }

    #[test]
    fn a_package_reads_back_as_written() {
        let pkg = sample();
        let files = to_files(&pkg);
        assert!(files["agents/ceo/AGENTS.md"]
            .starts_with("---\nname: \"CEO\"\ntitle: \"Chief\"\n---\n\nLead.\n"));
        assert!(files["tasks/standup/TASK.md"].contains("recurring: true"));
        let back = from_files(&files).unwrap();
        assert_eq!(back, pkg);
    }

    #[test]
    fn a_package_under_a_folder_reads_relative_to_its_company_file() {
        let files: BTreeMap<String, String> = to_files(&sample())
            .into_iter()
            .map(|(p, c)| (format!("acme/{p}"), c))
            .collect();
        assert_eq!(from_files(&files).unwrap().agents.len(), 1);
    }

    #[test]
    fn a_bad_file_is_named_with_its_field() {
        let mut files = to_files(&sample());
        files.insert(
            "agents/cto/AGENTS.md".into(),
            "---\ntitle: \"CTO\"\n---\n".into(),
        );
        let err = from_files(&files).unwrap_err();
        assert_eq!(
            (err.file.as_str(), err.field.as_deref()),
            ("agents/cto/AGENTS.md", Some("name"))
        );
        files.remove("COMPANY.md");
        assert_eq!(from_files(&files).unwrap_err().file, "COMPANY.md");
    }

    #[test]
    fn secret_values_in_a_hand_written_env_never_become_defaults() {
        let mut files = to_files(&sample());
        files.insert(".paperclip.yaml".into(), "agents:\n  ceo:\n    adapter:\n      type: \"process\"\n      config:\n        env:\n          OPENAI_API_KEY: \"sk-live-123\"\n          MODE: \"fast\"\n".into());
        let pkg = from_files(&files).unwrap();
        let env = &pkg.agents[0].env;
        let key = env.iter().find(|i| i.key == "OPENAI_API_KEY").unwrap();
        assert_eq!(
            (key.kind.as_str(), key.default_value.as_deref()),
            ("secret", Some(""))
        );
        let mode = env.iter().find(|i| i.key == "MODE").unwrap();
        assert_eq!(mode.default_value.as_deref(), Some("fast"));
        assert!(!pkg.agents[0].adapter_config.contains_key("env"));
    }
}
