//! A run's processes: its process group, plus descendants that left the
//! group (`setsid`, a double-forked daemon). Signals to the group cannot reach
//! those, and no portable API lists a process's descendants once their parent
//! died, so each process we spawn carries a marker variable,
//! `PAPERCLIP_PROCESS_TREE=<run id>/<unique per spawn>`; every descendant
//! inherits it unless it deliberately scrubs its environment, and
//! `/proc/<pid>/environ` shows it. Stopping a run signals the group and every
//! process carrying the marker. The marker is unique per spawn rather than
//! just the run id, so that nothing which happens to share a run id (a retry,
//! a test fixture) can take another tree down with it; the run id prefix lets
//! restart recovery find a dead server's leftovers.
//!
//! Not chosen: making the server a child subreaper (PR_SET_CHILD_SUBREAPER).
//! Escaped descendants would then be reparented to us, but we would also have
//! to reap every orphan ourselves, next to tokio's own child handling, and it
//! still would not tell which run an orphan belonged to.

use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use crate::{RunSink, Stream};

/// The variable identifying a run's processes.
pub const TREE_VAR: &str = "PAPERCLIP_PROCESS_TREE";

/// A fresh marker value for a process of `run_id`: unique among the trees
/// this server starts, and across servers (pid, time).
pub(crate) fn new_marker(run_id: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{run_id}/{}-{nanos}-{n}", std::process::id())
}

/// A process group and the marker environment entry of its spawn.
pub(crate) struct Tree {
    pub pgid: i32,
    pub marker: Vec<u8>,
}

impl Tree {
    pub fn new(pgid: i32, marker: &str) -> Tree {
        Tree {
            pgid,
            marker: format!("{TREE_VAR}={marker}").into_bytes(),
        }
    }

    /// Whether any process of the run is still alive (zombies do not count).
    pub fn alive(&self) -> bool {
        group_alive(self.pgid) || !marked_pids(&self.marker, false).is_empty()
    }

    /// Sends `signal` to the group and to every marked process, and reports
    /// it in the run log and timeline. Returns whether anything was signalled.
    pub fn signal(&self, signal: i32, reason: &str, sink: &dyn RunSink) -> bool {
        // SAFETY: killpg has no memory-safety preconditions. Group 0 would
        // mean our own, hence the check. ESRCH means the group is gone.
        let group = self.pgid > 0 && unsafe { libc::killpg(self.pgid, signal) } == 0;
        let escaped: Vec<i32> = marked_pids(&self.marker, false)
            .into_iter()
            .filter(|&pid| process_group(pid) != Some(self.pgid))
            // SAFETY: kill only sends a signal.
            .filter(|&pid| unsafe { libc::kill(pid, signal) } == 0)
            .collect();
        if !group && escaped.is_empty() {
            return false;
        }
        let name = crate::process::signal_name(signal);
        let mut message = format!("sent {name} to process group {}", self.pgid);
        if !escaped.is_empty() {
            message.push_str(&format!(
                " and {} process(es) that left it {escaped:?}",
                escaped.len()
            ));
        }
        sink.log(Stream::System, &format!("{message} ({reason})\n"));
        sink.event(
            "adapter.signal",
            "warn",
            &message,
            json!({"signal": name, "processGroupId": self.pgid, "escapedPids": escaped, "reason": reason}),
        );
        true
    }

    /// TERM everything left, wait up to `grace` for it to go, then KILL.
    pub async fn end(&self, grace: Duration, reason: &str, sink: &dyn RunSink) {
        if !self.alive() {
            return;
        }
        self.signal(libc::SIGTERM, reason, sink);
        self.wait_gone(Instant::now() + grace).await;
        if self.alive() {
            self.signal(libc::SIGKILL, reason, sink);
        }
    }

    /// Polls until nothing of the run is alive or `deadline` passes.
    pub async fn wait_gone(&self, deadline: Instant) {
        while self.alive() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// SIGKILLs every process any spawn of run `run_id` left, wherever it is; for
/// a run whose driver is gone (restart recovery). Returns how many were
/// signalled.
pub fn kill_run(run_id: &str) -> usize {
    if run_id.is_empty() {
        return 0;
    }
    let marker = format!("{TREE_VAR}={run_id}/").into_bytes();
    marked_pids(&marker, true)
        .into_iter()
        // SAFETY: kill only sends a signal.
        .filter(|&pid| unsafe { libc::kill(pid, libc::SIGKILL) } == 0)
        .count()
}

/// When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat`
/// field 22): with the pid, an identity that a later process reusing the
/// id does not share.
pub fn start_ticks(pid: i32) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    // Field 3 (state) is the first after the command name; 22 is 20th.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// `ticks` since boot as an RFC 3339 time, for people to read.
pub fn ticks_to_time(ticks: i64) -> Option<String> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let boot: i64 = stat
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz <= 0 {
        return None;
    }
    let millis = boot * 1000 + ticks * 1000 / hz as i64;
    let time = chrono::DateTime::from_timestamp_millis(millis)?;
    Some(time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// SIGKILLs process group `pgid` left by run `run_id` of a dead server, but
/// only if its leader is provably still the run's process: the same start
/// time when it was recorded, else the run's marker in its environment. A
/// group id reused by an unrelated process is left alone. Returns whether
/// the group was signalled.
pub fn kill_lost_group(run_id: &str, pgid: i32, leader_ticks: Option<i64>) -> bool {
    if pgid <= 1 || run_id.is_empty() {
        return false;
    }
    let ours = match leader_ticks {
        Some(ticks) => start_ticks(pgid) == Some(ticks),
        None => {
            let marker = format!("{TREE_VAR}={run_id}/").into_bytes();
            std::fs::read(format!("/proc/{pgid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|e| e.starts_with(&marker)))
        }
    };
    // SAFETY: killpg only sends a signal.
    ours && unsafe { libc::killpg(pgid, libc::SIGKILL) } == 0
}

/// Live processes whose environment contains exactly the entry `marker` (or,
/// with `prefix`, an entry starting with it). Zombies have an empty environ,
/// so they never match; nor do processes of other users, whose environ we
/// cannot read.
fn marked_pids(marker: &[u8], prefix: bool) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = std::process::id() as i32;
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != own && pid > 1)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                env.split(|&b| b == 0)
                    .any(|entry| entry == marker || (prefix && entry.starts_with(marker)))
            })
        })
        .collect()
}

/// `(state, pgrp)` of a process from `/proc/<pid>/stat`.
fn stat(pid: i32) -> Option<(String, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid pgrp ..."; comm may contain spaces and parens.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.to_string();
    let group = fields.nth(1)?.parse().ok()?;
    Some((state, group))
}

fn process_group(pid: i32) -> Option<i32> {
    stat(pid).map(|(_, g)| g)
}

pub(crate) fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    if pgid <= 0 || unsafe { libc::killpg(pgid, 0) } != 0 {
        return false;
    }
    // Orphaned members become zombies until init reaps them, and containers
    // often run an init that never does; signal 0 still "finds" those.
    live_members_in_proc(pgid).unwrap_or(true)
}

/// Whether /proc lists a non-zombie process in group `pgid`; `None` when
/// /proc cannot be read.
fn live_members_in_proc(pgid: i32) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let live = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .any(|(state, group)| group == pgid && !matches!(state.as_str(), "Z" | "X"));
    Some(live)
}

/// Kills the run's processes if the run is dropped mid-flight (runtime
/// shutdown, aborted task); `kill_on_drop` alone would only reach the leader.
pub(crate) struct TreeGuard {
    pub tree: Tree,
    pub armed: bool,
}

impl Drop for TreeGuard {
    fn drop(&mut self) {
        if self.armed && self.tree.pgid > 0 {
            // SAFETY: see Tree::signal.
            unsafe { libc::killpg(self.tree.pgid, libc::SIGKILL) };
            for pid in marked_pids(&self.tree.marker, false) {
                // SAFETY: kill only sends a signal.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    use super::*;

    #[test]
    fn proc_scan_finds_our_own_group_and_not_a_free_one() {
        // SAFETY: getpgrp has no preconditions.
        let own = unsafe { libc::getpgrp() };
        assert_eq!(live_members_in_proc(own), Some(true));
        assert_eq!(live_members_in_proc(i32::MAX), Some(false));
    }

    #[test]
    fn marked_processes_are_found_by_their_exact_entry_or_run() {
        let run = format!("test-run-{}", std::process::id());
        let marker = new_marker(&run);
        assert_ne!(marker, new_marker(&run), "unique per spawn");
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env(TREE_VAR, &marker)
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let tree = Tree::new(0, &marker);
        let shorter = &tree.marker[..tree.marker.len() - 1];
        // The child may not have exec'd yet; its environ is set by then.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !marked_pids(&tree.marker, false).contains(&pid)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(marked_pids(&tree.marker, false), vec![pid]);
        assert!(!marked_pids(shorter, false).contains(&pid));
        assert_eq!(kill_run(&format!("{run}x")), 0);
        assert_eq!(kill_run(&run), 1);
        child.wait().unwrap();
    }

    /// A `sleep` leading a process group of its own, as a run's CLI would.
    fn group_leader(marker: Option<&str>) -> std::process::Child {
        let mut cmd = Command::new("sleep");
        cmd.arg("30").process_group(0);
        if let Some(m) = marker {
            cmd.env(TREE_VAR, m);
        }
        let child = cmd.spawn().unwrap();
        // spawn returns once the child has begun exec, which can be before
        // the kernel shows its new environment: wait until it does.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while std::fs::read(format!("/proc/{}/environ", child.id())).is_ok_and(|e| e.is_empty()) {
            assert!(
                std::time::Instant::now() < deadline,
                "the child never finished exec"
            );
            std::thread::yield_now();
        }
        child
    }

    #[test]
    fn a_lost_group_is_killed_only_when_its_leader_is_provably_the_runs() {
        let mut child = group_leader(None);
        let pid = child.id() as i32;
        let ticks = start_ticks(pid).expect("start time of a live process");
        assert!(ticks_to_time(ticks).is_some_and(|t| t.ends_with('Z')));
        // Another start time: the id was reused by an unrelated process.
        assert!(!kill_lost_group("run-1", pid, Some(ticks + 1)));
        // No start time recorded and no marker: nothing proves it is ours.
        assert!(!kill_lost_group("run-1", pid, None));
        assert!(child.try_wait().unwrap().is_none(), "left alone");
        assert!(kill_lost_group("run-1", pid, Some(ticks)));
        assert!(child.wait().unwrap().code().is_none(), "killed by a signal");

        let mut marked = group_leader(Some("run-2/x"));
        let pid = marked.id() as i32;
        assert!(!kill_lost_group("run-1", pid, None), "another run's marker");
        assert!(kill_lost_group("run-2", pid, None));
        assert!(marked.wait().unwrap().code().is_none());
    }
}
