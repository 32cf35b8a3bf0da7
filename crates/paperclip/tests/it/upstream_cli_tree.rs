//! The upstream `paperclipai` CLI's client command tree against this binary:
//! every command of the groups whose capability we have (companies, goals,
//! projects, agents and their configuration, issues, comments, labels,
//! documents, runs of a task, activity, dashboard, costs, budgets,
//! approvals, org, inbox, identity), run as a person would with `--json`,
//! each answer parsed and the effects checked through our API. The commands
//! whose capability we do not have yet are listed with the reason and must
//! still fail, so the list only shrinks. How the CLI is found:
//! `common/upstream.rs`.

use crate::common;

use std::collections::HashMap;

use common::upstream::{upstream_cli, Cli};
use common::TestServer;
use serde_json::Value;

/// Commands we do not serve yet, and why (also in the README).
const NOT_YET: &[(&str, &str)] = &[
    (
        "company branding:update {cid} --payload-json {\"brandColor\":\"#112233\"}",
        "company branding (logo, colours) is not stored",
    ),
    (
        "cost by-biller -C {cid}",
        "cost events carry no biller or billing type",
    ),
    (
        "cost quota-windows -C {cid}",
        "provider quota windows need the providers' own usage APIs",
    ),
    (
        "budget overview -C {cid}",
        "budget policies (soft and hard thresholds per scope) are not modelled; budgets are monthly caps",
    ),
    ("org svg -C {cid}", "the org chart is drawn only in the board UI"),
];

struct Tree {
    cli: Cli,
    vars: HashMap<&'static str, String>,
    ran: usize,
}

impl Tree {
    /// `{name}` in a command filled from what earlier commands returned.
    fn fill(&self, command: &str) -> Vec<String> {
        let mut filled = command.to_string();
        for (k, v) in &self.vars {
            filled = filled.replace(&format!("{{{k}}}"), v);
        }
        assert!(
            !filled.contains("{c") && !filled.contains("{i"),
            "unfilled: {filled}"
        );
        split(&filled)
    }

    /// Runs one command with `--json`; it must succeed and print JSON.
    async fn json(&mut self, command: &str) -> Value {
        let mut args = self.fill(command);
        args.push("--json".into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.ran += 1;
        self.cli.ok(&args).await.json()
    }

    async fn keep(&mut self, name: &'static str, command: &str, field: &str) -> Value {
        let out = self.json(command).await;
        let value = out[field]
            .as_str()
            .unwrap_or_else(|| panic!("{command}: no {field} in {out}"));
        self.vars.insert(name, value.to_string());
        out
    }
}

/// Splits on spaces outside braces, so a `{...}` JSON payload stays one argument.
fn split(command: &str) -> Vec<String> {
    let (mut args, mut current, mut depth) = (Vec::new(), String::new(), 0);
    for c in command.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ' ' if depth == 0 => {
                args.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    args.push(current);
    args
}

#[tokio::test]
async fn the_upstream_client_tree_works_against_us_where_we_have_the_capability() {
    let Some(path) = upstream_cli() else { return };
    let s = TestServer::start().await;
    let mut t = Tree {
        cli: Cli::new(path, &s),
        vars: HashMap::new(),
        ran: 0,
    };

    // Companies, goals, projects.
    t.keep(
        "cid",
        r#"company create --payload-json {"name":"Tree&Co","description":"every-command"}"#,
        "id",
    )
    .await;
    let cid = t.vars["cid"].clone();
    for c in [
        "company list",
        "company get {cid}",
        "company current -C {cid}",
        "company stats",
    ] {
        t.json(c).await;
    }
    t.json(r#"company update {cid} --payload-json {"description":"updated"}"#)
        .await;
    assert_eq!(
        s.ok_get(&format!("/api/companies/{cid}")).await["description"],
        "updated"
    );
    t.keep(
        "gid",
        "goal create -C {cid} --title Launch --level company",
        "id",
    )
    .await;
    for c in [
        "goal list -C {cid}",
        "goal get {gid}",
        "goal update {gid} --description better",
    ] {
        t.json(c).await;
    }
    t.keep(
        "pid",
        "project create -C {cid} --name Website --goal-ids {gid}",
        "id",
    )
    .await;
    for c in [
        "project list -C {cid}",
        "project get {pid}",
        "project update {pid} --description site",
    ] {
        t.json(c).await;
    }

    // Agents, their configuration, revisions and runs.
    t.keep(
        "aid",
        r#"agent create -C {cid} --payload-json {"name":"Chief","role":"ceo","adapterType":"process","adapterConfig":{"command":"true"}}"#,
        "id",
    )
    .await;
    t.keep(
        "bid",
        r#"agent create -C {cid} --payload-json {"name":"Builder","role":"cto","reportsTo":"{aid}","adapterType":"process","adapterConfig":{"command":"true"}}"#,
        "id",
    )
    .await;
    t.json(r#"agent update {bid} --payload-json {"title":"Lead"}"#)
        .await;
    let revisions = t.json("agent config-revisions {bid}").await;
    t.vars
        .insert("rev", revisions[0]["id"].as_str().unwrap().to_string());
    for c in [
        "agent list -C {cid}",
        "agent get {aid}",
        "agent configuration {aid}",
        "agent config-revision:get {bid} {rev}",
        "agent config-revision:rollback {bid} {rev}",
        "agent runtime-state {aid}",
        "agent task-sessions {aid}",
        "agent runtime-state:reset-session {aid}",
        "agent pause {bid}",
        "agent resume {bid}",
        r#"agent permissions:update {bid} --payload-json {"canCreateAgents":false,"canAssignTasks":true}"#,
        "agent-config list -C {cid}",
    ] {
        t.json(c).await;
    }
    let configs = s
        .ok_get(&format!("/api/companies/{cid}/agent-configurations"))
        .await;
    assert_eq!(configs.as_array().unwrap().len(), 2, "{configs}");
    assert_eq!(configs[1]["reportsTo"], t.vars["aid"].as_str());
    let woken = t.json("agent wake {aid} --reason tree").await;
    assert!(
        woken["id"].is_string() || woken["status"].is_string(),
        "{woken}"
    );
    t.json("agent heartbeat:invoke {aid}").await;

    // Issues, comments, children, labels, documents.
    let issue = t
        .keep(
            "iid",
            "issue create -C {cid} --title First --description hello --priority high --project-id {pid} --goal-id {gid}",
            "id",
        )
        .await;
    let ident = issue["identifier"].as_str().unwrap().to_string();
    t.vars.insert("ident", ident.clone());
    t.json("issue update {iid} --status todo --assignee-agent-id {aid} --comment assigning")
        .await;
    t.keep("cmid", "issue comment {iid} --body noted", "id")
        .await;
    for c in [
        "issue list -C {cid}",
        "issue list -C {cid} --status todo,backlog",
        "issue get {ident}",
        "issue comments {iid}",
        "issue comment:get {iid} {cmid}",
        "issue heartbeat-context {iid}",
        "issue approvals {iid}",
        "issue runs {iid}",
        "issue live-runs {iid}",
        "issue active-run {iid}",
    ] {
        t.json(c).await;
    }
    let child = t
        .json(r#"issue child:create {iid} --payload-json {"title":"Child step"}"#)
        .await;
    assert_eq!(child["parentId"], t.vars["iid"].as_str(), "{child}");
    assert_eq!(
        child["projectId"],
        t.vars["pid"].as_str(),
        "the child inherits the project"
    );
    assert_eq!(child["goalId"], t.vars["gid"].as_str(), "and the goal");
    t.keep(
        "lid",
        "issue label:create -C {cid} --name bug --color #ff0000",
        "id",
    )
    .await;
    t.json("issue label:list -C {cid}").await;
    t.json("issue document:put {iid} plan --title Plan --body first")
        .await;
    t.json("issue document:put {iid} plan --title Plan --body second")
        .await;
    let revisions = t.json("issue document:revisions {iid} plan").await;
    let first = revisions
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["body"] == "first")
        .unwrap_or_else(|| panic!("{revisions}"));
    t.vars
        .insert("drev", first["id"].as_str().unwrap().to_string());
    t.json("issue document:restore {iid} plan {drev}").await;
    let doc = t.json("issue document:get {iid} plan").await;
    assert_eq!(doc["body"], "first", "restored: {doc}");
    assert_eq!(doc["latestRevisionNumber"], 3, "as a new revision: {doc}");
    t.json("issue documents {iid}").await;
    let locked = t.json("issue document:lock {iid} plan").await;
    assert!(locked["lockedAt"].is_string(), "{locked}");
    let refused = t
        .cli
        .run(&[
            "issue",
            "document:put",
            &t.vars["iid"],
            "plan",
            "--body",
            "third",
        ])
        .await;
    assert!(
        !refused.ok,
        "a locked document refuses writes: {}",
        refused.stdout
    );
    t.json("issue document:unlock {iid} plan").await;
    t.json("issue checkout {iid} --agent-id {aid}").await;
    t.json("issue release {iid}").await;
    t.json("issue force-release {iid}").await;

    // Activity, dashboard, costs, budgets.
    t.json("activity list -C {cid}").await;
    t.json("activity issue {iid}").await;
    t.json(r#"activity create -C {cid} --payload-json {"actorId":"local-board","action":"tree.noted","entityType":"issue","entityId":"{iid}"}"#)
        .await;
    t.json("dashboard get -C {cid}").await;
    t.json(r#"cost event:create -C {cid} --payload-json {"agentId":"{aid}","issueId":"{iid}","provider":"anthropic","model":"claude-sonnet","inputTokens":10,"outputTokens":5,"costCents":12,"occurredAt":"NOW"}"#.replace("NOW", &now()).as_str())
        .await;
    for c in [
        "cost summary -C {cid}",
        "cost by-agent -C {cid}",
        "cost by-project -C {cid}",
        "cost by-provider -C {cid}",
        "cost window-spend -C {cid}",
    ] {
        t.json(c).await;
    }
    let by_model = t.json("cost by-agent-model -C {cid}").await;
    assert_eq!(by_model[0]["agentName"], "Chief", "{by_model}");
    assert_eq!(by_model[0]["model"], "claude-sonnet");
    assert_eq!(by_model[0]["costCents"], 12);
    let tree = t.json("cost issue {iid}").await;
    assert_eq!(tree["costCents"], 12, "{tree}");
    assert_eq!(tree["issueCount"], 2, "the task and its child: {tree}");
    t.json(r#"budget company:update -C {cid} --payload-json {"budgetMonthlyCents":5000}"#)
        .await;
    t.json(r#"budget agent:update {aid} --payload-json {"budgetMonthlyCents":1000}"#)
        .await;

    // Approvals, hires, org, inbox, identity.
    t.keep(
        "apid",
        r#"approval create -C {cid} --type approve_ceo_strategy --payload {"plan":"grow"} --issue-ids {iid}"#,
        "id",
    )
    .await;
    for c in [
        "approval list -C {cid}",
        "approval get {apid}",
        "approval comment {apid} --body fine",
        "approval request-revision {apid} --decision-note more",
        "approval resubmit {apid}",
        "approval approve {apid} --decision-note good",
    ] {
        t.json(c).await;
    }
    t.keep(
        "apid2",
        r#"approval create -C {cid} --type approve_ceo_strategy --payload {"plan":"shrink"}"#,
        "id",
    )
    .await;
    let badges = t.json("sidebar badges -C {cid}").await;
    assert_eq!(badges["approvals"], 1, "one approval awaits: {badges}");
    t.json("approval reject {apid2} --decision-note no").await;
    t.json(r#"agent hire -C {cid} --payload-json {"name":"Hire","role":"engineer","adapterType":"process","adapterConfig":{"command":"true"}}"#)
        .await;
    t.json("org get -C {cid}").await;
    t.json("inbox dismissals -C {cid}").await;
    let me = t.json("whoami").await;
    assert!(me.to_string().contains("local-board"), "{me}");
    t.json("health").await;

    // Removal last.
    for c in [
        "issue delete {iid} --yes",
        "agent terminate {bid}",
        "agent delete {bid} --yes",
        "goal delete {gid} --yes",
        "project delete {pid} --yes",
        "issue label:delete {lid}",
    ] {
        t.json(c).await;
    }
    let (status, _) = s.get(&format!("/api/agents/{}", t.vars["bid"])).await;
    assert_eq!(status, 404, "the agent is gone");

    // What we do not serve yet fails plainly, and only that.
    t.vars
        .insert("iid", child["id"].as_str().unwrap().to_string());
    for (command, why) in NOT_YET {
        let args = t.fill(command);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = t.cli.run(&args).await;
        assert!(
            !out.ok && (out.stderr.contains("404") || out.stdout.contains("404")),
            "`{command}` ({why}) now works or fails otherwise: remove it from NOT_YET\n{}\n{}",
            out.stdout,
            out.stderr
        );
    }
    eprintln!(
        "{} upstream CLI commands worked against us; {} listed as not yet",
        t.ran,
        NOT_YET.len()
    );
}

fn now() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.3fZ")
        .to_string()
}
