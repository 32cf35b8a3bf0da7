//! The measure phase: every API route the board's pages and script read,
//! and every board page, one request at a time after a few untimed ones.
//! A route that does not answer 2xx is kept as an error row, not dropped.

use std::time::Instant;

use super::bulk::{COMMON_WORD, DESCRIPTION_WORD, RARE_WORD};
use super::seed::{Api, Seed, Today};

#[derive(Debug, Clone)]
pub struct Row {
    pub kind: &'static str,
    pub path: String,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub max_ms: f64,
    pub bytes: usize,
    /// p50 of the `Server-Timing` the UI sets; API routes have none.
    pub server_p50_ms: Option<f64>,
    pub error: Option<String>,
}

pub const WARMUP: usize = 3;

/// The paths to time, API first. `sample` is a bulk task's identifier.
pub fn paths(
    seed: &Seed,
    today: &Today,
    sample: &str,
    agent_in_middle: usize,
) -> Vec<(&'static str, String)> {
    let cid = &seed.company_id;
    let (pid, pfx) = (&today.parent_id, &seed.prefix);
    let agent = &seed.agents[agent_in_middle];
    let ceo = &seed.agents[0];
    let run = &today.run_id;
    let api = [
        "/api/health".to_string(),
        "/api/companies".into(),
        format!("/api/companies/{cid}"),
        format!("/api/companies/{cid}/dashboard"),
        format!("/api/companies/{cid}/issues"),
        format!("/api/companies/{cid}/issues?limit=50"),
        format!("/api/companies/{cid}/issues?status=todo,in_progress"),
        format!("/api/companies/{cid}/issues?status=blocked&limit=50"),
        format!("/api/companies/{cid}/issues?assigneeAgentId={agent}"),
        format!("/api/companies/{cid}/issues?projectId={}", seed.projects[1]),
        format!("/api/companies/{cid}/issues?labelId={}", seed.labels[2]),
        format!("/api/companies/{cid}/issues?parentId={pid}"),
        format!("/api/companies/{cid}/issues?limit=20&q={RARE_WORD}"),
        format!("/api/companies/{cid}/issues?limit=20&q={COMMON_WORD}"),
        format!("/api/companies/{cid}/issues?limit=20&q={sample}"),
        // In a quarter of the descriptions and no title: the title rank is
        // empty, every match ranks second.
        format!("/api/companies/{cid}/issues?limit=20&q={DESCRIPTION_WORD}"),
        format!("/api/issues/{sample}"),
        format!("/api/issues/{}", today.parent_identifier),
        format!("/api/issues/{pid}/comments"),
        format!("/api/issues/{pid}/activity"),
        format!("/api/issues/{pid}/approvals"),
        format!("/api/issues/{pid}/documents"),
        format!("/api/issues/{pid}/active-run"),
        format!("/api/issues/{sample}/comments"),
        format!("/api/companies/{cid}/heartbeat-runs?issueId={pid}"),
        format!("/api/companies/{cid}/heartbeat-runs"),
        format!("/api/companies/{cid}/heartbeat-runs?agentId={agent}"),
        format!("/api/companies/{cid}/live-runs"),
        format!("/api/heartbeat-runs/{run}"),
        format!("/api/heartbeat-runs/{run}/events"),
        format!("/api/heartbeat-runs/{run}/log"),
        format!("/api/companies/{cid}/agents"),
        format!("/api/agents/{agent}"),
        format!("/api/agents/{ceo}/keys"),
        format!("/api/agents/{ceo}/config-revisions"),
        format!("/api/agents/{ceo}/configuration"),
        format!("/api/agents/{ceo}/task-sessions"),
        format!("/api/agents/{ceo}/runtime-state"),
        format!("/api/companies/{cid}/org"),
        format!("/api/companies/{cid}/projects"),
        format!("/api/companies/{cid}/goals"),
        format!("/api/companies/{cid}/labels"),
        format!("/api/companies/{cid}/activity"),
        format!("/api/companies/{cid}/activity?entityType=issue&entityId={pid}"),
        format!("/api/companies/{cid}/approvals"),
        format!("/api/approvals/{}", today.approval_id),
        format!("/api/companies/{cid}/costs/summary"),
        format!("/api/companies/{cid}/costs/by-agent"),
        format!("/api/companies/{cid}/costs/by-project"),
        format!("/api/companies/{cid}/costs/by-model"),
        format!("/api/companies/{cid}/costs/by-issue"),
        format!("/api/companies/{cid}/cost-events"),
        format!("/api/companies/{cid}/budget-incidents"),
    ];
    let pages = [
        "/".to_string(),
        format!("/{pfx}/dashboard"),
        format!("/{pfx}/inbox"),
        format!("/{pfx}/tasks"),
        format!("/{pfx}/tasks?view=board"),
        format!("/{pfx}/tasks?status=blocked"),
        format!("/{pfx}/tasks?assignee={agent}"),
        format!("/{pfx}/tasks?q={COMMON_WORD}"),
        format!("/{pfx}/tasks?q={DESCRIPTION_WORD}"),
        format!("/{pfx}/tasks/{}", today.parent_identifier),
        format!("/{pfx}/tasks/{sample}"),
        format!("/{pfx}/projects"),
        format!("/{pfx}/goals"),
        format!("/{pfx}/agents"),
        format!("/{pfx}/agents/{}", seed.agent_keys[0]),
        format!("/{pfx}/agents/{}", seed.agent_keys[agent_in_middle]),
        format!("/{pfx}/org"),
        format!("/{pfx}/approvals"),
        format!("/{pfx}/costs"),
        format!("/{pfx}/activity"),
        format!("/{pfx}/inbox?tab=dismissed"),
        format!("/{pfx}/company/settings"),
        format!("/{pfx}/tasks?sort=updated"),
        format!("/{pfx}/tasks?sort=priority"),
        format!("/{pfx}/issues/{}", today.parent_identifier),
        format!("/{pfx}/agents/{}/runs", seed.agent_keys[0]),
        format!("/{pfx}/agents/{}/runs/{run}", seed.agent_keys[0]),
        format!("/{pfx}/approvals/{}", today.approval_id),
        format!("/{pfx}/projects/{}", seed.projects[1]),
        format!("/{pfx}/goals/{}", seed.goals[0]),
    ];
    api.into_iter()
        .map(|p| ("api", p))
        .chain(pages.into_iter().map(|p| ("page", p)))
        .collect()
}

pub async fn route(api: &Api, kind: &'static str, path: &str, requests: usize) -> Row {
    let url = format!("{}{path}", api.base);
    let mut times = Vec::with_capacity(requests);
    let mut server = Vec::with_capacity(requests);
    let mut row = Row {
        kind,
        path: path.to_string(),
        p50_ms: 0.0,
        p95_ms: 0.0,
        max_ms: 0.0,
        bytes: 0,
        server_p50_ms: None,
        error: None,
    };
    for i in 0..requests.max(1) + WARMUP {
        let started = Instant::now();
        let resp = match api.client.get(&url).send().await {
            Ok(r) => r,
            Err(e) => {
                row.error = Some(format!("request failed: {e}"));
                return row;
            }
        };
        let status = resp.status();
        let timing = resp
            .headers()
            .get("server-timing")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split("dur=").nth(1))
            .and_then(|v| v.parse::<f64>().ok());
        let body = resp.bytes().await.unwrap_or_default();
        let took = started.elapsed().as_secs_f64() * 1000.0;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            row.error = Some(format!(
                "{status}: {}",
                text.chars().take(200).collect::<String>()
            ));
            row.max_ms = took;
            return row;
        }
        if i >= WARMUP {
            times.push(took);
            server.extend(timing);
            row.bytes = body.len();
        }
    }
    row.p50_ms = pct(&mut times, 0.5);
    row.p95_ms = pct(&mut times, 0.95);
    row.max_ms = pct(&mut times, 1.0);
    row.server_p50_ms = (!server.is_empty()).then(|| pct(&mut server, 0.5));
    row
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1]
}

pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from(
        "| Kind | Route | p50 | p95 | max | Body | Server p50 |\n|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        match &r.error {
            Some(e) => s.push_str(&format!(
                "| {} | `{}` | ERROR | | | | {} |\n",
                r.kind,
                r.path,
                e.replace('|', "/")
            )),
            None => s.push_str(&format!(
                "| {} | `{}` | {:.1} ms | {:.1} ms | {:.1} ms | {} | {} |\n",
                r.kind,
                r.path,
                r.p50_ms,
                r.p95_ms,
                r.max_ms,
                size(r.bytes),
                r.server_p50_ms.map_or("—".into(), |v| format!("{v:.1} ms"))
            )),
        }
    }
    s
}

fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MB", bytes as f64 / (1 << 20) as f64)
    } else if bytes >= 1024 {
        format!("{:.0} KB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} B")
    }
}
