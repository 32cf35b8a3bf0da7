//! Why a run was woken, read once from its `context_snapshot`: the run's
//! environment and its prompt's template values both read this.

use paperclip_core::model::HeartbeatRun;
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct WakeContext {
    /// The wake's `payload`, unless absent or null.
    pub payload: Option<Value>,
    /// `payload.commentId`: the comment that woke the run.
    pub comment_id: Option<String>,
    /// Every comment the run's wakes carried, oldest first.
    pub comment_ids: Vec<String>,
    pub approval_id: Option<String>,
    pub approval_status: Option<String>,
    /// `payload.linkedIssueIds`, when it is a list.
    pub linked_issue_ids: Option<Vec<String>>,
}

impl WakeContext {
    pub(crate) fn of(run: &HeartbeatRun) -> WakeContext {
        WakeContext::parse(&run.context_snapshot)
    }

    pub(crate) fn parse(snapshot: &Value) -> WakeContext {
        let payload = snapshot.get("payload").filter(|p| !p.is_null()).cloned();
        let text = |key: &str| {
            payload
                .as_ref()
                .and_then(|p| p.get(key))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let comment_id = text("commentId");
        WakeContext {
            comment_ids: comment_ids(snapshot, comment_id.as_deref()),
            approval_id: text("approvalId"),
            approval_status: text("approvalStatus"),
            linked_issue_ids: payload
                .as_ref()
                .and_then(|p| p.get("linkedIssueIds"))
                .and_then(Value::as_array)
                .map(|ids| strings(ids)),
            comment_id,
            payload,
        }
    }
}

/// `commentIds` (oldest first); a run queued before that list existed has
/// its one `payload.commentId`.
fn comment_ids(snapshot: &Value, comment_id: Option<&str>) -> Vec<String> {
    match snapshot.get("commentIds").and_then(Value::as_array) {
        Some(ids) => strings(ids),
        None => comment_id.map(|c| vec![c.to_string()]).unwrap_or_default(),
    }
}

fn strings(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_list_of_comments_wins_over_the_one_in_the_payload() {
        let wake = WakeContext::parse(&json!({
            "commentIds": ["c-1", "c-2"],
            "payload": { "commentId": "c-2", "approvalId": "a-1", "linkedIssueIds": ["i-1", 3] }
        }));
        assert_eq!(wake.comment_ids, ["c-1", "c-2"]);
        assert_eq!(wake.comment_id.as_deref(), Some("c-2"));
        assert_eq!(wake.approval_id.as_deref(), Some("a-1"));
        assert_eq!(wake.approval_status, None);
        assert_eq!(wake.linked_issue_ids, Some(vec!["i-1".to_string()]));
    }

    #[test]
    fn an_older_run_has_its_one_comment_and_a_null_payload_is_none() {
        let wake = WakeContext::parse(&json!({ "payload": { "commentId": "c-9" } }));
        assert_eq!(wake.comment_ids, ["c-9"]);
        let empty = WakeContext::parse(&json!({ "payload": null }));
        assert_eq!(empty, WakeContext::default());
    }
}
