//! The upstream `paperclipai skills` commands against this binary (issue
//! 40): the person imports a folder of skills, lists them, reads a file,
//! gives an agent one, reads the agent's snapshot and removes a skill; the
//! effects are checked through our API.

use crate::common;

use common::upstream::{upstream_cli, Cli};
use common::TestServer;
use serde_json::json;

#[tokio::test]
async fn the_upstream_cli_manages_company_skills() {
    let Some(path) = upstream_cli() else { return };
    let s = TestServer::start().await;
    let cli = Cli::new(path, &s);
    let cid = s.company("Cli Skills").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = s.agent(&cid, "Editor", None).await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let src = s.data_dir.join("skill-src");
    for (dir, name) in [("editing", "editing"), ("proofing", "proofing")] {
        std::fs::create_dir_all(src.join(dir)).unwrap();
        std::fs::write(
            src.join(dir).join("SKILL.md"),
            format!("---\nname: {name}\ndescription: The {name} skill\n---\n\nCLI-{name}\n"),
        )
        .unwrap();
    }
    let with = |args: &[&str]| {
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.extend(["-C".into(), cid.clone(), "--json".into()]);
        all
    };
    let run = |args: Vec<String>| {
        let cli = &cli;
        async move {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            cli.ok(&refs).await.json()
        }
    };

    let imported = run(with(&["skills", "import", src.to_str().unwrap()])).await;
    assert_eq!(
        imported["imported"].as_array().map(Vec::len),
        Some(2),
        "{imported}"
    );
    let listed = run(with(&["skills", "list"])).await;
    assert_eq!(listed.as_array().map(Vec::len), Some(2), "{listed}");
    let file = run(with(&["skills", "file", "editing", "--path", "SKILL.md"])).await;
    assert!(
        file["content"].as_str().unwrap().contains("CLI-editing"),
        "{file}"
    );
    let synced = run(with(&[
        "skills", "agent", "sync", &aid, "--skill", "proofing", "--mode", "add",
    ]))
    .await;
    let key = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["slug"] == "proofing")
        .unwrap()["key"]
        .clone();
    assert_eq!(synced["desiredSkills"], json!([key]), "{synced}");
    let snapshot = run(with(&["skills", "agent", "list", &aid])).await;
    assert_eq!(snapshot["desiredSkills"], json!([key]));
    run(with(&["skills", "remove", "editing", "--yes"])).await;
    let left = s.ok_get(&format!("/api/companies/{cid}/skills")).await;
    assert_eq!(left.as_array().map(Vec::len), Some(1), "{left}");
    let stored = s.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(
        stored["adapterConfig"]["paperclipSkillSync"]["desiredSkills"],
        json!([key])
    );
}
