//! The managers above an agent, for its chain of command and the chain's
//! health (`paperclip_core::org_chain`): one recursive query up the
//! `reports_to` links, bounded in depth so a loop cannot run away.

use paperclip_core::model::Agent;
use paperclip_core::org_chain::{Member, MAX_DEPTH};

use crate::engine::row::RowExt;
use crate::{Result, Store};

/// The agent as the chain rule sees it.
pub fn member(agent: &Agent) -> Member {
    Member {
        id: agent.id.clone(),
        company_id: agent.company_id.clone(),
        name: agent.name.clone(),
        role: agent.role,
        title: agent.title.clone(),
        status: agent.status,
        reports_to: agent.reports_to.clone(),
    }
}

/// Every agent on the way up from `agent` (not the agent itself). A manager
/// id with no agent is simply absent: the rule reports it as missing.
pub async fn above(store: &Store, agent: &Agent) -> Result<Vec<Member>> {
    if agent.reports_to.is_none() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "WITH RECURSIVE up(id, depth) AS ( \
           SELECT reports_to, 1 FROM agents WHERE id = $1 AND reports_to IS NOT NULL \
           UNION ALL \
           SELECT a.reports_to, up.depth + 1 FROM agents a JOIN up ON a.id = up.id \
           WHERE a.reports_to IS NOT NULL AND up.depth < {MAX_DEPTH}) \
         SELECT DISTINCT a.id, a.company_id, a.name, a.role, a.title, a.status, a.reports_to \
         FROM up JOIN agents a ON a.id = up.id"
    );
    let rows = crate::engine::db::query(&sql)
        .bind(&agent.id)
        .fetch_all(store.pool())
        .await?;
    rows.iter()
        .map(|r| {
            Ok(Member {
                id: r.text("id")?,
                company_id: r.text("company_id")?,
                name: r.text("name")?,
                role: r.stored("role")?,
                title: r.opt_text("title")?,
                status: r.stored("status")?,
                reports_to: r.opt_text("reports_to")?,
            })
        })
        .collect()
}
