//! The outer helper's side of the sandbox's connections: each arrives on
//! the unix socket with a one-line preamble, `M <port>` for a mirrored
//! loopback destination or `P` for the HTTP proxy. The proxy takes
//! `CONNECT host:port` (HTTPS, anything tunnelled) and absolute-form plain
//! HTTP requests, and connects only what the allow-list names; a refusal is
//! a 403 that says why, a line in the run log and a line in the blocked
//! record the run's outcome reads.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::Semaphore;

use super::allow::{allowed, split_host_port, Entry};
use super::helper::Mirror;

/// The most bytes of a request head read before it counts as malformed.
const MAX_HEAD: usize = 64 * 1024;
/// Connections relayed at once; more wait for one to end.
const MAX_CONNECTIONS: usize = 512;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Distinct blocked destinations recorded for the outcome (all are logged).
const MAX_RECORDED: usize = 20;

pub(crate) struct State {
    allow: Vec<Entry>,
    mirrors: Vec<Mirror>,
    blocked_file: PathBuf,
    blocked: Mutex<Vec<String>>,
    slots: Arc<Semaphore>,
}

impl State {
    pub(crate) fn new(allow: Vec<Entry>, mirrors: Vec<Mirror>, blocked_file: PathBuf) -> State {
        State {
            allow,
            mirrors,
            blocked_file,
            blocked: Mutex::new(Vec::new()),
            slots: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        }
    }

    /// Says so in the run log (this process's stderr is the run's) and
    /// records the destination once.
    fn block(&self, what: &str) {
        eprintln!(
            "paperclip confinement: blocked network access to {what}: not on this run's \
             allow-list (adapterConfig.networkAllowlist)"
        );
        let Ok(mut seen) = self.blocked.lock() else {
            return;
        };
        if seen.iter().any(|s| s == what) || seen.len() >= MAX_RECORDED {
            return;
        }
        seen.push(what.to_string());
        if let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.blocked_file)
        {
            let _ = writeln!(file, "{what}");
        }
    }
}

pub(crate) async fn serve(listener: UnixListener, state: Arc<State>) {
    loop {
        let client = match listener.accept().await {
            Ok((client, _)) => client,
            Err(_) => {
                // Out of descriptors, most likely: let some connections end.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = state.slots.clone().acquire_owned().await else {
            return;
        };
        let state = state.clone();
        tokio::spawn(async move {
            let _ = handle(client, &state).await;
            drop(permit);
        });
    }
}

async fn handle(mut client: UnixStream, state: &State) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let end = read_until(&mut client, &mut buf, b"\n", 32).await?;
    let preamble = String::from_utf8_lossy(&buf[..end]).trim().to_string();
    let rest = buf[end + 1..].to_vec();
    if let Some(port) = preamble.strip_prefix("M ") {
        let port: u16 = port.parse().unwrap_or(0);
        let Some(mirror) = state.mirrors.iter().find(|m| m.port == port) else {
            return Ok(());
        };
        let mut upstream = TcpStream::connect((mirror.host.as_str(), port)).await?;
        upstream.write_all(&rest).await?;
        tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
        return Ok(());
    }
    if preamble != "P" {
        return Ok(());
    }
    let mut buf = rest;
    let end = match read_until(&mut client, &mut buf, b"\r\n\r\n", MAX_HEAD).await {
        Ok(end) => end,
        Err(_) => return answer(&mut client, 400, "malformed or oversized request head").await,
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let body = buf[end + 4..].to_vec();
    let request = match parse_head(&head) {
        Ok(request) => request,
        Err(why) => return answer(&mut client, 400, &why).await,
    };
    let what = format!("{}:{}", request.host_display(), request.port);
    if !allowed(&state.allow, &request.host, request.port) {
        state.block(&what);
        let message = format!(
            "Paperclip confinement: {what} is not on this run's network allow-list \
             (adapterConfig.networkAllowlist)"
        );
        return answer(&mut client, 403, &message).await;
    }
    let connect = TcpStream::connect((request.host.as_str(), request.port));
    let mut upstream = match tokio::time::timeout(CONNECT_TIMEOUT, connect).await {
        Ok(Ok(upstream)) => upstream,
        Ok(Err(e)) => {
            let message = format!("Paperclip confinement: cannot reach {what}: {e}");
            eprintln!("{message}");
            return answer(&mut client, 502, &message).await;
        }
        Err(_) => return answer(&mut client, 504, &format!("timed out reaching {what}")).await,
    };
    match request.forward {
        // A tunnel: the client speaks to the destination from here on.
        None => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
            upstream.write_all(&body).await?;
        }
        Some(head) => {
            upstream.write_all(head.as_bytes()).await?;
            upstream.write_all(&body).await?;
        }
    }
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// Reads into `buf` until it holds `delimiter`; its offset, or an error
/// past `max` bytes or at EOF.
async fn read_until(
    stream: &mut UnixStream,
    buf: &mut Vec<u8>,
    delimiter: &[u8],
    max: usize,
) -> std::io::Result<usize> {
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(at) = buf.windows(delimiter.len()).position(|w| w == delimiter) {
            return Ok(at);
        }
        if buf.len() > max {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn answer(client: &mut UnixStream, status: u16, message: &str) -> std::io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        403 => "Forbidden",
        502 => "Bad Gateway",
        _ => "Gateway Timeout",
    };
    let body = format!("{message}\n");
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\nX-Paperclip-Confinement: {}\r\n\r\n{body}",
        body.len(),
        if status == 403 { "blocked" } else { "error" },
    );
    client.write_all(response.as_bytes()).await?;
    client.shutdown().await
}

/// A proxy request: where to, and for plain HTTP the head to send there.
#[derive(Debug, PartialEq)]
struct Request {
    host: String,
    port: u16,
    /// `None` for CONNECT; else the request rewritten to origin form.
    forward: Option<String>,
}

impl Request {
    fn host_display(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        }
    }
}

fn parse_head(head: &str) -> Result<Request, String> {
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("malformed request line {first:?}"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("unsupported protocol {version:?}"));
    }
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = split_host_port(target)?;
        let port = port.ok_or_else(|| format!("CONNECT {target} names no port"))?;
        return Ok(Request {
            host: host.to_ascii_lowercase(),
            port,
            forward: None,
        });
    }
    let Some(rest) = target
        .strip_prefix("http://")
        .or_else(|| target.strip_prefix("HTTP://"))
    else {
        return Err(format!(
            "this is a proxy: send absolute http:// URLs, or CONNECT for https (got {target:?})"
        ));
    };
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    let (host, port) = split_host_port(authority)?;
    if host.is_empty() {
        return Err("the URL names no host".into());
    }
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_string(),
    };
    // One request per connection: a second one on it might be meant for
    // another host, and must come back through the allow-list.
    let mut out = format!("{method} {path} {version}\r\n");
    for line in lines {
        let name = line.split(':').next().unwrap_or_default().trim();
        if [
            "proxy-connection",
            "proxy-authorization",
            "connection",
            "keep-alive",
        ]
        .iter()
        .any(|h| name.eq_ignore_ascii_case(h))
        {
            continue;
        }
        out.push_str(line);
        out.push_str("\r\n");
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Request {
        host: host.to_ascii_lowercase(),
        port: port.unwrap_or(80),
        forward: Some(out),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_names_host_and_port() {
        let r = parse_head("CONNECT API.example.com:443 HTTP/1.1\r\nHost: x").unwrap();
        assert_eq!(
            (r.host.as_str(), r.port, r.forward),
            ("api.example.com", 443, None)
        );
        let v6 = parse_head("CONNECT [::1]:8443 HTTP/1.1").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 8443));
        assert!(parse_head("CONNECT host HTTP/1.1").is_err());
    }

    #[test]
    fn plain_http_is_rewritten_to_origin_form_and_closed_after() {
        let r = parse_head(
            "GET http://u:p@Example.com:8080/a/b?c=1 HTTP/1.1\r\nHost: example.com:8080\r\n\
             Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nAccept: */*",
        )
        .unwrap();
        assert_eq!((r.host.as_str(), r.port), ("example.com", 8080));
        assert_eq!(
            r.forward.unwrap(),
            "GET /a/b?c=1 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let bare = parse_head("GET http://example.com HTTP/1.0").unwrap();
        assert_eq!(bare.port, 80);
        assert!(bare.forward.unwrap().starts_with("GET / HTTP/1.0\r\n"));
    }

    #[test]
    fn origin_form_and_junk_are_refused() {
        assert!(parse_head("GET /x HTTP/1.1")
            .unwrap_err()
            .contains("absolute"));
        assert!(parse_head("GET https://x.example/ HTTP/1.1").is_err());
        assert!(parse_head("nonsense").is_err());
        assert!(parse_head("GET http://x/ HTTP/2").is_err());
    }
}
