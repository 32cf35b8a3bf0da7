//! Bad bytes and slow or oversized requests: NUL in a URL or a body, a
//! declared 10 GB body, slow headers, slow bodies and idle connections.

use crate::common;

use std::time::{Duration, Instant};

use common::TestServer;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::{company, raw};

#[tokio::test]
async fn nul_in_a_url_or_a_body_is_a_400_on_every_engine() {
    let s = TestServer::start().await;
    let (cid, prefix) = company(&s).await;
    s.issue(&cid, json!({ "title": "Real" })).await;
    for path in [
        format!("/api/issues/{prefix}-1%00"),
        format!("/api/issues/%00{prefix}-1/comments"),
        format!("/api/companies/{cid}/issues?q=%00"),
        format!("/api/companies/{cid}%00/agents"),
    ] {
        let (status, body) = s.get(&path).await;
        assert_eq!(status, 400, "{path}: {body}");
    }
    let (status, body) = s
        .post(
            &format!("/api/companies/{cid}/issues"),
            json!({ "title": "a\u{0}b" }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(body["details"][0]["message"]
        .as_str()
        .unwrap()
        .contains("NUL"));
    let (status, _) = s
        .post(
            &format!("/api/issues/{prefix}-1/comments"),
            json!({ "body": "x\u{0}" }),
        )
        .await;
    assert_eq!(status, 400);
    // A backslash followed by "u0000" is ordinary text.
    let (status, _) = s
        .post(
            &format!("/api/issues/{prefix}-1/comments"),
            json!({ "body": "C string end: \\u0000" }),
        )
        .await;
    assert_eq!(status, 201);
    let (_, issues) = s.get(&format!("/api/companies/{cid}/issues")).await;
    assert_eq!(issues.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_declared_10_gb_body_is_refused_before_it_is_read() {
    let s = TestServer::start().await;
    let (cid, _) = company(&s).await;
    let started = Instant::now();
    let (status, text) = raw(
        &s,
        format!(
            "POST /api/companies/{cid}/issues HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n{{\"title\":",
            s.addr()
        ),
    )
    .await;
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("maxBytes"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(15));
}

/// Waits until the server closes `stream` (EOF or reset), up to `deadline`.
async fn closed_within(stream: &mut TcpStream, deadline: Duration) -> Option<Vec<u8>> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let end = Instant::now() + deadline;
    loop {
        let left = end.checked_duration_since(Instant::now())?;
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Some(seen),
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
            Err(_) => return None,
        }
    }
}

#[tokio::test]
async fn slow_headers_slow_bodies_and_idle_connections_are_closed() {
    let s = TestServer::start_args(&["--header-timeout", "1", "--body-timeout", "1"]).await;
    let (cid, _) = company(&s).await;

    // Slowloris: a header line every 200 ms, never the blank line.
    let mut slow = TcpStream::connect(s.addr()).await.unwrap();
    slow.write_all(format!("GET /api/health HTTP/1.1\r\nHost: {}\r\n", s.addr()).as_bytes())
        .await
        .unwrap();
    let started = Instant::now();
    let mut closed = false;
    while started.elapsed() < Duration::from_secs(10) {
        if slow.write_all(b"X-Slow: 1\r\n").await.is_err() {
            closed = true;
            break;
        }
        let mut byte = [0u8; 1];
        if let Ok(read) =
            tokio::time::timeout(Duration::from_millis(200), slow.read(&mut byte)).await
        {
            if matches!(read, Ok(0) | Err(_)) {
                closed = true;
                break;
            }
        }
    }
    assert!(closed, "a slowloris connection stayed open for 10 s");

    // A body trickled one byte at a time gets a 408 at the body deadline.
    let mut trickle = TcpStream::connect(s.addr()).await.unwrap();
    trickle
        .write_all(
            format!(
                "POST /api/companies/{cid}/issues HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{",
                s.addr()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let answer =
        tokio::spawn(async move { closed_within(&mut trickle, Duration::from_secs(10)).await });
    let answer = answer
        .await
        .unwrap()
        .expect("slow body still open after 10 s");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");

    // An idle keep-alive connection is closed after the header timeout.
    let mut idle = TcpStream::connect(s.addr()).await.unwrap();
    idle.write_all(format!("GET /api/health HTTP/1.1\r\nHost: {}\r\n\r\n", s.addr()).as_bytes())
        .await
        .unwrap();
    let seen = closed_within(&mut idle, Duration::from_secs(10))
        .await
        .expect("idle keep-alive connection still open after 10 s");
    assert!(String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"));

    // A connection that never sends anything is closed too.
    let mut silent = TcpStream::connect(s.addr()).await.unwrap();
    assert!(closed_within(&mut silent, Duration::from_secs(10))
        .await
        .is_some());
    // And the server still serves.
    assert_eq!(s.get("/api/health").await.0, 200);
}
