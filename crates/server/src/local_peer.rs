//! Which agent run, if any, is on the other end of a loopback connection.
//!
//! Local trusted mode makes the person at the machine the board without a
//! credential, so their browser, `curl` and the `paperclipai` CLI work as-is.
//! Agent processes run on the same machine as the same user, so the peer
//! address cannot tell them apart. What can: every run's process is started
//! with `PAPERCLIP_RUN_ID=<run>` in its environment, and Linux shows which
//! process holds which socket. A request without a key whose client socket
//! belongs to a run's process, or to any descendant of one (a child that
//! cleared its environment is still a descendant), is refused.
//!
//! A process that double-forks away from its run *and* clears its
//! environment is not caught; that is a deliberate escape, not an accident,
//! and the runtime kills a run's marked processes when the run ends.
//! On other systems the lookup is unavailable and loopback stays trusted.

use std::net::SocketAddr;

/// The live run whose process tree owns the client end of `peer`.
/// `Err` means the connection could not be found, so nothing can be vouched for.
pub fn run_of_peer(peer: SocketAddr, live_runs: &[String]) -> Result<Option<String>, String> {
    imp::run_of_peer(peer, live_runs)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::collections::HashMap;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

    const MARKER: &[u8] = b"PAPERCLIP_RUN_ID=";

    pub fn run_of_peer(peer: SocketAddr, live_runs: &[String]) -> Result<Option<String>, String> {
        if live_runs.is_empty() {
            return Ok(None);
        }
        let inode =
            socket_inode(peer)?.ok_or_else(|| format!("no open socket for {peer} in /proc/net"))?;
        let target = format!("socket:[{inode}]");
        let procs = processes();
        // Roots: processes started for a live run (they carry its marker).
        let mut run_of: HashMap<u32, String> = HashMap::new();
        for p in &procs {
            if let Some(run) = &p.run {
                if live_runs.iter().any(|r| r == run) {
                    run_of.insert(p.pid, run.clone());
                }
            }
        }
        if run_of.is_empty() {
            return Ok(None);
        }
        // Descendants inherit their ancestor's run, whatever their environment says.
        let parent: HashMap<u32, u32> = procs.iter().map(|p| (p.pid, p.ppid)).collect();
        for p in &procs {
            if run_of.contains_key(&p.pid) {
                continue;
            }
            let mut cur = p.ppid;
            for _ in 0..64 {
                if let Some(run) = run_of.get(&cur) {
                    let run = run.clone();
                    run_of.insert(p.pid, run);
                    break;
                }
                match parent.get(&cur) {
                    Some(&next) if next != cur && next > 1 => cur = next,
                    _ => break,
                }
            }
        }
        for (pid, run) in &run_of {
            if holds_socket(*pid, &target) {
                return Ok(Some(run.clone()));
            }
        }
        Ok(None)
    }

    struct Proc {
        pid: u32,
        ppid: u32,
        run: Option<String>,
    }

    fn processes() -> Vec<Proc> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            // A process that exited meanwhile, or another user's, is skipped.
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let Some(ppid) = parse_ppid(&stat) else {
                continue;
            };
            let run = std::fs::read(format!("/proc/{pid}/environ"))
                .ok()
                .and_then(|env| run_marker(&env));
            out.push(Proc { pid, ppid, run });
        }
        out
    }

    /// Field 4 of `/proc/<pid>/stat`; the command name before it may contain
    /// spaces and parentheses, so parsing starts after the last `)`.
    pub(super) fn parse_ppid(stat: &str) -> Option<u32> {
        let rest = &stat[stat.rfind(')')? + 1..];
        rest.split_whitespace().nth(1)?.parse().ok()
    }

    pub(super) fn run_marker(environ: &[u8]) -> Option<String> {
        environ
            .split(|&b| b == 0)
            .find_map(|var| var.strip_prefix(MARKER))
            .and_then(|v| std::str::from_utf8(v).ok())
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    }

    fn holds_socket(pid: u32, target: &str) -> bool {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .map(|link| link.as_os_str() == target)
                .unwrap_or(false)
        })
    }

    /// The inode of the established TCP socket whose local end is `peer`
    /// (the client's side of our connection).
    fn socket_inode(peer: SocketAddr) -> Result<Option<u64>, String> {
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            let text = match std::fs::read_to_string(table) {
                Ok(text) => text,
                Err(e) if table.ends_with('6') => {
                    tracing::debug!(error = %e, "no {table}");
                    continue;
                }
                Err(e) => return Err(format!("reading {table}: {e}")),
            };
            if let Some(inode) = find_inode(&text, peer) {
                return Ok(Some(inode));
            }
        }
        Ok(None)
    }

    pub(super) fn find_inode(table: &str, peer: SocketAddr) -> Option<u64> {
        table.lines().skip(1).find_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st queues timer retrnsmt uid timeout inode
            if cols.len() < 10 || cols[3] != "01" {
                return None;
            }
            let local = parse_addr(cols[1])?;
            let same = local.port() == peer.port() && same_ip(local.ip(), peer.ip());
            let inode: u64 = cols[9].parse().ok()?;
            (same && inode != 0).then_some(inode)
        })
    }

    fn same_ip(a: IpAddr, b: IpAddr) -> bool {
        let canon = |ip: IpAddr| match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        canon(a) == canon(b)
    }

    /// `0100007F:D431` (IPv4) or 32 hex digits and a port (IPv6); the kernel
    /// prints each 32-bit word of the address in host byte order.
    fn parse_addr(text: &str) -> Option<SocketAddr> {
        let (ip, port) = text.split_once(':')?;
        let port = u16::from_str_radix(port, 16).ok()?;
        let word = |i: usize| -> Option<[u8; 4]> {
            Some(
                u32::from_str_radix(ip.get(i * 8..i * 8 + 8)?, 16)
                    .ok()?
                    .to_ne_bytes(),
            )
        };
        let ip = match ip.len() {
            8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
            32 => {
                let mut bytes = [0u8; 16];
                for i in 0..4 {
                    bytes[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
                }
                IpAddr::V6(Ipv6Addr::from(bytes))
            }
            _ => return None,
        };
        Some(SocketAddr::new(ip, port))
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::net::SocketAddr;

    pub fn run_of_peer(_peer: SocketAddr, _live: &[String]) -> Result<Option<String>, String> {
        Ok(None)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::imp::*;

    #[test]
    fn the_parent_is_read_past_a_command_name_with_parentheses() {
        assert_eq!(parse_ppid("42 (a) b) S 7 42 42 0"), Some(7));
    }

    #[test]
    fn the_run_marker_is_an_exact_variable() {
        let env = b"HOME=/root\0XPAPERCLIP_RUN_ID=no\0PAPERCLIP_RUN_ID=run-1\0";
        assert_eq!(run_marker(env).as_deref(), Some("run-1"));
        assert_eq!(run_marker(b"PAPERCLIP_RUN_IDS=x\0"), None);
    }

    #[test]
    fn an_established_client_socket_is_found_by_its_local_address() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:0C1C 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1\n\
   1: 0100007F:D431 0100007F:0C1C 01 00000000:00000000 00:00000000 00000000     0        0 222 1\n\
   2: 0100007F:0C1C 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 333 1\n";
        let peer = "127.0.0.1:54321".parse().unwrap();
        assert_eq!(find_inode(table, peer), Some(222));
        assert_eq!(find_inode(table, "127.0.0.1:1".parse().unwrap()), None);
    }

    #[test]
    fn this_process_is_found_holding_its_own_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        // This test process is not in a run: nothing to refuse.
        assert_eq!(
            super::run_of_peer(peer, &["run-x".to_string()]).unwrap(),
            None
        );
    }
}
