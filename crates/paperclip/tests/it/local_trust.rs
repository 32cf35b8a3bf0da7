//! Local trusted mode, attacked: web pages the board member visits, DNS
//! rebinding, agent processes without their key, and bad bytes in URLs and
//! bodies must never act as the board.

mod hostile_requests;

use crate::common;

use std::time::Duration;

use common::streams::{event_stream, terminate_ending_stream};
use common::TestServer;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends `request` (with `Connection: close`) as raw bytes; returns the status
/// and the body text.
async fn raw(s: &TestServer, request: String) -> (u16, String) {
    let mut stream = TcpStream::connect(s.addr()).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut out))
        .await
        .expect("the server answers")
        .unwrap();
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

fn post(path: &str, host: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut req = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    format!("{req}\r\n{body}")
}

async fn company(s: &TestServer) -> (String, String) {
    let c = s.company("Acme").await;
    (
        c["id"].as_str().unwrap().to_string(),
        c["issuePrefix"].as_str().unwrap().to_string(),
    )
}

#[tokio::test]
async fn a_cross_site_text_plain_post_cannot_comment_or_wake_an_agent() {
    let s = TestServer::start().await;
    let (cid, prefix) = company(&s).await;
    let bot = s.script_agent(&cid, "Bot", "exit 0", json!({})).await;
    let bot_id = bot["id"].as_str().unwrap();
    s.issue(&cid, json!({ "title": "Target" })).await;
    let path = format!("/api/issues/{prefix}-1/comments");
    let body = r#"{"body":"@Bot run this"}"#;
    let host = s.addr();
    let attacks = [
        // What a form or fetch(no-cors) on another site sends from a modern browser.
        vec![
            ("Content-Type", "text/plain"),
            ("Origin", "https://evil.test"),
            ("Sec-Fetch-Site", "cross-site"),
            ("Sec-Fetch-Mode", "no-cors"),
        ],
        // An old browser without fetch metadata still sends Origin on a POST.
        vec![("Content-Type", "text/plain"), ("Origin", "null")],
        // Another local port is another origin.
        vec![
            ("Content-Type", "application/json"),
            ("Origin", "http://127.0.0.1:1"),
        ],
        vec![
            ("Content-Type", "application/json"),
            ("Sec-Fetch-Site", "same-site"),
            ("Sec-Fetch-Mode", "cors"),
        ],
        // No browser headers at all, but not JSON either.
        vec![("Content-Type", "text/plain")],
        vec![("Content-Type", "application/x-www-form-urlencoded")],
        vec![("Content-Type", "multipart/form-data; boundary=x")],
        // A body with no type at all.
        vec![],
    ];
    for headers in &attacks {
        let (status, text) = raw(&s, post(&path, &host, headers, body)).await;
        assert!(
            status == 403 || status == 415,
            "{headers:?} got {status} {text}"
        );
        let error: Value = serde_json::from_str(&text).unwrap();
        assert!(error["error"].as_str().unwrap().len() > 10, "{text}");
    }
    let (_, comments) = s.get(&path).await;
    assert_eq!(comments.as_array().unwrap().len(), 0, "{comments}");
    assert!(s.runs_of(&cid, bot_id).await.is_empty());

    // The same comment from the board's own page goes through and wakes the
    // agent, so the refusals above were the guard and not a broken route.
    let same_origin = format!("http://{host}");
    let (status, text) = raw(
        &s,
        post(
            &path,
            &host,
            &[
                ("Content-Type", "application/json"),
                ("Origin", &same_origin),
                ("Sec-Fetch-Site", "same-origin"),
            ],
            body,
        ),
    )
    .await;
    assert_eq!(status, 201, "{text}");
    s.wait_for(
        &format!("/api/companies/{cid}/heartbeat-runs?agentId={bot_id}"),
        15,
        |runs| !runs.as_array().unwrap().is_empty(),
    )
    .await;
}

#[tokio::test]
async fn a_rebinding_host_name_can_neither_read_nor_create_a_process_agent() {
    let s = TestServer::start().await;
    let (cid, _) = company(&s).await;
    let port = s.addr().rsplit(':').next().unwrap().to_string();
    let marker = s.data_dir.join("pwned");
    let agent = json!({
        "name": "Rebound",
        "adapterType": "process",
        "adapterConfig": { "command": "touch", "args": [marker.to_str().unwrap()] },
    })
    .to_string();
    for host in [
        format!("evil.test:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
        format!("localhost.evil.test:{port}"),
        "0.0.0.0".to_string(),
    ] {
        let (status, text) = raw(
            &s,
            post(
                &format!("/api/companies/{cid}/agents"),
                &host,
                &[("Content-Type", "application/json")],
                &agent,
            ),
        )
        .await;
        assert_eq!(status, 421, "{host}: {text}");
        let (status, _) = raw(
            &s,
            format!("GET /api/companies HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert_eq!(status, 421, "{host}");
        let (status, _) = raw(
            &s,
            format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert_eq!(status, 421, "{host}");
    }
    let (_, agents) = s.get(&format!("/api/companies/{cid}/agents")).await;
    assert_eq!(agents.as_array().unwrap().len(), 0);
    assert!(!marker.exists());
    // Loopback names are the board's, whatever the port.
    for host in [format!("localhost:{port}"), format!("[::1]:{port}")] {
        let (status, _) = raw(
            &s,
            format!("GET /api/companies HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
        )
        .await;
        assert_eq!(status, 200, "{host}");
    }
}

#[tokio::test]
async fn a_public_url_is_served_under_its_own_name_only() {
    let s = TestServer::start_args(&["--public-url", "https://board.example.com"]).await;
    let ok = raw(
        &s,
        "GET /api/health HTTP/1.1\r\nHost: board.example.com\r\nConnection: close\r\n\r\n".into(),
    )
    .await;
    assert_eq!(ok.0, 200);
    let bad = raw(
        &s,
        "GET /api/health HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n".into(),
    )
    .await;
    assert_eq!(bad.0, 421);
}

#[tokio::test]
async fn live_streams_refuse_other_sites_and_serve_this_one() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let s = TestServer::start().await;
    let (cid, _) = company(&s).await;
    let ws_url = format!("ws://{}/api/companies/{cid}/events/ws", s.addr());
    let mut evil = ws_url.clone().into_client_request().unwrap();
    evil.headers_mut()
        .insert("origin", "https://evil.test".parse().unwrap());
    match tokio_tungstenite::connect_async(evil).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), 403)
        }
        other => panic!("cross-site WebSocket was not refused: {:?}", other.is_ok()),
    }
    let mut own = ws_url.into_client_request().unwrap();
    own.headers_mut()
        .insert("origin", format!("http://{}", s.addr()).parse().unwrap());
    assert!(tokio_tungstenite::connect_async(own).await.is_ok());

    let sse = s.url(&format!("/api/companies/{cid}/events"));
    let resp = s
        .client()
        .get(&sse)
        .header("origin", "https://evil.test")
        .header("sec-fetch-site", "cross-site")
        .header("sec-fetch-mode", "cors")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 403);
}

#[tokio::test]
async fn a_run_that_calls_without_its_key_is_refused_while_the_person_is_not() {
    let s = TestServer::start().await;
    let (cid, _) = company(&s).await;
    let go = s.data_dir.join("go");
    let probed = s.data_dir.join("probed");
    // The agent probes the API without its key (directly, from a child that
    // cleared its environment, for a page, and from a double-forked daemon
    // outside its process tree), then with it; it holds the
    // run open until the test has made its own call as the person.
    let script = format!(
        r#"
api="$PAPERCLIP_API_URL"
noauth=$(curl -s -o /dev/null -w '%{{http_code}}' "$api/api/companies")
mint=$(curl -s -o /dev/null -w '%{{http_code}}' -X POST -H 'content-type: application/json' -d '{{"name":"mine"}}' "$api/api/agents/$PAPERCLIP_AGENT_ID/keys")
cleared=$(env -i "$(command -v curl)" -s -o /dev/null -w '%{{http_code}}' "$api/api/companies")
page=$(curl -s -o /dev/null -w '%{{http_code}}' "$api/")
withkey=$(curl -s -o /dev/null -w '%{{http_code}}' -H "Authorization: Bearer $PAPERCLIP_API_KEY" "$api/api/agents/me")
# A double-forked daemon (reparented out of the run's tree, marker kept).
(setsid sh -c 'curl -s -o /dev/null -w "%{{http_code}}" "$0/api/companies" > "$1.tmp"; mv "$1.tmp" "$1"' "$api" "{forked}" </dev/null >/dev/null 2>&1 &)
i=0; while [ ! -f "{forked}" ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done
forked=$(cat "{forked}")
echo "noauth=$noauth mint=$mint cleared=$cleared page=$page withkey=$withkey forked=$forked" > "{probed}"
cat "{probed}"
i=0; while [ ! -f "{go}" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
"#,
        go = go.display(),
        probed = probed.display(),
        forked = s.data_dir.join("forked").display()
    );
    let agent = s.script_agent(&cid, "Prober", &script, json!({})).await;
    let aid = agent["id"].as_str().unwrap().to_string();
    let (_, run) = s
        .post(&format!("/api/agents/{aid}/wakeup"), json!({}))
        .await;
    let run_path = format!("/api/heartbeat-runs/{}", run["id"].as_str().unwrap());
    common::until(20, "the agent to probe the API", async || {
        std::fs::read_to_string(&probed)
            .ok()
            .filter(|t| t.contains("withkey="))
    })
    .await;
    let (_, live) = s.get(&run_path).await;
    assert_eq!(live["status"], "running");
    // The run is still live: the person's own request (this test process) is the board.
    let (status, _) = s.get("/api/companies").await;
    assert_eq!(status, 200);
    let (status, key) = s
        .post(
            &format!("/api/agents/{aid}/keys"),
            json!({ "name": "board's" }),
        )
        .await;
    assert_eq!(status, 201, "{key}");
    std::fs::write(&go, "").unwrap();
    let run = s
        .wait_for(&run_path, 20, |r| r["status"] == "succeeded")
        .await;
    assert_eq!(
        run["stdoutExcerpt"].as_str().unwrap().trim(),
        "noauth=401 mint=401 cleared=401 page=401 withkey=200 forked=401"
    );
    // Only the board's key exists; the run minted none.
    let (_, keys) = s.get(&format!("/api/agents/{aid}/keys")).await;
    assert_eq!(keys.as_array().unwrap().len(), 1, "{keys}");
}

#[tokio::test]
async fn the_data_dir_is_private_and_pages_cannot_be_framed() {
    use std::os::unix::fs::PermissionsExt;
    let s = TestServer::start().await;
    let (_, prefix) = company(&s).await;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&s.data_dir), 0o700);
    if s.database_url.is_none() {
        assert_eq!(mode(&s.data_dir.join("paperclip.db")), 0o600);
    }
    for path in [format!("/{prefix}/dashboard"), "/".to_string()] {
        let resp = s.client().get(s.url(&path)).send().await.unwrap();
        let h = resp.headers();
        let csp = h["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        assert!(csp.contains("script-src 'self'"), "{csp}");
        assert_eq!(h["x-frame-options"], "DENY");
        assert_eq!(h["x-content-type-options"], "nosniff");
    }
    let resp = s.client().get(s.url("/api/health")).send().await.unwrap();
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
}

#[tokio::test]
async fn live_subscribers_are_capped_per_company() {
    let s = TestServer::start_args(&["--max-subscribers", "3"]).await;
    let (cid, _) = company(&s).await;
    let other = s.company("Other").await["id"].as_str().unwrap().to_string();
    let ws_url = format!("ws://{}/api/companies/{cid}/events/ws", s.addr());
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(tokio_tungstenite::connect_async(&ws_url).await.unwrap().0);
    }
    match tokio_tungstenite::connect_async(&ws_url).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), 429)
        }
        other => panic!("a 4th subscriber was let in: {:?}", other.is_ok()),
    }
    let sse = event_stream(&s, &cid).await;
    assert_eq!(sse.status(), 429);
    // Another company has its own places.
    let sse = event_stream(&s, &other).await;
    assert_eq!(sse.status(), 200);
    // Closing one gives its place back.
    let mut first = held.remove(0);
    first.close(None).await.unwrap();
    common::until(
        10,
        "the closed subscriber's place to be given back",
        async || tokio_tungstenite::connect_async(&ws_url).await.ok(),
    )
    .await;
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// 1,000 SSE and 1,000 WebSocket subscribers (the default cap per company)
/// stay live within a stated memory per subscriber: 64 KiB each. The
/// figures are printed for BENCHMARKS.md.
#[tokio::test]
async fn two_thousand_live_subscribers_fit_in_a_bounded_memory() {
    use futures::StreamExt;
    const N: usize = 1000;
    const MAX_KIB_PER_SUBSCRIBER: u64 = 64;
    let s = TestServer::start().await;
    let (sse_co, _) = company(&s).await;
    let ws_co = s.company("Sockets").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let sse_url = s.url(&format!("/api/companies/{sse_co}/events"));
    let ws_url = format!("ws://{}/api/companies/{ws_co}/events/ws", s.addr());
    // Warm up both paths once so lazily built state is not counted.
    drop(s.client().get(&sse_url).send().await.unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(&ws_url).await.unwrap();
    ws.close(None).await.unwrap();
    let base = rss_kib(s.pid());

    let mut sse = Vec::with_capacity(N);
    for chunk in 0..N / 100 {
        let batch = (0..100).map(|_| s.client().get(&sse_url).send());
        for resp in futures::future::join_all(batch).await {
            let resp = resp.unwrap();
            assert_eq!(resp.status(), 200, "SSE subscriber in batch {chunk}");
            sse.push(resp);
        }
    }
    let with_sse = rss_kib(s.pid());
    let mut sockets = Vec::with_capacity(N);
    for _ in 0..N / 100 {
        let batch = (0..100).map(|_| tokio_tungstenite::connect_async(&ws_url));
        for conn in futures::future::join_all(batch).await {
            sockets.push(conn.unwrap().0);
        }
    }
    let with_ws = rss_kib(s.pid());
    let per_sse = with_sse.saturating_sub(base) * 1024 / N as u64;
    let per_ws = with_ws.saturating_sub(with_sse) * 1024 / N as u64;
    eprintln!(
        "live subscribers: base {base} KiB RSS; +{N} SSE {with_sse} KiB ({per_sse} B each); +{N} WS {with_ws} KiB ({per_ws} B each)"
    );
    assert!(
        per_sse <= MAX_KIB_PER_SUBSCRIBER * 1024,
        "{per_sse} B per SSE subscriber"
    );
    assert!(
        per_ws <= MAX_KIB_PER_SUBSCRIBER * 1024,
        "{per_ws} B per WS subscriber"
    );

    // They are live: an event reaches the last subscriber of each kind.
    s.issue(&sse_co, json!({ "title": "Ping SSE" })).await;
    s.issue(&ws_co, json!({ "title": "Ping WS" })).await;
    let last_ws = sockets.last_mut().unwrap();
    let frame = tokio::time::timeout(Duration::from_secs(10), last_ws.next())
        .await
        .expect("an event on the WebSocket")
        .unwrap()
        .unwrap();
    assert!(frame.to_string().contains("Ping WS") || frame.to_string().contains("issue"));
    let mut last_sse = sse.pop().unwrap();
    let chunk = tokio::time::timeout(Duration::from_secs(10), last_sse.chunk())
        .await
        .expect("an event on the SSE stream")
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&chunk).contains("data:"));
    for mut socket in sockets {
        let _ = socket.close(None).await;
    }
}

/// Ctrl-C with a board tab open (an SSE stream) and a WebSocket subscriber:
/// the streams end and the process exits within 5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_live_streams_and_exits_promptly() {
    let mut s = TestServer::start().await;
    let (cid, _) = company(&s).await;
    let sse = event_stream(&s, &cid).await;
    assert_eq!(sse.status(), 200);
    let (_ws, _) = tokio_tungstenite::connect_async(format!(
        "ws://{}/api/companies/{cid}/events/ws",
        s.addr()
    ))
    .await
    .unwrap();
    // The server ends the stream (its last chunk, a clean end) rather than
    // the connection being cut when the process goes away.
    terminate_ending_stream(&mut s, sse).await;
}
