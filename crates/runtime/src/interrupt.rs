//! Interrupt: stop the run working on a task now and hand what the person
//! just said to the next run at once, instead of waiting for the turn to end.
//!
//! The comment itself already woke the assignee (its wake waits as the
//! task's queued run, see `paperclip_store::wakes::queue`); interrupting stops
//! the running run through the live-run owner, which frees the agent's slot
//! so the queued run starts. With nothing queued, the assignee is woken anew.

use paperclip_core::actor::Actor;
use paperclip_core::heartbeat::WakeSource;
use paperclip_core::model::{HeartbeatRun, Issue};
use paperclip_store::runs::{self, Filter};
use paperclip_store::wakes::{self, Wake};
use serde_json::json;

use crate::Runtime;

pub const INTERRUPT_REASON: &str = "Interrupted by the board: its new comment goes to the next run";

/// What an interrupt did.
#[derive(Debug)]
pub struct Interrupted {
    /// The run that was stopped, if one was running.
    pub stopped: Option<HeartbeatRun>,
    /// The run that takes over (queued, or already started).
    pub next: Option<HeartbeatRun>,
}

impl Runtime {
    /// Interrupts the run working on `issue`. With `target`, only if that is
    /// the run working on it (409 otherwise: the person saw an older state).
    pub async fn interrupt(
        &self,
        actor: &Actor,
        issue: &Issue,
        target: Option<&str>,
    ) -> paperclip_store::Result<Interrupted> {
        let store = &self.inner.store;
        let working = running_on(self, issue).await?;
        if let Some(target) = target {
            if working.as_ref().map(|r| r.id.as_str()) != Some(target) {
                return Err(paperclip_store::Error::conflict(
                    "The run to interrupt is no longer working on this task",
                    Some(json!({ "targetRunId": target, "runningRunId": working.map(|r| r.id) })),
                ));
            }
        }
        let stopped = match &working {
            Some(run) => Some(self.cancel_run(actor, &run.id, INTERRUPT_REASON).await?),
            None => None,
        };
        let agent = working
            .as_ref()
            .map(|r| r.agent_id.clone())
            .or_else(|| issue.assignee_agent_id.clone());
        let Some(agent) = agent else {
            return Ok(Interrupted {
                stopped,
                next: None,
            });
        };
        // The comment's wake is the queued run of this agent and task (which
        // may have started the moment the slot freed); otherwise the agent is
        // woken on the task so it carries on.
        let stopped_id = stopped.as_ref().map(|r| r.id.as_str());
        let queued = runs::list(
            store,
            &issue.company_id,
            &Filter {
                agent_id: Some(agent.clone()),
                issue_id: Some(issue.id.clone()),
                live_only: true,
                limit: 10,
                ..Filter::default()
            },
        )
        .await?
        .into_iter()
        .find(|r| Some(r.id.as_str()) != stopped_id);
        let next = match queued {
            Some(run) => Some(run),
            None => {
                wakes::enqueue(
                    store,
                    actor,
                    Wake {
                        agent_id: agent,
                        source: WakeSource::OnDemand,
                        trigger_detail: Some("manual".into()),
                        reason: Some("interrupted".into()),
                        payload: Some(json!({ "issueId": issue.id })),
                        issue_id: Some(issue.id.clone()),
                        idempotency_key: None,
                    },
                )
                .await?
                .run
            }
        };
        self.kick();
        Ok(Interrupted { stopped, next })
    }
}

async fn running_on(rt: &Runtime, issue: &Issue) -> paperclip_store::Result<Option<HeartbeatRun>> {
    let list = runs::list(
        &rt.inner.store,
        &issue.company_id,
        &Filter {
            issue_id: Some(issue.id.clone()),
            status: Some("running".into()),
            limit: 1,
            ..Filter::default()
        },
    )
    .await?;
    Ok(list.into_iter().next())
}
