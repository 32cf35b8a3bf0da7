//! The part of the company that goes through the API, as a user would make
//! it: the company, its goals, projects, labels and agents in an org chart.
//! Bulk rows (tasks, comments, runs...) refer to these, so they must exist
//! exactly as the app writes them before the server is stopped.

use anyhow::{bail, Context};
use serde_json::{json, Value};

/// A thin client: every call must succeed, or the build stops with the reason.
#[derive(Clone)]
pub struct Api {
    pub client: reqwest::Client,
    pub base: String,
}

impl Api {
    pub fn new(base: &str) -> anyhow::Result<Api> {
        Ok(Api {
            client: reqwest::Client::builder()
                .tcp_nodelay(true)
                .timeout(std::time::Duration::from_secs(300))
                .build()?,
            base: base.to_string(),
        })
    }

    pub async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> anyhow::Result<Value> {
        let url = format!("{}{path}", self.base);
        let mut req = self.client.request(method.parse()?, &url);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await?;
        let status = resp.status();
        let text = resp.text().await?;
        if !status.is_success() {
            bail!("{method} {path} -> {status}: {text}");
        }
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.send("GET", path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.send("POST", path, Some(body)).await
    }
}

pub struct Seed {
    pub company_id: String,
    pub prefix: String,
    /// In creation order; agent 0 is the CEO, agent i reports to (i-1)/FAN_OUT.
    pub agents: Vec<String>,
    pub agent_keys: Vec<String>,
    pub projects: Vec<String>,
    pub labels: Vec<String>,
    pub goals: Vec<String>,
}

/// Direct reports per manager: 1,000 agents make a chart five levels deep.
const FAN_OUT: usize = 6;
const ROLES: [&str; 6] = [
    "engineer",
    "engineer",
    "qa",
    "designer",
    "devops",
    "researcher",
];
const PROJECTS: [&str; 6] = [
    "Platform",
    "Checkout revamp",
    "Mobile app",
    "Data pipeline",
    "Growth",
    "Support tooling",
];
const LABELS: [&str; 8] = [
    "bug",
    "feature",
    "chore",
    "security",
    "performance",
    "docs",
    "ux",
    "tech-debt",
];
const GOALS: [&str; 3] = [
    "Reach 10k paying customers",
    "Ship the mobile app",
    "Halve support response time",
];

fn id(v: &Value) -> anyhow::Result<String> {
    Ok(v["id"].as_str().context("no id in response")?.to_string())
}

pub async fn company(api: &Api, agents: usize) -> anyhow::Result<Seed> {
    let company = api
        .post(
            "/api/companies",
            json!({ "name": "Scale Co", "description": "A very large company" }),
        )
        .await?;
    let cid = id(&company)?;
    let prefix = company["issuePrefix"]
        .as_str()
        .context("issuePrefix")?
        .to_string();
    let mut goals = Vec::new();
    for (i, title) in GOALS.iter().enumerate() {
        let g = api
            .post(
                &format!("/api/companies/{cid}/goals"),
                json!({ "title": title, "level": if i == 0 { "company" } else { "team" } }),
            )
            .await?;
        goals.push(id(&g)?);
    }
    let mut ids: Vec<String> = Vec::with_capacity(agents);
    let mut keys = Vec::with_capacity(agents);
    for i in 0..agents.max(1) {
        let (name, role) = match i {
            0 => ("CEO".to_string(), "ceo"),
            _ => (format!("Agent {i}"), ROLES[i % ROLES.len()]),
        };
        let reports_to = if i == 0 {
            Value::Null
        } else {
            json!(ids[(i - 1) / FAN_OUT])
        };
        // Only the CEO wakes on assignment: it runs the one real run the
        // run pages show; the bulk's thousand agents must stay idle.
        let a = api
            .post(&format!("/api/companies/{cid}/agents"),
                json!({ "name": name, "role": role, "reportsTo": reports_to, "title": format!("{role} #{i}"),
                    "adapterType": "process", "adapterConfig": { "command": "true" },
                    "runtimeConfig": { "heartbeat": { "wakeOnAssignment": i == 0 } } }))
            .await?;
        ids.push(id(&a)?);
        keys.push(a["urlKey"].as_str().context("urlKey")?.to_string());
    }
    let mut projects = Vec::new();
    for (i, name) in PROJECTS.iter().enumerate() {
        let p = api
            .post(
                &format!("/api/companies/{cid}/projects"),
                json!({ "name": name, "status": "in_progress", "goalId": goals[i % goals.len()],
                    "leadAgentId": ids[i.min(ids.len() - 1)] }),
            )
            .await?;
        projects.push(id(&p)?);
    }
    let mut labels = Vec::new();
    for (i, name) in LABELS.iter().enumerate() {
        let l = api
            .post(
                &format!("/api/companies/{cid}/labels"),
                json!({ "name": name, "color": format!("#{:06x}", 0x3366aa + i * 0x112233) }),
            )
            .await?;
        labels.push(id(&l)?);
    }
    Ok(Seed {
        company_id: cid,
        prefix,
        agents: ids,
        agent_keys: keys,
        projects,
        labels,
        goals,
    })
}

/// Today's work on top of the history, through the API after the restart:
/// a new task (which must take the next number), a parent with subtasks and
/// a conversation, a real run of the CEO on it, and approvals.
pub struct Today {
    pub new_identifier: String,
    pub parent_id: String,
    pub parent_identifier: String,
    pub run_id: String,
    pub approval_id: String,
}

pub async fn today(api: &Api, seed: &Seed) -> anyhow::Result<Today> {
    let cid = &seed.company_id;
    let fresh = api
        .post(
            &format!("/api/companies/{cid}/issues"),
            json!({ "title": "Check the numbering after the bulk load" }),
        )
        .await?;
    let new_identifier = fresh["identifier"]
        .as_str()
        .context("identifier")?
        .to_string();
    let parent = api
        .post(&format!("/api/companies/{cid}/issues"),
            json!({ "title": "Plan the quarterly billing migration", "priority": "high",
                "description": "Move **billing** to the new ledger.\n\n- inventory\n- dry run\n- cut over",
                "projectId": seed.projects[0], "labelIds": [seed.labels[0], seed.labels[4]] }))
        .await?;
    let parent_id = id(&parent)?;
    for (i, title) in [
        "Inventory the billing tables",
        "Dry-run the ledger import",
        "Cut over and watch",
    ]
    .iter()
    .enumerate()
    {
        api.post(
            &format!("/api/companies/{cid}/issues"),
            json!({ "title": title, "parentId": parent_id, "status": "todo",
                "assigneeAgentId": seed.agents[(1 + i).min(seed.agents.len() - 1)] }),
        )
        .await?;
    }
    for c in 0..20 {
        api.post(
            &format!("/api/issues/{parent_id}/comments"),
            json!({ "body": format!("Progress note {c}: the *billing* dry run is on track.") }),
        )
        .await?;
    }
    // Assigning the CEO wakes it: one real `process` run with a log file.
    api.send(
        "PATCH",
        &format!("/api/issues/{parent_id}"),
        Some(json!({ "assigneeAgentId": seed.agents[0], "status": "todo" })),
    )
    .await?;
    let runs_path = format!("/api/companies/{cid}/heartbeat-runs?issueId={parent_id}");
    let run = crate::poll::until(60, async || {
        let runs = api.get(&runs_path).await.ok()?;
        let run = runs
            .as_array()?
            .iter()
            .find(|r| r["finishedAt"].is_string())?
            .clone();
        Some(run)
    })
    .await
    .context("the CEO's run on the parent task did not finish within 60 s")?;
    api.post(
        &format!("/api/companies/{cid}/approvals"),
        json!({ "type": "hire_agent", "payload": { "name": "Candidate", "role": "designer" } }),
    )
    .await?;
    let approval = api
        .post(
            &format!("/api/companies/{cid}/approvals"),
            json!({ "type": "hire_agent", "payload": { "name": "Analyst", "role": "researcher" } }),
        )
        .await?;
    let approval_id = id(&approval)?;
    Ok(Today {
        new_identifier,
        parent_identifier: parent["identifier"]
            .as_str()
            .context("identifier")?
            .to_string(),
        parent_id,
        run_id: id(&run)?,
        approval_id,
    })
}
