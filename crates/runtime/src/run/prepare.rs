//! A run's preparation: everything it needs, loaded and checked once, into
//! a [`RunPlan`], or the reason it cannot start.

use std::collections::BTreeMap;
use std::sync::Arc;

use paperclip_adapters::{Adapter, ErrorCode, RunLimits};
use paperclip_core::heartbeat::RunErrorCode;
use paperclip_core::model::{Agent, Company, HeartbeatRun, Issue, TaskSession};
use paperclip_store::runs::Finish;
use paperclip_store::Store;
use serde_json::Value;

use super::finish;
use super::prompt::PromptInput;
use super::wake::WakeContext;
use super::RunDeps;
use crate::redact::Redactor;
use crate::tokens::ttl_secs;

/// Everything a run is invoked with (its company is only in its prompt).
pub(crate) struct RunPlan {
    pub agent: Agent,
    pub issue: Option<Issue>,
    pub adapter: Arc<dyn Adapter>,
    /// The agent's config with its secret references resolved.
    pub config: Value,
    pub limits: RunLimits,
    pub env: BTreeMap<String, String>,
    /// Before the board's answers, which are claimed only once a stop can
    /// no longer prevent the run.
    pub prompt: Option<String>,
    pub session: SessionPlan,
    pub redactor: Redactor,
}

/// The task session a run resumes: sessions are per task, so a run without
/// a task (or an adapter without sessions) starts fresh.
pub(crate) struct SessionPlan {
    pub task_key: Option<String>,
    /// The session resumed (`None`: a fresh one).
    pub saved: Option<String>,
}

pub(crate) enum Prepared {
    Ready(Box<RunPlan>),
    /// The run cannot start, and this is why (the agent's config, its secrets).
    Refused(Box<Finish>),
}

/// Loads and checks the run. An error is the server's (the database, the
/// agent deleted meanwhile), never the agent's config.
pub(crate) async fn prepare(deps: &RunDeps<'_>, run: &HeartbeatRun) -> anyhow::Result<Prepared> {
    let (agent, company, issue) = load(deps.store, run).await?;
    let Some(adapter) = deps.adapters.get(agent.adapter_type.as_str()).cloned() else {
        let why = format!("No adapter for type {:?}", agent.adapter_type);
        let refused = finish::adapter_failed(ErrorCode::AdapterNotInstalled, why);
        return Ok(Prepared::Refused(Box::new(refused)));
    };
    let (config, resolved) = match configure(deps, &agent, issue.as_ref(), &*adapter).await {
        Ok(configured) => configured,
        Err(refused) => return Ok(Prepared::Refused(Box::new(refused))),
    };
    let limits = adapter.limits(&config);
    let ttl = ttl_secs(&limits);
    let token = deps.tokens.mint(&agent.id, &agent.company_id, &run.id, ttl);
    let wake = WakeContext::of(run);
    let env = super::env::run_env(deps.api_url, &agent, run, &wake, &token);
    let redactor = super::secrets::redactor(&token, resolved, &agent.adapter_config);
    let caps = adapter.capabilities();
    let (session, saved) = session(deps.store, run, &agent, caps.sessions).await?;
    let input = PromptInput {
        api_url: deps.api_url,
        company: &company,
        agent: &agent,
        run,
        issue: issue.as_ref(),
        wake: &wake,
        token: &token,
        needs_prompt: caps.needs_prompt,
    };
    let prompt = super::prompt::prompt(deps.store, &input, saved.as_ref()).await;
    Ok(Prepared::Ready(Box::new(RunPlan {
        agent,
        issue,
        adapter,
        config,
        limits,
        env,
        prompt,
        session,
        redactor,
    })))
}

/// The run's agent, company and task (a task deleted meanwhile is none).
async fn load(
    store: &Store,
    run: &HeartbeatRun,
) -> anyhow::Result<(Agent, Company, Option<Issue>)> {
    let agent = paperclip_store::org::agents::get(store, &run.agent_id).await?;
    let company = paperclip_store::org::companies::get(store, &run.company_id).await?;
    let issue = match &run.issue_id {
        Some(id) => match paperclip_store::issues::get(store, id).await {
            Ok(issue) => Some(issue),
            Err(paperclip_store::Error::NotFound(_)) => None,
            Err(err) => return Err(err.into()),
        },
        None => None,
    };
    Ok((agent, company, issue))
}

/// The config the adapter sees: secret references become values here, in a
/// copy only the adapter sees (the values join the run's redaction), and the
/// adapter must accept it.
async fn configure(
    deps: &RunDeps<'_>,
    agent: &Agent,
    issue: Option<&Issue>,
    adapter: &dyn Adapter,
) -> Result<(Value, Vec<String>), Finish> {
    let resolved = match crate::secret_env::resolve(deps.store, deps.vault, agent).await {
        Ok((config, values)) => {
            crate::project_env::merge(deps.store, deps.vault, agent, issue, config, values).await
        }
        Err(why) => Err(why),
    };
    // A routine's env goes over its project's (the original's order).
    let resolved = match resolved {
        Ok((config, values)) => {
            crate::routine_env::merge(deps.store, deps.vault, agent, issue, config, values).await
        }
        Err(why) => Err(why),
    };
    let (config, resolved) = resolved.map_err(|why| {
        finish::failed_by(
            RunErrorCode::SecretUnavailable,
            format!("Cannot start: {why}"),
        )
    })?;
    if let Err(errors) = adapter.validate_config(&config) {
        let list: Vec<String> = errors
            .iter()
            .map(|e| format!("{}: {}", e.path.join("."), e.message))
            .collect();
        let why = format!("Invalid adapter config: {}", list.join("; "));
        return Err(finish::failed_by(RunErrorCode::InvalidConfig, why));
    }
    Ok((config, resolved))
}

/// The task's saved session, when the adapter keeps sessions.
async fn session(
    store: &Store,
    run: &HeartbeatRun,
    agent: &Agent,
    sessions: bool,
) -> anyhow::Result<(SessionPlan, Option<TaskSession>)> {
    let task_key = run.issue_id.clone().filter(|_| sessions);
    let saved = match &task_key {
        Some(key) => {
            paperclip_store::runs::sessions::find(store, &agent.id, &agent.adapter_type, key)
                .await?
        }
        None => None,
    };
    let plan = SessionPlan {
        task_key,
        saved: saved.as_ref().and_then(|s| s.session_display_id.clone()),
    };
    Ok((plan, saved))
}
