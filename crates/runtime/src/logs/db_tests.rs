//! The database log store reads as the file store does: the same pages at
//! the same offsets, cut the same way.

use std::collections::BTreeMap;

use paperclip_store::runlogs::{Chunk, CutRow, Fetched, LogWrite};

use super::db::{page_of, run_of, Sparse};
use super::db_writer::Batch;
use super::tests::{assert_head_marker_tail, chunks, store as file_store};
use super::writer::{lines, Bounds};
use super::*;

/// The tables, in memory: what the batches' writes leave.
#[derive(Default)]
struct Tables {
    chunks: BTreeMap<u64, String>,
    cut: Option<CutRow>,
}

impl Tables {
    fn apply(&mut self, ops: Vec<LogWrite>) {
        for op in ops {
            match op {
                LogWrite::Chunk { start, content } => {
                    self.chunks.entry(start).or_insert(content);
                }
                LogWrite::Cut { head, max_bytes } => {
                    self.cut.get_or_insert(CutRow {
                        head_bytes: head,
                        tail_start: head,
                        max_bytes,
                        marker: None,
                    });
                }
                LogWrite::Drop { head, tail_start } => {
                    self.chunks.retain(|s, _| *s < head || *s >= tail_start);
                    self.cut.as_mut().unwrap().tail_start = tail_start;
                }
                LogWrite::Close {
                    marker: Some((marker, tail_start)),
                } => {
                    let cut = self.cut.as_mut().unwrap();
                    cut.tail_start = tail_start;
                    cut.marker = Some(marker);
                }
                LogWrite::Close { marker: None } => self.cut = None,
            }
        }
    }

    fn bytes(&self) -> u64 {
        self.chunks.values().map(|c| c.len() as u64).sum()
    }

    /// Every page from `offset`, `limit` bytes at a time.
    fn read_all(&self, offset: u64, limit: u64) -> (String, u64) {
        let fetched = Fetched {
            chunks: self
                .chunks
                .iter()
                .map(|(start, content)| Chunk {
                    start: *start,
                    content: content.clone(),
                })
                .collect(),
            cut: self.cut.clone(),
            ..Fetched::default()
        };
        let (mut out, mut at) = (String::new(), offset);
        loop {
            let page = page_of(&fetched, at, limit.max(4));
            if page.next_offset == at {
                return (out, at);
            }
            out.push_str(&page.content);
            at = page.next_offset;
        }
    }
}

fn line(i: usize) -> String {
    format!("line {i:05} {}\n", "y".repeat(80))
}

/// The same lines through the file store's writer and a batch flushed at
/// uneven moments: the same lines, offsets and cut, live and after the end.
#[test]
fn the_database_log_reads_as_the_file_log() {
    for n in [40, 300, 5000] {
        let (files, root) = file_store(MIN_MAX_BYTES);
        let mut file = files.writer("c", "r").unwrap();
        let bounds = Bounds::new(MIN_MAX_BYTES);
        let mut batch = Batch::new(bounds);
        let mut tables = Tables::default();
        for i in 0..n {
            // Lines of the same length (times are fixed width), so the same offsets.
            for l in lines(&bounds, "stdout", &line(i), i as u64) {
                batch.push_line(l);
            }
            file.append("stdout", &line(i), i as u64).unwrap();
            if i % 7 == 3 {
                tables.apply(batch.take());
            }
            if i == n - 10 {
                tables.apply(batch.take());
                let (text, end) = tables.read_all(0, 7000);
                let (file_text, file_end) = super::tests::read_all(&files, 0, 7000);
                assert_same_head_and_end(&text, &file_text);
                assert_eq!(end, file_end);
            }
        }
        batch.finish();
        tables.apply(batch.take());
        file.finish().unwrap();
        // Bounded as the file: at most the limit, plus the marker.
        let marker = tables.cut.as_ref().and_then(|c| c.marker.clone());
        assert!(tables.bytes() <= MIN_MAX_BYTES, "{}", tables.bytes());
        let whole = std::fs::read_to_string(root.join("c/r.ndjson")).unwrap();
        for limit in [1, 3000, 1 << 20] {
            let (text, end) = tables.read_all(0, limit);
            let (file_text, file_end) = super::tests::read_all(&files, 0, limit);
            assert_eq!(end, file_end, "{n} {limit}");
            assert_same_head_and_end(&text, &file_text);
            assert_eq!(chunks(&file_text), chunks(&whole));
        }
        let file_cut = files.cut("c/r.ndjson").unwrap();
        assert_eq!(file_cut.is_some(), marker.is_some(), "{n}");
        if let Some(file_cut) = file_cut {
            let row = tables.cut.clone().unwrap();
            let cut = LogCut {
                head_bytes: row.head_bytes,
                tail_start: row.tail_start,
                max_bytes: row.max_bytes,
            };
            // The tail rolls on in chunks rather than the file's segments:
            // the same head, a tail of its own length.
            assert_eq!(cut.head_bytes, file_cut.head_bytes);
            let (text, _) = tables.read_all(0, 1 << 20);
            assert_head_marker_tail(&text, cut.omitted_bytes(), n, MIN_MAX_BYTES);
            // Inside the part left out: the marker, then the tail.
            let (from_cut, _) = tables.read_all(cut.head_bytes + 1, 64 * 1024);
            assert!(from_cut.starts_with(&marker.unwrap()));
        } else {
            assert_eq!(tables.cut, None);
        }
    }
}

/// The file's lines, or (a cut log) the same head, a marker and a tail
/// that ends the same.
fn assert_same_head_and_end(db: &str, file: &str) {
    let (db, file) = (chunks(db), chunks(file));
    let marker = |c: &Vec<String>| c.iter().position(|l| l.starts_with("[paperclip: "));
    match (marker(&db), marker(&file)) {
        (None, None) => assert_eq!(db, file),
        (Some(d), Some(f)) => {
            assert_eq!(db[..d], file[..f]);
            let (db_tail, file_tail) = (&db[d + 1..], &file[f + 1..]);
            assert!(db_tail.ends_with(file_tail) || file_tail.ends_with(db_tail));
        }
        (d, f) => panic!("markers at {d:?} and {f:?}"),
    }
}

#[test]
fn sparse_reads_stop_at_a_gap_and_the_limit() {
    let parts = [
        Chunk {
            start: 0,
            content: "ab\ncd\n".into(),
        },
        Chunk {
            start: 6,
            content: "ef\n".into(),
        },
        Chunk {
            start: 20,
            content: "zz\n".into(),
        },
    ];
    let sparse = Sparse(&parts);
    assert_eq!(sparse.bytes(1, 100), (b"b\ncd\nef\n".to_vec(), true));
    assert_eq!(sparse.bytes(1, 4), (b"b\ncd".to_vec(), false));
    assert_eq!(sparse.bytes(20, 3), (b"zz\n".to_vec(), false));
    assert_eq!(sparse.bytes(23, 3), (Vec::new(), true));
    let run = "0190b4a4-7e4b-7b3c-9a6e-3f1d2c4b5a69";
    for good in [format!("c/{run}.ndjson"), format!("c/agent/{run}.ndjson")] {
        assert_eq!(run_of(&good).as_deref(), Some(run));
    }
    for other in ["../x.ndjson", "c/r.ndjson", "x", run] {
        assert_eq!(run_of(other), None, "{other}");
    }
}

/// The whole store on a database (SQLite here: the tables are the same;
/// Postgres is covered by the two-instance test): live reads once a batch
/// is written, the cut, the end, removal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_writes_reads_and_removes_a_log_in_the_database() {
    let dir = std::env::temp_dir().join(format!("paperclip-dblogs-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.join("db.sqlite").display());
    let db = paperclip_store::Store::connect(&url).await.unwrap();
    let logs = PostgresLogStore::new(db, LocalFileLogStore::new(dir.join("run-logs")));
    logs.set_max_bytes(MIN_MAX_BYTES);
    let run = uuid::Uuid::now_v7().to_string();
    let log_ref = format!("c/{run}.ndjson");
    let mut w = logs.open("c", &run).unwrap();
    assert_eq!(w.log_ref(), log_ref);
    let n = 3000;
    let mut total = 0;
    for i in 0..n {
        total += w.append("stdout", &line(i), i as u64).unwrap();
        if i == 5 {
            w.flush().await;
            let page = logs.read(&log_ref, 0, 1 << 20).unwrap();
            assert_eq!(page.next_offset, total);
            assert_eq!(chunks(&page.content).len(), 6);
        }
    }
    w.flush().await;
    // Live and cut: the head, a marker, the tail up to the last line.
    let live = logs.cut(&log_ref).unwrap().expect("cut while live");
    let page = logs.read(&log_ref, live.tail_start, 1 << 20).unwrap();
    assert_eq!(page.next_offset, total);
    assert_eq!(chunks(&page.content).last().unwrap(), &line(n - 1));
    w.finish().unwrap();
    let cut = logs.cut(&log_ref).unwrap().expect("cut");
    let mut text = String::new();
    let mut at = 0;
    loop {
        let page = logs.read(&log_ref, at, 2500).unwrap();
        if page.next_offset == at {
            break;
        }
        text.push_str(&page.content);
        at = page.next_offset;
    }
    assert_eq!(at, total);
    assert_head_marker_tail(&text, cut.omitted_bytes(), n, MIN_MAX_BYTES);
    assert!(logs.remove(&log_ref).unwrap());
    assert!(!logs.remove(&log_ref).unwrap());
    assert_eq!(logs.read(&log_ref, 0, 100).unwrap().content, "");
    assert_eq!(logs.cut(&log_ref).unwrap(), None);
    // An empty log finishes at once.
    let mut empty = logs.open("c", &uuid::Uuid::now_v7().to_string()).unwrap();
    empty.finish().unwrap();
}

/// With the database stalled, what waits stays within the log's limit:
/// the head, and a tail whose oldest unwritten chunks are dropped.
#[test]
fn lines_waiting_for_a_stalled_database_stay_within_the_limit() {
    let bounds = Bounds::new(MIN_MAX_BYTES);
    let mut batch = Batch::new(bounds);
    for i in 0..20_000 {
        for l in lines(&bounds, "stdout", &line(i), i as u64) {
            batch.push_line(l);
        }
    }
    let ops = batch.take();
    let waiting: usize = ops
        .iter()
        .map(|op| match op {
            LogWrite::Chunk { content, .. } => content.len(),
            _ => 0,
        })
        .sum();
    assert!(waiting as u64 <= MIN_MAX_BYTES, "{waiting}");
    let mut tables = Tables::default();
    tables.apply(ops);
    let (text, _) = tables.read_all(0, 1 << 20);
    let got = chunks(&text);
    assert_eq!(got.first().unwrap(), &line(0));
    assert_eq!(got.last().unwrap(), &line(19_999));
}
