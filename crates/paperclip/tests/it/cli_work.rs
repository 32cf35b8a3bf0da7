//! Our CLI's commands that change the work: task checkout, release and
//! delete (as the board and as an agent inside its run), agent pause and
//! resume, project and goal creation, budgets and the org chart. Each is
//! checked through the API, and each refusal reads as a sentence.

use crate::common;

use common::cli::{cli, context_file, ok, text};
use common::TestServer;
use serde_json::{json, Value};

#[tokio::test]
async fn tasks_are_checked_out_released_and_deleted_by_identifier() {
    let s = TestServer::start().await;
    let c = s.company("Desk Co").await;
    let cid = c["id"].as_str().unwrap().to_string();
    let ctx = context_file(&s);
    let worker = s.agent(&cid, "Eli", None).await;
    let task = s
        .issue(&cid, json!({ "title": "Sort the desk", "status": "todo" }))
        .await;
    let ident = task["identifier"].as_str().unwrap();

    let out = ok(
        &s.base,
        &ctx,
        &["issue", "checkout", ident, "--agent", "eli"],
    );
    assert!(
        out.contains(&format!("Checked out {ident} (in_progress)")),
        "{out}"
    );
    let stored = s.ok_get(&format!("/api/issues/{ident}")).await;
    assert_eq!(stored["assigneeAgentId"], worker["id"]);
    assert_eq!(stored["status"], "in_progress");

    let out = ok(&s.base, &ctx, &["issue", "release", ident, "--json"]);
    let released: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(released["status"], "todo");
    assert_eq!(released["assigneeAgentId"], Value::Null);

    // Without --agent and without a key there is nobody to check it out for.
    let out = cli(&s.base, &ctx, &["issue", "checkout", ident]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("pass --agent"), "{err}");

    let out = cli(&s.base, &ctx, &["issue", "delete", ident]);
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("--yes"), "{err}");
    assert_eq!(
        s.get(&format!("/api/issues/{ident}")).await.0,
        200,
        "not deleted without --yes"
    );
    let out = ok(&s.base, &ctx, &["issue", "delete", ident, "--yes"]);
    assert!(out.contains(&format!("Deleted {ident}")), "{out}");
    assert_eq!(s.get(&format!("/api/issues/{ident}")).await.0, 404);
    let out = cli(&s.base, &ctx, &["issue", "release", ident]);
    let (_, err) = text(&out);
    assert!(
        err.contains(&format!("{ident}: no such task (404)")),
        "{err}"
    );
}

/// Inside a run the CLI reads the agent's key and run id from the
/// environment: its checkout is its own and names the run.
#[tokio::test]
async fn an_agent_checks_out_with_its_key_and_run() {
    let s = TestServer::start().await;
    let cid = s.company("Run Desk").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = s
        .script_agent(&cid, "Runner", "sleep 30\n", json!({}))
        .await;
    let aid = agent["id"].as_str().unwrap();
    let key = s.key(aid).await;
    let (_, run) = s
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    let run = run["id"].as_str().unwrap().to_string();
    s.wait_for(&format!("/api/heartbeat-runs/{run}"), 10, |r| {
        r["status"] == "running"
    })
    .await;
    let task = s
        .issue(&cid, json!({ "title": "Mine", "status": "todo" }))
        .await;
    let ident = task["identifier"].as_str().unwrap();
    let ctx = context_file(&s);

    let mut cmd = common::cli::cli_cmd(&s.base, &ctx, &["issue", "checkout", ident, "--json"]);
    let out = cmd
        .env("PAPERCLIP_API_KEY", &key)
        .env("PAPERCLIP_RUN_ID", &run)
        .output()
        .unwrap();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}{stderr}");
    let taken: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(taken["assigneeAgentId"], aid);
    assert_eq!(taken["checkoutRunId"], run.as_str());

    // Without its run id the agent's write is refused, and says why.
    let mut cmd = common::cli::cli_cmd(&s.base, &ctx, &["issue", "release", ident]);
    let out = cmd.env("PAPERCLIP_API_KEY", &key).output().unwrap();
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("Agent run id required (401)"), "{err}");
    // And the board's commands are not the agent's.
    let mut cmd = common::cli::cli_cmd(&s.base, &ctx, &["agent", "pause", "runner"]);
    let out = cmd
        .env("PAPERCLIP_API_KEY", &key)
        .env("PAPERCLIP_RUN_ID", &run)
        .output()
        .unwrap();
    let (_, err) = text(&out);
    assert!(err.contains("Board access required (403)"), "{err}");
}

#[tokio::test]
async fn agents_pause_and_resume_projects_goals_budgets_and_the_org() {
    let s = TestServer::start().await;
    let cid = s.company("Plan Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ctx = context_file(&s);
    let chief = s.agent(&cid, "Chief", None).await;
    let chief_id = chief["id"].as_str().unwrap();
    s.agent(&cid, "Helper", Some(chief_id)).await;

    let out = ok(&s.base, &ctx, &["agent", "pause", "helper"]);
    assert!(out.contains("Paused Helper (now paused)"), "{out}");
    let out = ok(&s.base, &ctx, &["agent", "resume", "helper"]);
    assert!(out.contains("Resumed Helper"), "{out}");
    let out = cli(&s.base, &ctx, &["agent", "pause", "nobody"]);
    let (_, err) = text(&out);
    assert!(err.contains("nobody: no such agent (404)"), "{err}");

    let out = ok(
        &s.base,
        &ctx,
        &[
            "goal",
            "create",
            "Reach 1k users",
            "--level",
            "company",
            "--owner",
            "chief",
        ],
    );
    assert!(
        out.contains("Created goal \"Reach 1k users\" (company)"),
        "{out}"
    );
    ok(
        &s.base,
        &ctx,
        &[
            "goal",
            "create",
            "Ship onboarding",
            "--level",
            "team",
            "--parent",
            "reach 1k users",
        ],
    );
    let goals = s.ok_get(&format!("/api/companies/{cid}/goals")).await;
    let top = goals
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["title"] == "Reach 1k users")
        .unwrap();
    let sub = goals
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["title"] == "Ship onboarding")
        .unwrap();
    assert_eq!(sub["parentId"], top["id"]);
    assert_eq!(top["ownerAgentId"], chief_id);
    let out = cli(
        &s.base,
        &ctx,
        &["goal", "create", "Orphan", "--level", "galaxy"],
    );
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("(400)"),
        "an unknown level is the server's 400: {err}"
    );

    let out = ok(
        &s.base,
        &ctx,
        &[
            "project",
            "create",
            "Website",
            "--goal",
            "Reach 1k users",
            "--lead",
            "chief",
            "--json",
        ],
    );
    let project: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(project["goalIds"], json!([top["id"]]));
    assert_eq!(project["leadAgentId"], chief_id);
    let out = ok(&s.base, &ctx, &["project", "list"]);
    assert!(out.contains("Website") && out.contains("Chief"), "{out}");

    let out = ok(&s.base, &ctx, &["budget", "set", "50"]);
    assert!(out.contains("monthly cap is now $50.00"), "{out}");
    ok(
        &s.base,
        &ctx,
        &["budget", "set", "12.5", "--agent", "helper"],
    );
    assert_eq!(
        s.ok_get(&format!("/api/companies/{cid}")).await["budgetMonthlyCents"],
        5000
    );
    let agents = s.ok_get(&format!("/api/companies/{cid}/agents")).await;
    let helper = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "Helper")
        .unwrap();
    assert_eq!(helper["budgetMonthlyCents"], 1250);
    let out = ok(&s.base, &ctx, &["budget", "show"]);
    assert!(
        out.contains("$50.00") && out.contains("$12.50") && out.contains("none"),
        "{out}"
    );
    let out = cli(&s.base, &ctx, &["budget", "set", "--", "-3"]);
    let (_, err) = text(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a negative budget is refused: {err}"
    );
    assert!(err.contains("between 0 and"), "{err}");
    assert_eq!(
        s.ok_get(&format!("/api/companies/{cid}")).await["budgetMonthlyCents"],
        5000,
        "and nothing changed"
    );

    let out = ok(&s.base, &ctx, &["org"]);
    assert!(
        out.contains("Chief (") && out.contains("\n  Helper ("),
        "Helper indented under Chief: {out}"
    );
    let out = ok(&s.base, &ctx, &["org", "--json"]);
    let tree: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(tree[0]["reports"][0]["name"], "Helper");
}
