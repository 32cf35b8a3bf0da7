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
#[path = "linux.rs"]
mod imp;

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

#[cfg(target_os = "linux")]
mod diag;

#[cfg(all(test, target_os = "linux"))]
mod tests;
