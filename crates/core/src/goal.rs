//! Goal levels and statuses.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GoalLevel {
    Company,
    Team,
    Agent,
    Task,
}

impl GoalLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            GoalLevel::Company => "company",
            GoalLevel::Team => "team",
            GoalLevel::Agent => "agent",
            GoalLevel::Task => "task",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    Planned,
    Active,
    Achieved,
    Cancelled,
}

impl GoalStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            GoalStatus::Planned => "planned",
            GoalStatus::Active => "active",
            GoalStatus::Achieved => "achieved",
            GoalStatus::Cancelled => "cancelled",
        }
    }
}
