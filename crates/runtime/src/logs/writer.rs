//! Writing a run's log within its bound: the head as it comes, then the
//! rolling tail, joined after a marker when the run ends (see the parent).

use super::*;

/// The shares of the limit: the head, and each of the two tail segments.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    pub(super) max: u64,
    pub(super) head: u64,
    pub(super) segment: u64,
}

impl Bounds {
    pub(super) fn new(max: u64) -> Bounds {
        let max = max.max(MIN_MAX_BYTES);
        let head = max / 2;
        Bounds {
            max,
            head,
            segment: (max - head) / 2,
        }
    }
}

pub(super) struct Segment {
    pub(super) start: u64,
    pub(super) len: u64,
    pub(super) path: PathBuf,
    pub(super) file: std::fs::File,
}

pub(super) struct TailState {
    pub(super) head: u64,
    /// Oldest first; at most two.
    pub(super) segments: Vec<Segment>,
}

pub(super) struct FileWriter {
    pub(super) file: std::io::BufWriter<std::fs::File>,
    pub(super) files: Files,
    pub(super) log_ref: String,
    pub(super) bounds: Bounds,
    /// Bytes of the whole log written so far (the next line's offset).
    pub(super) written: u64,
    pub(super) tail: Option<TailState>,
}

impl FileWriter {
    pub(super) fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        let len = line.len() as u64;
        if self.tail.is_none() && self.written + len <= self.bounds.head {
            self.file.write_all(line)?;
            // Flushed per line so a reader (or a crash) sees everything written so far.
            self.file.flush()?;
            self.written += len;
            return Ok(());
        }
        if self.tail.is_none() {
            self.file.flush()?;
            std::fs::create_dir_all(&self.files.tail)?;
            self.files.write_state(&CutState {
                head: self.written,
                marker: None,
                tail_start: None,
                max_bytes: self.bounds.max,
            })?;
            self.tail = Some(TailState {
                head: self.written,
                segments: Vec::new(),
            });
        }
        let tail = self.tail.as_mut().expect("in the tail");
        let fits = tail
            .segments
            .last()
            .is_some_and(|s| s.len + len <= self.bounds.segment);
        if !fits {
            // The new segment is made before the oldest goes, so a reader
            // always finds the tail.
            let path = self.files.tail.join(format!("{:020}.ndjson", self.written));
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?;
            tail.segments.push(Segment {
                start: self.written,
                len: 0,
                path,
                file,
            });
            if tail.segments.len() > 2 {
                let old = tail.segments.remove(0);
                std::fs::remove_file(&old.path)?;
            }
        }
        let segment = tail.segments.last_mut().expect("a segment");
        segment.file.write_all(line)?;
        segment.len += len;
        self.written += len;
        Ok(())
    }

    pub(super) fn lines(&self, stream: &str, chunk: &str, seq: u64) -> Vec<String> {
        lines(&self.bounds, stream, chunk, seq)
    }
}

/// Lines of `chunk`: one unless it is too long for a tail segment.
pub(super) fn lines(bounds: &Bounds, stream: &str, chunk: &str, seq: u64) -> Vec<String> {
    let line = |c: &str| {
        let mut l =
            json!({ "ts": paperclip_store::now(), "stream": stream, "chunk": c, "seq": seq })
                .to_string();
        l.push('\n');
        l
    };
    let whole = line(chunk);
    if (whole.len() as u64) <= bounds.segment / 4 || chunk.len() < 2 {
        return vec![whole];
    }
    let mut mid = chunk.len() / 2;
    while !chunk.is_char_boundary(mid) {
        mid += 1;
    }
    let mut out = lines(bounds, stream, &chunk[..mid], seq);
    out.extend(lines(bounds, stream, &chunk[mid..], seq));
    out
}

impl RunLogWriter for FileWriter {
    fn append(&mut self, stream: &str, chunk: &str, seq: u64) -> std::io::Result<u64> {
        let mut n = 0;
        for line in self.lines(stream, chunk, seq) {
            self.write_line(line.as_bytes())?;
            n += line.len() as u64;
        }
        Ok(n)
    }

    fn log_ref(&self) -> String {
        self.log_ref.clone()
    }

    fn finish(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        let Some(tail) = self.tail.take() else {
            return Ok(());
        };
        let tail_start = tail.segments.first().map_or(self.written, |s| s.start);
        let omitted = tail_start - tail.head;
        // A finish cut short (a crash) may have left part of a tail here.
        let mut main = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.files.main)?;
        main.set_len(tail.head)?;
        main.seek(SeekFrom::End(0))?;
        let marker = if omitted > 0 {
            marker_line(omitted, self.bounds.max)
        } else {
            String::new()
        };
        main.write_all(marker.as_bytes())?;
        for segment in &tail.segments {
            std::io::copy(&mut std::fs::File::open(&segment.path)?, &mut main)?;
        }
        main.sync_data()?;
        if omitted > 0 {
            self.files.write_state(&CutState {
                head: tail.head,
                marker: Some(marker.len() as u64),
                tail_start: Some(tail_start),
                max_bytes: self.bounds.max,
            })?;
        } else {
            // Nothing left out: the log is whole again.
            std::fs::remove_file(&self.files.cut)?;
        }
        drop(tail);
        std::fs::remove_dir_all(&self.files.tail)
    }
}
