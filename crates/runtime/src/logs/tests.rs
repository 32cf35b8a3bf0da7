use super::*;

#[test]
fn pages_end_on_lines_or_characters() {
    assert_eq!(page_len(b"ab\ncd\nef", 8, false), 6);
    // A line still being written at the end waits.
    assert_eq!(page_len(b"ef", 8, true), 0);
    // A line longer than the page is cut between characters.
    let text = "\u{e9}\u{6f22}\u{1f600}".as_bytes();
    assert_eq!(page_len(&text[..4], 4, false), 2);
    assert_eq!(page_len(&text[..3], 3, false), 2);
    // Starting inside a character steps over it.
    assert_eq!(page_len(&text[1..5], 4, false), 1);
}

pub(super) fn store(max: u64) -> (LocalFileLogStore, PathBuf) {
    let root = std::env::temp_dir().join(format!("paperclip-logs-{}", uuid::Uuid::new_v4()));
    let store = LocalFileLogStore::new(root.clone());
    store.set_max_bytes(max);
    (store, root)
}

/// Every page from `offset` to the end, `limit` bytes at a time.
pub(super) fn read_all(store: &LocalFileLogStore, offset: u64, limit: u64) -> (String, u64) {
    let (mut out, mut at) = (String::new(), offset);
    loop {
        let page = store.read("c/r.ndjson", at, limit).unwrap();
        if page.next_offset == at {
            return (out, at);
        }
        assert!(page.next_offset > at);
        out.push_str(&page.content);
        at = page.next_offset;
    }
}

pub(super) fn chunks(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["chunk"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn a_log_within_its_limit_is_kept_whole() {
    let (store, root) = store(MIN_MAX_BYTES);
    let mut w = store.writer("c", "r").unwrap();
    let mut total = 0;
    // Past the head (half the limit), not past the limit: nothing is cut.
    for i in 0..300 {
        total += w
            .append("stdout", &format!("line {i:05} {}\n", "x".repeat(80)), i)
            .unwrap();
    }
    assert!(
        total > MIN_MAX_BYTES / 2 && total < MIN_MAX_BYTES,
        "{total}"
    );
    w.finish().unwrap();
    let file = std::fs::read_to_string(root.join("c/r.ndjson")).unwrap();
    assert_eq!(file.len() as u64, total);
    assert_eq!(chunks(&file).len(), 300);
    assert!(!root.join("c/r.ndjson.cut").exists() && !root.join("c/r.ndjson.tail").exists());
    assert_eq!(store.cut("c/r.ndjson").unwrap(), None);
    assert_eq!(read_all(&store, 0, 1000), (file, total));
}

/// The head from the first line, the marker, then the tail up to the
/// last line with no line missing.
pub(super) fn assert_head_marker_tail(file: &str, omitted: u64, n: usize, max: u64) {
    let got = chunks(file);
    let at = got
        .iter()
        .position(|c| c.starts_with("[paperclip: "))
        .unwrap();
    assert!(got[at].contains(&format!("{omitted} bytes")), "{}", got[at]);
    for (k, c) in got[..at].iter().enumerate() {
        assert_eq!(c, &format!("line {k:05} {}\n", "y".repeat(80)));
    }
    let first_tail: usize = got[at + 1][5..10].parse().unwrap();
    for (k, c) in got[at + 1..].iter().enumerate() {
        assert_eq!(
            c,
            &format!("line {:05} {}\n", first_tail + k, "y".repeat(80))
        );
    }
    assert_eq!(first_tail + got.len() - at - 1, n);
    assert!(
        (got.len() - at - 1) * 100 >= (max as usize) / 4,
        "a real tail"
    );
}

#[test]
fn a_long_log_keeps_its_head_a_marker_and_its_real_tail() {
    let max = MIN_MAX_BYTES;
    let (store, root) = store(max);
    let mut w = store.writer("c", "r").unwrap();
    let n = 5000;
    let mut total = 0;
    let mut live_offset = None;
    for i in 0..n {
        total += w
            .append("stdout", &format!("line {i:05} {}\n", "y".repeat(80)), i)
            .unwrap();
        if i == n - 10 {
            // While the run writes: the head, a marker, the tail so far.
            let (text, end) = read_all(&store, 0, 7000);
            assert_eq!(end, total);
            let got = chunks(&text);
            assert_eq!(got[0], format!("line 00000 {}\n", "y".repeat(80)));
            assert!(
                got.iter().any(|c| c.starts_with("[paperclip: ")),
                "a marker"
            );
            assert_eq!(
                got.last().unwrap(),
                &format!("line {i:05} {}\n", "y".repeat(80))
            );
            live_offset = Some(end);
        }
    }
    // On disk meanwhile: at most the limit.
    let on_disk: u64 = std::fs::metadata(root.join("c/r.ndjson")).unwrap().len()
        + std::fs::read_dir(root.join("c/r.ndjson.tail"))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum::<u64>();
    assert!(on_disk <= max, "{on_disk}");
    w.finish().unwrap();
    let file = std::fs::read_to_string(root.join("c/r.ndjson")).unwrap();
    let cut = store.cut("c/r.ndjson").unwrap().expect("cut");
    let marker = marker_line(cut.omitted_bytes(), max);
    assert!(
        file.len() <= (max as usize) + marker.len(),
        "{}",
        file.len()
    );
    assert!(!root.join("c/r.ndjson.tail").exists());
    assert_head_marker_tail(&file, cut.omitted_bytes(), n as usize, max);
    // Offsets count the whole output: the pages add up to the file, and
    // an offset read while the run wrote still reads on from there.
    assert_eq!(read_all(&store, 0, 3000), (file.clone(), total));
    assert_eq!(read_all(&store, 0, 1), (file.clone(), total));
    let (rest, end) = read_all(&store, live_offset.unwrap(), 64 * 1024);
    assert_eq!(end, total);
    assert_eq!(chunks(&rest).len(), 9);
    // Inside the part left out: the marker, then the tail.
    let (from_cut, _) = read_all(&store, cut.head_bytes + 1, 64 * 1024);
    assert!(from_cut.starts_with(&file[cut.head_bytes as usize..][..40]));
    assert!(store.remove("c/r.ndjson").unwrap());
    assert!(!root.join("c/r.ndjson").exists() && !root.join("c/r.ndjson.cut").exists());
    assert!(!store.remove("c/r.ndjson").unwrap());
    assert_eq!(store.read("c/r.ndjson", 0, 100).unwrap().content, "");
}

#[test]
fn a_chunk_too_long_for_the_tail_is_split_between_characters() {
    let (store, root) = store(MIN_MAX_BYTES);
    let mut w = store.writer("c", "r").unwrap();
    let big = "é漢😀".repeat(20_000);
    w.append("stdout", &big, 1).unwrap();
    w.append("stdout", "the end\n", 2).unwrap();
    w.finish().unwrap();
    let file = std::fs::read_to_string(root.join("c/r.ndjson")).unwrap();
    assert!(file.len() as u64 <= MIN_MAX_BYTES + 1024);
    let got = chunks(&file);
    assert_eq!(got.last().unwrap(), "the end\n");
    assert!(got.len() > 2, "split into lines");
}
