//! The MCP tools: their schemas, the call dispatch, and the read tools.
//! A tool that the API refuses (a role, a rule, a missing task) answers a
//! result with `isError: true` and the reason in words, so the assistant can
//! tell the person; arguments that do not fit the schema are a JSON-RPC
//! `-32602` naming the field.

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::rest::{enc, Refusal, Rest};
use super::tools_write;
use super::RpcError;

/// Every list a tool returns holds at most this many rows.
pub(super) const MAX_LIMIT: u64 = 100;
/// Comments `get_task` returns unless asked for fewer.
const THREAD_DEFAULT: u64 = 20;

/// What a tool answers: a short text for people and the JSON for programs.
pub(super) struct Done {
    pub text: String,
    pub data: Value,
}

/// Why a tool did not do it: said in words to the assistant.
pub(super) enum Failed {
    /// The API refused (role, rule, not found): a tool result with `isError`.
    Refused(String),
    /// The arguments do not fit: a JSON-RPC error.
    Params(RpcError),
}

impl From<Refusal> for Failed {
    fn from(r: Refusal) -> Failed {
        Failed::Refused(r.sentence())
    }
}

pub(super) type ToolResult = Result<Done, Failed>;

fn schema(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

pub(super) fn list() -> Value {
    let company = json!({ "type": "string", "description": "The company: its issue prefix (ACM), name or id. Default: the only company you can see." });
    let limit = json!({ "type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "At most this many (default 25, at most 100)." });
    let task = json!({ "type": "string", "description": "The task's identifier (ACM-12) or id." });
    json!([
        { "name": "list_tasks", "title": "List tasks",
          "description": "List a company's tasks, newest first, optionally by status, assignee or project.",
          "inputSchema": schema(json!({
              "company": company,
              "status": { "type": "string", "description": "Comma-separated statuses: backlog, todo, in_progress, in_review, blocked, done, cancelled." },
              "assignee": { "type": "string", "description": "An agent's name or id." },
              "project": { "type": "string", "description": "A project's name or id." },
              "limit": limit,
          }), &[]) },
        { "name": "search_tasks", "title": "Search tasks",
          "description": "Find tasks whose identifier, title or description hold the words.",
          "inputSchema": schema(json!({ "q": { "type": "string", "minLength": 1 }, "company": company, "limit": limit }), &["q"]) },
        { "name": "get_task", "title": "Read a task",
          "description": "A task with its latest comments (oldest first) and its pending cards.",
          "inputSchema": schema(json!({ "task": task, "comments": { "type": "integer", "minimum": 0, "maximum": MAX_LIMIT, "description": "How many of the latest comments (default 20)." } }), &["task"]) },
        { "name": "create_task", "title": "Create a task",
          "description": "Create a task, optionally assigned to an agent (who is then woken), in a project, under a parent task.",
          "inputSchema": schema(json!({
              "title": { "type": "string", "minLength": 1 },
              "description": { "type": "string" },
              "assignee": { "type": "string", "description": "An agent's name or id." },
              "project": { "type": "string", "description": "A project's name or id." },
              "priority": { "type": "string", "enum": ["critical", "high", "medium", "low"] },
              "status": { "type": "string", "description": "backlog or todo (default: the API's)." },
              "parent": { "type": "string", "description": "The parent task's identifier or id." },
              "company": company,
          }), &["title"]) },
        { "name": "update_task", "title": "Update a task",
          "description": "Change a task's status, assignee or priority, optionally with a comment.",
          "inputSchema": schema(json!({
              "task": task,
              "status": { "type": "string" },
              "assignee": { "type": ["string", "null"], "description": "An agent's name or id; null or \"none\" unassigns." },
              "priority": { "type": "string", "enum": ["critical", "high", "medium", "low"] },
              "comment": { "type": "string" },
          }), &["task"]) },
        { "name": "add_comment", "title": "Comment on a task",
          "description": "Add a comment to a task's thread (it wakes the assignee as a person's comment does).",
          "inputSchema": schema(json!({ "task": task, "body": { "type": "string", "minLength": 1 } }), &["task", "body"]) },
        { "name": "answer_card", "title": "Answer a card",
          "description": "Respond to a pending card (a question, a confirmation, suggested tasks) in a task's thread.",
          "inputSchema": schema(json!({
              "task": task,
              "card": { "type": "string", "description": "The card's id (get_task lists pending cards). Default: the task's only pending card." },
              "action": { "type": "string", "enum": ["accept", "reject", "respond"] },
              "answers": { "type": "array", "description": "For respond: [{questionId, optionIds, otherText}].", "items": { "type": "object" } },
              "selectedOptionIds": { "type": "array", "items": { "type": "string" } },
              "reason": { "type": "string" },
              "summary": { "type": "string" },
          }), &["task", "action"]) },
        { "name": "approve", "title": "Decide an approval",
          "description": "Approve or reject a pending approval (a hire, a plan, a budget).",
          "inputSchema": schema(json!({
              "approval": { "type": "string", "description": "The approval's id." },
              "decision": { "type": "string", "enum": ["approve", "reject"] },
              "note": { "type": "string" },
          }), &["approval", "decision"]) },
        { "name": "get_run", "title": "Read a run's outcome",
          "description": "A heartbeat run's status, summary, cost and task.",
          "inputSchema": schema(json!({ "run": { "type": "string", "description": "The run's id." } }), &["run"]) },
    ])
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<Map<String, Value>>,
    #[serde(default, rename = "_meta")]
    _meta: Option<Value>,
}

pub(super) async fn call(rest: &Rest, params: Map<String, Value>) -> Result<Value, RpcError> {
    let params: CallParams = decode(Value::Object(params), "params")?;
    let args = Value::Object(params.arguments.unwrap_or_default());
    if let Some(path) = nul_at(&args, &mut vec!["arguments".to_string()]) {
        return Err(RpcError::invalid_params(
            format!("{}: text must not contain NUL (\\u0000)", path.join(".")),
            &path.iter().map(String::as_str).collect::<Vec<_>>(),
        ));
    }
    let outcome = match params.name.as_str() {
        "list_tasks" => list_tasks(rest, decode(args, "arguments")?).await,
        "search_tasks" => search_tasks(rest, decode(args, "arguments")?).await,
        "get_task" => get_task(rest, decode(args, "arguments")?).await,
        "create_task" => tools_write::create_task(rest, decode(args, "arguments")?).await,
        "update_task" => tools_write::update_task(rest, decode(args, "arguments")?).await,
        "add_comment" => tools_write::add_comment(rest, decode(args, "arguments")?).await,
        "answer_card" => tools_write::answer_card(rest, decode(args, "arguments")?).await,
        "approve" => tools_write::approve(rest, decode(args, "arguments")?).await,
        "get_run" => get_run(rest, decode(args, "arguments")?).await,
        other => {
            return Err(RpcError::invalid_params(
                format!("Unknown tool: {other}"),
                &["params", "name"],
            ))
        }
    };
    match outcome {
        Ok(done) => Ok(json!({
            "content": [{ "type": "text", "text": done.text }],
            "structuredContent": done.data,
            "isError": false,
        })),
        Err(Failed::Refused(text)) => Ok(json!({
            "content": [{ "type": "text", "text": text }],
            "isError": true,
        })),
        Err(Failed::Params(err)) => Err(err),
    }
}

/// The arguments as the tool's type, or `-32602` naming the field.
pub(super) fn decode<T: DeserializeOwned>(value: Value, root: &str) -> Result<T, RpcError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let mut path = vec![root.to_string()];
        path.extend(
            e.path()
                .iter()
                .map(|s| s.to_string())
                .filter(|s| s != "?" && !s.is_empty()),
        );
        let message = e.inner().to_string();
        if let Some(field) = message
            .strip_prefix("missing field `")
            .and_then(|m| m.split('`').next())
        {
            path.push(field.to_string());
        }
        RpcError::invalid_params(
            format!("Invalid {}: {message}", path.join(".")),
            &path.iter().map(String::as_str).collect::<Vec<_>>(),
        )
    })
}

/// Where a string holds U+0000, which neither engine stores.
pub(super) fn nul_at(value: &Value, at: &mut Vec<String>) -> Option<Vec<String>> {
    match value {
        Value::String(s) if s.contains('\0') => Some(at.clone()),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
            at.push(i.to_string());
            let found = nul_at(v, at);
            at.pop();
            found
        }),
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            at.push(k.clone());
            let found = nul_at(v, at);
            at.pop();
            found
        }),
        _ => None,
    }
}

pub(super) fn check_limit(limit: Option<u64>, default: u64, min: u64) -> Result<u64, Failed> {
    match limit {
        None => Ok(default),
        Some(n) if (min..=MAX_LIMIT).contains(&n) => Ok(n),
        Some(n) => Err(Failed::Params(RpcError::invalid_params(
            format!("limit must be between {min} and {MAX_LIMIT}, not {n}"),
            &["arguments", "limit"],
        ))),
    }
}

/// The company a tool means: named, or the only one the caller sees.
pub(super) async fn company(rest: &Rest, wanted: Option<&str>) -> Result<Value, Failed> {
    let list = rest.get("/api/companies").await?;
    let list = list.as_array().cloned().unwrap_or_default();
    if let Some(wanted) = wanted.map(str::trim).filter(|w| !w.is_empty()) {
        let w = wanted.to_lowercase();
        return list
            .into_iter()
            .find(|c| {
                ["issuePrefix", "id", "name"]
                    .iter()
                    .any(|k| c[k].as_str().is_some_and(|v| v.to_lowercase() == w))
            })
            .ok_or_else(|| Failed::Refused(format!("No company {wanted:?} that you can see")));
    }
    match list.len() {
        1 => Ok(list[0].clone()),
        0 => Err(Failed::Refused("You can see no company yet".into())),
        _ => {
            let prefixes: Vec<&str> = list
                .iter()
                .filter_map(|c| c["issuePrefix"].as_str())
                .collect();
            Err(Failed::Refused(format!(
                "You can see {} companies ({}): name one in `company`",
                list.len(),
                prefixes.join(", ")
            )))
        }
    }
}

/// A company's agents (id → name), for naming assignees.
pub(super) async fn agents(rest: &Rest, company_id: &str) -> Result<Vec<Value>, Failed> {
    let list = rest
        .get(&format!("/api/companies/{}/agents", enc(company_id)))
        .await?;
    Ok(list.as_array().cloned().unwrap_or_default())
}

/// An agent by name (case-insensitive) or id.
pub(super) fn find_named(rows: &[Value], wanted: &str, what: &str) -> Result<String, Failed> {
    let w = wanted.trim().to_lowercase();
    rows.iter()
        .find(|a| {
            a["id"].as_str().is_some_and(|v| v.to_lowercase() == w)
                || a["name"].as_str().is_some_and(|v| v.to_lowercase() == w)
        })
        .and_then(|a| a["id"].as_str().map(str::to_string))
        .ok_or_else(|| {
            let names: Vec<&str> = rows
                .iter()
                .filter_map(|a| a["name"].as_str())
                .take(20)
                .collect();
            Failed::Refused(format!(
                "No {what} {wanted:?} here (there are: {})",
                names.join(", ")
            ))
        })
}

pub(super) fn name_of(agents: &[Value], id: Option<&str>) -> Option<String> {
    let id = id?;
    agents
        .iter()
        .find(|a| a["id"].as_str() == Some(id))
        .and_then(|a| a["name"].as_str())
        .map(str::to_string)
}

/// A task as the tools show it.
pub(super) fn brief(task: &Value, agents: &[Value]) -> Value {
    let assignee = name_of(agents, task["assigneeAgentId"].as_str());
    json!({
        "identifier": task["identifier"], "id": task["id"], "title": task["title"],
        "status": task["status"], "priority": task["priority"],
        "assigneeAgentId": task["assigneeAgentId"], "assignee": assignee,
        "projectId": task["projectId"], "parentId": task["parentId"],
        "updatedAt": task["updatedAt"],
    })
}

pub(super) fn line(task: &Value) -> String {
    let mut text = format!(
        "{} [{}] {}",
        task["identifier"].as_str().unwrap_or("?"),
        task["status"].as_str().unwrap_or("?"),
        task["title"].as_str().unwrap_or("")
    );
    if let Some(who) = task["assignee"].as_str() {
        text.push_str(&format!(" (assigned to {who})"));
    }
    text
}

#[derive(Deserialize)]
struct ListArgs {
    company: Option<String>,
    status: Option<String>,
    assignee: Option<String>,
    project: Option<String>,
    limit: Option<u64>,
}

async fn list_tasks(rest: &Rest, args: ListArgs) -> ToolResult {
    let limit = check_limit(args.limit, 25, 1)?;
    let company = company(rest, args.company.as_deref()).await?;
    let cid = company["id"].as_str().unwrap_or_default().to_string();
    let agents = agents(rest, &cid).await?;
    let mut query = vec![("limit", limit.to_string())];
    if let Some(s) = args.status.filter(|s| !s.trim().is_empty()) {
        query.push(("status", s));
    }
    if let Some(a) = args.assignee.filter(|s| !s.trim().is_empty()) {
        query.push(("assigneeAgentId", find_named(&agents, &a, "agent")?));
    }
    if let Some(p) = args.project.filter(|s| !s.trim().is_empty()) {
        let projects = rest
            .get(&format!("/api/companies/{}/projects", enc(&cid)))
            .await?;
        let projects = projects.as_array().cloned().unwrap_or_default();
        query.push(("projectId", find_named(&projects, &p, "project")?));
    }
    tasks_of(rest, &company, &agents, query).await
}

#[derive(Deserialize)]
struct SearchArgs {
    q: String,
    company: Option<String>,
    limit: Option<u64>,
}

async fn search_tasks(rest: &Rest, args: SearchArgs) -> ToolResult {
    let limit = check_limit(args.limit, 25, 1)?;
    if args.q.trim().is_empty() {
        return Err(Failed::Params(RpcError::invalid_params(
            "q must not be empty",
            &["arguments", "q"],
        )));
    }
    let company = company(rest, args.company.as_deref()).await?;
    let agents = agents(rest, company["id"].as_str().unwrap_or_default()).await?;
    tasks_of(
        rest,
        &company,
        &agents,
        vec![("q", args.q), ("limit", limit.to_string())],
    )
    .await
}

async fn tasks_of(
    rest: &Rest,
    company: &Value,
    agents: &[Value],
    query: Vec<(&str, String)>,
) -> ToolResult {
    let query: Vec<String> = query
        .iter()
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect();
    let path = format!(
        "/api/companies/{}/issues?{}",
        enc(company["id"].as_str().unwrap_or_default()),
        query.join("&")
    );
    let list = rest.get(&path).await?;
    let tasks: Vec<Value> = list
        .as_array()
        .map(|l| {
            l.iter()
                .take(MAX_LIMIT as usize)
                .map(|t| brief(t, agents))
                .collect()
        })
        .unwrap_or_default();
    let prefix = company["issuePrefix"].as_str().unwrap_or("");
    let mut text = match tasks.len() {
        0 => format!("No tasks in {prefix} match."),
        1 => format!("1 task in {prefix}:"),
        n => format!("{n} tasks in {prefix}:"),
    };
    for t in &tasks {
        text.push('\n');
        text.push_str(&line(t));
    }
    Ok(Done {
        text,
        data: json!({ "company": prefix, "tasks": tasks }),
    })
}

#[derive(Deserialize)]
struct TaskArgs {
    task: String,
    comments: Option<u64>,
}

async fn get_task(rest: &Rest, args: TaskArgs) -> ToolResult {
    let n = match args.comments {
        Some(0) => 0,
        other => check_limit(other, THREAD_DEFAULT, 1).map_err(|_| {
            Failed::Params(RpcError::invalid_params(
                format!("comments must be between 0 and {MAX_LIMIT}"),
                &["arguments", "comments"],
            ))
        })?,
    };
    let task = rest
        .get(&format!("/api/issues/{}", enc(&args.task)))
        .await?;
    let id = task["id"].as_str().unwrap_or_default().to_string();
    let agents = agents(rest, task["companyId"].as_str().unwrap_or_default()).await?;
    let mut comments: Vec<Value> = match n {
        0 => Vec::new(),
        n => rest
            .get(&format!(
                "/api/issues/{}/comments?order=desc&limit={n}",
                enc(&id)
            ))
            .await?
            .as_array()
            .cloned()
            .unwrap_or_default(),
    };
    comments.reverse();
    let comments: Vec<Value> = comments
        .iter()
        .map(|c| {
            let author = name_of(&agents, c["authorAgentId"].as_str())
                .unwrap_or_else(|| match c["authorUserId"].as_str() {
                    Some("local-board") | None => "the board".into(),
                    Some(_) => "a person".into(),
                });
            json!({ "id": c["id"], "author": author, "authorAgentId": c["authorAgentId"],
                    "authorUserId": c["authorUserId"], "body": c["body"], "createdAt": c["createdAt"] })
        })
        .collect();
    let cards: Vec<Value> = rest
        .get(&format!("/api/issues/{}/interactions", enc(&id)))
        .await?
        .as_array()
        .map(|l| {
            l.iter()
                .filter(|c| c["status"] == "pending")
                .take(MAX_LIMIT as usize)
                .map(|c| json!({ "id": c["id"], "kind": c["kind"], "title": c["title"], "summary": c["summary"], "payload": c["payload"] }))
                .collect()
        })
        .unwrap_or_default();
    let summary = brief(&task, &agents);
    let mut text = line(&summary);
    if let Some(d) = task["description"].as_str().filter(|d| !d.is_empty()) {
        text.push_str(&format!("\n\n{}", clip(d, 2000)));
    }
    if !comments.is_empty() {
        text.push_str(&format!("\n\nLatest {} comments:", comments.len()));
        for c in &comments {
            text.push_str(&format!(
                "\n- {}: {}",
                c["author"].as_str().unwrap_or("?"),
                clip(c["body"].as_str().unwrap_or(""), 500)
            ));
        }
    }
    for c in &cards {
        text.push_str(&format!(
            "\n\nPending card {} ({}): {}",
            c["id"].as_str().unwrap_or("?"),
            c["kind"].as_str().unwrap_or("?"),
            c["title"].as_str().unwrap_or("")
        ));
    }
    let mut data = summary;
    data["description"] = task["description"].clone();
    data["comments"] = json!(comments);
    data["pendingCards"] = json!(cards);
    Ok(Done { text, data })
}

pub(super) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

#[derive(Deserialize)]
struct RunArgs {
    run: String,
}

async fn get_run(rest: &Rest, args: RunArgs) -> ToolResult {
    let run = rest
        .get(&format!("/api/heartbeat-runs/{}", enc(&args.run)))
        .await?;
    let task = match run["issueId"].as_str() {
        Some(id) => rest.get(&format!("/api/issues/{}", enc(id))).await.ok(),
        None => None,
    };
    let agents = agents(rest, run["companyId"].as_str().unwrap_or_default()).await?;
    let agent = name_of(&agents, run["agentId"].as_str());
    let result = &run["resultJson"];
    let summary = ["summary", "result", "message", "text"]
        .iter()
        .find_map(|k| result[*k].as_str())
        .map(|s| clip(s, 2000))
        .or_else(|| run["error"].as_str().map(str::to_string));
    let usage = &run["usageJson"];
    let cost = ["costUsd", "cost_usd", "total_cost_usd"]
        .iter()
        .find_map(|k| usage[*k].as_f64().or_else(|| result[*k].as_f64()));
    let identifier = task
        .as_ref()
        .and_then(|t| t["identifier"].as_str())
        .map(str::to_string);
    let mut text = format!(
        "Run {} by {}: {}",
        run["id"].as_str().unwrap_or("?"),
        agent.as_deref().unwrap_or("an agent"),
        run["status"].as_str().unwrap_or("?")
    );
    if let Some(t) = &identifier {
        text.push_str(&format!(" on {t}"));
    }
    if let Some(c) = cost {
        text.push_str(&format!(", cost ${c:.4}"));
    }
    if let Some(s) = &summary {
        text.push_str(&format!("\n{s}"));
    }
    Ok(Done {
        text,
        data: json!({
            "id": run["id"], "status": run["status"], "agentId": run["agentId"], "agent": agent,
            "task": identifier, "issueId": run["issueId"], "summary": summary, "costUsd": cost,
            "error": run["error"], "errorCode": run["errorCode"],
            "startedAt": run["startedAt"], "finishedAt": run["finishedAt"],
        }),
    })
}
