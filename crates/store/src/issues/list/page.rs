//! Issue pages bounded in rows and in text, so a page of issues with huge
//! descriptions stays a few MiB however many of them match.

use crate::engine::sql::Bind;

pub(crate) fn bind_all<'q, Q: BindExt<'q>>(mut query: Q, binds: &'q [Bind]) -> Q {
    for bind in binds {
        query = match bind {
            Bind::Text(s) => query.bind_text(s),
            Bind::Int(n) => query.bind_int(*n),
        };
    }
    query
}

/// How many of the leading rows (`(number, text size)`, newest first) make a
/// page of at most `limit` rows and `budget` characters, and whether more
/// rows follow. The first row is always taken, whatever its size, so paging
/// moves on.
pub(crate) fn page_rows(sizes: &[(i64, i64)], limit: i64, budget: i64) -> (usize, bool) {
    let mut total = 0i64;
    let mut count = 0usize;
    for &(_, size) in sizes.iter().take(limit as usize) {
        total = total.saturating_add(size);
        if count > 0 && total > budget {
            break;
        }
        count += 1;
    }
    (count, sizes.len() > count)
}

pub(crate) trait BindExt<'q> {
    fn bind_text(self, value: &'q str) -> Self;
    fn bind_int(self, value: i64) -> Self;
}

impl<'q> BindExt<'q> for crate::engine::db::Query<'q> {
    fn bind_text(self, value: &'q str) -> Self {
        self.bind(value)
    }
    fn bind_int(self, value: i64) -> Self {
        self.bind(value)
    }
}

impl<'q, O: crate::engine::db::FromDbRow> BindExt<'q> for crate::engine::db::QueryAs<'q, O> {
    fn bind_text(self, value: &'q str) -> Self {
        self.bind(value)
    }
    fn bind_int(self, value: i64) -> Self {
        self.bind(value)
    }
}

#[cfg(test)]
mod tests {
    use super::page_rows;

    #[test]
    fn a_page_stops_at_its_limit_or_its_text_budget() {
        let rows: Vec<(i64, i64)> = (0..10).map(|n| (100 - n, 10)).collect();
        assert_eq!(page_rows(&rows, 20, 1_000), (10, false));
        assert_eq!(page_rows(&rows[..6], 5, 1_000), (5, true));
        assert_eq!(page_rows(&rows, 20, 35), (3, true));
    }

    #[test]
    fn an_oversized_first_row_still_makes_a_page() {
        assert_eq!(page_rows(&[(9, 1 << 40), (8, 1)], 10, 100), (1, true));
        assert_eq!(
            page_rows(&[(9, i64::MAX), (8, i64::MAX)], 10, 100),
            (1, true)
        );
        assert_eq!(page_rows(&[], 10, 100), (0, false));
    }
}
