//! A company exported through the raw route and imported into another
//! (preview, then apply), archived and deleted; and, on an authenticated
//! instance, an invite shown and accepted by a second person, whose
//! membership the owner then lists, changes and removes.

use reqwest::Method;
use serde_json::{json, Value};

use super::More;
use crate::common::teams;
use crate::common::upstream::upstream_cli;

#[tokio::test]
async fn upstream_cli_company_export_import_archive_and_delete_work_against_us() {
    let Some((s, mut t)) = More::start().await else {
        return;
    };
    let cid = t.var("cid");
    s.agent(&cid, "Chief", None).await;
    let exported = t
        .argv(&["company", "export:api", &cid, "--payload-json", "{}"])
        .await;
    let files = exported["files"].clone();
    assert!(
        files.as_object().is_some_and(|f| !f.is_empty()),
        "{exported}"
    );

    let other = s.company("Other&Co").await;
    let oid = t.set("oid", &other);
    let body = json!({
        "source": { "type": "inline", "files": files },
        "target": { "mode": "existing_company", "companyId": oid },
    })
    .to_string();
    let preview = t
        .argv(&["company", "import:preview", &oid, "--payload-json", &body])
        .await;
    let planned = preview.to_string();
    assert!(planned.contains("chief"), "{preview}");
    let agents = |list: Value| -> Vec<String> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap().to_string())
            .collect()
    };
    let before = agents(s.ok_get(&format!("/api/companies/{oid}/agents")).await);
    assert!(before.is_empty(), "a preview changes nothing: {before:?}");
    t.argv(&["company", "import:apply", &oid, "--payload-json", &body])
        .await;
    let after = agents(s.ok_get(&format!("/api/companies/{oid}/agents")).await);
    assert_eq!(after, ["Chief"], "the agent was imported");

    let archived = t.json("company archive {oid}").await;
    assert_eq!(archived["status"], "archived", "{archived}");
    let stored = s.ok_get(&format!("/api/companies/{oid}")).await;
    assert_eq!(stored["status"], "archived", "{stored}");
    t.json("company delete {oid} --yes --confirm {oid}").await;
    let (status, _) = s.get(&format!("/api/companies/{oid}")).await;
    assert_eq!(status, 404, "the company is gone");
    let (status, _) = s.get(&format!("/api/companies/{cid}")).await;
    assert_eq!(status, 200, "and only that one");

    // A backup of it all, asked for now: the file is the one health names.
    let backup = t.json("instance database-backup").await;
    assert_eq!(backup["trigger"], "manual", "{backup}");
    let file = std::path::PathBuf::from(backup["backupFile"].as_str().unwrap());
    assert!(file.is_file(), "{backup}");
    assert!(backup["sizeBytes"].as_u64().unwrap() > 0, "{backup}");
    let health = s.ok_get("/api/health").await;
    assert_eq!(
        health["databaseBackup"]["latestBackup"]["path"], backup["backupFile"],
        "{health}"
    );

    t.ran("company export, import, archive, delete, backup", 6);
}

/// A board API key of a signed-in person, naming no company.
async fn board_key(s: &crate::common::TestServer, who: &teams::Session) -> String {
    let (status, key) = teams::call(
        s,
        Method::POST,
        "/api/board-api-keys",
        Some(who),
        Some(json!({ "name": "cli" })),
    )
    .await;
    assert_eq!(status, 201, "{key}");
    key["token"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn upstream_cli_invites_and_members_work_against_an_authenticated_instance() {
    let Some(path) = upstream_cli() else { return };
    let (s, ada) = teams::instance(&[]).await;
    let mut t = More::on(path, &s);
    let (status, company) = teams::call(
        &s,
        Method::POST,
        "/api/companies",
        Some(&ada),
        Some(json!({ "name": "Members&Co" })),
    )
    .await;
    assert_eq!(status, 201, "{company}");
    let cid = t.set("cid", &company);
    t.vars.insert("ada", board_key(&s, &ada).await);
    let (status, invite) = teams::call(
        &s,
        Method::POST,
        &format!("/api/companies/{cid}/invites"),
        Some(&ada),
        Some(json!({ "humanRole": "operator" })),
    )
    .await;
    assert_eq!(status, 201, "{invite}");
    t.vars
        .insert("token", invite["token"].as_str().unwrap().to_string());

    let shown = t.json("invite show {token}").await;
    assert_eq!(shown["companyName"], "Members&Co", "{shown}");
    let bob = teams::sign_up(&s, "Bob", "bob@example.com").await;
    t.vars.insert("bob", board_key(&s, &bob).await);
    let accepted = t
        .json(r#"invite accept {token} --payload-json {"requestType":"human"} --api-key {bob}"#)
        .await;
    assert_eq!(accepted["status"], "approved", "{accepted}");
    let mid = accepted["membership"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{accepted}"))
        .to_string();
    t.vars.insert("mid", mid.clone());

    let listed = t.json("member list -C {cid} --api-key {ada}").await;
    let row = |list: &Value| {
        let rows = list
            .as_array()
            .or(list["members"].as_array())
            .unwrap_or_else(|| panic!("{list}"))
            .clone();
        rows.into_iter().find(|m| m["id"] == mid.as_str())
    };
    let bobs = row(&listed).expect("Bob is a member");
    assert_eq!(bobs["membershipRole"], "operator", "{bobs}");
    t.json(r#"member update {mid} -C {cid} --payload-json {"membershipRole":"viewer"} --api-key {ada}"#)
        .await;
    let (_, listed) = teams::call(
        &s,
        Method::GET,
        &format!("/api/companies/{cid}/members"),
        Some(&ada),
        None,
    )
    .await;
    assert_eq!(row(&listed).unwrap()["membershipRole"], "viewer");
    t.json("member archive {mid} -C {cid} --api-key {ada}")
        .await;
    let (status, _) = teams::call(
        &s,
        Method::GET,
        &format!("/api/companies/{cid}"),
        Some(&bob),
        None,
    )
    .await;
    assert_eq!(status, 403, "Bob is no longer in the company");

    t.ran("invites and members", 5);
}
