//! The upstream `paperclipai` CLI's issue-tree control commands against
//! this binary, as the board runs them: preview a pause, put it on, read
//! the tree's state and holds, release it; list recovery actions (none
//! here) and find resolving one refused as upstream refuses a missing one.

use crate::common;

use common::upstream::{upstream_cli, Cli};
use common::TestServer;
use serde_json::{json, Value};

#[tokio::test]
async fn the_upstream_cli_pauses_and_releases_an_issue_tree() {
    let Some(path) = upstream_cli() else { return };
    let s = TestServer::start().await;
    let cli = Cli::new(path, &s);
    let cid = s.company("Cli Trees").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let root = s.issue(&cid, json!({ "title": "Launch" })).await;
    let root_id = root["id"].as_str().unwrap().to_string();
    let child = s
        .issue(&cid, json!({ "title": "Docs", "parentId": root_id }))
        .await;
    let child_id = child["id"].as_str().unwrap().to_string();
    let run = |args: Vec<String>| {
        let cli = &cli;
        async move {
            let mut args = args;
            args.push("--json".into());
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            cli.ok(&refs).await.json()
        }
    };
    let issue = |cmd: &str, rest: &[&str]| -> Vec<String> {
        let mut v = vec!["issue".to_string(), cmd.to_string()];
        v.extend(rest.iter().map(|s| s.to_string()));
        v
    };

    let preview = run(issue(
        "tree-preview",
        &[&root_id, "--payload-json", r#"{"mode":"pause"}"#],
    ))
    .await;
    assert_eq!(preview["totals"]["affectedIssues"], 2, "{preview}");
    let created = run(issue(
        "tree-hold:create",
        &[
            &root_id,
            "--payload-json",
            r#"{"mode":"pause","reason":"Hold for review"}"#,
        ],
    ))
    .await;
    let hold = created["hold"]["id"].as_str().expect("a hold").to_string();
    let state = run(issue("tree-state", &[&child_id])).await;
    assert_eq!(state["activePauseHold"]["holdId"], hold.as_str(), "{state}");
    let holds = run(issue("tree-holds", &[&root_id])).await;
    assert_eq!(holds.as_array().map(Vec::len), Some(1), "{holds}");
    let got = run(issue("tree-hold:get", &[&root_id, &hold])).await;
    assert_eq!(got["reason"], "Hold for review");
    let released = run(issue("tree-hold:release", &[&root_id, &hold])).await;
    assert_eq!(released["status"], "released", "{released}");
    let state = s
        .ok_get(&format!("/api/issues/{child_id}/tree-control/state"))
        .await;
    assert_eq!(state["activePauseHold"], Value::Null);

    let actions = run(issue("recovery-actions", &[&child_id])).await;
    assert_eq!(actions["actions"], json!([]), "{actions}");
    let out = cli
        .run(&[
            "issue",
            "recovery:resolve",
            &child_id,
            "--outcome",
            "restored",
            "--source-issue-status",
            "todo",
            "--json",
        ])
        .await;
    assert!(
        !out.ok && format!("{}{}", out.stdout, out.stderr).contains("404"),
        "no recovery action to resolve: {} {}",
        out.stdout,
        out.stderr
    );
}
