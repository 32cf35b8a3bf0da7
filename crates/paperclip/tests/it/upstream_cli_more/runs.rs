//! Runs and what the CLI reads of them, a heartbeat streamed to the
//! terminal, agent keys, the shell setup for a local agent CLI, prompts as
//! an agent and as the board, an agent's inbox, skills and instructions
//! files, and the instance's self-descriptions.

use serde_json::json;

use super::More;

#[tokio::test]
async fn upstream_cli_runs_keys_prompts_and_instructions_work_against_us() {
    let Some((s, mut t)) = More::start().await else {
        return;
    };
    let cid = t.var("cid");
    let runner = s
        .script_agent(&cid, "Runner", "echo hello-from-the-run\n", json!({}))
        .await;
    let aid = t.set("aid", &runner);

    // One heartbeat, streamed by the CLI until it ends.
    let streamed = t.ok("heartbeat run -a {aid} --timeout-ms 60000").await;
    // A run this short ends before the CLI polls its log: `run log` reads it.
    assert!(
        streamed.stdout.contains("completed with status succeeded"),
        "{}",
        streamed.stdout
    );
    let runs = s.runs_of(&cid, &aid).await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "succeeded");
    let rid = t.set("rid", &runs[0]);

    let listed = t.json("run list -C {cid} --agent-id {aid}").await;
    assert_eq!(listed[0]["id"], rid.as_str(), "{listed}");
    let run = t.json("run get {rid}").await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let events = t.json("run events {rid}").await;
    assert!(events.as_array().is_some_and(|e| !e.is_empty()), "{events}");
    let log = t.json("run log {rid}").await;
    assert!(
        log["content"]
            .as_str()
            .is_some_and(|c| c.contains("hello-from-the-run")),
        "{log}"
    );
    let issues = t.json("run issues {rid}").await;
    assert_eq!(
        issues,
        s.ok_get(&format!("/api/heartbeat-runs/{rid}/issues")).await
    );
    let ops = t.json("run workspace-operations {rid}").await;
    assert!(ops.is_array(), "{ops}");

    // A run that would outlive the test, cancelled from the CLI.
    let sleeper = s
        .script_agent(&cid, "Sleeper", "sleep 120\n", json!({}))
        .await;
    let sleeper_id = sleeper["id"].as_str().unwrap().to_string();
    let queued = s.wake(&sleeper_id, json!({ "source": "on_demand" })).await;
    t.set("sid", &queued);
    let sid = t.var("sid");
    s.wait_for(&format!("/api/heartbeat-runs/{sid}"), 30, |r| {
        r["status"] == "running"
    })
    .await;
    let live = t.json("run live -C {cid}").await;
    assert!(
        live.as_array()
            .is_some_and(|l| l.iter().any(|r| r["id"] == sid.as_str())),
        "{live}"
    );
    t.json("run cancel {sid}").await;
    let cancelled = s
        .wait_for(&format!("/api/heartbeat-runs/{sid}"), 30, |r| {
            r["status"] != "running"
        })
        .await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");

    // Agent keys: made, listed and revoked by the board.
    let made = t
        .json("token agent create -C {cid} --agent {aid} --name deploy")
        .await;
    assert!(made["key"]["token"].is_string(), "{made}");
    t.vars
        .insert("kid", made["key"]["id"].as_str().unwrap().to_string());
    let keys = t.json("token agent list -C {cid} --agent {aid}").await;
    assert!(
        keys["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["id"] == made["key"]["id"] && k["name"] == "deploy"),
        "{keys}"
    );
    t.json("token agent revoke {kid} -C {cid} --agent {aid}")
        .await;
    let (status, _) = s
        .as_agent(
            made["key"]["token"].as_str().unwrap(),
            None,
            "GET",
            "/api/agents/me",
            None,
        )
        .await;
    assert_eq!(status, 401, "a revoked key no longer works");

    // A key and the shell exports for running the agent's CLI by hand.
    let local = t
        .json("agent local-cli {aid} -C {cid} --key-name laptop --no-install-skills")
        .await;
    let token = local["key"]["token"].as_str().unwrap().to_string();
    assert!(local["exports"].as_str().unwrap().contains(&aid), "{local}");
    t.vars.insert("tok", token.clone());
    let me = s
        .as_agent(&token, None, "GET", "/api/agents/me", None)
        .await;
    assert_eq!(me.1["id"], aid.as_str(), "the key is the agent's");

    // Prompts: as the agent (with its key) and as the board.
    let mine = t
        .json(r#"agent-prompt {aid} {tok} "Tidy the changelog" --no-wake"#)
        .await;
    let by_agent = mine["issue"]["id"].as_str().unwrap().to_string();
    let stored = s.ok_get(&format!("/api/issues/{by_agent}")).await;
    assert_eq!(stored["assigneeAgentId"], aid.as_str(), "{stored}");
    assert_eq!(stored["title"], "Tidy the changelog");
    let boards = t
        .json(r#"board prompt --agent {aid} -C {cid} --title Docs "Write the docs" --no-wake"#)
        .await;
    let by_board = boards["issue"]["id"].as_str().unwrap().to_string();
    let stored = s.ok_get(&format!("/api/issues/{by_board}")).await;
    assert_eq!(stored["title"], "Docs", "{stored}");
    assert_eq!(stored["description"], "Write the docs");
    let persona = t
        .json(r#"agent prompt --agent {aid} --api-key {tok} "Check the links" --no-wake"#)
        .await;
    let by_persona = persona["issue"]["id"].as_str().unwrap().to_string();
    let stored = s.ok_get(&format!("/api/issues/{by_persona}")).await;
    assert_eq!(stored["description"], "Check the links", "{stored}");
    assert_eq!(
        stored["createdByAgentId"],
        aid.as_str(),
        "made as the agent"
    );
    let inbox = t.json("agent inbox --api-key {tok}").await;
    let ids: Vec<&str> = inbox
        .as_array()
        .unwrap_or_else(|| panic!("{inbox}"))
        .iter()
        .filter_map(|i| i["id"].as_str())
        .collect();
    assert!(
        ids.contains(&by_agent.as_str()) && ids.contains(&by_board.as_str()),
        "{inbox}"
    );

    // The agent's skills and instructions files.
    let skills = t.json("agent skills {aid}").await;
    assert_eq!(skills, s.ok_get(&format!("/api/agents/{aid}/skills")).await);
    t.json("agent instructions-file:put {aid} --path STYLE.md --content Be-brief")
        .await;
    let file = t
        .json("agent instructions-file:get {aid} --path STYLE.md")
        .await;
    assert_eq!(file["content"], "Be-brief", "{file}");
    let bundle = t.json("agent instructions-bundle {aid}").await;
    assert!(
        bundle["files"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["path"] == "STYLE.md")),
        "{bundle}"
    );
    t.json("agent instructions-file:delete {aid} --path STYLE.md")
        .await;
    let (status, _) = s
        .get(&format!(
            "/api/agents/{aid}/instructions-bundle/file?path=STYLE.md"
        ))
        .await;
    assert_eq!(status, 404, "the file is gone");

    let file = s.data_dir.join("RULES.md");
    std::fs::write(&file, "Rules\n").unwrap();
    let body = json!({ "path": file.to_str().unwrap() }).to_string();
    let set = t
        .argv(&[
            "agent",
            "instructions-path:update",
            &aid,
            "--payload-json",
            &body,
        ])
        .await;
    assert_eq!(set["path"], file.to_str().unwrap(), "{set}");
    let stored = s.ok_get(&format!("/api/agents/{aid}")).await;
    assert_eq!(
        stored["adapterConfig"]["instructionsFilePath"],
        file.to_str().unwrap()
    );

    // What the instance says of itself.
    let who = t.json("access whoami").await;
    assert!(who.is_object(), "{who}");
    let spec = t.json("openapi").await;
    assert!(spec["paths"]["/api/heartbeat-runs/{runId}"].is_object());
    let guide = t.ok("llm agent-configuration").await;
    assert!(guide.stdout.contains("process"), "{}", guide.stdout);
    let one = t.ok("llm agent-configuration:adapter process").await;
    assert!(one.stdout.contains("Adapter: process"), "{}", one.stdout);

    t.ran("runs, keys, prompts, instructions", 27);
}
