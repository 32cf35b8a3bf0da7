//! Credential-less SSE handshakes per second, without and with an agent run
//! live (the run makes every new loopback connection ask "is this an agent's
//! process?" once).
//!
//! Usage: `cargo run -p paperclip-bench --bin connbench -- <path/to/paperclip> [handshakes] [concurrency]`
//! (defaults 2000 and 200). Each handshake is a fresh TCP connection that
//! sends `GET /api/companies/:id/events` without a key, reads the status
//! line and headers, and closes. Prints handshakes/s, the statuses seen, the
//! p99 of `/api/health` meanwhile and the server's RSS after.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let bin = args
        .next()
        .context("usage: connbench <paperclip binary> [n] [concurrency]")?;
    let n: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(2000);
    let conc: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(200);
    raise_nofile();

    let data_dir = std::env::temp_dir().join(format!("connbench-{}", uuid::Uuid::new_v4()));
    let mut child = Command::new(&bin)
        .args(["run", "--port", "0", "--data-dir"])
        .arg(&data_dir)
        .env_remove("DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("spawning {bin}"))?;
    let pid = child.id();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = loop {
        let line = lines.next().context("server exited")??;
        if let Some(url) = line.strip_prefix("Paperclip listening on ") {
            break url.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let addr = base.trim_start_matches("http://").to_string();
    let http = reqwest::Client::new();
    let post = async |path: &str, body: Value| -> anyhow::Result<Value> {
        let resp = http
            .post(format!("{base}{path}"))
            .json(&body)
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!("{path}: {}", resp.status());
        }
        Ok(resp.json().await?)
    };
    let company = post("/api/companies", json!({"name": "Bench"})).await?;
    let cid = company["id"].as_str().unwrap().to_string();
    let path = format!("/api/companies/{cid}/events");

    println!("binary {bin}, {n} handshakes, {conc} at a time");
    burst(&addr, &path, n, conc, pid, "no run live").await;

    let script = data_dir.join("sleep.sh");
    std::fs::write(&script, "exec sleep 600\n")?;
    let agent = post(
        &format!("/api/companies/{cid}/agents"),
        json!({"name": "Sleeper", "adapterType": "process",
               "adapterConfig": {"command": "sh", "args": [script.to_str().unwrap()], "graceSec": 1}}),
    )
    .await?;
    let run = post(
        &format!("/api/agents/{}/wakeup", agent["id"].as_str().unwrap()),
        json!({}),
    )
    .await?;
    let run_id = run["id"].as_str().unwrap().to_string();
    let running = paperclip_bench::poll::until(30, async || {
        let run: Value = http
            .get(format!("{base}/api/heartbeat-runs/{run_id}"))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        (run["status"] == "running").then_some(())
    })
    .await;
    if running.is_none() {
        bail!("the run did not start");
    }
    burst(&addr, &path, n, conc, pid, "one run live").await;

    let _ = post(&format!("/api/heartbeat-runs/{run_id}/cancel"), json!({})).await;
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&data_dir);
    Ok(())
}

async fn burst(addr: &str, path: &str, n: usize, conc: usize, pid: u32, label: &str) {
    let sem = Arc::new(tokio::sync::Semaphore::new(conc));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let health = tokio::spawn({
        let addr = addr.to_string();
        let stop = stop.clone();
        async move {
            let mut times = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let t = Instant::now();
                let ok = handshake(&addr, "/api/health", false).await;
                times.push((t.elapsed(), ok));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            times
        }
    });
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(n);
    for _ in 0..n {
        let permit = sem.clone().acquire_owned().await.unwrap();
        let (addr, path) = (addr.to_string(), path.to_string());
        tasks.push(tokio::spawn(async move {
            let status = handshake(&addr, &path, true).await;
            drop(permit);
            status
        }));
    }
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    for t in tasks {
        *statuses.entry(t.await.unwrap_or(0)).or_default() += 1;
    }
    let elapsed = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut health = health.await.unwrap();
    health.sort();
    let p99 = health
        .get((health.len() * 99 / 100).min(health.len().saturating_sub(1)))
        .map(|(d, _)| *d)
        .unwrap_or_default();
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .map(|l| l[6..].trim().to_string())
        })
        .unwrap_or_default();
    println!(
        "{label}: {:.0} handshakes/s ({n} in {:.2} s), statuses {statuses:?}, health p99 {:.1} ms over {} probes, RSS {rss}",
        n as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64(),
        p99.as_secs_f64() * 1000.0,
        health.len(),
    );
}

/// Sends one request on a fresh connection; the status, 0 if none came
/// within 30 s.
async fn handshake(addr: &str, path: &str, sse: bool) -> u16 {
    let attempt = async {
        let mut s = TcpStream::connect(addr).await.ok()?;
        let accept = if sse { "text/event-stream" } else { "*/*" };
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.ok()?;
        let mut buf = Vec::with_capacity(512);
        let mut chunk = [0u8; 512];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            let read = s.read(&mut chunk).await.ok()?;
            if read == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..read]);
        }
        std::str::from_utf8(&buf)
            .ok()?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    tokio::time::timeout(Duration::from_secs(30), attempt)
        .await
        .ok()
        .flatten()
        .unwrap_or(0)
}

/// Clients need a descriptor per connection: the soft limit goes up to the
/// hard one (`prlimit` on ourselves; the bench has no libc binding).
fn raise_nofile() {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let hard = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(4).map(str::to_string));
    if let Some(hard) = hard {
        let _ = Command::new("prlimit")
            .arg(format!("--pid={}", std::process::id()))
            .arg(format!("--nofile={hard}:{hard}"))
            .status();
    }
}
