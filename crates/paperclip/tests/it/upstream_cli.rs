//! The upstream `paperclipai` CLI (npm `paperclipai`, the Node app's client
//! commands) driven against this binary, as the person at the machine uses it:
//! no key from their own shell, `--api-key` (or `PAPERCLIP_API_KEY`) for an
//! agent. What the CLI did is checked through our API.
//!
//! How the CLI is found: `common/upstream.rs`. Every command group of its
//! client tree: `upstream_cli_tree.rs`. Verified with paperclipai 2026.916.1
//! on Node 24.

use crate::common;

use std::path::Path;

use common::upstream::{upstream_cli, Cli};
use common::TestServer;
use serde_json::json;

#[tokio::test]
async fn the_person_drives_the_upstream_cli_without_a_key() {
    let Some(path) = upstream_cli() else { return };
    let s = TestServer::start().await;
    let cli = Cli::new(path, &s);

    let health = cli.ok(&["health", "--json"]).await.json();
    assert_eq!(health["status"], "ok", "{health}");
    assert_eq!(health["deploymentMode"], "local_trusted");

    // Companies: create (a JSON POST through the hardened door), then list.
    let company = cli
        .ok(&[
            "company",
            "create",
            "--payload-json",
            r#"{"name":"Clipper Works"}"#,
            "--json",
        ])
        .await
        .json();
    let cid = company["id"].as_str().unwrap().to_string();
    let stored = s.ok_get(&format!("/api/companies/{cid}")).await;
    assert_eq!(stored["name"], "Clipper Works");
    let prefix = stored["issuePrefix"].as_str().unwrap().to_string();
    let listed = cli.ok(&["company", "list"]).await.stdout;
    assert!(
        listed.contains(&format!("id={cid} name=Clipper Works")),
        "{listed}"
    );

    // An agent made through our API shows in the CLI's list.
    let agent = s.agent(&cid, "Builder", None).await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let agents = cli
        .ok(&["agent", "list", "-C", &cid, "--json"])
        .await
        .json();
    assert!(
        agents
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["id"] == aid.as_str()),
        "{agents}"
    );

    // Issues: create, list, update with a comment, comment.
    let issue = cli
        .ok(&[
            "issue",
            "create",
            "-C",
            &cid,
            "--title",
            "Written by paperclipai",
            "--description",
            "From the **upstream** CLI",
            "--priority",
            "high",
            "--json",
        ])
        .await
        .json();
    let ident = issue["identifier"].as_str().unwrap().to_string();
    assert_eq!(ident, format!("{prefix}-1"));
    let stored = s.ok_get(&format!("/api/issues/{ident}")).await;
    assert_eq!(stored["title"], "Written by paperclipai");
    assert_eq!(stored["description"], "From the **upstream** CLI");
    assert_eq!(stored["priority"], "high");
    assert_eq!(stored["createdByUserId"], "local-board");
    let listed = cli.ok(&["issue", "list", "-C", &cid]).await.stdout;
    assert!(
        listed.contains(&format!("identifier={ident} "))
            && listed.contains("title=Written by paperclipai"),
        "{listed}"
    );
    cli.ok(&[
        "issue",
        "update",
        &ident,
        "--status",
        "todo",
        "--assignee-agent-id",
        &aid,
        "--comment",
        "Over to you",
        "--json",
    ])
    .await;
    let stored = s.ok_get(&format!("/api/issues/{ident}")).await;
    assert_eq!(stored["status"], "todo");
    assert_eq!(stored["assigneeAgentId"], aid.as_str());
    cli.ok(&[
        "issue",
        "comment",
        &ident,
        "--body",
        "A note from the shell",
        "--json",
    ])
    .await;
    let comments = s.ok_get(&format!("/api/issues/{ident}/comments")).await;
    let bodies: Vec<&str> = comments
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["body"].as_str().unwrap())
        .collect();
    assert!(bodies.contains(&"Over to you"), "{comments}");
    assert!(bodies.contains(&"A note from the shell"), "{comments}");
    assert!(comments
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["authorUserId"] == "local-board"));

    // Read-only views agree with what was written.
    let dashboard = cli
        .ok(&["dashboard", "get", "-C", &cid, "--json"])
        .await
        .json();
    assert_eq!(dashboard["tasks"]["total"], 1, "{dashboard}");
    let activity = cli
        .ok(&["activity", "list", "-C", &cid, "--json"])
        .await
        .json();
    let actions: Vec<&str> = activity
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    for action in ["company.created", "issue.created", "issue.comment_added"] {
        assert!(
            actions.contains(&action),
            "{action} missing from {actions:?}"
        );
    }
    let costs = cli
        .ok(&["cost", "summary", "-C", &cid, "--json"])
        .await
        .json();
    assert_eq!(costs["companyId"], cid.as_str(), "{costs}");
}

#[tokio::test]
async fn an_agent_uses_the_upstream_cli_with_its_key_and_never_without() {
    let Some(path) = upstream_cli() else { return };
    let s = TestServer::start().await;
    let cli = Cli::new(path.clone(), &s);
    let company = s.company("Keyed Co").await;
    let cid = company["id"].as_str().unwrap().to_string();

    // From the shell with an agent's key: the CLI is that agent.
    let agent = s.agent(&cid, "Keyholder", None).await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let key = s.key(&aid).await;
    let me = cli
        .ok(&["agent", "me", "--api-key", &key, "--json"])
        .await
        .json();
    assert_eq!(me["id"], aid.as_str(), "{me}");
    // An agent's key creates no company.
    let refused = cli
        .run(&[
            "company",
            "create",
            "--payload-json",
            r#"{"name":"Rogue"}"#,
            "--api-key",
            &key,
        ])
        .await;
    assert!(!refused.ok, "{}", refused.stdout);
    let companies = s.ok_get("/api/companies").await;
    assert_eq!(companies.as_array().unwrap().len(), 1, "{companies}");

    // Inside a run: the CLI finds PAPERCLIP_API_URL, PAPERCLIP_API_KEY and
    // PAPERCLIP_RUN_ID in its environment and acts as the agent; with the
    // key taken away it is refused, not taken for the person.
    let out = s.data_dir.join("in-run");
    std::fs::create_dir_all(&out).unwrap();
    let q = |p: &Path| format!("'{}'", p.display());
    let script = format!(
        "PATH={dir}:\"$PATH\"; export PATH NO_COLOR=1 PAPERCLIP_HOME={home}\n\
         env -u PAPERCLIP_API_KEY {cli} company list > {o}/nokey.out 2> {o}/nokey.err\n\
         echo $? > {o}/nokey.rc\n\
         {cli} issue comment \"$PAPERCLIP_TASK_ID\" --body 'Done, from inside my run' --json \
           > {o}/withkey.out 2> {o}/withkey.err\n\
         echo $? > {o}/withkey.rc\n",
        dir = q(path.parent().unwrap()),
        home = q(&cli.home),
        cli = q(&path),
        o = q(&out),
    );
    let runner = s
        .script_agent(&cid, "Runner", &script, json!({ "timeoutSec": 120 }))
        .await;
    let rid = runner["id"].as_str().unwrap().to_string();
    let issue = s
        .issue(&cid, json!({ "title": "Say done", "status": "todo" }))
        .await;
    let ident = issue["identifier"].as_str().unwrap().to_string();
    // The assignment wakes the runner on this task.
    s.ok_patch(
        &format!("/api/issues/{ident}"),
        json!({ "assigneeAgentId": rid }),
    )
    .await;
    let runs = s
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={rid}"),
            120,
            |runs| {
                runs.as_array()
                    .unwrap()
                    .iter()
                    .any(|r| !matches!(r["status"].as_str(), Some("queued" | "running")))
            },
        )
        .await;
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap_or_default();
    assert_eq!(
        runs[0]["status"],
        "succeeded",
        "{runs}\n{}",
        read("withkey.err")
    );
    assert_eq!(
        read("nokey.rc").trim(),
        "1",
        "without its key: {}",
        read("nokey.out")
    );
    assert!(
        read("nokey.err").contains("API error 401")
            && read("nokey.err").contains("inside agent run"),
        "{}",
        read("nokey.err")
    );
    assert_eq!(read("withkey.rc").trim(), "0", "{}", read("withkey.err"));
    let run_id = runs[0]["id"].as_str().unwrap();
    let comments = s.ok_get(&format!("/api/issues/{ident}/comments")).await;
    let comment = comments
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["body"] == "Done, from inside my run")
        .unwrap_or_else(|| panic!("the run's comment is missing: {comments}"));
    assert_eq!(comment["authorAgentId"], rid.as_str(), "{comment}");
    assert_eq!(comment["createdByRunId"], run_id, "{comment}");
}
