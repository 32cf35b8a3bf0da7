//! What a package carries, by slug (references between entries are slugs,
//! never ids, so a package means the same in any instance).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Package {
    /// The folder name the package is exported under (`COMPANY.md`'s `slug`).
    pub slug: String,
    pub company: PkgCompany,
    pub goals: Vec<PkgGoal>,
    pub agents: Vec<PkgAgent>,
    pub projects: Vec<PkgProject>,
    pub tasks: Vec<PkgTask>,
    pub routines: Vec<PkgRoutine>,
    /// Company skills: `skills/<slug>/SKILL.md` and the folder's other files.
    pub skills: Vec<PkgSkill>,
    /// What a reader noticed and skipped (unknown files, binary entries).
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PkgSkill {
    pub slug: String,
    /// The key agents' `skills` name it by (`.paperclip.yaml` `skills.<slug>.key`;
    /// the slug when absent).
    pub key: String,
    /// Every file of the folder, by path inside it (`SKILL.md` first).
    pub files: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PkgCompany {
    pub name: String,
    pub description: Option<String>,
    pub require_board_approval_for_new_agents: bool,
}

/// Goals travel in `.paperclip.yaml` under `goals` (the original's package
/// has none; its reader ignores the key).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PkgGoal {
    pub slug: String,
    pub title: String,
    pub description: Option<String>,
    pub level: Option<String>,
    pub status: Option<String>,
    pub parent: Option<String>,
    pub owner: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PkgAgent {
    pub slug: String,
    pub name: String,
    pub title: Option<String>,
    pub reports_to: Option<String>,
    pub skills: Vec<String>,
    /// `AGENTS.md`'s body: the agent's instructions.
    pub instructions: String,
    pub role: Option<String>,
    pub icon: Option<String>,
    pub capabilities: Option<String>,
    pub adapter_type: String,
    /// Without `env` (its entries are [`EnvInput`]s) and without secret values.
    pub adapter_config: Map<String, Value>,
    pub runtime_config: Map<String, Value>,
    pub permissions: Map<String, Value>,
    pub budget_monthly_cents: i64,
    pub metadata: Option<Value>,
    pub env: Vec<EnvInput>,
}

/// An env variable an agent needs: a secret (never a value: the importer
/// supplies one or leaves it unset) or a plain default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvInput {
    pub key: String,
    pub description: Option<String>,
    pub agent_slug: Option<String>,
    pub project_slug: Option<String>,
    /// `secret` or `plain`.
    pub kind: String,
    /// `required` or `optional`.
    pub requirement: String,
    pub default_value: Option<String>,
    /// `portable` or `system_dependent`.
    pub portability: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PkgProject {
    pub slug: String,
    pub name: String,
    pub description: Option<String>,
    pub lead_agent: Option<String>,
    pub target_date: Option<String>,
    pub color: Option<String>,
    pub status: Option<String>,
    /// Ours: the goal the project serves, by slug.
    pub goal: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PkgTask {
    pub slug: String,
    pub identifier: Option<String>,
    pub title: String,
    pub description: String,
    pub project: Option<String>,
    pub assignee: Option<String>,
    pub goal: Option<String>,
    pub status: Option<String>,
    pub priority: Option<String>,
    pub parent: Option<String>,
    pub billing_code: Option<String>,
    pub labels: Vec<String>,
    pub blocked_by: Vec<String>,
    pub comments: Vec<PkgComment>,
    pub created_at: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PkgComment {
    pub body: String,
    /// `agent`, `user` or `system`.
    pub author_type: String,
    pub author_agent: Option<String>,
    pub created_at: Option<String>,
}

/// A recurring task: `TASK.md` with `recurring: true` and its triggers in
/// `.paperclip.yaml` under `routines`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PkgRoutine {
    pub slug: String,
    pub title: String,
    pub description: String,
    pub project: Option<String>,
    pub assignee: Option<String>,
    pub status: Option<String>,
    pub priority: Option<String>,
    pub concurrency_policy: Option<String>,
    pub catch_up_policy: Option<String>,
    pub variables: Option<Value>,
    pub triggers: Vec<PkgTrigger>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct PkgTrigger {
    pub kind: String,
    pub label: Option<String>,
    pub enabled: bool,
    pub cron_expression: Option<String>,
    pub timezone: Option<String>,
    pub signing_mode: Option<String>,
    pub replay_window_sec: Option<i64>,
}

impl Package {
    /// Every env input of the package, agents' first.
    pub fn env_inputs(&self) -> Vec<EnvInput> {
        self.agents.iter().flat_map(|a| a.env.clone()).collect()
    }
}

/// Drops nulls, empty strings, lists and maps, recursively (the original's
/// `stripEmptyValues`): `None` when nothing is left.
pub fn strip_empty(value: Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) => {
            let kept: Vec<Value> = items.into_iter().filter_map(strip_empty).collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::Object(map) => {
            let kept: Map<String, Value> = map
                .into_iter()
                .filter_map(|(k, v)| strip_empty(v).map(|v| (k, v)))
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other),
    }
}
