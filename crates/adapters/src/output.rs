//! Streaming a child's stdout/stderr into the sink as it arrives.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;

use crate::{RunSink, Stream};

/// A partial line is held back this long waiting for its newline; after that
/// it is sent anyway so prompts like `Continue? ` still show up live.
const PARTIAL_FLUSH_AFTER: Duration = Duration::from_millis(100);
/// A line longer than this is sent in pieces rather than buffered without bound.
const MAX_PENDING: usize = 64 * 1024;
/// A last line longer than this is not worth reporting whole.
const MAX_LAST_LINE: usize = 1024 * 1024;

/// Splits a byte stream into text chunks that end on line boundaries when the
/// stream cooperates. Invalid UTF-8 is replaced, but a multi-byte character cut
/// by a read boundary is kept whole.
#[derive(Default)]
pub(crate) struct LineBuffer {
    pending: Vec<u8>,
}

impl LineBuffer {
    /// Adds bytes; returns every complete line buffered so far, if any.
    pub fn push(&mut self, bytes: &[u8]) -> Option<String> {
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= MAX_PENDING {
            return self.flush_partial();
        }
        let end = self.pending.iter().rposition(|&b| b == b'\n')? + 1;
        Some(self.take(end))
    }

    /// Returns whatever is buffered except an incomplete trailing character.
    pub fn flush_partial(&mut self) -> Option<String> {
        let end = complete_utf8_prefix(&self.pending);
        (end > 0).then(|| self.take(end))
    }

    /// Returns everything left; used at end of stream.
    pub fn finish(&mut self) -> Option<String> {
        let end = self.pending.len();
        (end > 0).then(|| self.take(end))
    }

    fn take(&mut self, end: usize) -> String {
        let rest = self.pending.split_off(end);
        let head = std::mem::replace(&mut self.pending, rest);
        String::from_utf8_lossy(&head).into_owned()
    }
}

/// Length of `bytes` minus a trailing sequence that could still become a valid
/// character once more bytes arrive.
fn complete_utf8_prefix(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(e) => {
            let tail = &bytes[e.valid_up_to()..];
            match e.error_len() {
                // Incomplete at the very end: hold it back.
                None => e.valid_up_to(),
                // Genuinely invalid bytes: send them (lossy) along with the rest,
                // except a possible incomplete sequence after them.
                Some(n) => e.valid_up_to() + n + complete_utf8_prefix(&tail[n..]),
            }
        }
    }
}

/// Last line with non-whitespace content in `text`.
fn last_non_empty_line(text: &str) -> Option<&str> {
    text.lines().rev().map(str::trim).find(|l| !l.is_empty())
}

/// Reads `reader` until EOF, sending text to the sink and to `tap`. When
/// `last_line` is given it is kept up to date with the most recent non-empty
/// line.
pub(crate) fn spawn_reader<R>(
    mut reader: R,
    stream: Stream,
    sink: Arc<dyn RunSink>,
    last_line: Option<Arc<Mutex<Option<String>>>>,
    mut tap: Option<Box<dyn crate::process::Tap>>,
) -> JoinHandle<()>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut lines = LineBuffer::default();
        let mut buf = vec![0u8; 8192];
        // The unfinished line so far, across partial flushes: the last line
        // must be the whole line, or a secret split over two writes would be
        // half in it, where redaction cannot recognise it.
        let mut current = String::new();
        let mut emit = |text: String| {
            if let Some(slot) = &last_line {
                current.push_str(&text);
                if let Some(line) = last_non_empty_line(&current) {
                    *slot.lock().unwrap() = Some(line.to_string());
                }
                let keep = current.rfind('\n').map_or(0, |i| i + 1);
                current.drain(..keep);
                if current.len() > MAX_LAST_LINE {
                    current.clear();
                }
            }
            sink.log(stream, &text);
            if let Some(tap) = tap.as_mut() {
                tap.text(&text);
            }
        };
        loop {
            // `read` is cancel safe, so timing it out loses no data.
            let read = if lines.pending.is_empty() {
                reader.read(&mut buf).await
            } else {
                match tokio::time::timeout(PARTIAL_FLUSH_AFTER, reader.read(&mut buf)).await {
                    Ok(r) => r,
                    Err(_) => {
                        if let Some(text) = lines.flush_partial() {
                            emit(text);
                        }
                        continue;
                    }
                }
            };
            match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Some(text) = lines.push(&buf[..n]) {
                        emit(text);
                    }
                }
            }
        }
        if let Some(text) = lines.finish() {
            emit(text);
        }
        if let Some(tap) = tap.as_mut() {
            tap.end();
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_lines_are_released_and_partial_kept() {
        let mut b = LineBuffer::default();
        assert_eq!(b.push(b"one\ntw"), Some("one\n".into()));
        assert_eq!(b.push(b"o\nthree"), Some("two\n".into()));
        assert_eq!(b.finish(), Some("three".into()));
        assert_eq!(b.finish(), None);
    }

    #[test]
    fn split_multibyte_character_is_not_mangled() {
        let mut b = LineBuffer::default();
        let e = "é".as_bytes();
        assert_eq!(b.push(&[b'a', e[0]]), None);
        assert_eq!(b.flush_partial(), Some("a".into()));
        assert_eq!(b.push(&[e[1], b'\n']), Some("é\n".into()));
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        let mut b = LineBuffer::default();
        assert_eq!(b.push(b"x\xffy\n"), Some("x\u{fffd}y\n".into()));
        assert_eq!(b.push(b"z\xff"), None);
        assert_eq!(b.flush_partial(), Some("z\u{fffd}".into()));
    }

    #[test]
    fn last_line_skips_blank_lines() {
        assert_eq!(last_non_empty_line("a\nboom\n\n  \n"), Some("boom"));
        assert_eq!(last_non_empty_line("\n"), None);
    }
}
