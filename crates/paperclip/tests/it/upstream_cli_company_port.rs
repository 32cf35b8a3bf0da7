//! The upstream `paperclipai` CLI's company export and import against this
//! binary: `company export` writes our package to a folder, `company import`
//! reads it back as a new company (and dry-runs it into an existing one
//! through the safe route), and the raw `export:preview` route answers.
//! Skipped when the CLI is missing (`common/upstream.rs`). On the same
//! server, the board's Export/Import card and starter templates
//! (`tests/browser/company_port.mjs`), skipped without a browser.

use crate::common;

use common::upstream::{upstream_cli, Cli};
use common::TestServer;
use serde_json::json;

#[tokio::test]
async fn the_upstream_cli_exports_and_imports_company_packages() {
    let server = TestServer::start().await;
    if common::browser::ready() {
        common::browser::run(
            "company_port",
            &server.base,
            std::time::Duration::from_secs(60),
        )
        .await;
    }
    let Some(path) = upstream_cli() else { return };
    let cli = Cli::new(path, &server);
    let cid = server.company("Upstream Port").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let lead = server.agent(&cid, "Lead", None).await;
    server.agent(&cid, "Helper", lead["id"].as_str()).await;
    server
        .ok_post(
            &format!("/api/companies/{cid}/projects"),
            json!({ "name": "Launch" }),
        )
        .await;
    server
        .issue(
            &cid,
            json!({ "title": "Plan the launch", "status": "backlog" }),
        )
        .await;

    let out = server.data_dir.join("upstream-export");
    let out_s = out.to_str().unwrap();
    let exported = cli
        .ok(&[
            "company",
            "export",
            &cid,
            "--out",
            out_s,
            "--include",
            "company,agents,projects,issues",
            "--force",
            "--json",
        ])
        .await
        .json();
    assert_eq!(exported["ok"], true, "{exported}");
    for file in [
        "COMPANY.md",
        ".paperclip.yaml",
        "agents/lead/AGENTS.md",
        "agents/helper/AGENTS.md",
        "projects/launch/PROJECT.md",
    ] {
        assert!(out.join(file).is_file(), "{file} was not written");
    }

    let preview = cli
        .ok(&[
            "company",
            "import",
            out_s,
            "-C",
            &cid,
            "--collision",
            "skip",
            "--dry-run",
            "--json",
        ])
        .await
        .json();
    assert_eq!(preview["targetCompanyId"], cid.as_str(), "{preview}");
    assert_eq!(preview["plan"]["agentPlans"].as_array().unwrap().len(), 2);
    assert!(preview["plan"]["agentPlans"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["action"] == "skip"));

    let imported = cli
        .ok(&[
            "company",
            "import",
            out_s,
            "--target",
            "new",
            "--new-company-name",
            "Upstream Copy",
            "--yes",
            "--json",
        ])
        .await
        .json();
    assert_eq!(imported["company"]["action"], "created", "{imported}");
    let nid = imported["company"]["id"].as_str().unwrap();
    let agents = server.ok_get(&format!("/api/companies/{nid}/agents")).await;
    let helper = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "Helper")
        .unwrap();
    let lead_copy = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "Lead")
        .unwrap();
    assert_eq!(helper["reportsTo"], lead_copy["id"]);
    let issues = server.ok_get(&format!("/api/companies/{nid}/issues")).await;
    assert_eq!(issues[0]["title"], "Plan the launch");
    assert_eq!(
        server.ok_get(&format!("/api/companies/{nid}")).await["name"],
        "Upstream Copy"
    );

    let preview = cli
        .ok(&[
            "company",
            "export:preview",
            &cid,
            "--payload-json",
            "{}",
            "--json",
        ])
        .await
        .json();
    assert_eq!(preview["counts"]["agents"], 2, "{preview}");
}
