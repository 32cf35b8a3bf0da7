//! The Linux lookup: a socket's inode, and which live run's process tree
//! holds it (see the parent module).

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::RunProcesses;

const MARKER: &[u8] = b"PAPERCLIP_RUN_ID=";
/// Processes walked in the live runs' trees before giving up (fail
/// closed: the request must then bring a key).
const MAX_TREE: usize = 4096;

/// Which live run's tree holds each of `inodes` (sockets no run's
/// process holds are absent).
pub fn owners(
    inodes: &HashSet<u64>,
    runs: &[RunProcesses],
) -> Result<HashMap<u64, String>, String> {
    let mut found = HashMap::new();
    if runs.is_empty() || inodes.is_empty() {
        return Ok(found);
    }
    if !children_listed() {
        return scan_all(inodes, runs);
    }
    let mut queue: VecDeque<(u32, &str)> = roots(runs).into();
    let mut seen = HashSet::new();
    while let Some((pid, run)) = queue.pop_front() {
        if !seen.insert(pid) {
            continue;
        }
        if seen.len() > MAX_TREE {
            return Err(format!("live runs have over {MAX_TREE} processes"));
        }
        for inode in sockets(pid) {
            if inodes.contains(&inode) {
                found.entry(inode).or_insert_with(|| run.to_string());
            }
        }
        if found.len() == inodes.len() {
            break;
        }
        queue.extend(children(pid).into_iter().map(|c| (c, run)));
    }
    // Sockets no tree holds: a process that double-forked out of its
    // run's tree but still carries the run's marker is caught here.
    if found.len() < inodes.len() {
        for (pid, run) in marked_processes() {
            if seen.contains(&pid) || !runs.iter().any(|r| r.run_id == run) {
                continue;
            }
            for inode in sockets(pid) {
                if inodes.contains(&inode) {
                    found.entry(inode).or_insert_with(|| run.clone());
                }
            }
        }
    }
    Ok(found)
}

/// How long one scan of every process's marker serves later lookups. A
/// scan reads each process's environment (it grows with the machine), so
/// a burst shares one; a process that escapes its tree within this long
/// of the last scan is missed until the next.
const MARKED_TTL: std::time::Duration = std::time::Duration::from_millis(250);

/// Processes whose environment names a run (pid, run), and when they were read.
type MarkedScan = Option<(std::time::Instant, Vec<(u32, String)>)>;

/// Every process whose environment names a run, as of a recent scan.
fn marked_processes() -> Vec<(u32, String)> {
    static CACHE: std::sync::Mutex<MarkedScan> = std::sync::Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((at, marked)) = cache.as_ref() {
        if at.elapsed() < MARKED_TTL {
            return marked.clone();
        }
    }
    let marked: Vec<(u32, String)> = processes()
        .into_iter()
        .filter_map(|p| Some((p.pid, p.run?)))
        .collect();
    *cache = Some((std::time::Instant::now(), marked.clone()));
    marked
}

/// The processes each live run's tree starts from: the ones the runtime
/// recorded (still the same process: same start time), and children of
/// this server not recorded yet whose environment names a live run.
fn roots(runs: &[RunProcesses]) -> Vec<(u32, &str)> {
    let mut roots = Vec::new();
    let mut known = HashSet::new();
    for run in runs {
        for &(pid, ticks) in &run.roots {
            known.insert(pid);
            let same = match ticks {
                Some(t) => paperclip_adapters::tree::start_ticks(pid as i32) == Some(t),
                None => std::path::Path::new(&format!("/proc/{pid}")).exists(),
            };
            if same {
                roots.push((pid, run.run_id.as_str()));
            }
        }
    }
    let by_id: HashMap<&str, &str> = runs
        .iter()
        .map(|r| (r.run_id.as_str(), r.run_id.as_str()))
        .collect();
    for child in children(std::process::id()) {
        if known.contains(&child) {
            continue;
        }
        let marker = std::fs::read(format!("/proc/{child}/environ"))
            .ok()
            .and_then(|env| run_marker(&env));
        if let Some(run) = marker.as_deref().and_then(|m| by_id.get(m)) {
            roots.push((child, run));
        }
    }
    roots
}

/// Whether this kernel lists a task's children (`CONFIG_PROC_CHILDREN`).
fn children_listed() -> bool {
    static LISTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *LISTED.get_or_init(|| {
        let me = std::process::id();
        std::path::Path::new(&format!("/proc/{me}/task/{me}/children")).exists()
    })
}

/// The direct children of `pid`, whichever of its threads started them.
pub(super) fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        let path = task.path().join("children");
        if let Ok(text) = std::fs::read_to_string(path) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    out
}

/// Without children lists: every process, its parent and its marker,
/// then the runs' trees from that table (the cost grows with the machine).
fn scan_all(inodes: &HashSet<u64>, runs: &[RunProcesses]) -> Result<HashMap<u64, String>, String> {
    let procs = processes();
    let mut run_of: HashMap<u32, String> = HashMap::new();
    for run in runs {
        for &(pid, _) in &run.roots {
            run_of.insert(pid, run.run_id.clone());
        }
    }
    for p in &procs {
        if let Some(run) = &p.run {
            if runs.iter().any(|r| &r.run_id == run) {
                run_of.entry(p.pid).or_insert_with(|| run.clone());
            }
        }
    }
    let mut found = HashMap::new();
    if run_of.is_empty() {
        return Ok(found);
    }
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
        for inode in sockets(*pid) {
            if inodes.contains(&inode) {
                found.entry(inode).or_insert_with(|| run.clone());
            }
        }
    }
    Ok(found)
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

/// The inodes of the sockets `pid` holds.
fn sockets(pid: u32) -> Vec<u64> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    fds.flatten()
        .filter_map(|fd| {
            let link = std::fs::read_link(fd.path()).ok()?;
            let link = link.to_str()?;
            link.strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect()
}

/// The inode of the socket whose local end is `peer` (the client's side
/// of our connection): one exact sock_diag query when our end is known,
/// else (or without netlink) a read of `/proc/net/tcp`.
pub fn socket_inode(peer: SocketAddr, server: Option<SocketAddr>) -> Result<u64, String> {
    if let Some(server) = server {
        match super::diag::inode(peer, server) {
            Ok(Some(inode)) => return Ok(inode),
            Ok(None) => return Err(format!("no open socket for {peer}")),
            Err(e) => tracing::debug!(error = %e, "sock_diag unavailable; reading /proc/net"),
        }
    }
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = match std::fs::read_to_string(table) {
            Ok(text) => text,
            Err(e) if table.ends_with('6') => {
                tracing::debug!(error = %e, "no {table}");
                continue;
            }
            Err(e) => return Err(format!("reading {table}: {e}")),
        };
        if let Some(inode) = find_inode(&text, peer, server) {
            return Ok(inode);
        }
    }
    Err(format!("no open socket for {peer} in /proc/net"))
}

/// The established socket whose local end is `peer` (and whose remote end is
/// `server`, when known: since Linux 4.6 one ephemeral port may be the local
/// end of several connections to different places, other processes' too).
pub(super) fn find_inode(table: &str, peer: SocketAddr, server: Option<SocketAddr>) -> Option<u64> {
    let is = |addr: SocketAddr, want: SocketAddr| {
        addr.port() == want.port() && same_ip(addr.ip(), want.ip())
    };
    table.lines().skip(1).find_map(|line| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        // sl local rem st queues timer retrnsmt uid timeout inode
        if cols.len() < 10 || cols[3] != "01" {
            return None;
        }
        let local = parse_addr(cols[1])?;
        let remote = parse_addr(cols[2])?;
        let same = is(local, peer) && server.is_none_or(|server| is(remote, server));
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
