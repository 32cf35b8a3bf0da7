//! Upstream's attention feed: what waits for a person, in its item shape,
//! from what we store: pending approvals, open decisions, pending
//! interaction cards, tasks in review with a person assigned, agents in
//! error. One bounded query per source, whatever the company holds.

use serde_json::{json, Map, Value};

use crate::engine::db::DbRow;
use crate::engine::row::RowExt;
use crate::{Error, Result, Store};

/// Every source kind upstream counts, in its order (the counts carry all).
pub const SOURCE_KINDS: [&str; 11] = [
    "approval",
    "decision",
    "issue_thread_interaction",
    "join_request",
    "recovery_action",
    "productivity_review",
    "blocker_attention",
    "review",
    "failed_run",
    "budget_alert",
    "agent_error_alert",
];

/// Rows read per source: the feed is a work queue, not an archive.
const PER_SOURCE: i64 = 500;

#[derive(Debug, Default)]
pub struct Query {
    pub all: bool,
    pub archived: bool,
    pub activity_since: Option<String>,
    pub activity_until: Option<String>,
    pub queue: Option<String>,
    pub cursor: Option<String>,
    pub limit: Option<i64>,
}

fn severity_rank(s: &str) -> u8 {
    match s {
        "critical" => 0,
        "high" => 1,
        "medium" => 2,
        _ => 3,
    }
}

fn source_rank(s: &str) -> u8 {
    match s {
        "failed_run" => 0,
        "recovery_action" => 1,
        "blocker_attention" => 2,
        "budget_alert" => 3,
        "agent_error_alert" => 4,
        "approval" => 5,
        "decision" => 6,
        "issue_thread_interaction" => 7,
        _ => 8,
    }
}

struct Item<'a> {
    source: &'a str,
    dedup: String,
    subject: Value,
    why: &'a str,
    verbs: Value,
    inline: bool,
    entry: &'a str,
    exit: &'a str,
    severity: &'a str,
    created: String,
    updated: String,
    related: Value,
    detail: Value,
    extra: Map<String, Value>,
}

fn item(i: Item<'_>) -> Value {
    let mut out = json!({
        "id": format!("{}:{}", i.source, i.dedup),
        "companyId": i.subject["companyId"],
        "sourceKind": i.source,
        "subject": i.subject,
        "whyNow": i.why,
        "decisionVerbs": i.verbs,
        "inlineResolvable": i.inline,
        "entryRule": i.entry,
        "exitRule": i.exit,
        "dedupKey": i.dedup,
        "dismissalKey": format!("attention:{}", i.dedup),
        "dismissal": null,
        "severity": i.severity,
        "rank": 0,
        "activityAt": i.updated,
        "createdAt": i.created,
        "updatedAt": i.updated,
        "relatedIssue": i.related,
        "project": null,
        "workspace": null,
        "expiresAt": null,
        "ruleKey": null,
        "originAgentName": null,
        "queues": [],
        "shelf": false,
        "retentionDays": 30,
        "keep": false,
        "archivedAt": null,
        "retentionVersion": 0,
        "decideBy": null,
        "decideByAttribution": null,
        "snoozedUntil": null,
        "detail": i.detail,
        "trainingExampleId": null,
    });
    out.as_object_mut().expect("object").extend(i.extra);
    out
}

fn verb(id: &str, label: &str, description: &str) -> Value {
    json!({ "id": id, "label": label, "description": description })
}

fn excerpt(text: Option<String>) -> Value {
    json!(text.map(|t| t.chars().take(280).collect::<String>()))
}

/// An issue subject from columns named with `prefix` (`i_id`, `i_identifier`, …).
fn issue_subject(row: &DbRow, company: &str, url: &str, p: &str) -> Result<Value> {
    let Some(id) = row.opt_text(format!("{p}id").as_str())? else {
        return Ok(Value::Null);
    };
    let identifier = row.text(format!("{p}identifier").as_str())?;
    Ok(json!({
        "kind": "issue", "id": id, "companyId": company,
        "title": row.text(format!("{p}title").as_str())?,
        "identifier": identifier,
        "status": row.text(format!("{p}status").as_str())?,
        "href": format!("/{url}/issues/{identifier}"),
        "metadata": {
            "priority": row.text(format!("{p}priority").as_str())?,
            "assigneeAgentId": row.opt_text(format!("{p}assignee_agent_id").as_str())?,
            "assigneeUserId": row.opt_text(format!("{p}assignee_user_id").as_str())?,
        },
    }))
}

const ISSUE_COLS: &str = "i.id AS i_id, i.identifier AS i_identifier, i.title AS i_title, i.status AS i_status, \
     i.priority AS i_priority, i.assignee_agent_id AS i_assignee_agent_id, i.assignee_user_id AS i_assignee_user_id";

pub async fn feed(store: &Store, company_id: &str, q: &Query) -> Result<Value> {
    let pool = store.pool();
    let (prefix,): (String,) =
        crate::engine::db::query_as("SELECT issue_prefix FROM companies WHERE id = $1")
            .bind(company_id)
            .fetch_optional(pool)
            .await?
            .ok_or_else(|| Error::not_found("Company"))?;
    let url = prefix.to_lowercase();
    let mut items: Vec<Value> = Vec::new();

    let sql = format!(
        "SELECT a.id, a.type, a.status, a.payload, a.requested_by_agent_id, a.requested_by_user_id, a.created_at, \
         a.updated_at, (SELECT l.issue_id FROM issue_approvals l WHERE l.approval_id = a.id ORDER BY l.issue_id LIMIT 1) AS issue_id \
         FROM approvals a WHERE a.company_id = $1 AND a.status = 'pending' ORDER BY a.updated_at DESC LIMIT {PER_SOURCE}"
    );
    for row in crate::engine::db::query(&sql)
        .bind(company_id)
        .fetch_all(pool)
        .await?
    {
        let id = row.text("id")?;
        let kind = row.text("type")?;
        let payload = row.json("payload")?;
        let title = payload["title"]
            .as_str()
            .or(payload["name"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| crate::views::attention::words(&kind));
        items.push(item(Item {
            source: "approval",
            dedup: format!("approval:{id}"),
            subject: json!({
                "kind": "approval", "id": id, "companyId": company_id, "title": title, "identifier": null,
                "status": row.text("status")?, "href": format!("/{url}/approvals/{id}"),
                "metadata": { "type": kind, "requestedByAgentId": row.opt_text("requested_by_agent_id")?,
                    "requestedByUserId": row.opt_text("requested_by_user_id")?, "issueId": row.opt_text("issue_id")? },
            }),
            why: "Approval is pending a board decision.",
            verbs: json!([verb("approve", "Approve", "Approve the request."), verb("reject", "Reject", "Reject the request."),
                verb("request_revision", "Request revision", "Send the request back for changes.")]),
            inline: kind != "request_board_approval",
            entry: "approvals.status = 'pending'",
            exit: "Approval leaves pending status.",
            severity: "medium",
            created: row.text("created_at")?,
            updated: row.text("updated_at")?,
            related: Value::Null,
            detail: json!({ "kind": "approval", "approvalType": kind,
                "summaryExcerpt": excerpt(payload["summary"].as_str().or(payload["description"].as_str()).map(str::to_string)), "images": [] }),
            extra: Map::new(),
        }));
    }

    let sql = format!(
        "SELECT d.id, d.title, d.body, d.status, d.origin_issue_id, d.origin_agent_id, d.bundle_id, d.rule_key, \
         d.expires_at, d.created_at, d.updated_at, b.title AS bundle_title, ag.name AS agent_name, {ISSUE_COLS} \
         FROM decisions d LEFT JOIN decision_bundles b ON b.id = d.bundle_id LEFT JOIN agents ag ON ag.id = d.origin_agent_id \
         LEFT JOIN issues i ON i.id = d.origin_issue_id WHERE d.company_id = $1 AND d.status = 'open' \
         ORDER BY d.updated_at DESC LIMIT {PER_SOURCE}"
    );
    for row in crate::engine::db::query(&sql)
        .bind(company_id)
        .fetch_all(pool)
        .await?
    {
        let id = row.text("id")?;
        let mut extra = Map::new();
        extra.insert("expiresAt".into(), json!(row.text("expires_at")?));
        extra.insert("ruleKey".into(), json!(row.opt_text("rule_key")?));
        extra.insert("originAgentName".into(), json!(row.opt_text("agent_name")?));
        items.push(item(Item {
            source: "decision",
            dedup: format!("decision:{id}"),
            subject: json!({
                "kind": "decision", "id": id, "companyId": company_id, "title": row.text("title")?, "identifier": null,
                "status": row.text("status")?, "href": format!("/{url}/decisions?decisionId={id}"),
                "metadata": { "originIssueId": row.text("origin_issue_id")?, "originAgentId": row.text("origin_agent_id")?,
                    "bundleId": row.opt_text("bundle_id")?, "bundleTitle": row.opt_text("bundle_title")? },
            }),
            why: "An agent decision is waiting for a board response.",
            verbs: json!([verb("decide", "Review", "Review and choose an option.")]),
            inline: true,
            entry: "decisions.status = 'open'",
            exit: "Decision is decided, expired, or cancelled.",
            severity: "medium",
            created: row.text("created_at")?,
            updated: row.text("updated_at")?,
            related: issue_subject(&row, company_id, &url, "i_")?,
            detail: json!({ "kind": "generic", "summaryExcerpt": excerpt(Some(row.text("body")?)), "images": [] }),
            extra,
        }));
    }

    let sql = format!(
        "SELECT t.id, t.kind, t.status, t.title, t.summary, t.created_at, t.updated_at, {ISSUE_COLS} \
         FROM issue_thread_interactions t JOIN issues i ON i.id = t.issue_id \
         WHERE t.company_id = $1 AND t.status = 'pending' ORDER BY t.updated_at DESC LIMIT {PER_SOURCE}"
    );
    for row in crate::engine::db::query(&sql)
        .bind(company_id)
        .fetch_all(pool)
        .await?
    {
        let id = row.text("id")?;
        let kind = row.text("kind")?;
        let related = issue_subject(&row, company_id, &url, "i_")?;
        let title = row.opt_text("title")?.unwrap_or_else(|| words(&kind));
        items.push(item(Item {
            source: "issue_thread_interaction",
            dedup: format!("interaction:{id}"),
            subject: json!({
                "kind": "interaction", "id": id, "companyId": company_id, "title": title,
                "identifier": related["identifier"], "status": row.text("status")?,
                "href": related["href"], "metadata": { "interactionKind": kind, "issueId": related["id"] },
            }),
            why: "A card on an issue thread is waiting for an answer.",
            verbs: json!([verb("respond", "Respond", "Answer the card on its issue.")]),
            inline: false,
            entry: "issue_thread_interactions.status = 'pending'",
            exit: "Interaction resolves, expires, fails, or is cancelled.",
            severity: "medium",
            created: row.text("created_at")?,
            updated: row.text("updated_at")?,
            related,
            detail: json!({ "kind": "generic", "summaryExcerpt": excerpt(row.opt_text("summary")?), "images": [] }),
            extra: Map::new(),
        }));
    }

    let sql = format!(
        "SELECT {ISSUE_COLS}, i.created_at, i.updated_at FROM issues i WHERE i.company_id = $1 \
         AND i.status = 'in_review' AND i.assignee_user_id IS NOT NULL ORDER BY i.updated_at DESC LIMIT {PER_SOURCE}"
    );
    for row in crate::engine::db::query(&sql)
        .bind(company_id)
        .fetch_all(pool)
        .await?
    {
        let subject = issue_subject(&row, company_id, &url, "i_")?;
        items.push(item(Item {
            source: "review",
            dedup: format!("review:{}", subject["id"].as_str().unwrap_or_default()),
            why: "Issue is in review and assigned to a user.",
            verbs: json!([verb("approve", "Approve", "Approve the review and advance the issue."),
                verb("request_changes", "Request changes", "Return the issue to the assignee with changes requested.")]),
            inline: false,
            entry: "issues.status = 'in_review' and human reviewer, user assignee, or linked pending approval exists.",
            exit: "Issue leaves in_review or the human review path resolves.",
            severity: "medium",
            created: row.text("created_at")?,
            updated: row.text("updated_at")?,
            related: Value::Null,
            detail: json!({ "kind": "generic", "summaryExcerpt": excerpt(subject["title"].as_str().map(str::to_string)), "images": [] }),
            subject,
            extra: Map::new(),
        }));
    }

    let sql = format!(
        "SELECT id, name, status, created_at, updated_at FROM agents WHERE company_id = $1 AND status = 'error' \
         ORDER BY updated_at DESC LIMIT {PER_SOURCE}"
    );
    for row in crate::engine::db::query(&sql)
        .bind(company_id)
        .fetch_all(pool)
        .await?
    {
        let id = row.text("id")?;
        let name = row.text("name")?;
        items.push(item(Item {
            source: "agent_error_alert",
            dedup: format!("agent_error:{id}"),
            subject: json!({ "kind": "agent", "id": id, "companyId": company_id, "title": name, "identifier": null,
                "status": row.text("status")?, "href": format!("/{url}/agents/{id}") }),
            why: "Agent is in error status and needs operator action or dismissal.",
            verbs: json!([verb("open_agent", "Open agent", "Inspect the agent and resume it.")]),
            inline: false,
            entry: "agents.status = 'error'",
            exit: "Agent leaves error status or the row is dismissed.",
            severity: "high",
            created: row.text("created_at")?,
            updated: row.text("updated_at")?,
            related: Value::Null,
            detail: json!({ "kind": "agent_error", "agentName": name, "failureReasonExcerpt": null, "images": [] }),
            extra: Map::new(),
        }));
    }
    Ok(page(company_id, items, q))
}

/// Newest activity first, then severity, source and key (upstream's order);
/// filtered, ranked, then paged by the last item's id.
fn page(company_id: &str, mut items: Vec<Value>, q: &Query) -> Value {
    let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_string();
    items.sort_by(|a, b| {
        s(b, "activityAt")
            .cmp(&s(a, "activityAt"))
            .then(severity_rank(&s(a, "severity")).cmp(&severity_rank(&s(b, "severity"))))
            .then(source_rank(&s(a, "sourceKind")).cmp(&source_rank(&s(b, "sourceKind"))))
            .then(s(a, "dedupKey").cmp(&s(b, "dedupKey")))
    });
    // Nothing is archived or queued here: those views are empty.
    items.retain(|i| {
        let at = s(i, "activityAt");
        !q.archived
            && q.queue.is_none()
            && q.activity_since
                .as_ref()
                .is_none_or(|since| at.as_str() >= since.as_str())
            && q.activity_until
                .as_ref()
                .is_none_or(|until| at.as_str() <= until.as_str())
    });
    for (n, i) in items.iter_mut().enumerate() {
        i["rank"] = json!(n + 1);
    }
    let mut counts: Map<String, Value> = SOURCE_KINDS
        .iter()
        .map(|k| (k.to_string(), json!(0)))
        .collect();
    for i in &items {
        let k = s(i, "sourceKind");
        counts[&k] = json!(counts[&k].as_i64().unwrap_or(0) + 1);
    }
    let today = crate::now()[..10].to_string();
    let badge = items
        .iter()
        .filter(|i| s(i, "createdAt").starts_with(&today))
        .count();
    let total = items.len();
    let (page, next) = if q.all {
        (items, None)
    } else {
        let start = q
            .cursor
            .as_ref()
            .and_then(|c| {
                items
                    .iter()
                    .position(|i| i["id"].as_str() == Some(c.as_str()))
            })
            .map_or(0, |p| p + 1);
        let limit = q.limit.unwrap_or(50).clamp(1, 100) as usize;
        let page: Vec<Value> = items.into_iter().skip(start).take(limit).collect();
        let next = (start + page.len() < total && !page.is_empty())
            .then(|| page[page.len() - 1]["id"].clone());
        (page, next)
    };
    json!({
        "companyId": company_id,
        "generatedAt": crate::now(),
        "totalCount": total,
        "deskBadgeCount": badge,
        "nextCursor": next,
        "countsBySourceKind": counts,
        "items": page,
    })
}

/// A code as words, for a subject with no title of its own.
pub(crate) fn words(code: &str) -> String {
    let text = code.replace('_', " ");
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}
