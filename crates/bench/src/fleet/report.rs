//! The fleet day's figures as a summary and Markdown tables (the style of
//! `src/report.rs`).

use std::path::PathBuf;
use std::time::Duration;

use super::check::Figures;
use super::day::Done;
use super::instance::{clk_tck, Instance, Usage};
use super::probe::Route;
use super::Kill;

pub struct InstanceFigures {
    pub name: String,
    pub restarts: usize,
    pub rss_mean_kib: u64,
    pub rss_last_kib: u64,
    pub rss_peak_kib: u64,
    pub cpu_secs: f64,
    pub up_secs: f64,
}

impl InstanceFigures {
    pub fn of(i: &Instance, u: Usage) -> InstanceFigures {
        let n = i.rss_samples.len().max(1) as u64;
        InstanceFigures {
            name: i.name.clone(),
            restarts: i.past.len().saturating_sub(1),
            rss_mean_kib: i.rss_samples.iter().sum::<u64>() / n,
            rss_last_kib: i.rss_samples.last().copied().unwrap_or(0),
            rss_peak_kib: i.peak_rss_kib,
            cpu_secs: u.cpu_ticks as f64 / clk_tck() as f64,
            up_secs: u.up.as_secs_f64(),
        }
    }
}

pub struct Report {
    pub agents: usize,
    pub seed: u64,
    pub day_wall: Duration,
    pub drain: Duration,
    pub drained: bool,
    pub kills: Vec<Kill>,
    pub routes: Vec<(String, Route)>,
    pub instances: Vec<InstanceFigures>,
    pub done: Done,
    pub routines: usize,
    /// Board writes and clock moves no instance answered (killed under them).
    pub unanswered: u64,
    pub figures: Figures,
    /// Kept when something went wrong: server logs, agent logs.
    pub data_dir: PathBuf,
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

impl Report {
    /// Nothing lost, duplicated or left running, no idle model request, no
    /// invariant broken, and the queue drained.
    pub fn clean(&self) -> bool {
        let f = &self.figures;
        self.drained
            && f.lost.is_empty()
            && f.duplicated == 0
            && f.left_running == 0
            && f.idle_requests == 0
            && f.violations.is_empty()
    }

    /// Takeover times in seconds: (by the survivor, by the own restart,
    /// never ended).
    fn takeover_split(&self) -> (Vec<f64>, Vec<f64>, usize) {
        let (mut survivor, mut restart, mut never) = (Vec::new(), Vec::new(), 0);
        for t in &self.figures.takeovers {
            match t.after_ms {
                Some(ms) if t.by_survivor => survivor.push(ms as f64 / 1000.0),
                Some(ms) => restart.push(ms as f64 / 1000.0),
                None => never += 1,
            }
        }
        survivor.sort_by(f64::total_cmp);
        restart.sort_by(f64::total_cmp);
        (survivor, restart, never)
    }

    pub fn summary(&self) -> String {
        let f = &self.figures;
        let d = &self.done;
        let (survivor, restart, never) = self.takeover_split();
        let span = |v: &[f64]| match (v.first(), v.last()) {
            (Some(lo), Some(hi)) => format!("{} runs, {lo:.1}-{hi:.1} s", v.len()),
            _ => "none".into(),
        };
        let mut s = format!(
            "fleet seed={} agents={} day={:.0}s drain={:.1}s drained={} kills={} unanswered={}\n\
             board: tasks={} comments={} reassigns={} approvals={}/{} budget_stops={} lifts={} routines={} routine_runs={}\n\
             runs: {:?} started={} killed_by_restart={} comments={} deliveries={}\n\
             wakes skipped: {:?}\n\
             model requests={} idle={} | lost={} duplicated={} left_running={} violations={}\n\
             takeover: by the survivor {}; by the own restart {}; never ended {never}",
            self.seed,
            self.agents,
            self.day_wall.as_secs_f64(),
            self.drain.as_secs_f64(),
            self.drained,
            self.kills.len(),
            self.unanswered,
            d.tasks,
            d.comments,
            d.reassigns,
            d.approvals_decided,
            d.approvals_asked,
            d.budget_stops,
            d.budget_lifts,
            self.routines,
            f.routine_runs,
            f.runs_by_status,
            f.chaos.started_runs,
            f.chaos.killed_by_restart,
            f.chaos.comments,
            f.chaos.deliveries,
            f.skipped_by_reason,
            f.model_requests,
            f.idle_requests,
            f.lost.len(),
            f.duplicated,
            f.left_running,
            f.violations.len(),
            span(&survivor),
            span(&restart),
        );
        for i in &self.instances {
            s.push_str(&format!(
                "\ninstance {}: restarts={} RSS mean {} / last {} / peak {} MiB, CPU {:.1} s over {:.0} s up ({:.1} % of a core)",
                i.name,
                i.restarts,
                mib(i.rss_mean_kib),
                mib(i.rss_last_kib),
                mib(i.rss_peak_kib),
                i.cpu_secs,
                i.up_secs,
                i.cpu_secs / i.up_secs.max(1e-9) * 100.0
            ));
        }
        s
    }

    pub fn markdown(&self) -> String {
        let mut s = String::from(
            "| Route (both instances) | p50 | p95 | p99 | requests | errors |\n|---|---|---|---|---|---|\n",
        );
        for (route, r) in &self.routes {
            let err = match (&r.first_error, r.errors) {
                (_, 0) => "0".to_string(),
                (Some(e), n) => format!("{n} (first: {})", e.replace('|', "/")),
                (None, n) => n.to_string(),
            };
            s.push_str(&format!(
                "| `{route}` | {:.1} ms | {:.1} ms | {:.1} ms | {} | {err} |\n",
                r.pct(50.0),
                r.pct(95.0),
                r.pct(99.0),
                r.latencies.len()
            ));
        }
        s.push_str(
            "\n| Instance | restarts | RSS mean / last / peak | CPU (own) |\n|---|---|---|---|\n",
        );
        for i in &self.instances {
            s.push_str(&format!(
                "| {} | {} | {} / {} / {} MiB | {:.1} s in {:.0} s up ({:.1} % of a core) |\n",
                i.name,
                i.restarts,
                mib(i.rss_mean_kib),
                mib(i.rss_last_kib),
                mib(i.rss_peak_kib),
                i.cpu_secs,
                i.up_secs,
                i.cpu_secs / i.up_secs.max(1e-9) * 100.0
            ));
        }
        s.push_str("\n| Kill | instance | runs it held | settled by the survivor | by its restart | never | slowest |\n|---|---|---|---|---|---|---|\n");
        for (n, k) in self.kills.iter().enumerate() {
            let ts: Vec<_> = self
                .figures
                .takeovers
                .iter()
                .filter(|t| t.kill == n)
                .collect();
            let by = |survivor: bool| {
                ts.iter()
                    .filter(|t| t.after_ms.is_some() && t.by_survivor == survivor)
                    .count()
            };
            let never = ts.iter().filter(|t| t.after_ms.is_none()).count();
            let slowest = ts.iter().filter_map(|t| t.after_ms).max();
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {never} | {} |\n",
                n + 1,
                k.instance,
                ts.len(),
                by(true),
                by(false),
                slowest.map_or("-".into(), |ms| format!("{:.1} s", ms as f64 / 1000.0))
            ));
        }
        s
    }

    /// Every finding, one a line, for stderr.
    pub fn findings(&self) -> Vec<String> {
        let f = &self.figures;
        let mut out = Vec::new();
        if !self.drained {
            out.push("the queue did not drain before the deadline".to_string());
        }
        out.extend(f.lost.iter().map(|l| format!("lost: {l}")));
        out.extend(
            f.idle_runs
                .iter()
                .map(|r| format!("a model request with nothing to do: {r}")),
        );
        out.extend(f.violations.iter().cloned());
        out
    }
}
