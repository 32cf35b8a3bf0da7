//! Task list pages kept between writes, and the per-company write versions
//! that say when a kept page is no longer current.
//!
//! A list of 1,000 tasks is ~720 KB of JSON, found and written in ~1 ms; a
//! board tab, a CLI or an agent polling the list asks for the same bytes
//! again and again between writes. Each committed transaction moves the
//! version of every company its events name (a write of a task, a label or
//! a relation records an activity entry of its company); a transaction that
//! names none moves every company's, so a write nobody attributed can only
//! cost a page being found again, never a stale one. A page is kept with the
//! version read before it was found: a commit landing during the read makes
//! it stale at once.
//!
//! A commit of another process on the same Postgres is not announced here
//! (the fleet's listener may call [`Store::changed_elsewhere`]); a kept page
//! is found again after [`FRESH_FOR`] at most, which bounds that.
//!
//! The ETag is a hash of the bytes (as upstream's is), so it is right
//! whatever the cache did: a page found again unchanged keeps its tag, and a
//! client revalidating gets its 304.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::issues::list::filter::{Filter, Position};
use crate::issues::list::json::list_json;
use crate::{Result, Store, StoreEvent};

/// Longest a kept page is answered without being found again.
pub const FRESH_FOR: Duration = Duration::from_secs(2);
/// Kept pages' bytes in all; past it the oldest go first.
const KEPT_BYTES: usize = 32 << 20;
/// A page larger than this is answered but not kept.
const KEPT_PAGE_MAX: usize = 8 << 20;
/// Companies whose versions are tracked one by one; past it all move.
const COMPANIES_MAX: usize = 4096;

/// A page of tasks as the API answers it, with its ETag.
pub struct KeptPage {
    pub body: Vec<u8>,
    /// Set when more tasks match than fit on this page.
    pub next_cursor: Option<Position>,
    /// A weak entity tag: `W/"<hex>"`.
    pub etag: String,
}

impl AsRef<[u8]> for KeptPage {
    fn as_ref(&self) -> &[u8] {
        &self.body
    }
}

#[derive(Default)]
pub(crate) struct Versions {
    state: Mutex<VersionState>,
}

#[derive(Default)]
struct VersionState {
    clock: u64,
    /// The version every company has at least.
    everyone: u64,
    companies: HashMap<String, u64>,
}

impl Versions {
    /// Called with a transaction's events once it has committed: after the
    /// commit, so a page found from before it is never kept as current.
    pub(crate) fn committed(&self, events: &[StoreEvent]) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.clock += 1;
        let stamp = state.clock;
        let mut named = events.iter().filter_map(company_of).peekable();
        if named.peek().is_none() || state.companies.len() >= COMPANIES_MAX {
            state.everyone = stamp;
            state.companies.clear();
            return;
        }
        for company in named {
            match state.companies.get_mut(company) {
                Some(version) => *version = stamp,
                None => {
                    state.companies.insert(company.to_string(), stamp);
                }
            }
        }
    }

    /// Moves `company`'s version, or every company's with `None`.
    pub(crate) fn moved(&self, company: Option<&str>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.clock += 1;
        let stamp = state.clock;
        match company {
            Some(c) if state.companies.len() < COMPANIES_MAX => {
                state.companies.insert(c.to_string(), stamp);
            }
            _ => {
                state.everyone = stamp;
                state.companies.clear();
            }
        }
    }

    pub(crate) fn of(&self, company: &str) -> u64 {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let own = state.companies.get(company).copied().unwrap_or(0);
        own.max(state.everyone)
    }
}

/// The company an event is about, when it names one.
fn company_of(event: &StoreEvent) -> Option<&str> {
    match event {
        StoreEvent::Activity(entry) => Some(&entry.company_id),
        StoreEvent::RunQueued { company_id, .. } => Some(company_id),
        StoreEvent::RunsMayStart | StoreEvent::AgentsStopped { .. } => None,
    }
}

#[derive(Default)]
pub(crate) struct Pages {
    kept: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    entries: HashMap<String, Entry>,
    bytes: usize,
}

struct Entry {
    version: u64,
    at: Instant,
    page: Arc<KeptPage>,
}

impl Kept {
    fn put(&mut self, key: String, entry: Entry) {
        let size = entry.page.body.len();
        if let Some(old) = self.entries.remove(&key) {
            self.bytes -= old.page.body.len();
        }
        while self.bytes + size > KEPT_BYTES {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.at)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(gone) = self.entries.remove(&oldest) {
                self.bytes -= gone.page.body.len();
            }
        }
        self.bytes += size;
        self.entries.insert(key, entry);
    }
}

/// The page of `filter`, as [`list_json`] finds it, kept until the
/// company's next write (or [`FRESH_FOR`]).
pub async fn list_json_kept(
    store: &Store,
    company_id: &str,
    filter: &Filter,
) -> Result<Arc<KeptPage>> {
    let key = format!("{company_id}\n{filter:?}");
    // Read before the page is found: a commit during the read moves the
    // version past this one, so what was read is not kept as current.
    let version = store.versions().of(company_id);
    {
        let kept = store.pages().kept.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = kept.entries.get(&key) {
            if e.version == version && e.at.elapsed() < FRESH_FOR {
                return Ok(e.page.clone());
            }
        }
    }
    let found = list_json(store, company_id, filter).await?;
    let page = Arc::new(KeptPage {
        etag: etag(&found.body),
        body: found.body,
        next_cursor: found.next_cursor,
    });
    if page.body.len() <= KEPT_PAGE_MAX {
        let mut kept = store.pages().kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.put(
            key,
            Entry {
                version,
                at: Instant::now(),
                page: page.clone(),
            },
        );
    }
    Ok(page)
}

/// A weak tag of `body`: 128 bits of its SHA-256, in hex.
pub fn etag(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    let mut tag = String::with_capacity(36);
    tag.push_str("W/\"");
    for b in &digest[..16] {
        tag.push(char::from_digit(u32::from(b >> 4), 16).unwrap_or('0'));
        tag.push(char::from_digit(u32::from(b & 15), 16).unwrap_or('0'));
    }
    tag.push('"');
    tag
}

/// Whether an `If-None-Match` value names `etag` (weak comparison, as
/// RFC 9110 asks of it: `W/` is ignored on both sides; `*` names any).
pub fn none_match(header: &str, etag: &str) -> bool {
    let opaque = |t: &str| t.trim().trim_start_matches("W/").to_string();
    let ours = opaque(etag);
    header
        .split(',')
        .map(str::trim)
        .any(|t| t == "*" || opaque(t) == ours)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paperclip_core::model::ActivityEntry;

    fn activity(company: &str) -> StoreEvent {
        StoreEvent::Activity(ActivityEntry {
            id: "a".into(),
            company_id: company.into(),
            actor_type: "user".into(),
            actor_id: "u".into(),
            action: "issue.created".into(),
            entity_type: "issue".into(),
            entity_id: "i".into(),
            agent_id: None,
            run_id: None,
            responsible_user_id: Some("u".into()),
            details: serde_json::json!({}),
            created_at: "2026-12-07T00:00:00.000Z".into(),
        })
    }

    #[test]
    fn a_commit_moves_the_companies_it_names_and_an_unnamed_one_moves_all() {
        let v = Versions::default();
        let (a0, b0) = (v.of("a"), v.of("b"));
        v.committed(&[activity("a")]);
        assert!(v.of("a") > a0);
        assert_eq!(v.of("b"), b0);
        let (a1, b1) = (v.of("a"), v.of("b"));
        v.committed(&[StoreEvent::RunsMayStart]);
        assert!(v.of("a") > a1 && v.of("b") > b1);
        let b2 = v.of("b");
        v.committed(&[]);
        assert!(v.of("b") > b2);
        let a3 = v.of("a");
        v.moved(Some("a"));
        assert!(v.of("a") > a3);
    }

    #[test]
    fn if_none_match_compares_weakly() {
        let tag = etag(b"[]");
        assert!(tag.starts_with("W/\"") && tag.len() == 36);
        assert_eq!(tag, etag(b"[]"));
        assert_ne!(tag, etag(b"[1]"));
        let strong = tag.trim_start_matches("W/");
        assert!(none_match(&tag, &tag));
        assert!(none_match(strong, &tag));
        assert!(none_match(&format!("\"x\", {tag}"), &tag));
        assert!(none_match("*", &tag));
        assert!(!none_match("\"x\"", &tag));
        assert!(!none_match("", &tag));
    }

    #[test]
    fn kept_pages_stay_within_their_bytes() {
        let mut kept = Kept::default();
        for i in 0..10 {
            let page = Arc::new(KeptPage {
                body: vec![0; KEPT_BYTES / 4],
                next_cursor: None,
                etag: String::new(),
            });
            kept.put(
                format!("k{i}"),
                Entry {
                    version: 0,
                    at: Instant::now(),
                    page,
                },
            );
            assert!(kept.bytes <= KEPT_BYTES);
        }
        assert_eq!(kept.entries.len(), 4);
        assert!(kept.entries.contains_key("k9"));
    }
}
