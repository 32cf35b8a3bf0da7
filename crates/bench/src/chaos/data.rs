//! The database after a chaos round, as the checks read it: runs, wakes and
//! comments loaded once.

use serde_json::Value;
use sqlx::AnyPool;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

pub(super) struct Run {
    pub(super) id: String,
    pub(super) agent: String,
    pub(super) status: String,
    pub(super) wake: Option<String>,
    pub(super) comments: Vec<String>,
    pub(super) started: Option<i64>,
    pub(super) finished: Option<i64>,
    pub(super) error_code: Option<String>,
}

pub(super) struct Wake {
    pub(super) id: String,
    pub(super) agent: String,
    pub(super) status: String,
    pub(super) skip_reason: Option<String>,
    pub(super) run: Option<String>,
    pub(super) comment: Option<String>,
}

pub(super) struct Comment {
    pub(super) id: String,
    pub(super) issue: String,
    pub(super) author: Option<String>,
    pub(super) body: String,
    pub(super) created: i64,
    pub(super) run: Option<String>,
}

pub(super) struct Data {
    pub(super) runs: BTreeMap<String, Run>,
    pub(super) wakes: Vec<Wake>,
    pub(super) comments: Vec<Comment>,
    /// id, status, checkout run, execution run.
    pub(super) issues: Vec<(String, String, Option<String>, Option<String>)>,
    /// Per task, (time, assignee after) of each assignment, oldest first.
    pub(super) assignments: HashMap<String, Vec<(i64, Option<String>)>>,
    /// Mention token (url key or lower-cased name) to agent id.
    pub(super) tokens: HashMap<String, String>,
    /// Agent id to (status, pause reason).
    pub(super) agent_status: HashMap<String, (String, Option<String>)>,
    /// Comment id to the agents its activity row says it did not wake: the
    /// task was done or cancelled and stayed so.
    pub(super) not_woken: HashMap<String, Vec<String>>,
}

fn ms(ts: Option<String>) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(&ts?)
        .ok()
        .map(|t| t.timestamp_millis())
}

fn json(text: Option<String>) -> Value {
    text.and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) async fn load(db: &Db) -> anyhow::Result<Data> {
    let runs: Vec<RunRow> = db
        .rows(
            "SELECT CAST(id AS TEXT), CAST(agent_id AS TEXT), status, \
             CAST(wakeup_request_id AS TEXT), CAST(context_snapshot AS TEXT), \
             SUBSTR(started_at, 1, 24), SUBSTR(finished_at, 1, 24), error_code \
             FROM heartbeat_runs WHERE company_id = $1",
        )
        .await?;
    let runs = runs
        .into_iter()
        .map(
            |(id, agent, status, wake, ctx, started, finished, error_code)| {
                let run = Run {
                    comments: strings(&json(ctx)["commentIds"]),
                    started: ms(started),
                    finished: ms(finished),
                    id: id.clone(),
                    agent,
                    status,
                    wake,
                    error_code,
                };
                (id, run)
            },
        )
        .collect();
    let wakes: Vec<WakeRow> = db
        .rows(
            "SELECT CAST(id AS TEXT), CAST(agent_id AS TEXT), status, skip_reason, \
             CAST(run_id AS TEXT), CAST(payload AS TEXT) \
             FROM agent_wakeup_requests WHERE company_id = $1",
        )
        .await?;
    let wakes = wakes
        .into_iter()
        .map(|(id, agent, status, skip_reason, run, payload)| Wake {
            comment: json(payload)["commentId"].as_str().map(str::to_string),
            id,
            agent,
            status,
            skip_reason,
            run,
        })
        .collect();
    let comments: Vec<CommentRow> = db
        .rows(
            "SELECT CAST(id AS TEXT), CAST(issue_id AS TEXT), CAST(author_agent_id AS TEXT), body, \
             SUBSTR(created_at, 1, 24), CAST(created_by_run_id AS TEXT) \
             FROM issue_comments WHERE company_id = $1 AND deleted_at IS NULL",
        )
        .await?;
    let comments = comments
        .into_iter()
        .map(|(id, issue, author, body, created, run)| Comment {
            created: ms(Some(created)).unwrap_or(0),
            id,
            issue,
            author,
            body,
            run,
        })
        .collect();
    let issues = db
        .rows(
            "SELECT CAST(id AS TEXT), status, CAST(checkout_run_id AS TEXT), \
             CAST(execution_run_id AS TEXT) FROM issues WHERE company_id = $1",
        )
        .await?;
    let activity: Vec<(String, String, String, String)> = db
        .rows(
            "SELECT entity_id, action, CAST(details AS TEXT), SUBSTR(created_at, 1, 24) \
             FROM activity_log WHERE company_id = $1 \
             AND action IN ('issue.created', 'issue.updated') ORDER BY created_at, id",
        )
        .await?;
    let mut assignments: HashMap<String, Vec<(i64, Option<String>)>> = HashMap::new();
    for (issue, action, details, at) in activity {
        let details = json(Some(details));
        let to = match action.as_str() {
            "issue.created" => Some(&details["assigneeAgentId"]),
            _ => details["changes"].get("assigneeAgentId").map(|c| &c["to"]),
        };
        if let Some(to) = to {
            let at = ms(Some(at)).unwrap_or(0);
            let to = to.as_str().map(str::to_string);
            assignments.entry(issue).or_default().push((at, to));
        }
    }
    let added: Vec<(String,)> = db
        .rows(
            "SELECT CAST(details AS TEXT) FROM activity_log WHERE company_id = $1 \
             AND action = 'issue.comment_added'",
        )
        .await?;
    let mut not_woken: HashMap<String, Vec<String>> = HashMap::new();
    for (details,) in added {
        let details = json(Some(details));
        let (Some(comment), Some(list)) = (
            details["commentId"].as_str(),
            details["notWoken"].as_array(),
        ) else {
            continue;
        };
        let agents = list.iter().filter_map(|n| n["agentId"].as_str());
        not_woken
            .entry(comment.to_string())
            .or_default()
            .extend(agents.map(str::to_string));
    }
    let agents: Vec<(String, String, String, String, Option<String>)> = db
        .rows(
            "SELECT CAST(id AS TEXT), name, url_key, status, pause_reason FROM agents \
             WHERE company_id = $1",
        )
        .await?;
    let mut tokens = HashMap::new();
    let mut agent_status = HashMap::new();
    for (id, name, url_key, status, reason) in agents {
        agent_status.insert(id.clone(), (status, reason));
        tokens.insert(url_key, id.clone());
        tokens.insert(name.to_lowercase(), id);
    }
    Ok(Data {
        runs,
        wakes,
        comments,
        issues,
        assignments,
        tokens,
        agent_status,
        not_woken,
    })
}

pub struct Db {
    pool: AnyPool,
    cid: String,
    postgres: bool,
}

impl Db {
    pub async fn connect(url: Option<&str>, data_dir: &Path, cid: &str) -> anyhow::Result<Db> {
        sqlx::any::install_default_drivers();
        let url = match url {
            Some(u) => u.to_string(),
            None => format!("sqlite://{}", data_dir.join("paperclip.db").display()),
        };
        let pool = sqlx::any::AnyPoolOptions::new()
            .max_connections(2)
            .connect(&url)
            .await?;
        Ok(Db {
            pool,
            cid: cid.to_string(),
            postgres: url.starts_with("postgres"),
        })
    }

    pub async fn drained(&self) -> bool {
        // A queued run of a paused agent cannot start until someone resumes
        // it: waiting for it would only run out the deadline, so it is left
        // to invariant 1 to report.
        let sql = self.for_engine(
            "SELECT COUNT(*) FROM heartbeat_runs r JOIN agents a ON a.id = r.agent_id \
             WHERE r.company_id = $1 AND (r.status = 'running' OR (r.status = 'queued' \
             AND a.status NOT IN ('paused', 'terminated')))",
        );
        let live: Result<(i64,), _> = sqlx::query_as(&sql)
            .bind(&self.cid)
            .fetch_one(&self.pool)
            .await;
        matches!(live, Ok((0,)))
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// `sql` (which compares `company_id = $1`) as the Any driver, which
    /// binds text, can run it: on Postgres the company's id is a uuid.
    fn for_engine(&self, sql: &str) -> String {
        match self.postgres {
            true => sql.replace("company_id = $1", "company_id = CAST($1 AS UUID)"),
            false => sql.to_string(),
        }
    }

    /// Rows of `sql` (which takes the company as `$1`). The Any driver reads
    /// text and numbers only: Postgres's native columns are selected as the
    /// store's text (`CAST(json AS TEXT)`, `CAST(id AS TEXT)`, and a time's
    /// 24 characters, `SUBSTR(t, 1, 24)`, which store migration 26 defines
    /// on Postgres).
    pub(crate) async fn rows<T>(&self, sql: &str) -> anyhow::Result<Vec<T>>
    where
        T: for<'r> sqlx::FromRow<'r, sqlx::any::AnyRow> + Send + Unpin,
    {
        Ok(sqlx::query_as(&self.for_engine(sql))
            .bind(&self.cid)
            .fetch_all(&self.pool)
            .await?)
    }
}

pub(crate) type RunRow = (
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

pub(crate) type WakeRow = (
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

pub(crate) type CommentRow = (
    String,
    String,
    Option<String>,
    String,
    String,
    Option<String>,
);
