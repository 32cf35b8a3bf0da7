//! Plain aligned columns for people: no box drawing, so output pastes into
//! issues and chat, and greps line by line. Scripts use `--json` instead.

use serde_json::Value;

pub struct Table {
    headers: Vec<&'static str>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&'static str]) -> Table {
        Table {
            headers: headers.to_vec(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Columns padded to their widest cell (counted in chars); the last
    /// column is not padded so lines carry no trailing spaces.
    pub fn render(&self) -> String {
        let n = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(n) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let line = |cells: Vec<&str>, out: &mut String| {
            let mut text = String::new();
            for (i, cell) in cells.iter().enumerate() {
                if i + 1 < cells.len() {
                    text.push_str(cell);
                    let pad = widths[i] - cell.chars().count();
                    text.extend(std::iter::repeat_n(' ', pad + 2));
                } else {
                    text.push_str(cell);
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        };
        line(self.headers.clone(), &mut out);
        for row in &self.rows {
            line(row.iter().map(String::as_str).collect(), &mut out);
        }
        out
    }

    pub fn print(&self, empty: &str) {
        if self.is_empty() {
            println!("{empty}");
        } else {
            print!("{}", self.render());
        }
    }
}

/// A string field, or "-" when missing or null.
pub fn s(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "-".to_string(),
        Some(other) => other.to_string(),
    }
}

/// Text cut to `max` chars with an ellipsis, newlines flattened: table cells
/// stay on one line.
pub fn clip(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max {
        flat
    } else {
        let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

/// Cents as dollars: `1234` → `$12.34`.
pub fn dollars(cents: &Value) -> String {
    let c = cents.as_i64().unwrap_or(0);
    format!("${}.{:02}", c / 100, (c % 100).abs())
}

/// An RFC 3339 timestamp as `YYYY-MM-DD HH:MM` (UTC): enough for a table.
pub fn when(v: &Value, key: &str) -> String {
    match v.get(key).and_then(Value::as_str) {
        Some(ts) if ts.len() >= 16 => ts[..16].replace('T', " "),
        Some(ts) => ts.to_string(),
        None => "-".to_string(),
    }
}

/// Run and approval ids are UUIDv7s whose leading characters are a
/// timestamp (equal for everything made in the same minute); the last 8 are
/// random, so they name a row well. Any unique part of an id is accepted back.
pub fn short_id(id: &str) -> String {
    let n = id.chars().count();
    id.chars().skip(n.saturating_sub(8)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_without_trailing_spaces() {
        let mut t = Table::new(&["ID", "TITLE"]);
        t.row(vec!["ACM-1".into(), "short".into()]);
        t.row(vec!["ACM-100".into(), "x".into()]);
        assert_eq!(t.render(), "ID       TITLE\nACM-1    short\nACM-100  x\n");
    }

    #[test]
    fn clip_and_money() {
        assert_eq!(clip("a\nb", 10), "a b");
        assert_eq!(clip("abcdef", 4), "abc…");
        assert_eq!(dollars(&Value::from(1234)), "$12.34");
        assert_eq!(short_id("01a23e98-7851-7068-874c-82658d1bd080"), "8d1bd080");
    }
}
