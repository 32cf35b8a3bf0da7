//! The upstream `paperclipai` CLI's workspace commands against this binary:
//! `project-workspace` (a project's repository) and `workspace` (the
//! execution workspace, a git worktree, a task runs in), as the person at
//! the machine and as an agent inside its run. What the CLI did is checked
//! through our API. The commands whose capability we do not have are
//! listed with the reason and must still fail, so the list only shrinks.
//! How the CLI is found: `common/upstream.rs`.

use crate::common;

use std::path::Path;

use crate::common::repos::{git, repository, str_of as s};
use common::upstream::{upstream_cli, Cli};
use common::TestServer;
use serde_json::{json, Value};

/// Workspace commands we do not serve, and why; `{pid}`, `{wid}` (a project
/// workspace) and `{ewid}` (an execution workspace) are filled in.
const NOT_YET: &[(&str, &str)] = &[
    (
        "project-workspace runtime-service {pid} {wid} start",
        "no workspace runtime services (dev servers) are run",
    ),
    (
        "project-workspace runtime-command {pid} {wid} run",
        "no workspace runtime commands are run",
    ),
    (
        "workspace runtime-service {ewid} start",
        "no workspace runtime services (dev servers) are run",
    ),
    (
        "workspace runtime-command {ewid} run",
        "no workspace runtime commands are run",
    ),
];

/// Runs `args`, which must fail with `status` and `reason` in the CLI's
/// error line (`API error <status>: <our message>`).
async fn refused(cli: &Cli, args: &[&str], status: u16, reason: &str) {
    let out = cli.run(args).await;
    assert!(!out.ok, "paperclipai {args:?} succeeded: {}", out.stdout);
    assert!(
        out.stderr.contains(&format!("API error {status}")) && out.stderr.contains(reason),
        "paperclipai {args:?}: wanted {status} and {reason:?}, got {}",
        out.stderr
    );
}

async fn company_and_project(server: &TestServer) -> (String, String) {
    let cid = s(&server.company("Workspaces Co").await["id"]).to_string();
    let project = server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "App" }),
        )
        .await;
    (cid, s(&project["id"]).to_string())
}

#[tokio::test]
async fn the_person_manages_project_workspaces_with_the_upstream_cli() {
    let Some(path) = upstream_cli() else { return };
    let server = TestServer::start().await;
    let cli = Cli::new(path, &server);
    let (cid, pid) = company_and_project(&server).await;
    let repo = repository();
    let inside = repo.join("src");
    std::fs::create_dir_all(&inside).unwrap();

    // Create: a folder inside the repository declares the repository.
    let payload = json!({ "cwd": inside.to_str().unwrap(), "name": "app" }).to_string();
    let made = cli
        .ok(&[
            "project-workspace",
            "create",
            &pid,
            "--payload-json",
            &payload,
            "--json",
        ])
        .await
        .json();
    let wid = s(&made["id"]).to_string();
    assert_eq!(made["projectId"], pid.as_str(), "{made}");
    assert_eq!(made["companyId"], cid.as_str());
    assert_eq!(made["cwd"], repo.to_str().unwrap());
    assert_eq!(made["sourceType"], "local_path");
    assert_eq!(made["isPrimary"], true);
    let ours = server
        .ok_get(&format!("/api/projects/{pid}/workspaces"))
        .await;
    assert_eq!(ours, json!([made]));
    let listed = cli.ok(&["project-workspace", "list", &pid]).await.stdout;
    assert!(listed.contains(&format!("id={wid} name=app")), "{listed}");
    let listed = cli
        .ok(&["project-workspace", "list", &pid, "--json"])
        .await
        .json();
    assert_eq!(listed, ours);

    // Update, and clear with null as upstream's clients do.
    let set = cli
        .ok(&[
            "project-workspace",
            "update",
            &pid,
            &wid,
            "--payload-json",
            r#"{"defaultRef":"main","repoRef":"main","setupCommand":null}"#,
            "--json",
        ])
        .await
        .json();
    assert_eq!(
        (&set["defaultRef"], &set["repoRef"]),
        (&json!("main"), &json!("main"))
    );
    let cleared = cli
        .ok(&[
            "project-workspace",
            "update",
            &pid,
            &wid,
            "--payload-json",
            r#"{"repoRef":null,"name":"app-main"}"#,
            "--json",
        ])
        .await
        .json();
    assert_eq!(cleared["repoRef"], Value::Null, "{cleared}");
    assert_eq!(cleared["defaultRef"], "main");
    assert_eq!(cleared["name"], "app-main");

    // What we cannot do is refused with our reason, never dropped (bad
    // paths and git URLs: `workspaces.rs`, through our API).
    let payload =
        json!({ "sourceType": "git_repo", "repoUrl": "https://example.com/x.git" }).to_string();
    let args = [
        "project-workspace",
        "update",
        pid.as_str(),
        wid.as_str(),
        "--payload-json",
        payload.as_str(),
    ];
    refused(&cli, &args, 422, "Only a local git repository").await;
    let after = server
        .ok_get(&format!("/api/projects/{pid}/workspaces"))
        .await;
    assert_eq!(
        after,
        json!([cleared]),
        "a refused request changed something"
    );
    // Setup and cleanup commands are kept and given back.
    let commands = cli
        .ok(&[
            "project-workspace",
            "update",
            &pid,
            &wid,
            "--payload-json",
            r#"{"setupCommand":"npm install","cleanupCommand":"rm -rf node_modules"}"#,
            "--json",
        ])
        .await
        .json();
    assert_eq!(commands["setupCommand"], "npm install", "{commands}");
    assert_eq!(
        commands["cleanupCommand"], "rm -rf node_modules",
        "{commands}"
    );
    let cleared = cli
        .ok(&[
            "project-workspace",
            "update",
            &pid,
            &wid,
            "--payload-json",
            r#"{"setupCommand":null,"cleanupCommand":null}"#,
            "--json",
        ])
        .await
        .json();
    assert_eq!(cleared["setupCommand"], Value::Null, "{cleared}");

    // An agent reads its company's workspaces but declares none: where
    // agents' processes run is the board's decision.
    let agent = server.agent(&cid, "Reader", None).await;
    let key = server.key(s(&agent["id"])).await;
    let seen = cli
        .ok(&[
            "project-workspace",
            "list",
            &pid,
            "--api-key",
            &key,
            "--json",
        ])
        .await
        .json();
    assert_eq!(seen, json!([cleared]));
    let payload = json!({ "cwd": repo.to_str().unwrap() }).to_string();
    refused(
        &cli,
        &[
            "project-workspace",
            "create",
            &pid,
            "--payload-json",
            &payload,
            "--api-key",
            &key,
        ],
        403,
        "",
    )
    .await;

    let vars = [("{pid}", pid.as_str()), ("{wid}", wid.as_str())];
    for (command, why) in NOT_YET.iter().filter(|(c, _)| !c.contains("{ewid}")) {
        not_yet(&cli, command, why, &vars).await;
    }

    let gone = cli
        .ok(&["project-workspace", "delete", &pid, &wid, "--json"])
        .await
        .json();
    assert_eq!(gone["id"], wid.as_str(), "{gone}");
    let empty = cli.ok(&["project-workspace", "list", &pid]).await.stdout;
    assert_eq!(empty.trim(), "(empty)");
    refused(
        &cli,
        &["project-workspace", "delete", &pid, &wid],
        404,
        "Project workspace not found",
    )
    .await;
    let actions = server.actions(&cid).await;
    for action in [
        "project.workspace_created",
        "project.workspace_updated",
        "project.workspace_deleted",
    ] {
        assert!(
            actions.contains(&action.to_string()),
            "{action} missing from {actions:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&repo);
}

/// A `NOT_YET` command still fails with our 404.
async fn not_yet(cli: &Cli, command: &str, why: &str, vars: &[(&str, &str)]) {
    let mut filled = command.to_string();
    for (k, v) in vars {
        filled = filled.replace(k, v);
    }
    let args: Vec<&str> = filled.split(' ').collect();
    let out = cli.run(&args).await;
    assert!(
        !out.ok && out.stderr.contains("API error 404"),
        "`{command}` ({why}) now works or fails otherwise: remove it from NOT_YET\n{}\n{}",
        out.stdout,
        out.stderr
    );
}

#[tokio::test]
async fn the_upstream_cli_reads_updates_and_closes_a_tasks_execution_workspace() {
    let Some(path) = upstream_cli() else { return };
    let server = TestServer::start().await;
    let cli = Cli::new(path.clone(), &server);
    let (cid, pid) = company_and_project(&server).await;
    let repo = repository();
    let payload = json!({ "cwd": repo.to_str().unwrap() }).to_string();
    cli.ok(&[
        "project-workspace",
        "create",
        &pid,
        "--payload-json",
        &payload,
    ])
    .await;

    // The agent works in its task's worktree and, from inside its run, reads
    // that workspace with the upstream CLI and its run's key.
    let out = server.data_dir.join("in-run");
    std::fs::create_dir_all(&out).unwrap();
    let q = |p: &Path| format!("'{}'", p.display());
    let script = format!(
        "echo feature > feature.txt\n\
         PATH={dir}:\"$PATH\"; export PATH NO_COLOR=1 PAPERCLIP_HOME={home}\n\
         {cli} workspace get \"$PAPERCLIP_EXECUTION_WORKSPACE_ID\" --json > {o}/ws.json 2> {o}/ws.err\n\
         echo $? > {o}/ws.rc\n\
         pwd > {o}/pwd\n",
        dir = q(path.parent().unwrap()),
        home = q(&cli.home),
        cli = q(&path),
        o = q(&out),
    );
    let agent = server
        .script_agent(&cid, "Coder", &script, json!({ "timeoutSec": 120 }))
        .await;
    let aid = s(&agent["id"]).to_string();
    let issue = server
        .issue(
            &cid,
            json!({ "title": "Add a feature", "status": "todo", "projectId": pid, "assigneeAgentId": aid }),
        )
        .await;
    let runs = server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            120,
            |r| {
                r.as_array().is_some_and(|r| {
                    r.len() == 1 && r[0]["status"] != "queued" && r[0]["status"] != "running"
                })
            },
        )
        .await;
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap_or_default();
    assert_eq!(
        runs[0]["status"],
        "succeeded",
        "{}\n{}",
        runs[0],
        read("ws.err")
    );

    let ours = server
        .ok_get(&format!("/api/companies/{cid}/execution-workspaces"))
        .await;
    assert_eq!(ours.as_array().unwrap().len(), 1, "{ours}");
    let ws = &ours[0];
    let ewid = s(&ws["id"]).to_string();
    assert_eq!(ws["sourceIssueId"], issue["id"]);
    assert!(Path::new(s(&ws["cwd"])).join("feature.txt").is_file());
    assert!(!repo.join("feature.txt").exists());

    // Inside the run: the CLI found the workspace the run works in.
    assert_eq!(read("ws.rc").trim(), "0", "{}", read("ws.err"));
    let seen: Value = serde_json::from_str(&read("ws.json")).expect("the CLI printed JSON");
    assert_eq!(seen["id"], ewid.as_str(), "{seen}");
    assert_eq!(seen["cwd"], ws["cwd"]);
    assert_eq!(read("pwd").trim(), s(&ws["cwd"]));

    // The person: list and get, as JSON and as the CLI's lines.
    let listed = cli
        .ok(&["workspace", "list", "-C", &cid, "--json"])
        .await
        .json();
    assert_eq!(listed, ours);
    let lines = cli.ok(&["workspace", "list", "-C", &cid]).await.stdout;
    let line = format!(
        "id={ewid} name={} status={}",
        s(&ws["name"]),
        s(&ws["status"])
    );
    assert!(lines.contains(&line), "{line:?} not in {lines}");
    let one = cli.ok(&["workspace", "get", &ewid, "--json"]).await.json();
    assert_eq!(
        one,
        server
            .ok_get(&format!("/api/execution-workspaces/{ewid}"))
            .await
    );
    assert!(
        s(&one["branchName"]).starts_with(s(&issue["identifier"])),
        "{one}"
    );
    assert_eq!(one["providerType"], "git_worktree");
    assert_eq!(one["mode"], "isolated_workspace");
    refused(
        &cli,
        &["workspace", "get", "00000000-0000-0000-0000-000000000000"],
        404,
        "Execution workspace not found",
    )
    .await;

    // Another company's agent does not see it.
    let other = s(&server.company("Elsewhere").await["id"]).to_string();
    let stranger = server.agent(&other, "Stranger", None).await;
    let key = server.key(s(&stranger["id"])).await;
    let out = cli
        .run(&["workspace", "get", &ewid, "--api-key", &key, "--json"])
        .await;
    assert!(!out.ok, "{}", out.stdout);
    assert!(!out.stdout.contains(s(&ws["cwd"])), "{}", out.stdout);
    let none = cli
        .ok(&[
            "workspace",
            "list",
            "-C",
            &other,
            "--api-key",
            &key,
            "--json",
        ])
        .await
        .json();
    assert_eq!(none, json!([]));

    // Its operations and close-readiness, as our API answers them.
    let api = |suffix: &str| format!("/api/execution-workspaces/{ewid}{suffix}");
    let ops = cli
        .ok(&["workspace", "operations", &ewid, "--json"])
        .await
        .json();
    assert_eq!(ops, server.ok_get(&api("/workspace-operations")).await);
    let ops = ops.as_array().unwrap();
    assert!(
        ops.iter().any(|o| o["phase"] == "worktree_prepare"),
        "{ops:?}"
    );
    assert!(ops
        .iter()
        .all(|o| o["executionWorkspaceId"] == ewid.as_str()));
    let readiness = cli
        .ok(&["workspace", "close-readiness", &ewid, "--json"])
        .await
        .json();
    assert_eq!(readiness, server.ok_get(&api("/close-readiness")).await);
    assert_eq!(readiness["workspaceId"], ewid.as_str());
    assert!(
        ["ready", "ready_with_warnings", "blocked"].contains(&s(&readiness["state"])),
        "{readiness}"
    );

    // Update: an agent may not; the person renames, then closes it, which
    // removes the worktree and leaves the main checkout as it was.
    let agent_key = server.key(&aid).await;
    refused(
        &cli,
        &[
            "workspace",
            "update",
            &ewid,
            "--payload-json",
            r#"{"name":"x"}"#,
            "--api-key",
            &agent_key,
        ],
        403,
        "",
    )
    .await;
    let renamed = cli
        .ok(&[
            "workspace",
            "update",
            &ewid,
            "--payload-json",
            r#"{"name":"feature work"}"#,
            "--json",
        ])
        .await
        .json();
    assert_eq!(renamed["name"], "feature work", "{renamed}");
    let closed = cli
        .ok(&[
            "workspace",
            "update",
            &ewid,
            "--payload-json",
            r#"{"status":"archived"}"#,
            "--json",
        ])
        .await
        .json();
    assert_eq!(closed["status"], "archived", "{closed}");
    assert_eq!(closed, server.ok_get(&api("")).await);
    assert!(
        !Path::new(s(&ws["cwd"])).exists(),
        "the worktree is still there"
    );
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");

    let vars = [("{ewid}", ewid.as_str())];
    for (command, why) in NOT_YET.iter().filter(|(c, _)| c.contains("{ewid}")) {
        not_yet(&cli, command, why, &vars).await;
    }
    let _ = std::fs::remove_dir_all(&repo);
}
