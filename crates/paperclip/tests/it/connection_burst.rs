//! Connection floods against local trusted mode: with an agent run live,
//! every credential-less connection asks "is this an agent's process?" once,
//! and that must stay cheap under a burst; and open connections are capped
//! so that idle or streaming ones cannot take `/api/health` and the board
//! down.

use crate::common;

use std::time::{Duration, Instant};

use common::TestServer;
use futures::future::join_all;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Client connections need descriptors: the soft limit goes up to the hard
/// one (servers started afterwards inherit it).
fn raise_own_descriptor_limit() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: get/setrlimit read and write only the struct given.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
    limit.rlim_cur
}

/// Sets another process's soft descriptor limit (its hard one is kept).
fn set_descriptor_limit(pid: u32, soft: u64) {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit reads `old` first, then `new`; both outlive the calls.
    unsafe {
        assert_eq!(
            libc::prlimit(pid as i32, libc::RLIMIT_NOFILE, std::ptr::null(), &mut old),
            0
        );
        let new = libc::rlimit {
            rlim_cur: soft,
            rlim_max: old.rlim_max,
        };
        assert_eq!(
            libc::prlimit(pid as i32, libc::RLIMIT_NOFILE, &new, std::ptr::null_mut()),
            0
        );
    }
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line[6..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap()
}

/// An open connection and the response head it got.
struct Answered {
    _stream: TcpStream,
    status: u16,
    head: String,
}

/// Connects, sends `request`, reads the response head (not the body: a
/// stream's never ends). `None` if nothing came within `secs`.
async fn send(addr: &str, request: &str, secs: u64) -> Option<Answered> {
    let attempt = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        stream.write_all(request.as_bytes()).await.ok()?;
        let mut head = Vec::with_capacity(512);
        let mut chunk = [0u8; 512];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let read = stream.read(&mut chunk).await.ok()?;
            if read == 0 {
                break;
            }
            head.extend_from_slice(&chunk[..read]);
        }
        let head = String::from_utf8_lossy(&head).to_string();
        let status = head.split_whitespace().nth(1)?.parse().ok()?;
        Some(Answered {
            _stream: stream,
            status,
            head,
        })
    };
    tokio::time::timeout(Duration::from_secs(secs), attempt)
        .await
        .ok()
        .flatten()
}

fn get(addr: &str, path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}\r\n")
}

fn sse(addr: &str, company: &str) -> String {
    get(
        addr,
        &format!("/api/companies/{company}/events"),
        "Accept: text/event-stream\r\n",
    )
}

fn ws(addr: &str, company: &str) -> String {
    get(
        addr,
        &format!("/api/companies/{company}/events/ws"),
        "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
    )
}

fn health(addr: &str) -> String {
    get(addr, "/api/health", "Connection: close\r\n")
}

/// Probes `/api/health` on fresh connections until `stop` (at most 300 s,
/// as long as nextest lets the test run); the slowest answer, and how many
/// probes did not get a 200 within 5 s.
fn watch_health(
    addr: String,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<(Duration, usize, usize)> {
    tokio::spawn(async move {
        let (mut slowest, mut failed, mut probes) = (Duration::ZERO, 0, 0);
        common::until(300, "the health watch to be stopped", async move || {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return Some((slowest, failed, probes));
            }
            let started = Instant::now();
            let answer = send(&addr, &health(&addr), 5).await;
            probes += 1;
            slowest = slowest.max(started.elapsed());
            match answer.map(|a| a.status) {
                Some(200) => {}
                other => {
                    failed += 1;
                    eprintln!(
                        "health probe failed: {other:?} after {:?}",
                        started.elapsed()
                    );
                }
            }
            None
        })
        .await
    })
}

/// Opens `n` connections at once, each sending `request`; every one must be
/// answered with one of `ok` within `secs`. Returns the open connections
/// (streams stay open) and the time the slowest answer took.
async fn burst(
    addr: &str,
    request: &str,
    n: usize,
    ok: &[u16],
    secs: u64,
) -> (Vec<Answered>, Duration) {
    let started = Instant::now();
    let answers = join_all((0..n).map(|_| send(addr, request, secs))).await;
    let elapsed = started.elapsed();
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    let mut open = Vec::new();
    for answer in answers {
        match answer {
            Some(a) => {
                *statuses.entry(a.status).or_default() += 1;
                if a.status == 503 {
                    assert!(
                        a.head.to_ascii_lowercase().contains("retry-after"),
                        "{}",
                        a.head
                    );
                }
                open.push(a);
            }
            None => *statuses.entry(0).or_default() += 1,
        }
    }
    assert!(
        statuses.keys().all(|s| ok.contains(s)),
        "{n} connections sending {request:?}: statuses {statuses:?} (0: no answer within {secs} s)"
    );
    eprintln!(
        "{n} x {}: {statuses:?} in {elapsed:?}",
        request.lines().next().unwrap()
    );
    (open, elapsed)
}

/// A process agent's run that waits until `stop` exists; returns once its
/// process is recorded (the run counts as live from then on). On its way it
/// asks for the companies without its key: the answer lands in `probe`.
async fn live_run(
    s: &TestServer,
    cid: &str,
    stop: &std::path::Path,
    probe: &std::path::Path,
) -> String {
    let script = format!(
        "curl -s -o /dev/null -w '%{{http_code}}' \"$PAPERCLIP_API_URL/api/companies\" > {p}.tmp; mv {p}.tmp {p}\n\
         while [ ! -e {stop} ]; do sleep 0.05; done\n",
        p = probe.display(),
        stop = stop.display()
    );
    let agent = s.script_agent(cid, "Sleeper", &script, json!({})).await;
    let run = s
        .ok_post(
            &format!("/api/agents/{}/wakeup", agent["id"].as_str().unwrap()),
            json!({}),
        )
        .await;
    let run_id = run["id"].as_str().unwrap().to_string();
    s.wait_for(
        &format!("/api/heartbeat-runs/{run_id}"),
        30,
        |run: &Value| run["status"] == "running" && !run["processPid"].is_null(),
    )
    .await;
    run_id
}

#[tokio::test]
async fn a_burst_of_credentialless_streams_is_answered_while_a_run_is_live() {
    raise_own_descriptor_limit();
    let s = TestServer::start().await;
    let addr = s.addr();
    let sse_company = s.company("Streams").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let ws_company = s.company("Sockets").await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let stop = s.data_dir.join("stop");
    let probe = s.data_dir.join("probe");
    let run_id = live_run(&s, &sse_company, &stop, &probe).await;
    // The run's own credential-less request is still refused: agents are
    // never the board.
    let agent_said = common::until(30, "the agent's own request", async || {
        std::fs::read_to_string(&probe).ok()
    })
    .await;
    assert_eq!(agent_said, "401");
    let rss_before = rss_kib(s.pid());

    let halt = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = watch_health(addr.clone(), halt.clone());
    // 1000 subscribers per company: the rest are 429; 503 is a full lookup queue.
    // Every connection is answered; the bound only detects a hang: on CI's
    // loaded cores the kernel's listen queue overflowed (SYN cookies), and a
    // third of the connections waited out TCP's retransmits past 20 s.
    let (streams, sse_time) =
        burst(&addr, &sse(&addr, &sse_company), 2000, &[200, 429, 503], 90).await;
    let (sockets, ws_time) =
        burst(&addr, &ws(&addr, &ws_company), 2000, &[101, 429, 503], 90).await;
    halt.store(true, std::sync::atomic::Ordering::Relaxed);
    let (slowest, failed, probes) = watcher.await.unwrap();
    let rss_after = rss_kib(s.pid());
    eprintln!(
        "SSE burst {sse_time:?}, WebSocket burst {ws_time:?}; health: {probes} probes, slowest {slowest:?}, \
         {failed} failed; RSS {rss_before} -> {rss_after} KiB"
    );
    let served = |open: &[Answered], status| open.iter().filter(|a| a.status == status).count();
    assert!(served(&streams, 200) >= 900, "most SSE streams were served");
    assert!(served(&sockets, 101) >= 900, "most WebSockets were served");
    // Every connection was answered within its 20 s (`burst`); the stall this
    // guards against answered 2 of 2,000. The burst times above are figures
    // for the benchmark, not bounds: on a loaded 2-core CI they vary threefold.
    // Health kept answering: a probe may miss its 5 s on a loaded machine,
    // but not a tenth of them (the stall failed most).
    assert!(
        failed * 10 <= probes,
        "health answered 200 within 5 s throughout: {failed} of {probes} probes failed"
    );
    assert!(probes >= 2, "health was probed during the bursts");
    // 2000 live streams are held open: bounded, not a thread or a table per connection.
    assert!(
        rss_after < rss_before + 200 * 1024,
        "RSS grew from {rss_before} to {rss_after} KiB"
    );

    // The run is still live and still tells its processes from the board.
    let run = s.ok_get(&format!("/api/heartbeat-runs/{run_id}")).await;
    assert_eq!(run["status"], "running");
    let board = send(
        &addr,
        &get(&addr, "/api/companies", "Connection: close\r\n"),
        10,
    )
    .await;
    assert_eq!(board.map(|a| a.status), Some(200));
    drop((streams, sockets));
    std::fs::write(&stop, "").unwrap();
    s.wait_for(
        &format!("/api/heartbeat-runs/{run_id}"),
        30,
        |run: &Value| run["status"] == "succeeded",
    )
    .await;
}

#[tokio::test]
async fn past_the_connection_cap_idle_connections_make_room_and_health_answers() {
    raise_own_descriptor_limit();
    let s = TestServer::start_args(&["--max-connections", "50"]).await;
    let addr = s.addr();
    // Half connect and say nothing; half are keep-alive connections idle after a request.
    let mut idle = Vec::new();
    for i in 0..300 {
        let mut stream = TcpStream::connect(&addr).await.unwrap();
        if i % 2 == 0 {
            let req = get(&addr, "/api/health", "");
            stream.write_all(req.as_bytes()).await.unwrap();
        }
        idle.push(stream);
    }
    for _ in 0..5 {
        let answer = send(&addr, &health(&addr), 5).await;
        assert_eq!(answer.map(|a| a.status), Some(200), "health past the cap");
    }
    // Room was made by closing idle ones: the server holds at most about the cap.
    let mut closed = 0;
    for stream in &mut idle {
        let mut buf = [0u8; 4096];
        // A keep-alive one has its answer to read first; then the close.
        let read = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return true,
                    Ok(_) => continue,
                }
            }
        })
        .await;
        if read == Ok(true) {
            closed += 1;
        }
    }
    assert!(
        closed >= 240,
        "only {closed} of 300 idle connections were closed"
    );
    drop(idle);

    // Streams are never closed to make room: with the cap full of them, a
    // page or health is still served (the reserve, one request each) and a
    // new stream is refused with Retry-After.
    let cid = s.company("Acme").await["id"].as_str().unwrap().to_string();
    let streams = common::until(20, "50 streams open at once", async || {
        let (open, _) = burst(&addr, &sse(&addr, &cid), 50, &[200, 503], 10).await;
        open.iter().all(|a| a.status == 200).then_some(open)
    })
    .await;
    let answer = send(&addr, &health(&addr), 5).await.unwrap();
    assert_eq!(answer.status, 200, "{}", answer.head);
    // Any idle straggler (this test's client pool) is closed for a request
    // first; then the page is served from the reserve, one request only.
    common::until(10, "a page served from the reserve", async || {
        let page = send(&addr, &get(&addr, "/api/companies", ""), 5).await?;
        assert_eq!(page.status, 200, "{}", page.head);
        page.head
            .to_ascii_lowercase()
            .contains("connection: close")
            .then_some(())
    })
    .await;
    // A new stream takes the place of an idle straggler while one is left
    // (a loaded machine leaves more); once none is, it is refused.
    let mut taken = Vec::new();
    let extra = common::until(20, "a new stream refused at the cap", async || {
        let answer = send(&addr, &sse(&addr, &cid), 5).await?;
        if answer.status == 503 {
            return Some(answer);
        }
        assert_eq!(answer.status, 200, "{}", answer.head);
        taken.push(answer);
        None
    })
    .await;
    assert!(taken.len() <= 12, "{} streams past a full cap", taken.len());
    assert!(
        extra.head.to_ascii_lowercase().contains("retry-after: 1"),
        "{}",
        extra.head
    );
    // Past the reserve too (held by requests whose body never comes: busy,
    // so not closed to make room), a new connection still gets an
    // immediate answer: 503, never a hang.
    let slow = format!(
        "POST /api/companies HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: 100\r\n\r\n{{"
    );
    let mut stalled = Vec::new();
    let refused = common::until(
        20,
        "the reserve to fill with stalled requests",
        async || {
            let mut stream = TcpStream::connect(&addr).await.ok()?;
            stream.write_all(slow.as_bytes()).await.ok()?;
            stalled.push(stream);
            let answer = send(&addr, &health(&addr), 5).await?;
            (answer.status == 503).then_some(answer)
        },
    )
    .await;
    assert!(
        refused.head.to_ascii_lowercase().contains("retry-after: 1"),
        "{}",
        refused.head
    );
    // The reserve is 4, but each probe's connection, left idle when the
    // client drops it and before the server sees it close, makes room for
    // the next stalled request; how many depends on the machine's load. The
    // bound says the cap and reserve hold: far fewer than the cap again.
    assert!(
        stalled.len() <= 40,
        "{} stalled requests before the reserve was full",
        stalled.len()
    );
    // Once they go, health is served again.
    drop(stalled);
    common::until(10, "health once the stalled requests closed", async || {
        (send(&addr, &health(&addr), 5).await?.status == 200).then_some(())
    })
    .await;
    drop(streams);
}

#[tokio::test]
async fn a_small_descriptor_limit_sets_the_cap_and_health_survives_idle_connections() {
    raise_own_descriptor_limit();
    let s = TestServer::start().await;
    let addr = s.addr();
    // As `ulimit -n 256` would: the default cap follows the limit.
    set_descriptor_limit(s.pid(), 256);
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(TcpStream::connect(&addr).await.unwrap());
    }
    let halt = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = watch_health(addr.clone(), halt.clone());
    // More connections while health is probed: each makes room for itself.
    for _ in 0..100 {
        idle.push(TcpStream::connect(&addr).await.unwrap());
    }
    common::until(10, "a few health probes", async || {
        (send(&addr, &health(&addr), 5).await?.status == 200).then_some(())
    })
    .await;
    halt.store(true, std::sync::atomic::Ordering::Relaxed);
    let (slowest, failed, probes) = watcher.await.unwrap();
    assert_eq!(
        failed, 0,
        "{failed} of {probes} health probes failed (slowest {slowest:?})"
    );
    // The server kept descriptors for its own work: it still writes.
    drop(idle);
    let company = s.company("After").await;
    assert!(company["id"].is_string());
}
