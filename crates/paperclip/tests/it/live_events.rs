//! Live events over WebSocket: the envelope, the event types a page needs,
//! and replay of what was missed after a reconnect.

use crate::common;

use std::time::Duration;

use common::TestServer;
use futures::StreamExt;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

async fn collect_until(
    ws: &mut (impl futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>>
              + Unpin),
    stop: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut seen = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let next = tokio::time::timeout_at(deadline, ws.next())
            .await
            .expect("events stopped arriving");
        if let Some(Ok(Message::Text(text))) = next {
            let event: Value = serde_json::from_str(&text).unwrap();
            let done = stop(&event);
            seen.push(event);
            if done {
                return seen;
            }
        }
    }
}

#[tokio::test]
async fn a_run_streams_its_lifecycle_and_a_reconnect_replays_what_was_missed() {
    let server = TestServer::start().await;
    let cid = server.company("Live Co").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let agent = server
        .script_agent(&cid, "Talker", "echo hello from the agent\n", json!({}))
        .await;
    let aid = agent["id"].as_str().unwrap();
    let ws_url = format!(
        "{}/api/companies/{cid}/events/ws",
        server.base.replace("http://", "ws://")
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(&ws_url).await.unwrap();

    let issue = server
        .issue(
            &cid,
            json!({ "title": "Say hello", "status": "todo", "assigneeAgentId": aid }),
        )
        .await;
    let events = collect_until(&mut ws, |e| e["type"] == "heartbeat.run.finished").await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for expected in [
        "issue.created",
        "activity.appended",
        "heartbeat.run.queued",
        "heartbeat.run.started",
        "heartbeat.run.status",
        "agent.status.changed",
        "heartbeat.run.log",
        "heartbeat.run.finished",
    ] {
        assert!(types.contains(&expected), "{expected} in {types:?}");
    }
    for event in &events {
        for key in [
            "eventId",
            "companyId",
            "type",
            "entityType",
            "entityId",
            "occurredAt",
            "payload",
        ] {
            assert!(event.get(key).is_some(), "{key} in {event}");
        }
        assert_eq!(event["companyId"], cid.as_str());
    }
    let ids: Vec<u64> = events
        .iter()
        .map(|e| e["eventId"].as_u64().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "event ids increase");
    let log = events
        .iter()
        .find(|e| e["type"] == "heartbeat.run.log" && e["payload"]["stream"] == "stdout")
        .unwrap();
    assert_eq!(
        log["payload"]["chunk"].as_str().unwrap().trim(),
        "hello from the agent"
    );
    let last_seen = *ids.last().unwrap();
    drop(ws);

    // While disconnected: a comment and a status change.
    server
        .ok_post(
            &format!("/api/issues/{}/comments", issue["id"].as_str().unwrap()),
            json!({ "body": "while you were away" }),
        )
        .await;
    server
        .ok_patch(
            &format!("/api/issues/{}", issue["id"].as_str().unwrap()),
            json!({ "priority": "low" }),
        )
        .await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("{ws_url}?lastEventId={last_seen}"))
        .await
        .unwrap();
    let replayed = collect_until(&mut ws, |e| {
        e["type"] == "issue.updated" && e["payload"]["changes"]["priority"].is_object()
    })
    .await;
    assert!(
        replayed
            .iter()
            .all(|e| e["eventId"].as_u64().unwrap() > last_seen),
        "only missed events are replayed"
    );
    assert!(replayed
        .iter()
        .any(|e| e["type"] == "issue.comment.created"));

    let (status, _) = server.get(&format!("/api/companies/{cid}/events/ws")).await;
    assert_eq!(status, 400, "a plain GET is not a WebSocket handshake");
}

/// A page names the live event its data is as new as, and its stream starts
/// there: an event between the render and the subscription (a run starting
/// just after a task was created from a dialog) is replayed, not lost.
#[tokio::test]
async fn a_page_subscribes_from_the_event_it_was_rendered_at() {
    let server = TestServer::start().await;
    let company = server.company("Render Co").await;
    let cid = company["id"].as_str().unwrap();
    let prefix = company["issuePrefix"].as_str().unwrap();
    let html = server.page(&format!("/{prefix}/dashboard")).await;
    let from: u64 = html
        .split("data-live-from=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("the page names no live position: {html}"));

    // After the render and before the page subscribes.
    let issue = server
        .issue(cid, json!({ "title": "Created meanwhile" }))
        .await;
    let ws_url = format!(
        "{}/api/companies/{cid}/events/ws?lastEventId={from}",
        server.base.replace("http://", "ws://")
    );
    let (mut ws, _) = tokio_tungstenite::connect_async(&ws_url).await.unwrap();
    let events = collect_until(&mut ws, |e| e["type"] == "issue.created").await;
    let created = events.last().unwrap();
    assert_eq!(created["entityId"], issue["id"]);
    assert!(created["eventId"].as_u64().unwrap() > from);
}
