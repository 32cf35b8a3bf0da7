//! The sample company: a newcomer's first five minutes without a model key.
//! Two `process` agents (a CEO and an engineer reporting to it) run the
//! bundled example agent, a POSIX shell script using curl only, on tasks
//! already assigned to them, so the board shows work being picked up,
//! commented on and finished within seconds of creating it; each task takes
//! the example agent a few seconds of visible steps, so there is work in
//! progress to watch.
//!
//! `POST /api/sample-company` is ours: upstream has no such route. It lives
//! outside `/api/companies/...` so it can never be read as a company id.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use paperclip_core::actor::Actor;
use paperclip_core::agent::AgentRole;
use paperclip_core::company::CompanyStatus;
use paperclip_core::goal::{GoalLevel, GoalStatus};
use paperclip_core::input::{NewAgent, NewCompany, NewGoal, NewIssue};
use paperclip_core::issue::{IssuePriority, IssueStatus};
use paperclip_core::model::Company;
use paperclip_store::{issues, org::agents, org::companies, org::goals, Store};
use serde_json::{json, Map, Value};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::AppState;

/// The example agent, shipped in the binary (`paperclip example-agent` prints it).
pub const EXAMPLE_AGENT: &str = include_str!("../../../examples/example-agent.sh");

/// The sample agents' command: three steps of a second each, printed as
/// they go, then the example agent (`$1`) does the task.
const PACED: &str = "for step in 'Reading the task' 'Working on it' 'Checking the result'; do \
    echo \"$step...\"; sleep 1; done; exec sh \"$1\"";

/// How the sample company is recognised again (it has no other marker), so
/// that asking for it twice gives the same company.
pub const SAMPLE_NAME: &str = "Sample Lemonade Stand";

/// Where the example agent is written in the data dir; its agents run
/// `sh <this>`. Written at every start, so a newer binary brings its newer
/// script and moving the binary breaks nothing.
pub fn example_agent_path(data_dir: &std::path::Path) -> std::path::PathBuf {
    data_dir.join("examples").join("example-agent.sh")
}

/// Writes the example agent into the data dir unless it is already there as is.
pub fn install_example_agent(data_dir: &std::path::Path) -> std::io::Result<std::path::PathBuf> {
    let path = example_agent_path(data_dir);
    if std::fs::read_to_string(&path).ok().as_deref() != Some(EXAMPLE_AGENT) {
        std::fs::create_dir_all(path.parent().expect("a file in a dir"))?;
        std::fs::write(&path, EXAMPLE_AGENT)?;
    }
    Ok(path)
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(sample_company))
}

/// Creates the sample company (201), or answers the one that exists (200).
#[utoipa::path(post, path = "/api/sample-company", tag = "companies",
    responses((status = 201, body = Company, description = "Created"),
        (status = 200, body = Company, description = "The sample company already exists"),
        (status = 403, description = "Board access required")))]
#[paperclip_macros::handler]
async fn sample_company(
    State(app): State<AppState>,
    caller: Caller,
) -> ApiResult<(StatusCode, Json<Company>)> {
    let actor = caller.require_instance_admin()?;
    let data_dir = std::path::PathBuf::from(&app.info.data_dir);
    let (company, created) = ensure(&app.store, actor, &data_dir)
        .await
        .map_err(|e| match e {
            Failure::Store(e) => ApiError::from(e),
            Failure::Script(e) => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot write the example agent into the data dir: {e}"),
            ),
        })?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(company)))
}

#[derive(Debug)]
pub enum Failure {
    Store(paperclip_store::Error),
    Script(std::io::Error),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Store(e) => write!(f, "{e}"),
            Failure::Script(e) => write!(f, "writing the example agent: {e}"),
        }
    }
}

impl std::error::Error for Failure {}

impl From<paperclip_store::Error> for Failure {
    fn from(e: paperclip_store::Error) -> Failure {
        Failure::Store(e)
    }
}

/// The sample company, created unless one (not archived) exists; `true`
/// when it was created now.
pub async fn ensure(
    store: &Store,
    actor: &Actor,
    data_dir: &std::path::Path,
) -> Result<(Company, bool), Failure> {
    let script = install_example_agent(data_dir).map_err(Failure::Script)?;
    if let Some(existing) = companies::list(store)
        .await?
        .into_iter()
        .find(|c| c.name == SAMPLE_NAME && c.status != CompanyStatus::Archived)
    {
        return Ok((existing, false));
    }
    let company = companies::create(
        store,
        actor,
        NewCompany {
            name: SAMPLE_NAME.to_string(),
            description: Some(
                "A sample company: sell the best lemonade on the block. Its agents run \
                 Paperclip's example agent (a shell script with curl, no model, no API key): \
                 they check out their tasks, comment and finish them. Delete the company \
                 when you have seen enough."
                    .to_string(),
            ),
            budget_monthly_cents: None,
            default_responsible_user_id: None,
            require_board_approval_for_new_agents: None,
        },
    )
    .await?;
    // Each step commits on its own (the store's functions are the same ones
    // the routes use, with their activity rows); a step that fails takes the
    // half-made company away with it.
    match populate(store, actor, &company.id, &script).await {
        Ok(()) => Ok((companies::get(store, &company.id).await?, true)),
        Err(e) => {
            if let Err(cleanup) = companies::delete(store, &company.id).await {
                tracing::warn!(company = %company.id, error = %cleanup, "removing a half-made sample company failed");
            }
            Err(e.into())
        }
    }
}

/// [`ensure`] as the local board, for `paperclip run --sample`.
pub async fn ensure_for_board(
    store: &Store,
    data_dir: &std::path::Path,
) -> Result<(Company, bool), Failure> {
    ensure(store, &Actor::local_board(), data_dir).await
}

async fn populate(
    store: &Store,
    actor: &Actor,
    company_id: &str,
    script: &std::path::Path,
) -> paperclip_store::Result<()> {
    let goal = goals::create(
        store,
        actor,
        company_id,
        NewGoal {
            title: "Sell 100 cups of lemonade this summer".to_string(),
            description: Some("Good lemonade, a fair price, and a stand people can find.".into()),
            level: Some(GoalLevel::Company),
            status: Some(GoalStatus::Active),
            parent_id: None,
            owner_agent_id: None,
        },
    )
    .await?;
    let hire = |name: &str, role: AgentRole, title: &str, reports_to: Option<String>| NewAgent {
        name: name.to_string(),
        role: Some(role),
        title: Some(title.to_string()),
        icon: None,
        reports_to,
        capabilities: Some(
            "Runs Paperclip's example agent: checks a task out, comments, marks it done.".into(),
        ),
        adapter_type: Some("process".to_string()),
        // A few seconds of visible steps before the example agent takes
        // the task, so a newcomer opening the board sees work in progress.
        adapter_config: Some(object(json!({
            "command": "sh",
            "args": ["-c", PACED, "sample-agent", script.display().to_string()],
            "timeoutSec": 120,
            "graceSec": 5,
        }))),
        runtime_config: None,
        budget_monthly_cents: None,
        permissions: None,
        metadata: None,
    };
    let ceo = agents::create(
        store,
        actor,
        company_id,
        hire("Casey", AgentRole::Ceo, "CEO", None),
    )
    .await?;
    let engineer = agents::create(
        store,
        actor,
        company_id,
        hire("Eli", AgentRole::Engineer, "Engineer", Some(ceo.id.clone())),
    )
    .await?;
    let tasks = [
        (
            &ceo.id,
            "Write the stand's one-page plan",
            "Where the stand goes, opening hours, and the price of a cup.",
            IssuePriority::High,
        ),
        (
            &engineer.id,
            "Build the price board",
            "A board people can read from across the street.",
            IssuePriority::Medium,
        ),
        (
            &engineer.id,
            "Set up the order tally",
            "Count cups sold per day, so we know how far from 100 we are.",
            IssuePriority::Medium,
        ),
    ];
    for (assignee, title, description, priority) in tasks {
        issues::create(
            store,
            actor,
            company_id,
            NewIssue {
                title: title.to_string(),
                description: Some(description.to_string()),
                status: Some(IssueStatus::Todo),
                priority: Some(priority),
                project_id: None,
                goal_id: Some(goal.id.clone()),
                parent_id: None,
                assignee_agent_id: Some(assignee.clone()),
                assignee_user_id: None,
                billing_code: None,
                label_ids: None,
                blocked_by_issue_ids: None,
            },
        )
        .await?;
    }
    Ok(())
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
