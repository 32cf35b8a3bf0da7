//! A board tab's live event stream, and a graceful shutdown that must end it
//! (the shutdown tests of local trusted mode and of a run in flight).

use std::time::Duration;

use super::TestServer;

/// A company's live event stream (SSE), as a board tab opens it.
pub async fn event_stream(server: &TestServer, cid: &str) -> reqwest::Response {
    server
        .client()
        .get(server.url(&format!("/api/companies/{cid}/events")))
        .send()
        .await
        .unwrap()
}

/// Stops the server with SIGTERM: it must exit within 5 s, and must have
/// ended `sse` (its last chunk, a clean end) rather than the connection
/// being cut when the process went away.
pub async fn terminate_ending_stream(server: &mut TestServer, mut sse: reqwest::Response) {
    let exited = server.terminate(5).await;
    assert!(exited, "the server was still running 5 s after SIGTERM");
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match sse.chunk().await {
                Ok(Some(_)) => continue,
                other => return other.map_err(|e| e.to_string()),
            }
        }
    })
    .await
    .expect("the SSE stream stayed open after exit");
    assert_eq!(end, Ok(None), "the SSE stream was cut, not ended");
}
