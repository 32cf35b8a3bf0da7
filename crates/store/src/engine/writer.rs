//! The one SQLite writer: write transactions queue for it and commit in
//! groups.
//!
//! SQLite writes one transaction at a time, and a commit writes every page
//! the transaction touched to the WAL: ~30 pages (120 KB) for one new task,
//! whose 16 indexes, counters, search index and activity row each change a
//! page. Transactions queued behind one another mostly touch the same pages,
//! so the writer runs them as savepoints of one SQLite transaction and
//! commits that once for the whole group: 16 creates write little more than
//! one did.
//!
//! The rules that keep this as safe as one commit per transaction:
//! - A member's `commit` returns only after the group's commit succeeded,
//!   so nobody is told "saved" before the data is durable, and a failed
//!   group commit fails every member.
//! - A member's rollback (or a dropped transaction) rolls back its own
//!   savepoint only, then commits the group at once if others are in it,
//!   before anyone else writes or the caller reads on: what it saw of the
//!   group (another's claim of a run, say) is then what every reader sees.
//!   It runs synchronously (the writer is SQLite's C API), so a dropped
//!   transaction needs no task to clean up after it.
//! - Every member, after releasing its savepoint, queues for the writer
//!   again. Holding it once more, it commits the group if nobody has yet:
//!   each group is committed by one of its own members once the writers
//!   queued before that member have run, without any timer.
//! - A group is closed at [`MAX_MEMBERS`], so a long queue still commits.
//! - A member whose request is dropped while it waits in the queue (a
//!   client gone) leaves its group to the writers ahead of it: every holder
//!   of the writer ends by committing the open group or failing it, so a
//!   group never stays open once the queue is empty.

use std::sync::Arc;

use crate::engine::raw_conn::RawConn;
use tokio::sync::{watch, Mutex, OwnedMutexGuard};

/// Members after which a group is committed at once.
const MAX_MEMBERS: usize = 64;

/// How a group's commit ended, shared by its members.
type Outcome = Option<Result<(), String>>;

/// The open SQLite transaction, shared by the members of one group.
pub struct Group {
    done: watch::Sender<Outcome>,
}

pub struct Slot {
    pub(crate) conn: RawConn,
    group: Option<Arc<Group>>,
    members: usize,
    /// A member's savepoint is open: its transaction is running, or was
    /// dropped before it could be rolled back (cleaned up by the next holder).
    savepoint: bool,
}

pub(crate) type Writer = Arc<Mutex<Slot>>;

pub(crate) fn new(conn: RawConn) -> Writer {
    Arc::new(Mutex::new(Slot {
        conn,
        group: None,
        members: 0,
        savepoint: false,
    }))
}

/// Takes the writer and opens a member's savepoint in the current group
/// (opening the group first if there is none).
pub(crate) async fn begin(writer: &Writer) -> sqlx::Result<OwnedMutexGuard<Slot>> {
    let mut slot = writer.clone().lock_owned().await;
    slot.clean()?;
    if slot.group.is_none() {
        slot.conn.script("BEGIN IMMEDIATE")?;
        slot.group = Some(Arc::new(Group {
            done: watch::channel(None).0,
        }));
        slot.members = 0;
    }
    if let Err(err) = slot.conn.script("SAVEPOINT member") {
        // Leave no group open behind us (see the rules above).
        let _ = slot.end_without_commit();
        return Err(err);
    }
    slot.savepoint = true;
    Ok(slot)
}

/// Releases the member's savepoint into its group and returns once the
/// group is committed.
pub(crate) async fn commit(mut slot: OwnedMutexGuard<Slot>) -> sqlx::Result<()> {
    let writer = OwnedMutexGuard::mutex(&slot).clone();
    if let Err(err) = slot.conn.script("RELEASE member") {
        slot.end_without_commit()?;
        return Err(err);
    }
    slot.savepoint = false;
    slot.members += 1;
    let group = slot
        .group
        .clone()
        .expect("a member belongs to an open group");
    let mut done = group.done.subscribe();
    if slot.members >= MAX_MEMBERS {
        slot.commit_group();
        drop(slot);
    } else {
        drop(slot);
        // Back in the queue: once we hold the writer again, every writer
        // queued before us has run, and whichever of them did not commit the
        // group has joined it.
        let mut slot = writer.lock_owned().await;
        let ours = slot.group.as_ref().is_some_and(|g| Arc::ptr_eq(g, &group));
        if ours {
            slot.clean()?;
            slot.commit_group();
        }
    }
    // The sender lives in `group`, which we hold, so the wait ends only
    // with the group's outcome.
    let outcome = match done.wait_for(Option::is_some).await {
        Ok(outcome) => outcome.clone(),
        Err(_) => unreachable!("a group reports before it is dropped"),
    };
    match outcome {
        Some(Ok(())) => Ok(()),
        Some(Err(message)) => Err(sqlx::Error::Protocol(message)),
        None => unreachable!("waited for an outcome"),
    }
}

/// Rolls back the member's savepoint (see [`Slot::end_without_commit`]).
pub(crate) async fn rollback(mut slot: OwnedMutexGuard<Slot>) -> sqlx::Result<()> {
    slot.end_without_commit()
}

/// A transaction dropped without commit or rollback: the same, at once.
pub(crate) fn abandon(mut slot: OwnedMutexGuard<Slot>) {
    let _ = slot.end_without_commit();
}

/// Commits the open group, if any (a store closing).
pub(crate) async fn flush(writer: &Writer) {
    let mut slot = writer.lock().await;
    if slot.clean().is_ok() && slot.group.is_some() {
        slot.commit_group();
    }
}

impl Slot {
    /// Rolls back a member's savepoint left open. If even that fails, the
    /// whole group is rolled back and fails: committing it would keep the
    /// changes of a transaction that did not commit.
    fn clean(&mut self) -> sqlx::Result<()> {
        if !self.savepoint {
            return Ok(());
        }
        self.savepoint = false;
        let undone = match self.conn.script("ROLLBACK TO member") {
            Ok(_) => self.conn.script("RELEASE member"),
            Err(err) => Err(err),
        };
        if let Err(err) = undone {
            let _ = self.conn.script("ROLLBACK");
            self.members = 0;
            if let Some(group) = self.group.take() {
                group.done.send_replace(Some(Err(format!(
                    "rolling back a write of the group: {err}"
                ))));
            }
            return Err(err);
        }
        Ok(())
    }

    /// A member ends without committing: its savepoint is rolled back; the
    /// group is committed now if others are in it (so nothing the member saw
    /// of them stays unseen by readers after it returns), or ended if not
    /// (no empty transaction keeps SQLite's write lock).
    fn end_without_commit(&mut self) -> sqlx::Result<()> {
        self.clean()?;
        if self.group.is_some() {
            if self.members == 0 {
                self.group = None;
                self.conn.script("ROLLBACK")?;
            } else {
                self.commit_group();
            }
        }
        Ok(())
    }

    fn commit_group(&mut self) {
        let Some(group) = self.group.take() else {
            return;
        };
        self.members = 0;
        let outcome = match self.conn.script("COMMIT") {
            Ok(_) => Ok(()),
            Err(err) => {
                // A failed COMMIT may leave the transaction open.
                let _ = self.conn.script("ROLLBACK");
                Err(format!("committing a group of writes: {err}"))
            }
        };
        group.done.send_replace(Some(outcome));
    }
}
