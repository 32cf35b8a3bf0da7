//! Upstream's answers for a skill: the stored skill plus what its list item,
//! detail, file and update status carry.

use paperclip_core::model::Agent;
use paperclip_core::skill::{self, CompanySkill, SourceType, VersionFile};
use paperclip_store::org::skills as library;
use serde_json::{json, Value};

use crate::error::ApiResult;
use crate::AppState;

pub fn skill_json(s: &CompanySkill) -> Value {
    serde_json::to_value(s).unwrap_or(Value::Null)
}

fn managed(s: &CompanySkill) -> bool {
    s.metadata
        .as_ref()
        .and_then(|m| m.get("sourceKind"))
        .and_then(Value::as_str)
        == Some("managed_local")
}

fn source_label(s: &CompanySkill) -> Option<String> {
    if managed(s) {
        return Some("Paperclip".into());
    }
    s.source_locator.clone()
}

/// The agents that chose the skill.
fn users<'a>(s: &CompanySkill, agents: &'a [Agent]) -> Vec<&'a Agent> {
    agents
        .iter()
        .filter(|a| skill::desired_keys(&a.adapter_config).contains(&s.key))
        .collect()
}

/// The keys every list item and detail add to the skill.
fn extras(out: &mut serde_json::Map<String, Value>, s: &CompanySkill, agents: &[Agent]) {
    let local = s.source_type == SourceType::LocalPath && !managed(s);
    out.insert("attachedAgentCount".into(), json!(users(s, agents).len()));
    out.insert("editable".into(), json!(true));
    out.insert("editableReason".into(), Value::Null);
    out.insert("sourceLabel".into(), json!(source_label(s)));
    out.insert("sourceBadge".into(), json!(s.source_type.badge(managed(s))));
    out.insert(
        "sourcePath".into(),
        json!(local.then(|| s.source_locator.clone()).flatten()),
    );
}

/// Upstream's `CompanySkillListItem`: no markdown or metadata.
pub fn list_item(s: &CompanySkill, agents: &[Agent]) -> Value {
    let mut v = skill_json(s);
    let Some(out) = v.as_object_mut() else {
        return v;
    };
    out.remove("markdown");
    out.remove("metadata");
    extras(out, s, agents);
    for key in ["catalogKind", "originHash", "packageName", "packageVersion"] {
        out.insert(key.into(), Value::Null);
    }
    v
}

/// Upstream's `CompanySkillDetail`.
pub async fn detail_of(app: &AppState, company_id: &str, reference: &str) -> ApiResult<Value> {
    let found = library::get(&app.store, company_id, reference).await?;
    let agents = paperclip_store::org::agents::list(&app.store, company_id).await?;
    let current = match &found.skill.current_version_id {
        Some(v) => Some(library::version(&app.store, company_id, &found.skill.id, v).await?),
        None => None,
    };
    let s = &found.skill;
    let mut v = skill_json(s);
    if let Some(out) = v.as_object_mut() {
        extras(out, s, &agents);
        let used: Vec<Value> = users(s, &agents)
            .into_iter()
            .map(|a| {
                json!({ "id": a.id, "name": a.name, "urlKey": a.url_key, "adapterType": a.adapter_type,
                    "desired": true, "actualState": null, "versionId": null })
            })
            .collect();
        out.insert("usedByAgents".into(), Value::Array(used));
        out.insert("existingForks".into(), json!([]));
        out.insert("currentVersion".into(), json!(current));
        out.insert("starredByCurrentActor".into(), json!(false));
    }
    Ok(v)
}

/// Upstream's `CompanySkillFileDetail`.
pub fn file_json(skill_id: &str, f: &VersionFile) -> Value {
    let markdown = f.path.to_ascii_lowercase().ends_with(".md");
    let ext = f.path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    let language = match ext.as_deref() {
        Some("md") => Some("markdown"),
        Some("sh" | "bash") => Some("bash"),
        Some("py") => Some("python"),
        Some("js" | "mjs" | "cjs") => Some("javascript"),
        Some("ts") => Some("typescript"),
        Some("json") => Some("json"),
        Some("yaml" | "yml") => Some("yaml"),
        Some("rb") => Some("ruby"),
        _ => None,
    };
    json!({ "skillId": skill_id, "path": f.path, "kind": f.kind, "content": f.content,
        "language": language, "markdown": markdown, "editable": true })
}

/// When the skill was last edited here, which holds an update from its
/// source back until forced.
pub fn user_modified_at(s: &CompanySkill) -> Option<String> {
    s.metadata
        .as_ref()
        .and_then(|m| m.get("userModifiedAt"))
        .and_then(Value::as_str)
        .map(String::from)
}

/// Upstream's `CompanySkillUpdateStatus`. Only a repository is tracked.
pub fn update_status(s: &CompanySkill, latest: Option<String>) -> Value {
    let tracked = matches!(s.source_type, SourceType::Github | SourceType::Url);
    let reason = if tracked {
        None
    } else if managed(s) {
        Some("This skill was written in Paperclip: it has no source to track")
    } else {
        Some("A folder on the server's machine is read again by install-update; it has no version to compare")
    };
    json!({
        "supported": tracked,
        "reason": reason,
        "trackingRef": if tracked { s.source_locator.clone() } else { None },
        "currentRef": s.source_ref,
        "latestRef": latest.clone(),
        "hasUpdate": latest.is_some() && s.source_ref.is_some() && latest != s.source_ref,
        "installedHash": null,
        "originHash": null,
        "userModifiedAt": user_modified_at(s),
        "updateHoldReason": user_modified_at(s).map(|_| "local_modifications"),
        "auditVerdict": null,
        "auditCodes": [],
    })
}
