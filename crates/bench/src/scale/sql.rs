//! The few expressions SQLite and Postgres spell differently, so that one
//! set of bulk statements serves both: a row source of `n = 1..count`, hex
//! digits, and the app's RFC 3339 timestamps and UUIDv7 ids computed from a
//! millisecond count. Only integer arithmetic (`/`, `%`), which both engines
//! truncate alike, feeds them.

#[derive(Clone, Copy)]
pub struct Dialect {
    pub postgres: bool,
}

impl Dialect {
    /// A derived table with one column `n`, 1..=count.
    pub fn seq(&self, count: u64) -> String {
        if self.postgres {
            format!("(SELECT generate_series(1, {count})::bigint AS n)")
        } else {
            format!(
                "(WITH RECURSIVE gen(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM gen WHERE n < {count}) SELECT n FROM gen)"
            )
        }
    }

    /// Lower-case hex of a non-negative integer, zero-padded to `width`.
    pub fn hex(&self, expr: &str, width: usize) -> String {
        if self.postgres {
            format!("lpad(to_hex(({expr})::bigint), {width}, '0')")
        } else {
            format!("printf('%0{width}x', {expr})")
        }
    }

    /// `YYYY-MM-DDTHH:MM:SS.mmmZ` of a Unix time in milliseconds, as `now()`
    /// in the store writes it (text order is time order); a timestamptz of
    /// it on Postgres.
    pub fn ts(&self, ms: &str) -> String {
        let frac = if self.postgres {
            format!("lpad((({ms}) % 1000)::text, 3, '0')")
        } else {
            format!("printf('%03d', ({ms}) % 1000)")
        };
        let secs = if self.postgres {
            format!("to_char(to_timestamp((({ms}) / 1000)::double precision) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')")
        } else {
            format!("strftime('%Y-%m-%dT%H:%M:%S', ({ms}) / 1000, 'unixepoch')")
        };
        let text = format!("({secs} || '.' || {frac} || 'Z')");
        // Postgres keeps times as timestamptz (store migration 26).
        match self.postgres {
            true => format!("CAST({text} AS TIMESTAMPTZ)"),
            false => text,
        }
    }

    /// JSON text built by concatenation, as the engine stores JSON (`jsonb`
    /// on Postgres, text on SQLite).
    pub fn json(&self, text: &str) -> String {
        if self.postgres {
            format!("CAST(({text}) AS JSONB)")
        } else {
            text.to_string()
        }
    }

    /// A UUIDv7 for time `ms` (so ids sort by creation time, as the store's
    /// `new_id` do, and serve as cursors), unique per `n` within a table:
    /// the last 48 bits are `n` times an odd constant modulo 2^48, a bijection.
    pub fn uuid7(&self, ms: &str, n: &str, salt: u64) -> String {
        let odd = 0x9E37_79B1u64 + 2 * salt;
        self.id(&format!(
            "({} || '-' || {} || '-7' || {} || '-' || {} || '-' || {})",
            self.hex(&format!("({ms}) / 65536"), 8),
            self.hex(&format!("({ms}) % 65536"), 4),
            self.hex(&format!("(({n}) * {}) % 4096", 40503 + salt * 2), 3),
            self.hex(&format!("32768 + (({n}) * 7919) % 16384"), 4),
            self.hex(&format!("(({n}) * {odd}) % 281474976710656"), 12),
        ))
    }

    /// An id's text as the engine stores ids (`uuid` on Postgres, store
    /// migration 27; text on SQLite).
    fn id(&self, text: &str) -> String {
        match self.postgres {
            true => format!("CAST({text} AS UUID)"),
            false => text.to_string(),
        }
    }

    /// A second id at the same instant as `id` (an activity row written in
    /// the same transaction as its entity): `id` with the 12 random bits
    /// after the version digit replaced by `salt`, so it is unique wherever
    /// `id` is and sorts next to it.
    pub fn sibling_id(&self, id: &str, salt: u16) -> String {
        self.id(&format!(
            "(substr(CAST({id} AS TEXT), 1, 15) || '{:03x}' || substr(CAST({id} AS TEXT), 19))",
            salt & 0xfff
        ))
    }
}

/// `CASE expr % len WHEN 0 THEN 'w0' ... END`: a word picked by a hash.
pub fn pick(hash: &str, words: &[&str]) -> String {
    let mut s = format!("CASE ({hash}) % {} ", words.len());
    for (i, w) in words.iter().enumerate() {
        s.push_str(&format!("WHEN {i} THEN '{}' ", w.replace('\'', "''")));
    }
    s.push_str("END");
    s
}

/// A well-spread pseudo-random integer in 0..modulo from a row number, so
/// that the fields of a row do not move in lock step.
pub fn hash(n: &str, key: u64, modulo: u64) -> String {
    format!("((({n}) * {key}) % 1000003) % {modulo}")
}
