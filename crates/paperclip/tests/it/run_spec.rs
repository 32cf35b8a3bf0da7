//! The rest of seed 004's agent-runs spec: the prompt's new pills
//! (`run.startedAt`, `paperclip.skill`, `credentials.*`) and its preview
//! with credentials masked; `heartbeat.started` and `runtime_state.updated`
//! on the run's timeline; an adapter's coloured status line (a process
//! agent's `PAPERCLIP_STATUS:` lines) on the timeline, the run page and the
//! agent's card; and `log_unavailable` for a finished run whose log is gone.
//! The board's polling fallback is the browser scenario `runspec`.

use std::time::Duration;

use crate::common;

use common::TestServer;
use serde_json::{json, Value};

/// Prints the prompt it got, a blue status, waits for `$GO`, a green one.
const WORKER: &str = "cat\n\
    echo 'PAPERCLIP_STATUS: blue reading the task'\n\
    while [ ! -f \"$GO\" ]; do sleep 0.05; done\n\
    echo 'PAPERCLIP_STATUS: GREEN all done'\n";

const TEMPLATE: &str = "Run {{run.id}} began {{ run.startedAt }}.\n\
    Key: {{credentials.apiKey}} at {{credentials.apiBaseUrl}}\n{{paperclip.skill}}";

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

/// Deletes the stored log of a run behind the server's back.
async fn delete_log(server: &TestServer, cid: &str, run_id: &str) {
    match &server.database_url {
        None => std::fs::remove_file(common::run_logs::file(server, cid, run_id)).unwrap(),
        Some(url) => {
            let db = common::database(url).await;
            sqlx::query("DELETE FROM run_log_chunks WHERE CAST(run_id AS TEXT) = $1")
                .bind(run_id)
                .execute(&db)
                .await
                .unwrap();
            db.close().await;
        }
    }
}

#[tokio::test]
async fn pills_preview_run_events_status_lines_and_a_missing_log() {
    let server = TestServer::start().await;
    let company = server.company("Spec Works").await;
    let cid = s(&company["id"]).to_string();
    let prefix = s(&company["issuePrefix"]).to_string();
    let go = server.data_dir.join("go");
    let agent = server
        .script_agent(
            &cid,
            "Speccer",
            WORKER,
            json!({ "promptTemplate": TEMPLATE, "env": { "GO": go.to_str().unwrap() } }),
        )
        .await;
    let aid = s(&agent["id"]).to_string();

    // The preview: the saved template for a sample wake, credentials masked.
    let preview = server
        .ok_post(&format!("/api/agents/{aid}/prompt-preview"), json!({}))
        .await;
    assert_eq!(preview["source"], "agent");
    let prompt = s(&preview["prompt"]);
    assert!(
        prompt.contains(
            "Key: [credentials.apiKey: resolved at run time, hidden] at [credentials.apiBaseUrl"
        ),
        "{prompt}"
    );
    assert!(
        !prompt.contains(&server.base) && !prompt.contains("eyJ"),
        "{prompt}"
    );
    assert!(
        prompt.contains("Paperclip"),
        "the skill text is in: {prompt}"
    );
    assert_eq!(
        preview["sensitive"],
        json!(["credentials.apiKey", "credentials.apiBaseUrl"])
    );
    assert_eq!(
        preview["variables"][1],
        json!({ "name": "run.startedAt", "sensitive": false })
    );
    let task = server.issue(&cid, json!({ "title": "Preview me" })).await;
    let about = server
        .ok_post(
            &format!("/api/agents/{aid}/prompt-preview"),
            json!({ "promptTemplate": "Work on {{task.identifier}}: {{task.title}}", "issueId": task["id"] }),
        )
        .await;
    assert_eq!(about["source"], "request");
    assert_eq!(
        about["prompt"],
        format!("Work on {}: Preview me", s(&task["identifier"]))
    );
    assert_eq!(about["sensitive"], json!([]));
    let blank = server
        .ok_post(
            &format!("/api/agents/{aid}/prompt-preview"),
            json!({ "promptTemplate": " " }),
        )
        .await;
    assert_eq!(blank["source"], "default");
    assert!(
        s(&blank["prompt"]).starts_with("You are Speccer"),
        "{blank}"
    );
    let (status, body) = server
        .post(
            &format!("/api/agents/{aid}/prompt-preview"),
            json!({ "promptTemplate": "{{agent.password}}" }),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["details"][0]["path"], json!(["promptTemplate"]));
    let (status, _) = server
        .post(
            "/api/agents/00000000-0000-4000-8000-000000000009/prompt-preview",
            json!({}),
        )
        .await;
    assert_eq!(status, 404);

    // A run: its status lines live on its timeline, page and card.
    let mut sse = common::streams::event_stream(&server, &cid).await;
    server.wake(&aid, json!({})).await;
    let live = tokio::time::timeout(Duration::from_secs(20), async {
        let mut seen = String::new();
        while let Some(chunk) = sse.chunk().await.unwrap() {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if let Some(at) = seen.find("\"message\":\"reading the task\"") {
                let start = seen[..at].rfind("event:").unwrap();
                return seen[start..].lines().take(3).collect::<Vec<_>>().join("\n");
            }
        }
        panic!("the stream ended: {seen}");
    })
    .await
    .expect("a live status event within 20 s");
    assert!(live.starts_with("event: heartbeat.run.status"), "{live}");
    assert!(live.contains("\"color\":\"blue\""), "{live}");
    let running = common::until(30, "the blue status on the dashboard card", async || {
        let page = server.page(&format!("/{prefix}/dashboard")).await;
        page.contains("reading the task").then_some(page)
    })
    .await;
    assert!(
        running.contains("data-status-line=\"blue\""),
        "the card shows the colour"
    );
    std::fs::write(&go, "").unwrap();
    let run = server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={aid}"),
            30,
            |r| r[0]["status"] == "succeeded",
        )
        .await[0]
        .clone();
    let run_id = s(&run["id"]).to_string();
    let events = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/events"))
        .await;
    let events = events.as_array().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| s(&e["eventType"])).collect();
    let at = |k: &str| {
        kinds
            .iter()
            .position(|x| *x == k)
            .unwrap_or_else(|| panic!("no {k} in {kinds:?}"))
    };
    assert!(at("heartbeat.started") < at("adapter.status"));
    assert!(at("adapter.status") < at("runtime_state.updated"));
    let started = &events[at("heartbeat.started")];
    assert_eq!(
        started["payload"]["invocationSource"],
        run["invocationSource"]
    );
    assert_eq!(started["payload"]["startedAt"], run["startedAt"]);
    let statuses: Vec<(&str, &Value)> = events
        .iter()
        .filter(|e| e["eventType"] == "adapter.status")
        .map(|e| (s(&e["message"]), &e["payload"]["color"]))
        .collect();
    assert_eq!(
        statuses,
        [
            ("reading the task", &json!("blue")),
            ("all done", &json!("green"))
        ]
    );
    let updated = &events[at("runtime_state.updated")];
    assert_eq!(updated["payload"]["lastRunStatus"], "succeeded");
    assert_eq!(updated["payload"]["lastRunId"], run_id.as_str());
    assert!(updated["payload"]["changed"]
        .as_array()
        .unwrap()
        .contains(&json!("lastRunStatus")));

    // The prompt the agent got: the new pills filled, the key redacted.
    let log = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/log"))
        .await;
    assert_eq!(log["status"], "available");
    let content = s(&log["content"]);
    assert!(
        content.contains(&format!("Run {run_id} began {}", s(&run["startedAt"]))),
        "{content}"
    );
    assert!(
        content.contains(&format!(" at {}", server.base)),
        "{content}"
    );
    assert!(
        !content.contains("eyJ"),
        "the run key is redacted from the log"
    );
    assert!(content.contains("Key: "), "{content}");

    let base = format!("/{prefix}/agents/{}/runs/{run_id}", s(&agent["urlKey"]));
    let page = server.page(&base).await;
    assert!(
        page.contains("data-status-line=\"green\""),
        "the run page shows its last status"
    );
    assert!(common::visible_text(&page).contains("all done (its last status)"));

    // The log deleted behind the server's back: log_unavailable, excerpts kept.
    delete_log(&server, &cid, &run_id).await;
    let gone = server
        .ok_get(&format!("/api/heartbeat-runs/{run_id}/log"))
        .await;
    assert_eq!(gone["status"], "log_unavailable", "{gone}");
    assert_eq!(gone["content"], "");
    assert!(s(&gone["unavailableReason"]).contains("missing"), "{gone}");
    assert!(s(&gone["stdoutExcerpt"]).contains("all done"), "{gone}");
    let text = common::visible_text(&server.page(&base).await);
    assert!(text.contains("Log unavailable."), "{text}");
    assert!(text.contains("stdout (excerpt)"), "{text}");

    // A run refused before its adapter started never had a log.
    let broken = server
        .ok_post(
            &format!("/api/companies/{cid}/agents"),
            json!({ "name": "Nobody", "adapterType": "openclaw", "adapterConfig": {} }),
        )
        .await;
    let bid = s(&broken["id"]).to_string();
    server.wake(&bid, json!({})).await;
    let refused = server
        .wait_for(
            &format!("/api/companies/{cid}/heartbeat-runs?agentId={bid}"),
            30,
            |r| r[0]["status"] == "failed",
        )
        .await;
    let never = server
        .ok_get(&format!("/api/heartbeat-runs/{}/log", s(&refused[0]["id"])))
        .await;
    assert_eq!(never["status"], "log_unavailable", "{never}");
    assert!(s(&never["unavailableReason"]).contains("before its adapter started"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_board_polls_while_live_events_are_blocked_and_shows_status_and_pills() {
    if !common::browser::ready() {
        return;
    }
    let server = TestServer::start().await;
    common::browser::run("runspec", &server.base, Duration::from_secs(120)).await;
}
