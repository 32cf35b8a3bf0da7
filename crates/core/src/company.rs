//! Company statuses.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompanyStatus {
    Active,
    Paused,
    Archived,
}

impl CompanyStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CompanyStatus::Active => "active",
            CompanyStatus::Paused => "paused",
            CompanyStatus::Archived => "archived",
        }
    }
}
