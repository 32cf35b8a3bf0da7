//! Which agent run, if any, is on the other end of a loopback connection.
//!
//! Local trusted mode makes the person at the machine the board without a
//! credential, so their browser, `curl` and the `paperclipai` CLI work as-is.
//! Agent processes run on the same machine as the same user, so the peer
//! address cannot tell them apart. What can: the runtime knows every process
//! it spawned for a live run ([`RunProcesses`]), and Linux shows which process
//! holds which socket. A request without a key whose client socket belongs to
//! a run's process, or to any descendant of one (a child that cleared its
//! environment is still a descendant), is refused.
//!
//! The cost of one lookup does not grow with the machine: the client socket's
//! inode comes from one exact `NETLINK_SOCK_DIAG` query (the kernel's hash
//! lookup by address and port), and only the processes in the live runs'
//! trees (walked down from their roots through `/proc/<pid>/task/*/children`)
//! have their descriptors read. Children of this server that the runtime has
//! not recorded yet (a process in the instant between its spawn and its
//! record) count as roots when their environment names a live run.
//! Lookups run on a small pool of their own threads with a bounded queue:
//! when it is full the caller gets [`Verdict::Busy`] (the guard answers 503
//! with `Retry-After`) instead of waiting, and a burst of connections cannot
//! grow threads or memory. A thread takes every lookup waiting at once and
//! answers them with one walk of the trees (each of their connections was
//! accepted before the walk starts, so it sees the socket's holder): a burst
//! costs one kernel query per connection plus one walk per batch.
//!
//! A socket no tree holds is looked for among the processes whose
//! environment names a live run (one scan of every process, shared by the
//! lookups of the next 250 ms), so a process that double-forks out of its
//! run's tree is caught by its marker. One that double-forks *and* clears
//! its environment is not: that is a deliberate escape, not an accident, and
//! the runtime kills a run's marked processes when the run ends.
//! On other systems the lookup is unavailable and loopback stays trusted.

use std::net::SocketAddr;
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

pub use paperclip_runtime::RunProcesses;

/// Threads answering lookups. Each lookup is short and bounded; two keep a
/// burst moving without taking the machine's cores from everything else.
pub const WORKERS: usize = 2;
/// Lookups waiting for a thread; beyond it a new one is [`Verdict::Busy`].
pub const QUEUE: usize = 512;
/// The longest a request waits for its answer before it is [`Verdict::Busy`].
const WAIT: Duration = Duration::from_secs(10);

/// What a lookup found about a connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No live run's process holds the client end.
    Outside,
    /// The client end belongs to this live run's process tree.
    Run(String),
    /// The connection could not be found, so nothing can be vouched for.
    Unknown(String),
    /// Too many lookups are waiting: ask again later.
    Busy,
}

/// The live run whose process tree owns the client end of `peer`, asked on
/// the lookup pool. `server` is this server's end of the connection (it makes
/// the socket lookup exact); without it `/proc/net/tcp` is read.
pub async fn resolve(
    peer: SocketAddr,
    server: Option<SocketAddr>,
    runs: Vec<RunProcesses>,
) -> Verdict {
    if runs.is_empty() {
        return Verdict::Outside;
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job = Job {
        peer,
        server,
        runs,
        answer: tx,
    };
    if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = pool().try_send(job) {
        return Verdict::Busy;
    }
    match tokio::time::timeout(WAIT, rx).await {
        Ok(Ok(Ok(None))) => Verdict::Outside,
        Ok(Ok(Ok(Some(run)))) => Verdict::Run(run),
        Ok(Ok(Err(reason))) => Verdict::Unknown(reason),
        Ok(Err(_)) | Err(_) => Verdict::Busy,
    }
}

/// The live run whose process tree owns the client end of `peer` (blocking).
/// `Err` means the connection could not be found, so nothing can be vouched for.
pub fn run_of_peer(
    peer: SocketAddr,
    server: Option<SocketAddr>,
    runs: &[RunProcesses],
) -> Result<Option<String>, String> {
    let inode = imp::socket_inode(peer, server)?;
    let owners = imp::owners(&[inode].into(), runs)?;
    Ok(owners.get(&inode).cloned())
}

/// One connection waiting to be looked up.
struct Job {
    peer: SocketAddr,
    server: Option<SocketAddr>,
    runs: Vec<RunProcesses>,
    answer: tokio::sync::oneshot::Sender<Result<Option<String>, String>>,
}

/// Lookups answered with one walk of the runs' trees.
const BATCH: usize = 256;

fn pool() -> &'static SyncSender<Job> {
    static POOL: OnceLock<SyncSender<Job>> = OnceLock::new();
    POOL.get_or_init(|| {
        let (tx, rx) = sync_channel::<Job>(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..WORKERS {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("local-peer-{i}"))
                .stack_size(256 * 1024)
                .spawn(move || loop {
                    // Whatever waits is taken at once: its connections were
                    // all accepted before the walk below starts, so one walk
                    // sees every socket they could be.
                    let batch = {
                        let Ok(rx) = rx.lock() else { return };
                        let Ok(first) = rx.recv() else { return };
                        let mut batch = vec![first];
                        while batch.len() < BATCH {
                            match rx.try_recv() {
                                Ok(job) => batch.push(job),
                                Err(_) => break,
                            }
                        }
                        batch
                    };
                    answer(batch);
                })
                .expect("spawning a local peer lookup thread");
        }
        tx
    })
}

fn answer(batch: Vec<Job>) {
    // A request that went away while it waited (its client closed) is skipped.
    let batch: Vec<Job> = batch
        .into_iter()
        .filter(|j| !j.answer.is_closed())
        .collect();
    // Every run any of them saw live: stricter than each one's own view.
    let mut runs: Vec<RunProcesses> = Vec::new();
    for job in &batch {
        for run in &job.runs {
            match runs.iter_mut().find(|r| r.run_id == run.run_id) {
                Some(known) => {
                    for root in &run.roots {
                        if !known.roots.contains(root) {
                            known.roots.push(*root);
                        }
                    }
                }
                None => runs.push(run.clone()),
            }
        }
    }
    let inodes: Vec<Result<u64, String>> = batch
        .iter()
        .map(|j| imp::socket_inode(j.peer, j.server))
        .collect();
    let wanted: std::collections::HashSet<u64> = inodes
        .iter()
        .filter_map(|i| i.as_ref().ok().copied())
        .collect();
    let owners = if wanted.is_empty() {
        Ok(Default::default())
    } else {
        imp::owners(&wanted, &runs)
    };
    for (job, inode) in batch.into_iter().zip(inodes) {
        let verdict = match (inode, &owners) {
            (Err(reason), _) => Err(reason),
            (Ok(_), Err(reason)) => Err(reason.clone()),
            (Ok(inode), Ok(owners)) => Ok(owners.get(&inode).cloned()),
        };
        let _ = job.answer.send(verdict);
    }
}

#[cfg(target_os = "linux")]
mod imp {
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

    /// Every process whose environment names a run, as of a recent scan.
    fn marked_processes() -> Vec<(u32, String)> {
        static CACHE: std::sync::Mutex<Option<(std::time::Instant, Vec<(u32, String)>)>> =
            std::sync::Mutex::new(None);
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
    fn scan_all(
        inodes: &HashSet<u64>,
        runs: &[RunProcesses],
    ) -> Result<HashMap<u64, String>, String> {
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
            if let Some(inode) = find_inode(&text, peer) {
                return Ok(inode);
            }
        }
        Err(format!("no open socket for {peer} in /proc/net"))
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
    use std::collections::{HashMap, HashSet};
    use std::net::SocketAddr;

    pub fn socket_inode(_peer: SocketAddr, _server: Option<SocketAddr>) -> Result<u64, String> {
        Ok(0)
    }

    pub fn owners(
        _inodes: &HashSet<u64>,
        _runs: &[super::RunProcesses],
    ) -> Result<HashMap<u64, String>, String> {
        Ok(HashMap::new())
    }
}

/// One socket's inode from the kernel's socket table, by its exact
/// addresses: `NETLINK_SOCK_DIAG` with an `inet_diag_req_v2` naming both
/// ends (no dump: the kernel looks the socket up in its hash table).
#[cfg(target_os = "linux")]
mod diag {
    use std::net::{IpAddr, SocketAddr};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const NLM_F_REQUEST: u16 = 1;
    const NLMSG_ERROR: u16 = 2;
    const INET_DIAG_NOCOOKIE: u32 = !0;
    /// `nlmsghdr` (16) + `inet_diag_req_v2` (8 + `inet_diag_sockid` 48).
    const REQUEST_LEN: usize = 72;
    /// Where `idiag_inode` sits in the answer: header, then 4 bytes of
    /// family/state/timer/retrans, the 48-byte sockid, expires, rqueue,
    /// wqueue and uid.
    const INODE_AT: usize = 16 + 4 + 48 + 16;

    /// `Ok(None)`: no such socket (closed meanwhile, or only a time-wait
    /// left). `Err`: sock_diag is not available here.
    pub fn inode(local: SocketAddr, remote: SocketAddr) -> Result<Option<u64>, String> {
        let (local, remote) = (canon(local), canon(remote));
        let family = match (local.ip(), remote.ip()) {
            (IpAddr::V4(_), IpAddr::V4(_)) => libc::AF_INET,
            (IpAddr::V6(_), IpAddr::V6(_)) => libc::AF_INET6,
            _ => return Ok(None),
        };
        let mut req = [0u8; REQUEST_LEN];
        req[0..4].copy_from_slice(&(REQUEST_LEN as u32).to_ne_bytes());
        req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        req[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
        req[8..12].copy_from_slice(&1u32.to_ne_bytes());
        req[16] = family as u8;
        req[17] = libc::IPPROTO_TCP as u8;
        req[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
        // inet_diag_sockid: ports and addresses in network byte order.
        req[24..26].copy_from_slice(&local.port().to_be_bytes());
        req[26..28].copy_from_slice(&remote.port().to_be_bytes());
        put_ip(&mut req[28..44], local.ip());
        put_ip(&mut req[44..60], remote.ip());
        req[64..68].copy_from_slice(&INET_DIAG_NOCOOKIE.to_ne_bytes());
        req[68..72].copy_from_slice(&INET_DIAG_NOCOOKIE.to_ne_bytes());

        // SAFETY: plain syscalls on a descriptor this function owns; every
        // buffer passed outlives the call and its length is its own.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                libc::NETLINK_SOCK_DIAG,
            )
        };
        if fd < 0 {
            return Err(format!(
                "netlink socket: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let timeout = libc::timeval {
            tv_sec: 2,
            tv_usec: 0,
        };
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        let mut buf = [0u8; 512];
        // SAFETY: see above.
        let received = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                &timeout as *const libc::timeval as *const libc::c_void,
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            );
            let sent = libc::sendto(
                fd.as_raw_fd(),
                req.as_ptr() as *const libc::c_void,
                req.len(),
                0,
                &kernel as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            );
            if sent != req.len() as isize {
                return Err(format!("netlink send: {}", std::io::Error::last_os_error()));
            }
            libc::recv(
                fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                0,
            )
        };
        if received < 0 {
            return Err(format!("netlink recv: {}", std::io::Error::last_os_error()));
        }
        parse_answer(&buf[..received as usize])
    }

    pub(super) fn parse_answer(answer: &[u8]) -> Result<Option<u64>, String> {
        let word = |at: usize| -> Option<u32> {
            Some(u32::from_ne_bytes(answer.get(at..at + 4)?.try_into().ok()?))
        };
        let kind = answer
            .get(4..6)
            .map(|b| u16::from_ne_bytes([b[0], b[1]]))
            .ok_or("short netlink answer")?;
        match kind {
            NLMSG_ERROR => {
                let errno = -(word(16).ok_or("short netlink error")? as i32);
                if errno == libc::ENOENT {
                    Ok(None)
                } else {
                    Err(format!(
                        "sock_diag: {}",
                        std::io::Error::from_raw_os_error(errno)
                    ))
                }
            }
            SOCK_DIAG_BY_FAMILY => {
                let inode = word(INODE_AT).ok_or("short sock_diag answer")?;
                Ok((inode != 0).then_some(inode as u64))
            }
            other => Err(format!("unexpected netlink message type {other}")),
        }
    }

    fn canon(addr: SocketAddr) -> SocketAddr {
        match addr.ip() {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => SocketAddr::new(IpAddr::V4(v4), addr.port()),
                None => addr,
            },
            IpAddr::V4(_) => addr,
        }
    }

    fn put_ip(out: &mut [u8], ip: IpAddr) {
        match ip {
            IpAddr::V4(v4) => out[..4].copy_from_slice(&v4.octets()),
            IpAddr::V6(v6) => out.copy_from_slice(&v6.octets()),
        }
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

    fn connected() -> (
        std::net::TcpListener,
        std::net::TcpStream,
        std::net::TcpStream,
    ) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        (listener, client, server)
    }

    fn run(id: &str, roots: &[u32]) -> super::RunProcesses {
        super::RunProcesses {
            run_id: id.into(),
            roots: roots.iter().map(|&p| (p, None)).collect(),
        }
    }

    #[test]
    fn the_kernel_names_the_same_socket_as_proc_net() {
        let (_l, client, server) = connected();
        let peer = client.local_addr().unwrap();
        let ours = server.local_addr().unwrap();
        let exact = super::diag::inode(peer, ours).unwrap().unwrap();
        let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
        assert_eq!(Some(exact), find_inode(&table, peer));
        // Our own end is another socket; a port nobody uses is none.
        assert_ne!(super::diag::inode(ours, peer).unwrap(), Some(exact));
        let nobody = "127.0.0.1:1".parse().unwrap();
        assert_eq!(super::diag::inode(nobody, ours).unwrap(), None);
    }

    #[test]
    fn a_netlink_error_is_no_socket_only_for_enoent() {
        let mut answer = vec![0u8; 20];
        answer[4..6].copy_from_slice(&2u16.to_ne_bytes());
        answer[16..20].copy_from_slice(&(-libc::ENOENT).to_ne_bytes());
        assert_eq!(super::diag::parse_answer(&answer), Ok(None));
        answer[16..20].copy_from_slice(&(-libc::EPERM).to_ne_bytes());
        assert!(super::diag::parse_answer(&answer).is_err());
    }

    #[test]
    fn this_process_is_found_holding_its_own_connection() {
        let (_l, client, server) = connected();
        let peer = client.local_addr().unwrap();
        let ours = Some(server.local_addr().unwrap());
        // Not in a run: nothing to refuse.
        assert_eq!(
            super::run_of_peer(peer, ours, &[run("run-x", &[])]).unwrap(),
            None
        );
        // A run rooted at this very process holds it, by either lookup.
        let me = std::process::id();
        let runs = [run("run-x", &[]), run("run-me", &[me])];
        assert_eq!(
            super::run_of_peer(peer, ours, &runs).unwrap().as_deref(),
            Some("run-me")
        );
        assert_eq!(
            super::run_of_peer(peer, None, &runs).unwrap().as_deref(),
            Some("run-me")
        );
        // A recorded root whose start time is not the process's is not it.
        let stale = super::RunProcesses {
            run_id: "old".into(),
            roots: vec![(me, Some(-1))],
        };
        assert_eq!(super::run_of_peer(peer, ours, &[stale]).unwrap(), None);
    }

    /// A child holding a connection, with `env` and nothing else.
    fn child_connected(
        env: &[(&str, &str)],
    ) -> Option<(
        std::process::Child,
        std::net::SocketAddr,
        std::net::SocketAddr,
    )> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let child = std::process::Command::new("/bin/bash")
            .env_clear()
            .envs(env.iter().copied())
            .arg("-c")
            .arg(format!("exec 3<>/dev/tcp/127.0.0.1/{port}; exec sleep 30"))
            .spawn()
            .ok()?;
        let (server, peer) = listener.accept().unwrap();
        Some((child, peer, server.local_addr().unwrap()))
    }

    #[test]
    fn a_descendant_without_the_marker_belongs_to_its_run() {
        let Some((mut child, peer, ours)) = child_connected(&[]) else {
            return;
        };
        // Rooted at this process: the child (no marker at all) is in its tree.
        let me = std::process::id();
        let found = super::run_of_peer(peer, Some(ours), &[run("run-tree", &[me])]);
        // Rooted at the child itself.
        let direct = super::run_of_peer(peer, Some(ours), &[run("run-child", &[child.id()])]);
        // A live run that neither recorded nor marked it.
        let other = super::run_of_peer(peer, Some(ours), &[run("run-other", &[])]);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found.unwrap().as_deref(), Some("run-tree"));
        assert_eq!(direct.unwrap().as_deref(), Some("run-child"));
        assert_eq!(other.unwrap(), None);
    }

    #[test]
    fn a_marked_child_not_recorded_yet_is_a_root() {
        let Some((mut child, peer, ours)) = child_connected(&[("PAPERCLIP_RUN_ID", "run-new")])
        else {
            return;
        };
        let found = super::run_of_peer(peer, Some(ours), &[run("run-new", &[])]);
        let not_live = super::run_of_peer(peer, Some(ours), &[run("run-else", &[])]);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found.unwrap().as_deref(), Some("run-new"));
        assert_eq!(not_live.unwrap(), None);
    }

    #[tokio::test]
    async fn the_pool_answers_and_an_empty_run_list_needs_no_lookup() {
        let (_l, client, server) = connected();
        let peer = client.local_addr().unwrap();
        let ours = Some(server.local_addr().unwrap());
        assert_eq!(
            super::resolve(peer, ours, vec![]).await,
            super::Verdict::Outside
        );
        let me = std::process::id();
        assert_eq!(
            super::resolve(peer, ours, vec![run("r", &[me])]).await,
            super::Verdict::Run("r".into())
        );
        let gone = "127.0.0.1:1".parse().unwrap();
        assert!(matches!(
            super::resolve(gone, ours, vec![run("r", &[me])]).await,
            super::Verdict::Unknown(_)
        ));
    }

    #[tokio::test]
    async fn lookups_waiting_together_are_answered_together() {
        let held: Vec<_> = (0..40).map(|_| connected()).collect();
        let me = std::process::id();
        let asks = held.iter().enumerate().map(|(i, (_, client, server))| {
            // Half see a run rooted here, half only a run with no processes:
            // a batch answers each as strictly as the union of what they saw.
            let runs = if i % 2 == 0 {
                vec![run("r", &[me])]
            } else {
                vec![run("idle", &[])]
            };
            super::resolve(
                client.local_addr().unwrap(),
                Some(server.local_addr().unwrap()),
                runs,
            )
        });
        for verdict in futures::future::join_all(asks).await {
            assert!(
                matches!(verdict, super::Verdict::Run(ref r) if r == "r")
                    || verdict == super::Verdict::Outside,
                "{verdict:?}"
            );
        }
    }
}
