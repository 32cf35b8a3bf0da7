//! What each route needs from a person's role in the company it touches.
//!
//! One table for the whole API, read by [`crate::auth::Caller`] from the
//! route that matched; every handler already checks the company boundary
//! through [`crate::auth::Caller::ensure_company`], which is where the need
//! is enforced. A read needs [`Permission::Read`]; a write route missing from
//! the table needs [`Permission::CompanyManage`], so a new route is closed to
//! operators and viewers until it is listed here.

use axum::http::Method;
use paperclip_core::team::Permission;

pub fn need(method: &Method, route: &str) -> Permission {
    use Permission::*;
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return match route {
            "/api/agents/{id}/keys" => AgentsCreate,
            // Who is in the company is a read, as the Members page shows every
            // member; invite links are for those who may invite.
            "/api/companies/{companyId}/invites" => UsersInvite,
            _ => Read,
        };
    }
    let tail = |prefix: &str| route.strip_prefix(prefix).unwrap_or("");
    match route {
        "/api/companies/{companyId}" if *method == Method::DELETE => DeleteCompany,
        "/api/companies/{companyId}/issues"
        | "/api/companies/{companyId}/goals"
        | "/api/companies/{companyId}/projects"
        | "/api/companies/{companyId}/labels"
        | "/api/companies/{companyId}/inbox-dismissals"
        | "/api/companies/{companyId}/inbox-dismissals/{itemKey}"
        | "/api/companies/{companyId}/chats/{agentRef}"
        | "/api/goals/{id}"
        | "/api/projects/{id}"
        | "/api/labels/{labelId}"
        | "/api/approvals/{id}/comments"
        | "/api/issues/{id}/approvals"
        | "/api/issues/{id}/approvals/{approvalId}" => TasksMutate,
        "/api/companies/{companyId}/issues/{issueId}/attachments"
        | "/api/attachments/{id}"
        | "/api/work-products/{id}" => TasksMutate,
        "/api/agents/{id}/wakeup"
        | "/api/agents/{id}/heartbeat/invoke"
        | "/api/heartbeat-runs/{runId}/cancel"
        | "/api/issues/{id}/wake-loop/release"
        | "/api/issues/{id}/queued-comments/interrupt" => AgentWake,
        "/api/issues/{id}/admin/force-release" => CompanyManage,
        "/api/companies/{companyId}/routines" | "/api/routines/{id}" => TasksMutate,
        "/api/companies/{companyId}/folders"
        | "/api/companies/{companyId}/folders/{folderId}"
        | "/api/companies/{companyId}/folders/{folderId}/move"
        | "/api/companies/{companyId}/folders/items/move" => TasksMutate,
        "/api/routines/{id}/triggers"
        | "/api/routines/{id}/run"
        | "/api/routines/{id}/revisions/{revisionId}/restore"
        | "/api/routine-triggers/{id}"
        | "/api/routine-triggers/{id}/rotate-secret" => TasksAssign,
        "/api/companies/{companyId}/agents"
        | "/api/companies/{companyId}/agent-hires"
        | "/api/companies/{companyId}/adapters/{type}/test-environment"
        | "/api/agents/{agentId}/budgets" => AgentsCreate,
        "/api/companies/{companyId}/approvals"
        | "/api/decisions/{id}/decide"
        | "/api/decisions/{id}/dismiss"
        | "/api/decisions/{id}/cancel" => ApprovalsDecide,
        "/api/companies/{companyId}/secrets" | "/api/secrets/{id}" | "/api/secrets/{id}/rotate" => {
            SecretsManage
        }
        "/api/companies/{companyId}/invites" | "/api/invites/{inviteId}/revoke" => UsersInvite,
        "/api/companies/{companyId}/members/{memberId}"
        | "/api/companies/{companyId}/members/{memberId}/archive" => UsersManage,
        _ if route.starts_with("/api/issues/{id}") => TasksMutate,
        _ if route.starts_with("/api/agents/{id}") => AgentsCreate,
        _ if route.starts_with("/api/approvals/{id}/") => match tail("/api/approvals/{id}/") {
            "resubmit" | "cancel" | "approve" | "reject" | "request-revision" => ApprovalsDecide,
            _ => CompanyManage,
        },
        _ => CompanyManage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_need_read_and_writes_their_listed_permission() {
        assert_eq!(need(&Method::GET, "/api/issues/{id}"), Permission::Read);
        assert_eq!(
            need(&Method::GET, "/api/agents/{id}/keys"),
            Permission::AgentsCreate
        );
        assert_eq!(
            need(&Method::POST, "/api/issues/{id}/comments"),
            Permission::TasksMutate
        );
        assert_eq!(
            need(&Method::PATCH, "/api/agents/{id}"),
            Permission::AgentsCreate
        );
        assert_eq!(
            need(&Method::POST, "/api/agents/{id}/wakeup"),
            Permission::AgentWake
        );
        assert_eq!(
            need(&Method::DELETE, "/api/companies/{companyId}"),
            Permission::DeleteCompany
        );
        assert_eq!(
            need(&Method::PATCH, "/api/companies/{companyId}"),
            Permission::CompanyManage
        );
        assert_eq!(
            need(&Method::POST, "/api/approvals/{id}/approve"),
            Permission::ApprovalsDecide
        );
        assert_eq!(
            need(&Method::GET, "/api/companies/{companyId}/members"),
            Permission::Read
        );
        assert_eq!(
            need(
                &Method::PATCH,
                "/api/companies/{companyId}/members/{memberId}"
            ),
            Permission::UsersManage
        );
    }

    #[test]
    fn an_unlisted_write_is_closed_to_operators() {
        assert_eq!(
            need(&Method::POST, "/api/something/new"),
            Permission::CompanyManage
        );
    }
}
