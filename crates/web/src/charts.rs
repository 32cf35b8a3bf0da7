//! Inline SVG charts, drawn on the server: stacked bars per day and a line.
//! Fixed viewBox, scaled by CSS, so they cost nothing in the browser.

use std::collections::BTreeMap;
use std::fmt::Write;

use maud::{html, Markup, PreEscaped};

const W: f64 = 280.0;
const H: f64 = 90.0;

/// Colour of each series, by status name.
pub fn color(series: &str) -> &'static str {
    match series {
        "succeeded" | "done" => "#16a34a",
        "failed" | "timed_out" | "blocked" => "#dc2626",
        "cancelled" => "#9ca3af",
        "running" | "in_progress" => "#2563eb",
        "queued" | "todo" => "#f59e0b",
        "in_review" => "#7c3aed",
        _ => "#cbd5e1",
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
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="2" fill="#e4e4e7"/>"##,
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
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{} {}: {}</title></rect>"#,
                i as f64 * slot + 1.0,
                y,
                (slot - 2.0).max(1.0),
                h,
                color(series),
                labels.get(i).map(String::as_str).unwrap_or(""),
                series,
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

/// A line of percentages (0..=100) per day; `None` days leave a gap.
pub fn percent_line(title: &str, values: &[Option<f64>]) -> Markup {
    let slot = W / values.len().max(1) as f64;
    let mut path = String::new();
    let mut dots = String::new();
    let mut pen_down = false;
    for (i, v) in values.iter().enumerate() {
        match v {
            Some(p) => {
                let x = i as f64 * slot + slot / 2.0;
                let y = H - p.clamp(0.0, 100.0) / 100.0 * (H - 4.0) - 2.0;
                let _ = write!(path, "{}{x:.1},{y:.1} ", if pen_down { "L" } else { "M" });
                let _ = write!(
                    dots,
                    r##"<rect x="{:.1}" y="{:.1}" width="4" height="4" fill="#2563eb"><title>{p:.0}%</title></rect>"##,
                    x - 2.0,
                    y - 2.0
                );
                pen_down = true;
            }
            None => pen_down = false,
        }
    }
    html! {
        figure.chart {
            figcaption { (title) }
            svg viewBox={"0 0 " (W) " " (H)} preserveAspectRatio="none" role="img" aria-label=(title) {
                line x1="0" y1=(H / 2.0) x2=(W) y2=(H / 2.0) stroke="#e4e4e7" stroke-dasharray="3 3" {}
                path d=(path.trim()) fill="none" stroke="#2563eb" stroke-width="2" vector-effect="non-scaling-stroke" {}
                (PreEscaped(dots))
            }
            div.legend {
                @match values.iter().rev().flatten().next() {
                    Some(last) => span { "latest " (format!("{last:.0}")) "% of finished runs succeeded" },
                    None => span { "no finished runs yet" },
                }
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
        let m = percent_line("x", &[None, Some(50.0), Some(100.0)]).0;
        assert!(m.contains("M"), "{m}");
    }
}
