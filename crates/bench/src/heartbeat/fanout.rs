//! Fan-out: many agents woken at once, and how long until each run starts.

use super::*;
use crate::server::Server;
use anyhow::Context;
use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message;

pub(crate) struct Fanout {
    pub(crate) subscribers: usize,
    pub(crate) patches: usize,
    /// Every (subscriber, `issue.updated`) delivery: PATCH sent -> frame read.
    pub(crate) delivery: Dist,
    /// Per event, until the last subscriber had it.
    pub(crate) to_all: Dist,
    /// PATCH round trips.
    pub(crate) patch: Dist,
    pub(crate) patch_secs: f64,
    /// Deliveries of `issue.updated` that never arrived.
    pub(crate) missing: usize,
    /// Frames of any type read by the subscribers.
    pub(crate) frames: usize,
    pub(crate) activity_frames: usize,
}

pub(crate) async fn bench_fanout(
    client: &reqwest::Client,
    server: &Server,
    args: &HeartbeatArgs,
) -> anyhow::Result<Fanout> {
    let company = crate::create_company(client, server, "Fanout Co").await?;
    let issue = expect_json(
        client
            .post(server.url(&format!("/api/companies/{company}/issues")))
            .json(&json!({ "title": "fanout" })),
        StatusCode::CREATED,
    )
    .await?;
    let issue_url = server.url(&format!("/api/issues/{}", id_of(&issue)?));
    let ws_url = format!(
        "{}/api/companies/{company}/events/ws",
        server.base.replacen("http://", "ws://", 1)
    );

    eprintln!(
        "fanout: connecting {} WebSocket subscribers...",
        args.subscribers
    );
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    // The last PATCH's title, quoted: seen in `issue.updated` and in
    // `activity.appended`, after which a subscriber has had everything.
    let last = format!("\"fanout-{}\"", args.patches.saturating_sub(1));
    let mut readers = Vec::new();
    for _ in 0..args.subscribers {
        // The server subscribes before it answers the upgrade, so once
        // connected a subscriber misses nothing published later.
        let (mut ws, _) = tokio_tungstenite::connect_async(&ws_url)
            .await
            .with_context(|| format!("connecting {ws_url}"))?;
        let mut stop = stop_rx.clone();
        let last = last.clone();
        let capacity = 2 * args.patches + 16;
        readers.push(tokio::spawn(async move {
            // Only timestamp and keep frames here; parse after the run so
            // this process's JSON work does not delay the next frame.
            let mut frames = Vec::with_capacity(capacity);
            let mut seen_last = 0;
            loop {
                tokio::select! {
                    msg = ws.next() => match msg {
                        Some(Ok(Message::Text(text))) => {
                            let at = Instant::now();
                            if text.as_str().contains(&last) {
                                seen_last += 1;
                            }
                            frames.push((at, text));
                            if seen_last >= 2 {
                                break;
                            }
                        }
                        Some(Ok(_)) => {}
                        _ => break,
                    },
                    _ = stop.changed() => break,
                }
            }
            let _ = ws.close(None).await;
            frames
        }));
    }

    eprintln!("fanout: {} title PATCHes, one at a time...", args.patches);
    let mut sent = Vec::with_capacity(args.patches);
    let mut patch = Dist::default();
    let started = Instant::now();
    for i in 0..args.patches {
        let at = Instant::now();
        sent.push(at);
        expect_json(
            client
                .patch(&issue_url)
                .json(&json!({ "title": format!("fanout-{i}") })),
            StatusCode::OK,
        )
        .await
        .context("patching the issue title")?;
        patch.push(at.elapsed().as_secs_f64() * 1000.0);
    }
    let patch_secs = started.elapsed().as_secs_f64();
    // Subscribers stop on their own once they have the last event; give the
    // stragglers 10 s.
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(10)).await;
        let _ = stop_tx.send(true);
    });

    let mut delivery = Dist::default();
    let mut to_all = vec![0f64; args.patches];
    let (mut missing, mut frames_total, mut activity_frames) = (0, 0, 0);
    for reader in readers {
        let frames = reader.await.context("subscriber task panicked")?;
        frames_total += frames.len();
        let mut got = vec![false; args.patches];
        for (at, text) in &frames {
            let event: Value = serde_json::from_str(text.as_str())?;
            // `issue.updated` carries the activity's details as its payload;
            // `activity.appended` carries the whole activity entry.
            let payload = &event["payload"];
            let changes = match payload.get("details") {
                Some(details) => &details["changes"],
                None => &payload["changes"],
            };
            let to = &changes["title"]["to"];
            let Some(i) = to
                .as_str()
                .and_then(|t| t.strip_prefix("fanout-"))
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&i| i < args.patches)
            else {
                continue;
            };
            match event["type"].as_str() {
                Some("issue.updated") if !got[i] => {
                    got[i] = true;
                    let ms = at.duration_since(sent[i]).as_secs_f64() * 1000.0;
                    delivery.push(ms);
                    to_all[i] = to_all[i].max(ms);
                }
                Some("activity.appended") => activity_frames += 1,
                _ => {}
            }
        }
        missing += got.iter().filter(|g| !**g).count();
    }
    let mut all = Dist::default();
    for ms in to_all {
        all.push(ms);
    }
    Ok(Fanout {
        subscribers: args.subscribers,
        patches: args.patches,
        delivery: delivery.finish(),
        to_all: all.finish(),
        patch: patch.finish(),
        patch_secs,
        missing,
        frames: frames_total,
        activity_frames,
    })
}

// ----------------------------------------------------------------- report
