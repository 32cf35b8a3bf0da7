//! What a tree hold would take in: a task's subtree (one recursive
//! statement), its queued and running runs, and upstream's preview of a
//! control action over it.

use paperclip_core::issue::IssueStatus;
use paperclip_core::model::Issue;
use paperclip_core::tree_control::{skip_reason, ReleasePolicy, TreeMode};
use serde_json::{json, Map, Value};

use crate::engine::row::RowExt;
use crate::{now, Error, Result, Tx};

/// The subtree of a task: each task with its depth and whether a pause
/// holds it.
const SUBTREE: &str = "WITH RECURSIVE t (id, depth) AS ( \
     SELECT id, 0 FROM issues WHERE id = $1 AND company_id = $2 \
     UNION ALL SELECT i.id, t.depth + 1 FROM issues i JOIN t ON i.parent_id = t.id)";

const TREE_ISSUES: &str = "SELECT i.id, i.identifier, i.title, i.status, i.parent_id, \
     CAST(t.depth AS BIGINT) AS depth, i.assignee_agent_id, i.assignee_user_id, \
     CAST(CASE WHEN EXISTS (SELECT 1 FROM issue_tree_hold_members hm \
       JOIN issue_tree_holds hh ON hh.id = hm.hold_id WHERE hm.issue_id = i.id \
       AND NOT hm.skipped AND hh.status = 'active' AND hh.mode = 'pause') \
       THEN 1 ELSE 0 END AS BIGINT) AS paused \
     FROM t JOIN issues i ON i.id = t.id ORDER BY t.depth, i.created_at, i.id";

/// The subtree's queued and running runs, oldest first.
const TREE_RUNS: &str =
    "SELECT r.id, r.issue_id, r.agent_id, r.status, r.started_at, r.created_at \
     FROM t JOIN heartbeat_runs r ON r.issue_id = t.id \
     WHERE r.status IN ('queued', 'running') ORDER BY r.id";

/// A queued or running run: id, agent, status, started, created.
pub(crate) type TreeRun = (String, String, String, Option<String>, String);

pub(crate) struct TreeIssue {
    pub(crate) id: String,
    pub(crate) identifier: String,
    pub(crate) title: String,
    pub(crate) status: IssueStatus,
    pub(crate) parent_id: Option<String>,
    pub(crate) depth: i64,
    pub(crate) agent: Option<String>,
    pub(crate) user: Option<String>,
    pub(crate) paused: bool,
    pub(crate) run: Option<TreeRun>,
}

/// The subtree with each task's first active run: two statements whatever
/// its size.
async fn tree(tx: &mut Tx, root: &Issue) -> Result<Vec<TreeIssue>> {
    let rows = crate::engine::db::query(&format!("{SUBTREE} {TREE_ISSUES}"))
        .bind(&root.id)
        .bind(&root.company_id)
        .fetch_all(tx.conn())
        .await?;
    let runs = crate::engine::db::query(&format!("{SUBTREE} {TREE_RUNS}"))
        .bind(&root.id)
        .bind(&root.company_id)
        .fetch_all(tx.conn())
        .await?;
    let mut first_run: std::collections::HashMap<String, TreeRun> = Default::default();
    for run in &runs {
        first_run.entry(run.text("issue_id")?).or_insert((
            run.text("id")?,
            run.text("agent_id")?,
            run.text("status")?,
            run.opt_text("started_at")?,
            run.text("created_at")?,
        ));
    }
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let id = row.text("id")?;
        out.push(TreeIssue {
            run: first_run.remove(&id),
            id,
            identifier: row.text("identifier")?,
            title: row.text("title")?,
            status: row.stored("status")?,
            parent_id: row.opt_text("parent_id")?,
            depth: row.int("depth")?,
            agent: row.opt_text("assignee_agent_id")?,
            user: row.opt_text("assignee_user_id")?,
            paused: row.int("paused")? != 0,
        });
    }
    Ok(out)
}

/// Upstream's preview: what a hold of `mode` would take in and what it
/// would find running.
pub(crate) async fn preview_in(
    tx: &mut Tx,
    root: &Issue,
    mode: TreeMode,
    policy: &ReleasePolicy,
) -> Result<(Value, Vec<TreeIssue>)> {
    if matches!(mode, TreeMode::Cancel | TreeMode::Restore) {
        return Err(Error::rule(format!(
            "Tree control mode {} is not supported here: cancel the tasks themselves",
            mode.as_str()
        )));
    }
    let issues = tree(tx, root).await?;
    let mut counts = Map::new();
    let mut listed = Vec::new();
    let mut runs = Vec::new();
    let mut agents: std::collections::BTreeMap<String, (i64, i64)> = Default::default();
    let (mut skipped, mut running, mut queued) = (0, 0, 0);
    for issue in &issues {
        let n = counts
            .get(issue.status.as_str())
            .and_then(Value::as_i64)
            .unwrap_or(0);
        counts.insert(issue.status.as_str().into(), Value::from(n + 1));
        let skip = skip_reason(mode, issue.status, issue.paused);
        let run = issue
            .run
            .as_ref()
            .map(|(id, agent, status, started, created)| {
                json!({ "id": id, "issueId": issue.id, "agentId": agent, "status": status,
                    "startedAt": started, "createdAt": created })
            });
        if let Some(run) = &run {
            match run["status"].as_str() {
                Some("running") => running += 1,
                _ => queued += 1,
            }
            runs.push(run.clone());
        }
        if skip.is_some() {
            skipped += 1;
        } else {
            let mut ids: Vec<&String> = issue.agent.iter().collect();
            if let Some((_, agent, ..)) = &issue.run {
                if !ids.contains(&agent) {
                    ids.push(agent);
                }
            }
            for agent in ids {
                let entry = agents.entry(agent.clone()).or_default();
                entry.0 += 1;
                if issue.run.as_ref().is_some_and(|r| &r.1 == agent) {
                    entry.1 += 1;
                }
            }
        }
        listed.push(json!({
            "id": issue.id, "identifier": issue.identifier, "title": issue.title,
            "status": issue.status.as_str(), "parentId": issue.parent_id, "depth": issue.depth,
            "assigneeAgentId": issue.agent, "assigneeUserId": issue.user,
            "activeRun": run, "activeHoldIds": [], "action": mode.as_str(),
            "skipped": skip.is_some(), "skipReason": skip.map(|s| s.as_str()),
        }));
    }
    let affected = issues.len() - skipped;
    let mut warnings = Vec::new();
    if affected == 0 {
        warnings.push(json!({ "code": "no_affected_issues",
            "message": "No issues in this subtree match the requested control action." }));
    }
    if mode == TreeMode::Pause && running > 0 {
        warnings.push(json!({ "code": "running_runs_present",
            "message": "Some affected issues have running heartbeat runs." }));
    }
    if mode == TreeMode::Pause && queued > 0 {
        warnings.push(json!({ "code": "queued_runs_present",
            "message": "Some affected issues have queued heartbeat runs." }));
    }
    if mode == TreeMode::Resume && affected == 0 {
        warnings.push(json!({ "code": "no_active_pause_holds",
            "message": "No active pause holds were found in this subtree." }));
    }
    let skipped_issues: Vec<Value> = listed
        .iter()
        .filter(|i| i["skipped"] == true)
        .cloned()
        .collect();
    let affected_agents: Vec<Value> = agents
        .iter()
        .map(|(id, (n, r))| json!({ "agentId": id, "issueCount": n, "activeRunCount": r }))
        .collect();
    let preview = json!({
        "companyId": root.company_id, "rootIssueId": root.id, "mode": mode.as_str(),
        "generatedAt": now(), "releasePolicy": policy,
        "totals": { "totalIssues": issues.len(), "affectedIssues": affected,
            "skippedIssues": skipped, "activeRuns": running, "queuedRuns": queued,
            "affectedAgents": affected_agents.len() },
        "countsByStatus": counts, "issues": listed, "skippedIssues": skipped_issues,
        "activeRuns": runs, "affectedAgents": affected_agents, "warnings": warnings,
    });
    Ok((preview, issues))
}
