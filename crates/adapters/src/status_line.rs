//! The process adapter's status hook: a line `PAPERCLIP_STATUS: <colour>
//! <message>` on the agent's stdout (colour one of gray, blue, green,
//! yellow, red, or left out) becomes a status update. The line stays in the
//! log as printed; the update is what the run page and the agent's card show.

use std::sync::Arc;

use paperclip_core::run_status::{StatusUpdate, STATUS_LINE_PREFIX};

use crate::RunSink;

/// A line longer than this is output, not a status: it is not buffered.
const LINE_MAX: usize = 4 * 1024;

pub(crate) struct StatusTap {
    sink: Arc<dyn RunSink>,
    pending: String,
    /// The current line outgrew [`LINE_MAX`]: skip to its end.
    skipping: bool,
}

impl StatusTap {
    pub(crate) fn new(sink: Arc<dyn RunSink>) -> StatusTap {
        StatusTap {
            sink,
            pending: String::new(),
            skipping: false,
        }
    }

    fn line(&mut self, line: &str) {
        if let Some(update) = StatusUpdate::from_line(line) {
            self.sink.status(&update);
        }
    }
}

impl crate::process::Tap for StatusTap {
    fn text(&mut self, text: &str) {
        let mut rest = text;
        while let Some(end) = rest.find('\n') {
            if !self.skipping {
                self.pending.push_str(&rest[..end]);
                let line = std::mem::take(&mut self.pending);
                self.line(&line);
            }
            self.pending.clear();
            self.skipping = false;
            rest = &rest[end + 1..];
        }
        if !self.skipping {
            self.pending.push_str(rest);
            // Only a line that may still become a status line is kept.
            let head = &self.pending[..self.pending.len().min(STATUS_LINE_PREFIX.len())];
            let maybe = STATUS_LINE_PREFIX.starts_with(head.trim_start())
                || self.pending.trim_start().starts_with(STATUS_LINE_PREFIX);
            if self.pending.len() > LINE_MAX || !maybe {
                self.pending.clear();
                self.skipping = true;
            }
        }
    }

    fn end(&mut self) {
        if !self.skipping {
            let line = std::mem::take(&mut self.pending);
            self.line(&line);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::Tap;
    use crate::Stream;
    use paperclip_core::run_status::StatusColor;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Seen(Mutex<Vec<StatusUpdate>>);

    impl RunSink for Seen {
        fn log(&self, _: Stream, _: &str) {}
        fn event(&self, _: &str, _: &str, _: &str, _: serde_json::Value) {}
        fn process_started(&self, _: u32, _: u32) {}
        fn status(&self, update: &StatusUpdate) {
            self.0.lock().unwrap().push(update.clone());
        }
    }

    #[test]
    fn status_lines_split_across_reads_are_found_and_other_lines_ignored() {
        let seen = Arc::new(Seen::default());
        let mut tap = StatusTap::new(seen.clone());
        tap.text("hello\nPAPERCLIP_STA");
        tap.text("TUS: yellow waiting on review\nnot PAPERCLIP_STATUS: red no\n");
        tap.text(&"x".repeat(10_000));
        tap.text("\n  PAPERCLIP_STATUS: done");
        tap.end();
        let seen = seen.0.lock().unwrap();
        assert_eq!(
            *seen,
            vec![
                StatusUpdate::new("waiting on review", Some(StatusColor::Yellow)).unwrap(),
                StatusUpdate::new("done", None).unwrap(),
            ]
        );
    }
}
