//! The environment every run gets, whatever its adapter.

use std::collections::BTreeMap;

use paperclip_core::model::{Agent, HeartbeatRun};

use super::wake::WakeContext;

pub(crate) fn run_env(
    api_url: &str,
    agent: &Agent,
    run: &HeartbeatRun,
    wake: &WakeContext,
    token: &str,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let mut set = |name: &str, value: String| {
        env.insert(name.to_string(), value);
    };
    set("PAPERCLIP_AGENT_ID", agent.id.clone());
    set("PAPERCLIP_COMPANY_ID", agent.company_id.clone());
    set("PAPERCLIP_API_URL", api_url.to_string());
    set("PAPERCLIP_API_KEY", token.to_string());
    set("PAPERCLIP_RUN_ID", run.id.clone());
    if let Some(issue) = &run.issue_id {
        set("PAPERCLIP_TASK_ID", issue.clone());
    }
    if let Some(reason) = &run.wake_reason {
        set("PAPERCLIP_WAKE_REASON", reason.clone());
    }
    if let Some(comment) = &wake.comment_id {
        set("PAPERCLIP_WAKE_COMMENT_ID", comment.clone());
    }
    if !wake.comment_ids.is_empty() {
        set("PAPERCLIP_WAKE_COMMENT_IDS", wake.comment_ids.join(","));
    }
    if let Some(approval) = &wake.approval_id {
        set("PAPERCLIP_APPROVAL_ID", approval.clone());
    }
    if let Some(status) = &wake.approval_status {
        set("PAPERCLIP_APPROVAL_STATUS", status.clone());
    }
    if let Some(ids) = &wake.linked_issue_ids {
        set("PAPERCLIP_LINKED_ISSUE_IDS", ids.join(","));
    }
    if let Some(payload) = &wake.payload {
        set("PAPERCLIP_WAKE_PAYLOAD_JSON", payload.to_string());
    }
    env
}
