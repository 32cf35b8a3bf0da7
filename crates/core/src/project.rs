//! Project statuses.

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
