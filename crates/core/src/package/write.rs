//! A [`Package`] as the original's files, and its manifest (the JSON summary
//! the original's API answers with next to the files).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::model::*;
use super::yaml::{build_markdown, render_file};

/// The schema version the original writes in `.paperclip.yaml`.
pub const SCHEMA_VERSION: i64 = 6;

fn front(pairs: Value) -> Map<String, Value> {
    match strip_empty(pairs) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

fn env_map(inputs: &[EnvInput]) -> Value {
    let mut env = Map::new();
    for i in inputs {
        let mut entry = Map::new();
        entry.insert("kind".into(), json!(i.kind));
        entry.insert("requirement".into(), json!(i.requirement));
        if let Some(d) = &i.default_value {
            entry.insert("default".into(), json!(d));
        }
        if let Some(d) = &i.description {
            entry.insert("description".into(), json!(d));
        }
        if i.portability == "system_dependent" {
            entry.insert("portability".into(), json!("system_dependent"));
        }
        env.insert(i.key.clone(), Value::Object(entry));
    }
    Value::Object(env)
}

fn insert_some(map: &mut Map<String, Value>, key: &str, value: Value) {
    if let Some(v) = strip_empty(value) {
        map.insert(key.to_string(), v);
    }
}

pub fn to_files(pkg: &Package) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    files.insert(
        "COMPANY.md".to_string(),
        build_markdown(
            &front(json!({
                "name": pkg.company.name,
                "description": pkg.company.description,
                "schema": "agentcompanies/v1",
                "slug": pkg.slug,
            })),
            "",
        ),
    );
    let mut agents_ext = Map::new();
    for a in &pkg.agents {
        files.insert(
            format!("agents/{}/AGENTS.md", a.slug),
            build_markdown(
                &front(json!({
                    "name": a.name,
                    "title": a.title,
                    "reportsTo": a.reports_to,
                    "skills": a.skills,
                })),
                &a.instructions,
            ),
        );
        let mut ext = Map::new();
        insert_some(
            &mut ext,
            "role",
            json!(a.role.as_deref().filter(|r| *r != "agent")),
        );
        insert_some(&mut ext, "icon", json!(a.icon));
        insert_some(&mut ext, "capabilities", json!(a.capabilities));
        ext.insert(
            "adapter".into(),
            json!({ "type": a.adapter_type, "config": a.adapter_config }),
        );
        insert_some(&mut ext, "runtime", Value::Object(a.runtime_config.clone()));
        insert_some(
            &mut ext,
            "permissions",
            Value::Object(a.permissions.clone()),
        );
        if a.budget_monthly_cents > 0 {
            ext.insert("budgetMonthlyCents".into(), json!(a.budget_monthly_cents));
        }
        insert_some(
            &mut ext,
            "metadata",
            a.metadata.clone().unwrap_or(Value::Null),
        );
        if !a.env.is_empty() {
            ext.insert("inputs".into(), json!({ "env": env_map(&a.env) }));
        }
        agents_ext.insert(a.slug.clone(), Value::Object(ext));
    }
    let mut projects_ext = Map::new();
    for p in &pkg.projects {
        files.insert(
            format!("projects/{}/PROJECT.md", p.slug),
            build_markdown(
                &front(
                    json!({ "name": p.name, "description": p.description, "owner": p.lead_agent }),
                ),
                p.description.as_deref().unwrap_or(""),
            ),
        );
        if let Some(ext) = strip_empty(json!({
            "leadAgentSlug": p.lead_agent,
            "targetDate": p.target_date,
            "color": p.color,
            "status": p.status,
            "goal": p.goal,
        })) {
            projects_ext.insert(p.slug.clone(), ext);
        }
    }
    let mut tasks_ext = Map::new();
    for t in &pkg.tasks {
        files.insert(
            format!("tasks/{}/TASK.md", t.slug),
            build_markdown(
                &front(json!({ "name": t.title, "project": t.project, "assignee": t.assignee })),
                &t.description,
            ),
        );
        let comments: Vec<Value> = t
            .comments
            .iter()
            .map(|c| {
                json!({
                    "body": c.body,
                    "authorType": c.author_type,
                    "authorAgentSlug": c.author_agent,
                    "authorUserId": null,
                    "presentation": null,
                    "metadata": null,
                    "createdAt": c.created_at,
                })
            })
            .collect();
        let mut ext = Map::new();
        for (key, value) in [
            ("identifier", json!(t.identifier)),
            ("status", json!(t.status)),
            ("priority", json!(t.priority)),
            ("parent", json!(t.parent)),
            ("createdAt", json!(t.created_at)),
            ("labels", json!(t.labels)),
            ("billingCode", json!(t.billing_code)),
            ("blockedBy", json!(t.blocked_by)),
            ("goal", json!(t.goal)),
        ] {
            insert_some(&mut ext, key, value);
        }
        // A comment keeps its null keys: the original reads them as given.
        if !comments.is_empty() {
            ext.insert("comments".into(), Value::Array(comments));
        }
        if !ext.is_empty() {
            tasks_ext.insert(t.slug.clone(), Value::Object(ext));
        }
    }
    let mut routines_ext = Map::new();
    for r in &pkg.routines {
        files.insert(
            format!("tasks/{}/TASK.md", r.slug),
            build_markdown(
                &front(json!({
                    "name": r.title, "project": r.project, "assignee": r.assignee, "recurring": true,
                })),
                &r.description,
            ),
        );
        let triggers: Vec<Value> = r
            .triggers
            .iter()
            .filter_map(|t| {
                strip_empty(json!({
                    "kind": t.kind,
                    "label": t.label,
                    "enabled": if t.enabled { Value::Null } else { json!(false) },
                    "cronExpression": t.cron_expression,
                    "timezone": t.timezone,
                    "signingMode": t.signing_mode,
                    "replayWindowSec": t.replay_window_sec,
                }))
            })
            .collect();
        let ext = strip_empty(json!({
            "status": r.status.as_deref().filter(|s| *s != "active"),
            "priority": r.priority.as_deref().filter(|p| *p != "medium"),
            "concurrencyPolicy": r.concurrency_policy.as_deref().filter(|p| *p != "coalesce_if_active"),
            "catchUpPolicy": r.catch_up_policy.as_deref().filter(|p| *p != "skip_missed"),
            "variables": r.variables,
            "triggers": triggers,
        }));
        if let Some(ext) = ext {
            routines_ext.insert(r.slug.clone(), ext);
        }
    }
    let mut skills_ext = Map::new();
    for sk in &pkg.skills {
        for (path, content) in &sk.files {
            files.insert(format!("skills/{}/{path}", sk.slug), content.clone());
        }
        if sk.key != sk.slug {
            skills_ext.insert(sk.slug.clone(), json!({ "key": sk.key }));
        }
    }
    let mut goals_ext = Map::new();
    for g in &pkg.goals {
        goals_ext.insert(
            g.slug.clone(),
            strip_empty(json!({
                "title": g.title, "description": g.description, "level": g.level,
                "status": g.status, "parent": g.parent, "owner": g.owner,
            }))
            .unwrap_or_else(|| json!({})),
        );
    }
    let mut ext = Map::new();
    ext.insert("schema".into(), json!("paperclip/v1"));
    ext.insert("schemaVersion".into(), json!(SCHEMA_VERSION));
    if pkg.company.require_board_approval_for_new_agents {
        ext.insert(
            "company".into(),
            json!({ "requireBoardApprovalForNewAgents": true }),
        );
    }
    let sidebar = strip_empty(json!({
        "agents": pkg.agents.iter().map(|a| &a.slug).collect::<Vec<_>>(),
        "projects": pkg.projects.iter().map(|p| &p.slug).collect::<Vec<_>>(),
    }));
    if let Some(s) = sidebar {
        ext.insert("sidebar".into(), s);
    }
    for (key, map) in [
        ("agents", agents_ext),
        ("projects", projects_ext),
        ("tasks", tasks_ext),
        ("routines", routines_ext),
        ("goals", goals_ext),
        ("skills", skills_ext),
    ] {
        if !map.is_empty() {
            ext.insert(key.into(), Value::Object(map));
        }
    }
    files.insert(".paperclip.yaml".into(), render_file(&Value::Object(ext)));
    files.insert("README.md".into(), readme(pkg));
    files
}

fn readme(pkg: &Package) -> String {
    let mut out = format!("# {}\n\n", pkg.company.name);
    if let Some(d) = &pkg.company.description {
        out.push_str(&format!("{d}\n\n"));
    }
    out.push_str("A company package (agentcompanies/v1). Import it with `paperclip company import <dir>`.\n\n");
    if !pkg.agents.is_empty() {
        out.push_str("## Agents\n\n");
        for a in &pkg.agents {
            let title = a
                .title
                .as_deref()
                .map(|t| format!(" ({t})"))
                .unwrap_or_default();
            out.push_str(&format!("- {}{title}\n", a.name));
        }
        out.push('\n');
    }
    if !pkg.projects.is_empty() {
        out.push_str("## Projects\n\n");
        for p in &pkg.projects {
            out.push_str(&format!("- {}\n", p.name));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "{} tasks, {} routines, {} goals.\n",
        pkg.tasks.len(),
        pkg.routines.len(),
        pkg.goals.len()
    ));
    out
}

/// The original's `CompanyPortabilityManifest` for this package.
pub fn manifest(pkg: &Package, source: Option<(&str, &str)>, generated_at: &str) -> Value {
    let agents: Vec<Value> = pkg
        .agents
        .iter()
        .map(|a| {
            json!({
                "slug": a.slug, "name": a.name, "path": format!("agents/{}/AGENTS.md", a.slug),
                "skills": a.skills, "role": a.role.clone().unwrap_or_else(|| "agent".into()),
                "title": a.title, "icon": a.icon, "capabilities": a.capabilities,
                "reportsToSlug": a.reports_to, "adapterType": a.adapter_type,
                "adapterConfig": a.adapter_config, "runtimeConfig": a.runtime_config,
                "permissions": a.permissions, "permissionGrants": [],
                "budgetMonthlyCents": a.budget_monthly_cents, "metadata": a.metadata,
            })
        })
        .collect();
    let projects: Vec<Value> = pkg
        .projects
        .iter()
        .map(|p| {
            json!({
                "slug": p.slug, "name": p.name, "path": format!("projects/{}/PROJECT.md", p.slug),
                "description": p.description, "ownerAgentSlug": p.lead_agent,
                "leadAgentSlug": p.lead_agent, "targetDate": p.target_date, "color": p.color,
                "status": p.status, "executionWorkspacePolicy": null, "workspaces": [],
                "metadata": null,
            })
        })
        .collect();
    let mut issues: Vec<Value> = pkg
        .tasks
        .iter()
        .map(|t| {
            json!({
                "slug": t.slug, "identifier": t.identifier, "title": t.title,
                "path": format!("tasks/{}/TASK.md", t.slug), "projectSlug": t.project,
                "projectWorkspaceKey": null, "assigneeAgentSlug": t.assignee,
                "description": (!t.description.is_empty()).then_some(&t.description),
                "recurring": false, "routine": null, "legacyRecurrence": null,
                "status": t.status, "priority": t.priority, "labelIds": [], "labelNames": t.labels,
                "billingCode": t.billing_code, "executionWorkspaceSettings": null,
                "assigneeAdapterOverrides": null,
                "comments": t.comments.iter().map(|c| json!({
                    "body": c.body, "authorType": c.author_type, "authorAgentSlug": c.author_agent,
                    "authorUserId": null, "presentation": null, "metadata": null, "createdAt": c.created_at,
                })).collect::<Vec<_>>(),
                "blockedBy": t.blocked_by, "documents": [], "workProducts": [], "monitor": null,
                "attachments": [], "parentSlug": t.parent, "createdAt": t.created_at, "metadata": null,
            })
        })
        .collect();
    issues.extend(pkg.routines.iter().map(|r| {
        json!({
            "slug": r.slug, "identifier": null, "title": r.title,
            "path": format!("tasks/{}/TASK.md", r.slug), "projectSlug": r.project,
            "projectWorkspaceKey": null, "assigneeAgentSlug": r.assignee,
            "description": (!r.description.is_empty()).then_some(&r.description),
            "recurring": true,
            "routine": {
                "concurrencyPolicy": r.concurrency_policy, "catchUpPolicy": r.catch_up_policy,
                "variables": r.variables,
                "triggers": r.triggers.iter().map(|t| json!({
                    "kind": t.kind, "label": t.label, "enabled": t.enabled,
                    "cronExpression": t.cron_expression, "timezone": t.timezone,
                    "signingMode": t.signing_mode, "replayWindowSec": t.replay_window_sec,
                })).collect::<Vec<_>>(),
            },
            "legacyRecurrence": null, "status": r.status, "priority": r.priority,
            "labelIds": [], "labelNames": [], "billingCode": null,
            "executionWorkspaceSettings": null, "assigneeAdapterOverrides": null,
            "comments": [], "blockedBy": [], "documents": [], "workProducts": [], "monitor": null,
            "attachments": [], "metadata": null,
        })
    }));
    json!({
        "schemaVersion": SCHEMA_VERSION,
        "generatedAt": generated_at,
        "source": source.map(|(id, name)| json!({ "companyId": id, "companyName": name })),
        "includes": {
            "company": true, "agents": !agents.is_empty(), "projects": !projects.is_empty(),
            "issues": !issues.is_empty(), "skills": !pkg.skills.is_empty(),
        },
        "company": {
            "path": "COMPANY.md", "name": pkg.company.name, "description": pkg.company.description,
            "logoPath": null,
            "requireBoardApprovalForNewAgents": pkg.company.require_board_approval_for_new_agents,
            "feedbackDataSharingEnabled": false, "feedbackDataSharingConsentAt": null,
            "feedbackDataSharingConsentByUserId": null, "feedbackDataSharingTermsVersion": null,
        },
        "sidebar": {
            "agents": pkg.agents.iter().map(|a| &a.slug).collect::<Vec<_>>(),
            "projects": pkg.projects.iter().map(|p| &p.slug).collect::<Vec<_>>(),
        },
        "labels": [], "blobs": [], "agents": agents, "skills": pkg.skills.iter().map(|sk| json!({
            "key": sk.key, "slug": sk.slug, "name": sk.slug, "path": format!("skills/{}/SKILL.md", sk.slug),
            "description": null, "sourceType": "local_path", "sourceLocator": null, "sourceRef": null,
            "trustLevel": null, "compatibility": null, "metadata": null,
            "fileInventory": sk.files.keys().map(|p| json!({ "path": p, "kind": "file" })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(), "projects": projects,
        "issues": issues, "envInputs": pkg.env_inputs(),
    })
}
