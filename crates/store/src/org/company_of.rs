//! The company an entity belongs to, read from its row's `company_id` alone:
//! the server checks a person's access to the company a path names before
//! the handler loads anything (one index probe, not the entity's full load).

use crate::{Result, Store};

/// An entity kind a path can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owned {
    /// By id, or by identifier (`ACM-12`).
    Issue,
    Agent,
    Approval,
    Run,
    Project,
    Goal,
    Label,
    Secret,
    Routine,
    RoutineTrigger,
}

impl Owned {
    fn table(self) -> &'static str {
        match self {
            Owned::Issue => "issues",
            Owned::Agent => "agents",
            Owned::Approval => "approvals",
            Owned::Run => "heartbeat_runs",
            Owned::Project => "projects",
            Owned::Goal => "goals",
            Owned::Label => "labels",
            Owned::Secret => "company_secrets",
            Owned::Routine => "routines",
            Owned::RoutineTrigger => "routine_triggers",
        }
    }
}

/// The company of the entity, or `None` when there is no such entity.
pub async fn company_of(store: &Store, kind: Owned, id: &str) -> Result<Option<String>> {
    let by_identifier =
        kind == Owned::Issue && paperclip_core::issue::parse_identifier(id).is_some();
    let sql = if by_identifier {
        "SELECT CAST(company_id AS TEXT) FROM issues WHERE identifier = $1".to_string()
    } else {
        format!(
            "SELECT CAST(company_id AS TEXT) FROM {} WHERE id = $1",
            kind.table()
        )
    };
    let key = if by_identifier {
        id.to_ascii_uppercase()
    } else {
        id.to_string()
    };
    let row: Option<(String,)> = crate::engine::db::query_as(&sql)
        .bind(key)
        .fetch_optional(store.pool())
        .await?;
    Ok(row.map(|(c,)| c))
}
