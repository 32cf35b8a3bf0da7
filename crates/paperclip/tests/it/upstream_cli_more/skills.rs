//! The `skill` group (raw routes) and the `skills` group's show, create,
//! check, update, reset and agent clear over a skill imported from a folder
//! that then changes; and `secrets`: made, renamed, rotated, listed,
//! declared by an export, found inline in an agent's env, deleted.

use serde_json::{json, Value};

use super::More;

fn write_skill(dir: &std::path::Path, body: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: editing\ndescription: Edits text\n---\n\n{body}\n"),
    )
    .unwrap();
}

#[tokio::test]
async fn upstream_cli_skill_and_skills_commands_work_against_us() {
    let Some((s, mut t)) = More::start().await else {
        return;
    };
    let cid = t.var("cid");
    let src = s.data_dir.join("skill-src");
    write_skill(&src.join("editing"), "first-words");
    let import = json!({ "source": src.to_str().unwrap() }).to_string();
    let imported = t
        .argv(&["skill", "import", "-C", &cid, "--payload-json", &import])
        .await;
    assert!(imported.to_string().contains("editing"), "{imported}");
    let listed = t.json("skill list -C {cid}").await;
    let skill = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["slug"] == "editing")
        .unwrap_or_else(|| panic!("{listed}"))
        .clone();
    let sid = t.set("sid", &skill);
    let got = t.json("skill get {sid} -C {cid}").await;
    assert_eq!(got["id"], sid.as_str(), "{got}");
    let file = t.json("skill file {sid} -C {cid} --path SKILL.md").await;
    assert!(
        file["content"].as_str().unwrap().contains("first-words"),
        "{file}"
    );
    let content = |v: Value| v["content"].as_str().unwrap_or_default().to_string();
    let skill_md = format!("/api/companies/{cid}/skills/{sid}/files?path=SKILL.md");

    // The folder changes: the raw route and then `skills update` take it in.
    t.json("skill update-status {sid} -C {cid}").await;
    write_skill(&src.join("editing"), "second-words");
    t.json("skill install-update {sid} -C {cid}").await;
    assert!(content(s.ok_get(&skill_md).await).contains("second-words"));
    write_skill(&src.join("editing"), "third-words");
    let checked = t.json("skills check editing -C {cid}").await;
    assert!(checked.to_string().contains(&sid), "{checked}");
    let updated = t.json("skills update editing -C {cid}").await;
    assert_eq!(updated["action"], "updated", "{updated}");
    assert!(content(s.ok_get(&skill_md).await).contains("third-words"));
    t.json("skills reset editing --yes -C {cid}").await;
    assert!(
        content(s.ok_get(&skill_md).await).contains("first-words"),
        "reset to the version first installed"
    );
    t.json(r#"skill file:update {sid} -C {cid} --payload-json {"path":"notes.md","content":"extra-notes"}"#)
        .await;
    let notes = s
        .ok_get(&format!(
            "/api/companies/{cid}/skills/{sid}/files?path=notes.md"
        ))
        .await;
    assert_eq!(content(notes), "extra-notes");

    // Skills written here, shown, and one removed.
    let drafting = t
        .json(
            r#"skill create -C {cid} --payload-json {"name":"Drafting","markdown":"Draft-first"}"#,
        )
        .await;
    t.set("did", &drafting);
    let shown = t.json("skills show drafting -C {cid}").await;
    assert!(shown.to_string().contains("Drafting"), "{shown}");
    let made = t
        .json("skills create --name Reviewing --description Reviews -C {cid}")
        .await;
    assert_eq!(made["slug"], "reviewing", "{made}");
    t.json("skill delete {did} -C {cid}").await;
    let left = s.ok_get(&format!("/api/companies/{cid}/skills")).await;
    let slugs: Vec<&str> = left
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k["slug"].as_str())
        .collect();
    assert!(
        slugs.contains(&"reviewing") && !slugs.contains(&"drafting"),
        "{slugs:?}"
    );

    // An agent's desired skills cleared.
    let agent = s.agent(&cid, "Editor", None).await;
    let aid = t.set("aid", &agent);
    let synced = t
        .json("agent skills:sync {aid} --desired-skills editing --mode replace")
        .await;
    assert_eq!(synced["desiredSkills"], json!([skill["key"]]), "{synced}");
    t.json("skills agent clear {aid} --yes -C {cid}").await;
    let stored = s.ok_get(&format!("/api/agents/{aid}/skills")).await;
    assert_eq!(stored["desiredSkills"], json!([]), "{stored}");

    t.ran("skill and skills", 16);
}

#[tokio::test]
async fn upstream_cli_secrets_commands_work_against_us() {
    let Some((s, mut t)) = More::start().await else {
        return;
    };
    let cid = t.var("cid");
    let providers = t.json("secrets providers -C {cid}").await;
    assert!(
        providers.to_string().contains("local_encrypted"),
        "{providers}"
    );
    let made = t
        .json("secrets create -C {cid} --name Deploy --key DEPLOY_TOKEN --value first-value")
        .await;
    let secid = t.set("secid", &made);
    assert!(
        !made.to_string().contains("first-value"),
        "no value in answers"
    );
    let renamed = t
        .json(r#"secrets update {secid} --payload-json {"description":"for CI"}"#)
        .await;
    assert_eq!(renamed["description"], "for CI", "{renamed}");
    let rotated = t.json("secrets rotate {secid} --value second-value").await;
    assert_eq!(rotated["latestVersion"], 2, "{rotated}");
    let listed = t.json("secrets list -C {cid}").await;
    let row = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == secid.as_str())
        .unwrap_or_else(|| panic!("{listed}"))
        .clone();
    assert_eq!(row["latestVersion"], 2, "{row}");
    assert_eq!(row["description"], "for CI");

    // An agent using it, and one with a token inline in its env.
    s.ok_post(
        &format!("/api/companies/{cid}/agents"),
        json!({ "name": "Deployer", "adapterType": "process", "adapterConfig": {
            "command": "true",
            "env": { "DEPLOY_TOKEN": { "type": "secret_ref", "secretId": secid, "version": "latest" } },
        } }),
    )
    .await;
    let inline = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Inline", "adapterType": "process", "adapterConfig": {
                "command": "true",
                "env": { "GITHUB_TOKEN": { "type": "plain", "value": "ghp-inline" } },
            } }),
        )
        .await;
    let declared = t.json("secrets declarations -C {cid} --kind secret").await;
    assert!(declared.to_string().contains("DEPLOY_TOKEN"), "{declared}");
    // The dry run only: the value the CLI would move is redacted in our
    // answers (as in the original's), so applying would store the mask.
    let plan = t.json("secrets migrate-inline-env -C {cid}").await;
    assert_eq!(plan["apply"], false, "{plan}");
    assert_eq!(plan["candidates"][0]["agentId"], inline["id"], "{plan}");
    assert_eq!(plan["candidates"][0]["envKey"], "GITHUB_TOKEN");

    t.json("secrets delete {secid} --yes --confirm {secid}")
        .await;
    let left = s.ok_get(&format!("/api/companies/{cid}/secrets")).await;
    assert!(
        !left
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == secid.as_str()),
        "{left}"
    );
    t.ran("secrets", 8);
}
