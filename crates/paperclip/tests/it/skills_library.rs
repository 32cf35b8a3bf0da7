//! The company skills library (issue 40) on upstream's routes: import from
//! a folder, an uploaded bundle and a git repository (`file://`), files and
//! immutable versions, the bounds (traversal, size, clashes), agent sync
//! by the board and by the agent itself, and a real process run that finds
//! its chosen skill in its skills folder.

use crate::common;

use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// The run lists its skills folder, prints the chosen skill's files, then
/// adds the uploaded skill to itself as upstream's skill tells agents to.
const SCRIPT: &str = r#"set -u
echo "dir=${PAPERCLIP_SKILLS_DIR:-none}"
ls "$PAPERCLIP_SKILLS_DIR" | sed 's/^/entry=/'
cat "$PAPERCLIP_SKILLS_DIR"/release-notes--*/SKILL.md
cat "$PAPERCLIP_SKILLS_DIR"/release-notes--*/scripts/draft.sh
echo "sync=$(curl -sS -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $PAPERCLIP_API_KEY" -H "X-Paperclip-Run-Id: $PAPERCLIP_RUN_ID" -H 'content-type: application/json' "$PAPERCLIP_API_URL/api/agents/$PAPERCLIP_AGENT_ID/skills/sync" -d '{"mode":"add","desiredSkills":["bundle-skill"]}')"
"#;

fn git(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn names(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["slug"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn skills_are_imported_versioned_bounded_synced_and_reach_a_run() {
    let server = TestServer::start().await;
    let cid = server.company("Skill Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let base = format!("/api/companies/{cid}/skills");
    let src = std::env::temp_dir().join(format!("pc-skills-it-{}", uuid::Uuid::new_v4().simple()));

    // A folder of two skills, found under it.
    write(&src.join("lib/release-notes/SKILL.md"), "---\nname: Release Notes\ndescription: Drafts release notes\n---\n\n# Release notes\nSAY-RELEASE-NOTES\n");
    write(
        &src.join("lib/release-notes/scripts/draft.sh"),
        "echo DRAFT-SCRIPT\n",
    );
    write(
        &src.join("lib/triage/SKILL.md"),
        "---\nname: triage\ndescription: Sorts bugs\n---\nbody\n",
    );
    let (status, folder) = server
        .post(
            &format!("{base}/import"),
            json!({ "source": src.join("lib").to_str().unwrap() }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{folder}");
    assert_eq!(names(&folder["imported"]), ["release-notes", "triage"]);
    let notes = folder["imported"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["slug"] == "release-notes")
        .unwrap()
        .clone();
    assert_eq!(notes["sourceType"], "local_path");
    assert!(
        notes["key"].as_str().unwrap().starts_with("local/"),
        "{notes}"
    );
    assert_eq!(notes["trustLevel"], "scripts_executables");
    assert_eq!(notes["description"], "Drafts release notes");
    let notes_id = notes["id"].as_str().unwrap().to_string();

    // An uploaded bundle.
    let (status, bundle) = server
        .post(
            &format!("{base}/import"),
            json!({ "files": {
            "SKILL.md": "---\nname: Bundle Skill\ndescription: Came in the body\n---\nhi\n",
            "references/guide.md": "guide" } }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{bundle}");
    assert_eq!(
        bundle["imported"][0]["key"],
        format!("company/{cid}/bundle-skill")
    );

    // A git repository by file:// URL, then a change there installed as an update.
    let repo = src.join("repo");
    write(
        &repo.join("skills/gitty/SKILL.md"),
        "---\nname: gitty\ndescription: From git\n---\nv1\n",
    );
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    let url = format!("file://{}", repo.display());
    let (status, from_git) = server
        .post(&format!("{base}/import"), json!({ "source": url }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{from_git}");
    let gitty = from_git["imported"][0].clone();
    assert_eq!(
        (gitty["slug"].as_str(), gitty["sourceType"].as_str()),
        (Some("gitty"), Some("url"))
    );
    assert_eq!(
        gitty["sourceRef"].as_str().map(str::len),
        Some(40),
        "{gitty}"
    );
    let gitty_id = gitty["id"].as_str().unwrap().to_string();
    let status_now = server
        .ok_get(&format!("{base}/{gitty_id}/update-status"))
        .await;
    assert_eq!(
        (
            status_now["supported"].as_bool(),
            status_now["hasUpdate"].as_bool()
        ),
        (Some(true), Some(false)),
        "{status_now}"
    );
    write(
        &repo.join("skills/gitty/SKILL.md"),
        "---\nname: gitty\ndescription: From git\n---\nv2\n",
    );
    git(&repo, &["commit", "-q", "-am", "two"]);
    let behind = server
        .ok_get(&format!("{base}/{gitty_id}/update-status"))
        .await;
    assert_eq!(behind["hasUpdate"], true, "{behind}");
    let updated = server
        .ok_post(&format!("{base}/{gitty_id}/install-update"), json!({}))
        .await;
    assert!(
        updated["markdown"].as_str().unwrap().contains("v2"),
        "{updated}"
    );
    assert_ne!(updated["sourceRef"], gitty["sourceRef"]);

    let list = server.ok_get(&base).await;
    assert_eq!(
        names(&list),
        ["bundle-skill", "gitty", "release-notes", "triage"]
    );
    assert!(
        list[0].get("markdown").is_none() && list[0]["attachedAgentCount"] == 0,
        "{}",
        list[0]
    );

    // Files and versions: an edit is a new version; the old one is unchanged.
    let skill_md = server
        .ok_get(&format!("{base}/{notes_id}/files?path=SKILL.md"))
        .await;
    assert_eq!(
        (skill_md["kind"].as_str(), skill_md["markdown"].as_bool()),
        (Some("skill"), Some(true))
    );
    let edited = server
        .ok_patch(
            &format!("{base}/{notes_id}/files"),
            json!({ "path": "references/style.md", "content": "Short lines." }),
        )
        .await;
    assert_eq!(edited["kind"], "reference");
    let versions = server.ok_get(&format!("{base}/{notes_id}/versions")).await;
    assert_eq!(versions.as_array().unwrap().len(), 2, "{versions}");
    let first = &versions[1];
    assert_eq!(first["revisionNumber"], 1);
    let first = server
        .ok_get(&format!(
            "{base}/{notes_id}/versions/{}",
            first["id"].as_str().unwrap()
        ))
        .await;
    assert!(first["fileInventory"]
        .as_array()
        .unwrap()
        .iter()
        .all(|f| f["path"] != "references/style.md"));
    let detail = server.ok_get(&format!("{base}/{notes_id}")).await;
    assert_eq!(detail["currentVersion"]["revisionNumber"], 2, "{detail}");
    let gitty_versions = server.ok_get(&format!("{base}/{gitty_id}/versions")).await;
    assert_eq!(gitty_versions.as_array().unwrap().len(), 2);

    // An edit here holds an update from the source back until forced.
    let held = server
        .ok_get(&format!("{base}/{notes_id}/update-status"))
        .await;
    assert_eq!(held["updateHoldReason"], "local_modifications", "{held}");
    let (status, _) = server
        .post(&format!("{base}/{notes_id}/install-update"), json!({}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // Bounds: traversal, absolute paths, NUL, size, unknown skill, clash.
    for bad in ["../escape.md", "/etc/passwd", "a/../../b", "a\u{0}b"] {
        let (status, body) = server
            .patch(
                &format!("{base}/{notes_id}/files"),
                json!({ "path": bad, "content": "x" }),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad:?}: {body}");
    }
    let (status, _) = server
        .get(&format!("{base}/{notes_id}/files?path=../../etc/passwd"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = server
        .post(
            &format!("{base}/import"),
            json!({ "files": { "SKILL.md": "---\nname: evil\n---\n", "../evil.sh": "x" } }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let big = "x".repeat(300 * 1024);
    let (status, _) = server
        .patch(
            &format!("{base}/{notes_id}/files"),
            json!({ "path": "big.txt", "content": big }),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = server.get(&format!("{base}/no-such-skill")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, clash) = server
        .post(
            &format!("{base}/import"),
            json!({ "files": { "SKILL.md": "---\nname: Release Notes\n---\nother\n" } }),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{clash}");
    let (status, _) = server
        .post(&format!("{base}/import"), json!({ "source": "./relative" }))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // Sync by the board: by slug, stored as the key, where upstream keeps it.
    let agent = server.script_agent(&cid, "Writer", SCRIPT, json!({})).await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let (status, _) = server
        .post(
            &format!("/api/agents/{aid}/skills/sync"),
            json!({ "desiredSkills": ["triage"] }),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "mode is required");
    let (status, _) = server
        .post(
            &format!("/api/agents/{aid}/skills/sync"),
            json!({ "mode": "add", "desiredSkills": ["nope"] }),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "unknown skill");
    let synced = server
        .ok_post(
            &format!("/api/agents/{aid}/skills/sync"),
            json!({ "mode": "replace", "desiredSkills": ["release-notes"] }),
        )
        .await;
    assert_eq!(synced["desiredSkills"], json!([notes["key"]]), "{synced}");
    let stored = server.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(
        stored["adapterConfig"]["paperclipSkillSync"]["desiredSkills"],
        json!([notes["key"]])
    );

    // Agents: another without hiring rights may not sync this one, nor read the server's disk.
    let other = server.script_agent(&cid, "Other", "true", json!({})).await;
    let other_key = server.key(other["id"].as_str().unwrap()).await;
    let (status, _) = server
        .as_agent(
            &other_key,
            None,
            "POST",
            &format!("/api/agents/{aid}/skills/sync"),
            Some(json!({ "mode": "add", "desiredSkills": ["triage"] })),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = server
        .as_agent(
            &other_key,
            None,
            "POST",
            &format!("{base}/import"),
            Some(json!({ "source": src.join("lib").to_str().unwrap() })),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, seen) = server.as_agent(&other_key, None, "GET", &base, None).await;
    assert_eq!(
        (status, seen.as_array().map(Vec::len)),
        (StatusCode::OK, Some(4))
    );

    // A real run finds its skill beside the Paperclip skill and syncs itself.
    let (_, run) = server
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    let run_id = run["id"].as_str().expect("a run").to_string();
    let done = server
        .wait_for(&format!("/api/heartbeat-runs/{run_id}"), 20, |r| {
            !matches!(r["status"].as_str(), Some("queued" | "running"))
        })
        .await;
    let log = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/log"))
        .await
        .to_string();
    assert_eq!(done["status"], "succeeded", "{done}\n{log}");
    assert!(
        log.contains("SAY-RELEASE-NOTES") && log.contains("DRAFT-SCRIPT"),
        "{log}"
    );
    assert!(
        log.contains("entry=paperclip") && !log.contains("entry=triage"),
        "{log}"
    );
    assert!(log.contains("sync=200"), "{log}");
    let after = server.ok_get(&format!("/api/agents/{aid}/skills")).await;
    let desired: Vec<&str> = after["desiredSkills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(
        desired,
        [
            notes["key"].as_str().unwrap(),
            &format!("company/{cid}/bundle-skill")
        ],
        "{after}"
    );
    let detail = server.ok_get(&format!("{base}/{notes_id}")).await;
    assert_eq!(detail["usedByAgents"][0]["id"], aid.as_str());

    // The board: the Skills page lists and opens a skill; the agent page
    // has the chosen one ticked.
    let company = server.ok_get(&format!("/api/companies/{cid}")).await;
    let prefix = company["issuePrefix"].as_str().unwrap();
    let page = common::visible_text(&server.page(&format!("/{prefix}/skills")).await);
    assert!(
        page.contains("Release Notes") && page.contains("Bundle Skill") && page.contains("Writer"),
        "{page}"
    );
    let opened = server
        .page(&format!(
            "/{prefix}/skills?skill={notes_id}&file=scripts/draft.sh"
        ))
        .await;
    assert!(
        opened.contains("DRAFT-SCRIPT") && opened.contains("references/style.md"),
        "{opened}"
    );
    let agent_page = server
        .page(&format!(
            "/{prefix}/agents/{}",
            agent["urlKey"].as_str().unwrap()
        ))
        .await;
    let ticked = format!("value=\"{}\" checked", notes["key"].as_str().unwrap());
    assert!(
        agent_page.contains("data-api-form=\"agent-skills\"") && agent_page.contains(&ticked),
        "{agent_page}"
    );

    // Every change is in the activity log.
    let actions = server.actions(&cid).await;
    for action in [
        "company.skills_imported",
        "company.skill_file_updated",
        "company.skill_update_installed",
        "agent.skills_synced",
    ] {
        assert!(
            actions.iter().any(|a| a == action),
            "{action} in {actions:?}"
        );
    }
    let (status, _) = server.delete(&format!("{base}/{gitty_id}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(server
        .actions(&cid)
        .await
        .iter()
        .any(|a| a == "company.skill_deleted"));
    let _ = std::fs::remove_dir_all(&src);
}
