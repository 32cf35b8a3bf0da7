//! Project statuses, icons, pause reasons and the shape of a project's env.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProjectStatus {
    Backlog,
    Planned,
    InProgress,
    Completed,
    Cancelled,
}

impl ProjectStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ProjectStatus::Backlog => "backlog",
            ProjectStatus::Planned => "planned",
            ProjectStatus::InProgress => "in_progress",
            ProjectStatus::Completed => "completed",
            ProjectStatus::Cancelled => "cancelled",
        }
    }
}

/// The icons a project may show: upstream's fixed set of icon names (its
/// board draws them from one icon font), so any other name is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProjectIcon {
    Folder,
    Rocket,
    Code,
    Terminal,
    Database,
    Globe,
    Package,
    Boxes,
    Box,
    Layers,
    Briefcase,
    Compass,
    Target,
    Flame,
    Zap,
    Star,
    Bug,
    Wrench,
    Hammer,
    Lightbulb,
    Sparkles,
    Shield,
    Lock,
    Search,
    Cog,
    Brain,
    Cpu,
    GitBranch,
    FileCode,
    Puzzle,
    Gem,
    Atom,
    Heart,
    Mail,
    MessageSquare,
    Crown,
    Radar,
    Telescope,
    Hexagon,
}

/// A project's icon, env, pause and plugin owner, in its upstream shape.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectLook {
    pub icon: Option<ProjectIcon>,
    /// Variables every run on one of the project's tasks gets, over the
    /// agent's own; a secret is a `secret_ref` here, resolved only at launch.
    #[schema(value_type = Option<Object>)]
    pub env: Option<serde_json::Value>,
    /// `budget` while the project's hard stop is open.
    pub pause_reason: Option<PauseReason>,
    pub paused_at: Option<String>,
    /// Upstream's plugin that owns the project; there are no plugins here,
    /// so no project is ever plugin-managed: always null.
    #[schema(value_type = Option<Object>)]
    pub managed_by_plugin: Option<serde_json::Value>,
}

/// Why a project is paused. Upstream pauses a project only when its budget's
/// hard stop is reached (`budget`); the other reasons are its shared
/// vocabulary (agents and companies use them) and are read, never set, here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PauseReason {
    Manual,
    Budget,
    System,
    CompanyArchived,
    Import,
}

/// Checks a project's `env`: an object of variable names to bindings, as an
/// agent's `adapterConfig.env` holds them (a string, `{type: "plain", value}`
/// or `{type: "secret_ref", secretId, version?}`). The error names the
/// variable; it never repeats a value.
pub fn check_env(env: &serde_json::Value) -> Result<(), String> {
    use serde_json::Value;
    let Some(vars) = env.as_object() else {
        return Err("env must be an object of variable names to bindings".into());
    };
    for (name, binding) in vars {
        let valid_name = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid_name {
            return Err(format!("env variable name {name:?} is not a valid name"));
        }
        match binding {
            Value::String(_) => {}
            Value::Object(o) => match o.get("type").and_then(Value::as_str) {
                Some("plain") if o.get("value").is_some_and(Value::is_string) => {}
                Some("plain") => return Err(format!("env {name}: value must be a string")),
                Some("secret_ref") => {
                    if let Some(Err(why)) = crate::company_secret::parse_secret_ref(binding) {
                        return Err(format!("env {name}: {why}"));
                    }
                }
                _ => {
                    return Err(format!(
                        "env {name}: type must be \"plain\" or \"secret_ref\""
                    ))
                }
            },
            _ => {
                return Err(format!(
                    "env {name}: a binding is a string or an object with a type"
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn icons_are_upstreams_names() {
        let icon: ProjectIcon = serde_json::from_value(json!("git-branch")).unwrap();
        assert_eq!(icon, ProjectIcon::GitBranch);
        assert_eq!(json!(ProjectIcon::MessageSquare), json!("message-square"));
        assert!(serde_json::from_value::<ProjectIcon>(json!("🚀")).is_err());
    }

    #[test]
    fn env_bindings_are_checked_by_name() {
        let id = "0b0c5b1e-8a1d-4c3e-9f00-1234567890ab";
        assert!(check_env(&json!({
            "A": "x", "B": {"type": "plain", "value": "y"},
            "C": {"type": "secret_ref", "secretId": id, "version": "latest"}
        }))
        .is_ok());
        assert!(check_env(&json!([])).is_err());
        assert!(check_env(&json!({"1A": "x"})).is_err());
        assert!(check_env(&json!({"A": 3})).is_err());
        let err =
            check_env(&json!({"TOKEN": {"type": "secret_ref", "secretId": "nope"}})).unwrap_err();
        assert!(err.contains("TOKEN") && err.contains("UUID"), "{err}");
        let err = check_env(&json!({"K": {"type": "plain", "value": 5}})).unwrap_err();
        assert!(err.contains('K'), "{err}");
    }
}
