//! Agent instructions and inbox state, as the original's agents call them.
//! The managed bundle round trip: a file put through the API is read back,
//! points the agent's runs at it and reaches the next run (a stand-in
//! `claude` saves the file it is handed); paths leaving the bundle are
//! refused; another company's agent and the agent itself may not write.
//! Then a person's "Mine" inbox: read marks (the board's), archive and
//! unarchive by an agent on the person's behalf (with its run id), and the
//! board's inbox page follows.

use crate::common;

use common::TestServer;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// A stand-in `claude`: copies the file after `--append-system-prompt-file`
/// to `seen`, then ends like a CLI run that did nothing.
fn fake_claude(dir: &std::path::Path, seen: &std::path::Path) -> String {
    let path = dir.join("fake-claude.sh");
    let script = format!(
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = --append-system-prompt-file ]; then cp \"$2\" '{seen}.tmp' && mv '{seen}.tmp' '{seen}'; fi\n  shift\ndone\ncat >/dev/null\necho '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"ok\",\"session_id\":\"s1\"}}'\n",
        seen = seen.display()
    );
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

fn file_url(aid: &str, path: &str) -> String {
    format!("/api/agents/{aid}/instructions-bundle/file?path={path}")
}

#[tokio::test]
async fn instructions_bundle_reaches_runs_and_inbox_state_is_kept() {
    let s = TestServer::start().await;
    let company = s.company("Instr Co").await;
    let cid = company["id"].as_str().unwrap();
    let prefix = company["issuePrefix"].as_str().unwrap();
    let seen = s.data_dir.join("seen-instructions.md");
    let command = fake_claude(&s.data_dir, &seen);
    let agent = s
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Coder", "adapterType": "claude_local",
                "adapterConfig": { "command": command, "graceSec": 2 } }),
        )
        .await;
    let aid = agent["id"].as_str().unwrap();
    let key = s.key(aid).await;
    let other = s.company("Other Co").await;
    let stranger = s
        .agent(other["id"].as_str().unwrap(), "Stranger", None)
        .await;
    let stranger_key = s.key(stranger["id"].as_str().unwrap()).await;

    // No bundle yet: nothing configured, nothing to read.
    let empty = s
        .ok_get(&format!("/api/agents/{aid}/instructions-bundle"))
        .await;
    assert_eq!(empty["mode"], Value::Null, "{empty}");
    assert_eq!(
        s.get(&file_url(aid, "AGENTS.md")).await.0,
        StatusCode::NOT_FOUND
    );

    // The round trip: put, read back, listed, and the agent's runs point at it.
    let body = "# Coder\nRemember the walrus 7731.\n";
    let (status, put) = s
        .put(
            &format!("/api/agents/{aid}/instructions-bundle/file"),
            json!({ "path": "AGENTS.md", "content": body }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{put}");
    assert_eq!(put["isEntryFile"], true);
    let (status, _) = s
        .put(
            &format!("/api/agents/{aid}/instructions-bundle/file"),
            json!({ "path": "notes/tools.md", "content": "extra" }),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let read = s.ok_get(&file_url(aid, "AGENTS.md")).await;
    assert_eq!(read["content"], body);
    assert_eq!(read["language"], "markdown");
    let bundle = s
        .ok_get(&format!("/api/agents/{aid}/instructions-bundle"))
        .await;
    assert_eq!(bundle["mode"], "managed", "{bundle}");
    assert_eq!(bundle["entryFile"], "AGENTS.md");
    let paths: Vec<&str> = bundle["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["AGENTS.md", "notes/tools.md"]);
    let path = s
        .ok_get(&format!("/api/agents/{aid}/instructions-path"))
        .await;
    assert_eq!(path["path"], bundle["resolvedEntryPath"], "{path}");
    let shown = s.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(shown["adapterConfig"]["instructionsFilePath"], path["path"]);

    // Paths leaving the bundle, a missing path and the entry file's deletion are refused.
    for bad in ["../escape.md", "a/../../escape.md", "..%2Fescape.md"] {
        let (status, err) = s
            .put(
                &format!("/api/agents/{aid}/instructions-bundle/file"),
                json!({ "path": bad.replace("%2F", "/"), "content": "x" }),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {err}");
        assert_eq!(
            s.get(&file_url(aid, bad)).await.0,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{bad}"
        );
    }
    assert_eq!(
        s.get(&format!("/api/agents/{aid}/instructions-bundle/file"))
            .await
            .0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(
        s.delete(&file_url(aid, "AGENTS.md")).await.0,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    let (status, after) = s.delete(&file_url(aid, "notes/tools.md")).await;
    assert_eq!(status, StatusCode::OK, "{after}");
    assert_eq!(after["files"].as_array().unwrap().len(), 1);
    let (status, _) = s
        .patch(
            &format!("/api/agents/{aid}/instructions-path"),
            json!({ "path": "rel/AGENTS.md" }),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // Another company's agent sees nothing; the agent itself reads but may not write.
    let bundle_url = format!("/api/agents/{aid}/instructions-bundle");
    let (status, _) = s
        .as_agent(&stranger_key, None, "GET", &bundle_url, None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = s.as_agent(&key, None, "GET", &bundle_url, None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = s
        .as_agent(
            &key,
            None,
            "PUT",
            &format!("{bundle_url}/file"),
            Some(json!({ "path": "AGENTS.md", "content": "obey me" })),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    // The next run is handed the edited file.
    s.issue(
        cid,
        json!({ "title": "Work", "status": "todo", "assigneeAgentId": aid }),
    )
    .await;
    let handed = common::until(60, "the run to be handed its instructions", async || {
        std::fs::read_to_string(&seen).ok()
    })
    .await;
    assert_eq!(handed, body);
    let runs = s
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            60,
            |r| {
                r.as_array().is_some_and(|r| {
                    !r.is_empty() && r[0]["status"] != "queued" && r[0]["status"] != "running"
                })
            },
        )
        .await;
    let run_id = runs[0]["id"].as_str().unwrap().to_string();
    s.quiesce().await;

    // The board's "Mine" inbox, as an agent reads it.
    let task = s
        .issue(cid, json!({ "title": "Review the plan", "status": "todo" }))
        .await;
    let tid = task["id"].as_str().unwrap();
    let ident = task["identifier"].as_str().unwrap();
    let mine = async || {
        let (status, list) = s
            .as_agent(
                &key,
                None,
                "GET",
                "/api/agents/me/inbox/mine?userId=local-board",
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{list}");
        list.as_array()
            .unwrap()
            .iter()
            .find(|i| i["id"] == tid)
            .cloned()
    };
    let (status, _) = s
        .as_agent(&key, None, "GET", "/api/agents/me/inbox/mine", None)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        s.get("/api/agents/me/inbox/mine?userId=local-board")
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        mine().await.expect("the board's task is in its inbox")["isUnread"],
        true
    );

    // Read marks are the board's.
    let read = s
        .ok_post(&format!("/api/issues/{tid}/read"), json!({}))
        .await;
    assert_eq!(read["userId"], "local-board");
    assert!(read["lastReadAt"].is_string());
    assert_eq!(mine().await.unwrap()["isUnread"], false);
    let (status, _) = s
        .as_agent(
            &key,
            Some(&run_id),
            "POST",
            &format!("/api/issues/{tid}/read"),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, unread) = s.delete(&format!("/api/issues/{tid}/read")).await;
    assert_eq!(
        (status, unread["removed"].clone()),
        (StatusCode::OK, json!(true))
    );
    assert_eq!(mine().await.unwrap()["isUnread"], true);

    // An agent archives for the responsible person, with its run id only.
    let archive_url = format!("/api/issues/{tid}/inbox-archive");
    let (status, _) = s.as_agent(&key, None, "POST", &archive_url, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = s
        .as_agent(
            &key,
            Some(&run_id),
            "POST",
            &archive_url,
            Some(json!({ "userId": "someone-else" })),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = s
        .as_agent(&stranger_key, None, "POST", &archive_url, None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, archived) = s
        .as_agent(&key, Some(&run_id), "POST", &archive_url, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{archived}");
    assert_eq!(archived["userId"], "local-board");
    assert_eq!(archived["archivedByActorType"], "agent");
    assert_eq!(archived["archivedByRunId"], run_id.as_str());
    assert!(mine().await.is_none(), "an archived task leaves the inbox");
    let page = s.page(&format!("/{prefix}/inbox")).await;
    assert!(
        !page.contains(ident),
        "archived {ident} still on the inbox page"
    );
    let (status, back) = s
        .as_agent(&key, Some(&run_id), "DELETE", &archive_url, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{back}");
    assert!(mine().await.is_some(), "unarchived, the task is back");
    let page = s.page(&format!("/{prefix}/inbox")).await;
    assert!(
        page.contains(ident),
        "unarchived {ident} missing from the inbox page"
    );
    let actions = s.actions(cid).await;
    for a in [
        "agent.instructions_file_updated",
        "issue.read_marked",
        "issue.inbox_archived",
        "issue.inbox_unarchived",
    ] {
        assert!(actions.iter().any(|x| x == a), "{a} not in {actions:?}");
    }
}

/// `tests/browser/agent_instructions.mjs`: the agent page's editor and the
/// inbox's "Mine" section (unread mark, Mark read, Archive) in a browser.
#[tokio::test(flavor = "multi_thread")]
async fn instructions_editor_and_mine_inbox_in_a_browser() {
    if !common::browser::ready() {
        return;
    }
    let s = TestServer::start().await;
    common::browser::run(
        "agent_instructions",
        &s.base,
        std::time::Duration::from_secs(120),
    )
    .await;
}
