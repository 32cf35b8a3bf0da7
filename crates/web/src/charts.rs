//! Inline SVG charts, drawn on the server: stacked bars per day and the run
//! success rate per day. Fixed viewBox, scaled by CSS, so they cost nothing
//! in the browser; colours are the theme's variables, so dark mode works.

use std::collections::BTreeMap;
use std::fmt::Write;

use maud::{html, Markup, PreEscaped};

const W: f64 = 280.0;
const H: f64 = 90.0;

/// Colour of each series, by status name.
pub fn color(series: &str) -> &'static str {
    match series {
        "succeeded" | "done" => "var(--ok)",
        "failed" | "timed_out" | "blocked" => "var(--bad)",
        "cancelled" => "var(--muted)",
        "running" | "in_progress" => "var(--blue)",
        "queued" | "todo" => "var(--warn)",
        "in_review" => "var(--violet)",
        _ => "var(--line-strong)",
    }
}

/// Bar heights in chart units for each day's stack; the tallest day fills H.
pub fn scale(days: &[BTreeMap<String, i64>]) -> Vec<Vec<(String, f64)>> {
    let max = days
        .iter()
        .map(|d| d.values().sum::<i64>())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    days.iter()
        .map(|d| {
            d.iter()
                .map(|(k, v)| (k.clone(), *v as f64 / max * H))
                .collect()
        })
        .collect()
}

/// One stacked bar per day, oldest left. `labels` are the days.
pub fn stacked_bars(title: &str, labels: &[String], days: &[BTreeMap<String, i64>]) -> Markup {
    let bars = scale(days);
    let slot = W / bars.len().max(1) as f64;
    let mut svg = String::new();
    let mut totals: BTreeMap<&str, i64> = BTreeMap::new();
    for day in days {
        for (series, n) in day {
            *totals.entry(series.as_str()).or_default() += n;
        }
    }
    for (i, stack) in bars.iter().enumerate() {
        // Every day keeps a faint slot, so an empty fortnight still reads as one.
        let _ = write!(
            svg,
            r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="2" style="fill:var(--line)"/>"#,
            i as f64 * slot + 1.0,
            H - 2.0,
            (slot - 2.0).max(1.0)
        );
        let mut y = H;
        for (series, h) in stack {
            if *h <= 0.0 {
                continue;
            }
            y -= h;
            let count = days[i].get(series).copied().unwrap_or(0);
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" style="fill:{}"><title>{} {}: {}</title></rect>"#,
                i as f64 * slot + 1.0,
                y,
                (slot - 2.0).max(1.0),
                h,
                color(series),
                labels.get(i).map(String::as_str).unwrap_or(""),
                series.replace('_', " "),
                count
            );
        }
    }
    html! {
        figure.chart {
            figcaption { (title) }
            svg viewBox={"0 0 " (W) " " (H)} preserveAspectRatio="none" role="img" aria-label=(title) {
                (PreEscaped(svg))
            }
            (axis(labels))
            div.legend {
                @for (series, n) in &totals { span { i style={"background:" (color(series))} {} (series.replace('_', " ")) " " (n) } }
                @if totals.is_empty() { span { "nothing yet" } }
            }
        }
    }
}

/// First and last day under a chart.
fn axis(labels: &[String]) -> Markup {
    let short = |s: Option<&String>| {
        s.map(|d| d.get(5..).unwrap_or(d).to_string())
            .unwrap_or_default()
    };
    html! { div.axis { span { (short(labels.first())) } span { (short(labels.last())) } } }
}

/// One day of finished runs: how many succeeded of how many finished
/// (stopped runs are neither).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Finished {
    pub succeeded: i64,
    pub finished: i64,
}

/// The run success rate: the fortnight's figure with its run counts, and a
/// bar per day (its height the day's rate) once more than one day has runs.
/// One day of data is a number, not a lone dot.
pub fn success_rate(title: &str, labels: &[String], days: &[Finished]) -> Markup {
    let ok: i64 = days.iter().map(|d| d.succeeded).sum();
    let finished: i64 = days.iter().map(|d| d.finished).sum();
    let active = days.iter().filter(|d| d.finished > 0).count();
    let slot = W / days.len().max(1) as f64;
    let mut svg = String::new();
    for (i, d) in days.iter().enumerate() {
        let x = i as f64 * slot + 1.0;
        let w = (slot - 2.0).max(1.0);
        let _ = write!(
            svg,
            r#"<rect x="{x:.1}" y="{:.1}" width="{w:.1}" height="2" style="fill:var(--line)"/>"#,
            H - 2.0
        );
        if d.finished == 0 {
            continue;
        }
        let rate = d.succeeded as f64 / d.finished as f64;
        // A day whose every run failed still shows a sliver, in red.
        let h = (rate * (H - 4.0)).max(3.0);
        let fill = if rate >= 0.5 {
            "var(--ok)"
        } else {
            "var(--bad)"
        };
        let _ = write!(
            svg,
            r#"<rect x="{x:.1}" y="{:.1}" width="{w:.1}" height="{h:.1}" style="fill:{fill}"><title>{}: {} of {} succeeded ({}%)</title></rect>"#,
            H - h,
            labels.get(i).map(String::as_str).unwrap_or(""),
            d.succeeded,
            d.finished,
            crate::fmt::percent(d.succeeded, d.finished)
        );
    }
    html! {
        figure.chart.success-rate data-finished=(finished) data-succeeded=(ok) {
            figcaption { (title) }
            @if finished == 0 {
                p.rate-figure.muted { "No finished runs in 14 days" }
            } @else {
                p.rate-figure {
                    strong { (crate::fmt::percent(ok, finished)) "%" }
                    " " span.muted { (crate::fmt::count(ok)) " of " (crate::fmt::count(finished)) " finished runs succeeded" }
                }
            }
            @if active > 1 {
                svg viewBox={"0 0 " (W) " " (H)} preserveAspectRatio="none" role="img" aria-label={(title) ", per day"} {
                    (PreEscaped(svg))
                }
                (axis(labels))
            } @else if active == 1 {
                div.legend { span { "All on one day; a bar per day appears from the second." } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tallest_day_fills_the_chart() {
        let days = vec![
            BTreeMap::from([("failed".to_string(), 1), ("succeeded".to_string(), 3)]),
            BTreeMap::from([("succeeded".to_string(), 2)]),
            BTreeMap::new(),
        ];
        let bars = scale(&days);
        let total: f64 = bars[0].iter().map(|(_, h)| h).sum();
        assert!((total - H).abs() < 1e-9);
        assert!((bars[1][0].1 - H / 2.0).abs() < 1e-9);
        assert!(bars[2].is_empty());
    }

    #[test]
    fn empty_charts_do_not_divide_by_zero() {
        assert_eq!(scale(&[BTreeMap::new()]), vec![Vec::<(String, f64)>::new()]);
        let none = success_rate("x", &[], &[Finished::default(); 3]).0;
        assert!(none.contains("No finished runs"), "{none}");
    }

    #[test]
    fn the_success_rate_is_a_figure_with_counts_and_a_bar_per_day() {
        let labels: Vec<String> = (1..=3).map(|d| format!("2026-12-0{d}")).collect();
        let f = |succeeded, finished| Finished {
            succeeded,
            finished,
        };
        // One day of runs: the figure and counts, no lone dot.
        let one = success_rate("x", &labels, &[f(0, 0), f(0, 0), f(3, 4)]).0;
        assert!(
            one.contains("75%") && one.contains("3 of 4 finished runs succeeded"),
            "{one}"
        );
        assert!(!one.contains("<svg"), "{one}");
        // Two days: a bar for each, none for the empty day.
        let two = success_rate("x", &labels, &[f(1, 2), f(0, 0), f(2, 2)]).0;
        assert!(two.contains("<svg") && two.contains("3 of 4"), "{two}");
        assert_eq!(two.matches("<title>").count(), 2, "{two}");
        assert!(two.contains("2026-12-01: 1 of 2 succeeded (50%)"), "{two}");
    }
}
