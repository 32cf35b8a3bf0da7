//! Running a chosen option's effects: each through the ordinary issue
//! flows as the deciding person (atomic with its own activity and wakes),
//! then its outcome recorded once (a unique index per effect) with its
//! activity row. A refused or impossible effect is `failed` with the
//! reason, a strict one whose target changed since is `skipped`.

use paperclip_core::activity::{Action, EntityType};
use paperclip_core::actor::Actor;
use paperclip_core::decision::{Effect, EffectStatus, Staleness};
use paperclip_core::input::{IssuePatch, NewIssue};
use paperclip_core::issue::IssueStatus;
use serde_json::{json, Value};

use crate::audit::activity::{self, Entry};
use crate::decisions::create::descendants;
use crate::{new_id, now, Error, Result, Store, Tx};

pub(crate) async fn record(
    tx: &mut Tx,
    actor: &Actor,
    d: &Value,
    action: Action,
    mut details: Value,
) -> Result<()> {
    details["originIssueId"] = d["originIssueId"].clone();
    details["originAgentId"] = d["originAgentId"].clone();
    activity::record(
        tx,
        actor,
        Entry {
            company_id: d["companyId"].as_str().unwrap_or_default(),
            action,
            entity_type: EntityType::Decision,
            entity_id: d["id"].as_str().unwrap_or_default(),
            details,
        },
    )
    .await
}

fn interpolate(text: &str, values: &Value) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{input.") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 8..];
        match after.find("}}") {
            Some(end)
                if after[..end]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
            {
                out.push_str(values[&after[..end]].as_str().unwrap_or(""));
                rest = &after[end + 2..];
            }
            _ => {
                out.push_str("{{input.");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Runs one effect as the deciding person; never fails the decision: a
/// refused or impossible effect is recorded as `failed` with the reason.
pub(crate) async fn execute(
    store: &Store,
    actor: &Actor,
    d: &Value,
    index: usize,
    effect: &Effect,
) -> (EffectStatus, Value, Option<String>) {
    match run_effect(store, actor, d, index, effect).await {
        Ok(Some(result)) => (EffectStatus::Executed, result, None),
        Ok(None) => (
            EffectStatus::Skipped,
            json!({ "reason": "target_changed" }),
            Some("target_changed".into()),
        ),
        Err(e) => (
            EffectStatus::Failed,
            json!({ "reason": "effect_execution_failed", "message": e.to_string() }),
            Some(e.to_string()),
        ),
    }
}

/// `Ok(None)`: a strict effect whose target changed since the decision.
async fn run_effect(
    store: &Store,
    actor: &Actor,
    d: &Value,
    index: usize,
    effect: &Effect,
) -> Result<Option<Value>> {
    let company = d["companyId"].as_str().unwrap_or_default();
    let target = crate::issues::get(store, effect.target()).await?;
    if target.company_id != company {
        return Err(Error::not_found("Issue"));
    }
    let snapshot = &d["targetSnapshots"][&target.id];
    if effect.staleness() == Staleness::Strict
        && snapshot["updatedAt"].as_str() != Some(target.updated_at.as_str())
    {
        return Ok(None);
    }
    let values = &d["inputValues"];
    let text = |t: &Option<String>| t.as_deref().map(|t| interpolate(t, values));
    let update = |patch: IssuePatch| crate::issues::update(store, actor, &target.id, patch);
    Ok(Some(match effect {
        Effect::CommentOnIssue { body_markdown, .. } => {
            let key = format!("decision:{}:{index}", d["id"].as_str().unwrap_or_default());
            let body = interpolate(body_markdown, values);
            let comment =
                crate::thread::comments::create(store, actor, &target.id, body, Some(key)).await?;
            json!({ "commentId": comment.id })
        }
        Effect::UpdateIssueStatus {
            status, comment, ..
        } => {
            let done = update(IssuePatch {
                status: Some(*status),
                comment: text(comment),
                ..IssuePatch::default()
            })
            .await?;
            json!({ "issueId": done.issue.id, "status": done.issue.status })
        }
        Effect::AssignIssue {
            assignee_agent_id,
            assignee_user_id,
            comment,
            ..
        } => {
            let patch = IssuePatch {
                assignee_agent_id: Some(assignee_agent_id.clone()),
                assignee_user_id: Some(assignee_user_id.clone()),
                comment: text(comment),
                ..IssuePatch::default()
            };
            let done = update(patch).await?;
            json!({ "issueId": done.issue.id, "assigneeAgentId": done.issue.assignee_agent_id, "assigneeUserId": done.issue.assignee_user_id })
        }
        Effect::ResolveBlocker {
            remove_blocked_by_issue_ids,
            ..
        } => {
            let keep: Vec<String> = target
                .blocked_by
                .iter()
                .map(|b| b.id.clone())
                .filter(|id| !remove_blocked_by_issue_ids.contains(id))
                .collect();
            update(IssuePatch {
                blocked_by_issue_ids: Some(keep),
                ..IssuePatch::default()
            })
            .await?;
            json!({ "removedBlockedByIssueIds": remove_blocked_by_issue_ids })
        }
        Effect::CreateIssue { draft, .. } => {
            let issue = NewIssue {
                title: draft.title.clone(),
                description: draft.description.clone(),
                status: None,
                priority: None,
                project_id: draft.project_id.clone().or(target.project_id.clone()),
                goal_id: draft.goal_id.clone(),
                parent_id: draft.parent_id.clone().or(Some(target.id.clone())),
                assignee_agent_id: draft.assignee_agent_id.clone(),
                assignee_user_id: draft.assignee_user_id.clone(),
                billing_code: None,
                label_ids: None,
                blocked_by_issue_ids: draft.blocked_by_issue_ids.clone(),
            };
            let created = crate::issues::create(store, actor, company, issue).await?;
            json!({ "issueId": created.id, "identifier": created.identifier })
        }
        Effect::CancelIssueTree { reason_comment, .. } => {
            let signed: Vec<String> = serde_json::from_value(snapshot["descendantIds"].clone())
                .map_err(|_| Error::rule("invalid_signed_cancellation_scope"))?;
            let mut tx = store.begin().await?;
            let now_under = descendants(&mut tx, company, &target.id).await?;
            tx.commit().await?;
            let (mut a, mut b) = (signed.clone(), now_under);
            a.sort();
            b.sort();
            if a != b {
                return Ok(None);
            }
            let mut order = vec![target.id.clone()];
            order.extend(signed);
            order.reverse();
            for id in &order {
                let comment = (id == &target.id).then(|| interpolate(reason_comment, values));
                let patch = IssuePatch {
                    status: Some(IssueStatus::Cancelled),
                    comment,
                    ..IssuePatch::default()
                };
                crate::issues::update(store, actor, id, patch).await?;
            }
            json!({ "cancelledIssueIds": order })
        }
    }))
}

#[allow(clippy::too_many_arguments)]
pub(crate) async fn settle_effect(
    store: &Store,
    actor: &Actor,
    d: &Value,
    index: usize,
    effect: &Effect,
    status: EffectStatus,
    result: Value,
    error: Option<String>,
) -> Result<()> {
    let mut tx = store.begin().await?;
    let n = crate::engine::db::query(
        "INSERT INTO decision_effect_executions (id, decision_id, effect_index, effect_type, target_issue_id, \
         status, result, error, executed_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
    )
    .bind(new_id())
    .bind(d["id"].as_str().unwrap_or_default())
    .bind(index as i64)
    .bind(effect.kind())
    .bind(effect.target())
    .bind(status.as_str())
    .bind(result.to_string())
    .bind(error.as_deref())
    .bind(now())
    .execute(tx.conn())
    .await?
    .rows_affected();
    if n == 1 {
        let action = match status {
            EffectStatus::Executed => Action::DecisionEffectExecuted,
            EffectStatus::Skipped => Action::DecisionEffectSkipped,
            _ => Action::DecisionEffectFailed,
        };
        let mut details = json!({
            "effectType": effect.kind(), "targetIssueId": effect.target(), "effectIndex": index,
            "chosenOptionId": d["chosenOptionId"], "decidedByUserId": actor.id,
        });
        if let Value::Object(extra) = &result {
            details
                .as_object_mut()
                .expect("object")
                .extend(extra.clone());
        }
        record(&mut tx, actor, d, action, details).await?;
    }
    tx.commit().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_fill_their_placeholders_and_nothing_else() {
        let values = json!({ "owner": "Ada" });
        assert_eq!(
            interpolate("Hand to {{input.owner}}.", &values),
            "Hand to Ada."
        );
        assert_eq!(
            interpolate("{{input.missing}}|{{input.", &values),
            "|{{input."
        );
        assert_eq!(interpolate("{{input.a b}}", &values), "{{input.a b}}");
    }
}
