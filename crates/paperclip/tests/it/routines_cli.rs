//! The upstream CLI's `routine` group against this server: every command,
//! each checked through our API.

use crate::common;

use common::upstream::{upstream_cli, Cli};
use common::TestServer;
use serde_json::json;

#[tokio::test]
async fn the_upstream_cli_routine_commands_work() {
    let Some(path) = upstream_cli() else { return };
    let s = TestServer::start().await;
    let cli = Cli::new(path, &s);
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let agent = s.agent(&cid, "A", None).await;
    let aid = agent["id"].as_str().unwrap();
    let payload = json!({ "title": "From the CLI", "assigneeAgentId": aid }).to_string();
    let created = cli
        .ok(&[
            "routine",
            "create",
            "-C",
            &cid,
            "--payload-json",
            &payload,
            "--json",
        ])
        .await
        .json();
    let rid = created["id"].as_str().unwrap().to_string();
    let list = cli
        .ok(&["routine", "list", "-C", &cid, "--json"])
        .await
        .json();
    assert_eq!(list[0]["id"], rid.as_str());
    let got = cli.ok(&["routine", "get", &rid, "--json"]).await.json();
    assert_eq!(got["title"], "From the CLI");
    cli.ok(&[
        "routine",
        "update",
        &rid,
        "--payload-json",
        r#"{"title":"Renamed"}"#,
        "--json",
    ])
    .await;
    assert_eq!(
        s.ok_get(&format!("/api/routines/{rid}")).await["title"],
        "Renamed"
    );
    let revisions = cli
        .ok(&["routine", "revisions", &rid, "--json"])
        .await
        .json();
    let first = revisions.as_array().unwrap().last().unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    cli.ok(&["routine", "revision:restore", &rid, &first, "--json"])
        .await;
    assert_eq!(
        s.ok_get(&format!("/api/routines/{rid}")).await["title"],
        "From the CLI"
    );
    let trig = cli
        .ok(&[
            "routine",
            "trigger:create",
            &rid,
            "--payload-json",
            r#"{"kind":"webhook","signingMode":"none"}"#,
            "--json",
        ])
        .await
        .json();
    let tid = trig["trigger"]["id"].as_str().unwrap().to_string();
    let public_id = trig["trigger"]["publicId"].as_str().unwrap().to_string();
    cli.ok(&[
        "routine",
        "trigger:update",
        &tid,
        "--payload-json",
        r#"{"label":"hook"}"#,
        "--json",
    ])
    .await;
    cli.ok(&["routine", "trigger:rotate-secret", &tid, "--json"])
        .await;
    cli.ok(&[
        "routine",
        "trigger:fire",
        &public_id,
        "--payload-json",
        "{}",
        "--json",
    ])
    .await;
    cli.ok(&["routine", "run", &rid, "--json"]).await;
    let runs = cli.ok(&["routine", "runs", &rid, "--json"]).await.json();
    assert_eq!(runs.as_array().unwrap().len(), 2, "{runs}");
    cli.ok(&["routine", "trigger:delete", &tid, "--json"]).await;
    let detail = s.ok_get(&format!("/api/routines/{rid}")).await;
    assert!(detail["triggers"].as_array().unwrap().is_empty());
    assert_eq!(
        s.ok_get(&format!("/api/routines/{rid}/runs"))
            .await
            .as_array()
            .unwrap()
            .len(),
        2
    );
}
