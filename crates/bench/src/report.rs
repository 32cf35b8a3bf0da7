//! The figures of one benchmark run, as a summary and as a Markdown table.

use std::time::Duration;

use crate::load::Run;
use crate::server::Rss;

pub struct Report {
    pub backend: String,
    pub clients: usize,
    pub list_size: u64,
    /// Sorted ascending.
    pub starts: Vec<Duration>,
    pub idle_rss: Rss,
    pub loaded_rss: Rss,
    pub create: Run,
    pub list: Run,
    pub list_1: Run,
    /// The list revalidated with its ETag: 304s, no body.
    pub list_304: Run,
    pub get: Run,
    pub health: Run,
    /// The list's size in bytes, and the HTTP stack answering those bytes
    /// with no work (16 clients, 1 client).
    pub list_bytes: usize,
    pub floor_list: Run,
    pub floor_list_1: Run,
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// `p50 / p95 / p99 ms, N req/s (n requests, e errors)`.
fn latency(run: &Run) -> String {
    let errors = match run.errors {
        0 => String::new(),
        n => format!(", {n} errors"),
    };
    format!(
        "p50 {} / p95 {} / p99 {} ms, {:.0} req/s ({} requests{errors})",
        ms(run.pct(50.0)),
        ms(run.pct(95.0)),
        ms(run.pct(99.0)),
        run.per_sec(),
        run.latencies.len(),
    )
}

impl Report {
    fn start_stats(&self) -> String {
        let s = &self.starts;
        match (s.first(), s.last()) {
            (Some(min), Some(max)) => format!(
                "min {} / p50 {} / max {} ms ({} runs)",
                ms(*min),
                ms(s[(s.len() - 1) / 2]),
                ms(*max),
                s.len()
            ),
            _ => "not measured".to_string(),
        }
    }

    pub fn print_summary(&self) {
        let c = self.clients;
        println!("paperclip-bench ({} backend, {c} clients)", self.backend);
        println!("  start to healthy   {}", self.start_stats());
        println!("  idle RSS           {} MiB", mib(self.idle_rss.now));
        println!(
            "  create issue       {:.0} creates/s; {}",
            self.create.per_sec(),
            latency(&self.create)
        );
        println!(
            "  list {} x{c:<3}     {}",
            self.list_size,
            latency(&self.list)
        );
        println!(
            "  list {} x1       {}",
            self.list_size,
            latency(&self.list_1)
        );
        println!("  list 304 x{c:<3}      {}", latency(&self.list_304));
        println!("  get issue x{c:<3}     {}", latency(&self.get));
        println!("  health x{c:<3}        {}", latency(&self.health));
        println!(
            "  floor {} B x{c:<3} {}",
            self.list_bytes,
            latency(&self.floor_list)
        );
        println!(
            "  floor {} B x1   {}",
            self.list_bytes,
            latency(&self.floor_list_1)
        );
        println!(
            "  RSS after load     {} MiB (peak {} MiB)",
            mib(self.loaded_rss.now),
            mib(self.loaded_rss.peak)
        );
    }

    pub fn print_markdown(&self) {
        let c = self.clients;
        let n = self.list_size;
        let p = |run: &Run, q| ms(run.pct(q));
        println!("| Metric ({}) | Target | Result |", self.backend);
        println!("|---|---|---|");
        println!("| Start to healthy | <= 200 ms | {} |", self.start_stats());
        println!("| Idle RSS | <= 30 MB | {} MiB |", mib(self.idle_rss.now));
        println!(
            "| Create issue, {c} clients | >= 2,000/s | {:.0}/s (p50 {} ms, p95 {} ms) |",
            self.create.per_sec(),
            p(&self.create, 50.0),
            p(&self.create, 95.0)
        );
        for (label, run, target) in [
            (
                format!("List {n} issues, {c} clients"),
                &self.list,
                "p50 <= 5 ms",
            ),
            (format!("List {n} issues, 1 client"), &self.list_1, "-"),
            (
                format!("List {n} issues revalidated (304), {c} clients"),
                &self.list_304,
                "-",
            ),
            (format!("Get issue, {c} clients"), &self.get, "p50 <= 1 ms"),
            (
                format!("Health (HTTP floor), {c} clients"),
                &self.health,
                "-",
            ),
            (
                format!(
                    "HTTP floor, the list's {} bytes, {c} clients",
                    self.list_bytes
                ),
                &self.floor_list,
                "-",
            ),
            (
                format!("HTTP floor, the list's {} bytes, 1 client", self.list_bytes),
                &self.floor_list_1,
                "-",
            ),
        ] {
            println!(
                "| {label} | {target} | p50 {} ms, p95 {} ms, {:.0} req/s |",
                p(run, 50.0),
                p(run, 95.0),
                run.per_sec()
            );
        }
        println!(
            "| RSS after load | - | {} MiB (peak {} MiB) |",
            mib(self.loaded_rss.now),
            mib(self.loaded_rss.peak)
        );
    }
}
