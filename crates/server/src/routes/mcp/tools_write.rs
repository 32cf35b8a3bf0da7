//! The tools that change something. Each is one REST write (after lookups
//! that turn names into ids), so the write lands with its activity row and
//! the person as actor, exactly as from the board.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::rest::{enc, Rest};
use super::tools::{agents, brief, clip, company, find_named, line, Done, Failed, ToolResult};
use super::RpcError;

#[derive(Deserialize)]
pub(super) struct CreateArgs {
    title: String,
    description: Option<String>,
    assignee: Option<String>,
    project: Option<String>,
    priority: Option<String>,
    status: Option<String>,
    parent: Option<String>,
    company: Option<String>,
}

pub(super) async fn create_task(rest: &Rest, args: CreateArgs) -> ToolResult {
    // A parent decides the company; otherwise the named or only one.
    let parent = match args.parent.as_deref().filter(|p| !p.trim().is_empty()) {
        Some(p) => Some(rest.get(&format!("/api/issues/{}", enc(p))).await?),
        None => None,
    };
    let company = match &parent {
        Some(p) if args.company.is_none() => {
            rest.get(&format!(
                "/api/companies/{}",
                enc(p["companyId"].as_str().unwrap_or_default())
            ))
            .await?
        }
        _ => company(rest, args.company.as_deref()).await?,
    };
    let cid = company["id"].as_str().unwrap_or_default().to_string();
    let agents = agents(rest, &cid).await?;
    let mut body = Map::new();
    body.insert("title".into(), json!(args.title));
    if let Some(d) = args.description {
        body.insert("description".into(), json!(d));
    }
    if let Some(a) = args.assignee.filter(|a| !a.trim().is_empty()) {
        body.insert(
            "assigneeAgentId".into(),
            json!(find_named(&agents, &a, "agent")?),
        );
    }
    if let Some(p) = args.project.filter(|p| !p.trim().is_empty()) {
        let projects = rest
            .get(&format!("/api/companies/{}/projects", enc(&cid)))
            .await?;
        let projects = projects.as_array().cloned().unwrap_or_default();
        body.insert(
            "projectId".into(),
            json!(find_named(&projects, &p, "project")?),
        );
    }
    if let Some(p) = args.priority {
        body.insert("priority".into(), json!(p));
    }
    if let Some(s) = args.status {
        body.insert("status".into(), json!(s));
    }
    if let Some(p) = &parent {
        body.insert("parentId".into(), p["id"].clone());
    }
    let task = rest
        .post(
            &format!("/api/companies/{}/issues", enc(&cid)),
            Value::Object(body),
        )
        .await?;
    let data = brief(&task, &agents);
    Ok(Done {
        text: format!("Created {}", line(&data)),
        data,
    })
}

#[derive(Deserialize)]
pub(super) struct UpdateArgs {
    task: String,
    status: Option<String>,
    /// `Some(None)`: unassign.
    #[serde(default, deserialize_with = "nullable")]
    assignee: Option<Option<String>>,
    priority: Option<String>,
    comment: Option<String>,
}

fn nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

pub(super) async fn update_task(rest: &Rest, args: UpdateArgs) -> ToolResult {
    let task = rest
        .get(&format!("/api/issues/{}", enc(&args.task)))
        .await?;
    let id = task["id"].as_str().unwrap_or_default().to_string();
    let agents = agents(rest, task["companyId"].as_str().unwrap_or_default()).await?;
    let mut patch = Map::new();
    if let Some(s) = args.status {
        patch.insert("status".into(), json!(s));
    }
    match args.assignee {
        None => {}
        Some(None) => {
            patch.insert("assigneeAgentId".into(), Value::Null);
        }
        Some(Some(a)) if matches!(a.trim().to_lowercase().as_str(), "" | "none" | "nobody") => {
            patch.insert("assigneeAgentId".into(), Value::Null);
        }
        Some(Some(a)) => {
            patch.insert(
                "assigneeAgentId".into(),
                json!(find_named(&agents, &a, "agent")?),
            );
        }
    }
    if let Some(p) = args.priority {
        patch.insert("priority".into(), json!(p));
    }
    if let Some(c) = args.comment {
        patch.insert("comment".into(), json!(c));
    }
    if patch.is_empty() {
        return Err(Failed::Params(RpcError::invalid_params(
            "Nothing to change: give status, assignee, priority or comment",
            &["arguments"],
        )));
    }
    let updated = rest
        .patch(&format!("/api/issues/{}", enc(&id)), Value::Object(patch))
        .await?;
    let mut data = brief(&updated, &agents);
    data["changes"] = updated["changes"].clone();
    let changed: Vec<&str> = updated["changes"]
        .as_object()
        .map(|c| c.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let what = match changed.is_empty() {
        true => "nothing changed".to_string(),
        false => format!("changed {}", changed.join(", ")),
    };
    Ok(Done {
        text: format!("Updated {} ({what})", line(&data)),
        data,
    })
}

#[derive(Deserialize)]
pub(super) struct CommentArgs {
    task: String,
    body: String,
}

pub(super) async fn add_comment(rest: &Rest, args: CommentArgs) -> ToolResult {
    let task = rest
        .get(&format!("/api/issues/{}", enc(&args.task)))
        .await?;
    let id = task["id"].as_str().unwrap_or_default();
    let comment = rest
        .post(
            &format!("/api/issues/{}/comments", enc(id)),
            json!({ "body": args.body }),
        )
        .await?;
    let identifier = task["identifier"].as_str().unwrap_or("?");
    Ok(Done {
        text: format!("Commented on {identifier}: {}", clip(&args.body, 200)),
        data: json!({
            "task": identifier, "issueId": id, "commentId": comment["id"],
            "body": comment["body"], "createdAt": comment["createdAt"],
        }),
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct CardArgs {
    task: String,
    card: Option<String>,
    action: CardAction,
    answers: Option<Vec<Value>>,
    selected_option_ids: Option<Vec<String>>,
    reason: Option<String>,
    summary: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum CardAction {
    Accept,
    Reject,
    Respond,
}

pub(super) async fn answer_card(rest: &Rest, args: CardArgs) -> ToolResult {
    let task = rest
        .get(&format!("/api/issues/{}", enc(&args.task)))
        .await?;
    let id = task["id"].as_str().unwrap_or_default().to_string();
    let identifier = task["identifier"].as_str().unwrap_or("?").to_string();
    let card = match args.card.filter(|c| !c.trim().is_empty()) {
        Some(c) => c,
        None => {
            let cards = rest
                .get(&format!("/api/issues/{}/interactions", enc(&id)))
                .await?;
            let pending: Vec<&Value> = cards
                .as_array()
                .map(|l| l.iter().filter(|c| c["status"] == "pending").collect())
                .unwrap_or_default();
            match pending.as_slice() {
                [one] => one["id"].as_str().unwrap_or_default().to_string(),
                [] => return Err(Failed::Refused(format!("{identifier} has no pending card"))),
                many => {
                    return Err(Failed::Refused(format!(
                    "{identifier} has {} pending cards: name one in `card` (get_task lists them)",
                    many.len()
                )))
                }
            }
        }
    };
    let (verb, body) = match args.action {
        CardAction::Accept => (
            "accept",
            json!({ "selectedOptionIds": args.selected_option_ids }),
        ),
        CardAction::Reject => ("reject", json!({ "reason": args.reason })),
        CardAction::Respond => (
            "respond",
            json!({ "answers": args.answers.unwrap_or_default(), "summaryMarkdown": args.summary }),
        ),
    };
    let resolved = rest
        .post(
            &format!(
                "/api/issues/{}/interactions/{}/{verb}",
                enc(&id),
                enc(&card)
            ),
            body,
        )
        .await?;
    Ok(Done {
        text: format!(
            "Card {} on {identifier}: {}",
            card,
            resolved["status"].as_str().unwrap_or(verb)
        ),
        data: json!({
            "task": identifier, "cardId": card, "kind": resolved["kind"],
            "status": resolved["status"], "result": resolved["result"],
        }),
    })
}

#[derive(Deserialize)]
pub(super) struct ApproveArgs {
    approval: String,
    decision: Decision,
    note: Option<String>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Decision {
    Approve,
    Reject,
}

pub(super) async fn approve(rest: &Rest, args: ApproveArgs) -> ToolResult {
    let verb = match args.decision {
        Decision::Approve => "approve",
        Decision::Reject => "reject",
    };
    let decided = rest
        .post(
            &format!("/api/approvals/{}/{verb}", enc(&args.approval)),
            json!({ "decisionNote": args.note }),
        )
        .await?;
    Ok(Done {
        text: format!(
            "Approval {} ({}): {}",
            args.approval,
            decided["type"].as_str().unwrap_or("request"),
            decided["status"].as_str().unwrap_or(verb)
        ),
        data: json!({
            "id": decided["id"], "type": decided["type"], "status": decided["status"],
            "decisionNote": decided["decisionNote"], "decidedAt": decided["decidedAt"],
        }),
    })
}
