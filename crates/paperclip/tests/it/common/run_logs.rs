//! A run's log as the server stored it, read behind its back: the file
//! under the data dir on SQLite, the chunks in the database on Postgres,
//! put together as the file would be (the head, the marker line of a cut
//! log, the tail).

use sqlx::Row;

use super::TestServer;

/// The stored log of a run of `s` (the instance that owns the database on
/// Postgres), or `None` when there is none.
pub async fn stored(s: &TestServer, company_id: &str, run_id: &str) -> Option<String> {
    match &s.database_url {
        None => std::fs::read_to_string(file(s, company_id, run_id)).ok(),
        Some(url) => in_database(url, run_id).await,
    }
}

/// Where a run's log file is on SQLite.
pub fn file(s: &TestServer, company_id: &str, run_id: &str) -> std::path::PathBuf {
    s.data_dir
        .join("run-logs")
        .join(company_id)
        .join(format!("{run_id}.ndjson"))
}

/// Every stored run log of `s`: `(where, text)`.
pub async fn all_stored(s: &TestServer) -> Vec<(String, String)> {
    let Some(url) = &s.database_url else {
        return files_under(&s.data_dir.join("run-logs"))
            .into_iter()
            .map(|f| {
                let text = std::fs::read_to_string(&f).unwrap();
                (f.display().to_string(), text)
            })
            .collect();
    };
    let db = super::database(url).await;
    let runs: Vec<String> = sqlx::query(
        "SELECT DISTINCT CAST(run_id AS TEXT) AS run_id FROM run_log_chunks ORDER BY 1",
    )
    .fetch_all(&db)
    .await
    .unwrap()
    .iter()
    .map(|r| r.get::<String, _>(0))
    .collect();
    db.close().await;
    let mut out = Vec::new();
    for run in runs {
        if let Some(text) = in_database(url, &run).await {
            out.push((format!("run_log_chunks of {run}"), text));
        }
    }
    out
}

/// The chunk rows and whether a cut row is kept for the run.
pub async fn rows(url: &str, run_id: &str) -> (i64, bool) {
    let db = super::database(url).await;
    let chunks: i64 =
        sqlx::query("SELECT COUNT(*) AS n FROM run_log_chunks WHERE CAST(run_id AS TEXT) = $1")
            .bind(run_id)
            .fetch_one(&db)
            .await
            .unwrap()
            .get(0);
    let cut = sqlx::query("SELECT head_bytes FROM run_log_cuts WHERE CAST(run_id AS TEXT) = $1")
        .bind(run_id)
        .fetch_optional(&db)
        .await
        .unwrap()
        .is_some();
    db.close().await;
    (chunks, cut)
}

async fn in_database(url: &str, run_id: &str) -> Option<String> {
    let db = super::database(url).await;
    let chunks = sqlx::query(
        "SELECT start_offset, content FROM run_log_chunks WHERE CAST(run_id AS TEXT) = $1 \
         ORDER BY start_offset",
    )
    .bind(run_id)
    .fetch_all(&db)
    .await
    .unwrap();
    let cut =
        sqlx::query("SELECT head_bytes, marker FROM run_log_cuts WHERE CAST(run_id AS TEXT) = $1")
            .bind(run_id)
            .fetch_optional(&db)
            .await
            .unwrap();
    db.close().await;
    if chunks.is_empty() && cut.is_none() {
        return None;
    }
    let (head, mut marker) = match &cut {
        Some(c) => (c.get::<i64, _>(0), c.get::<Option<String>, _>(1)),
        None => (i64::MAX, None),
    };
    let mut out = String::new();
    for c in &chunks {
        if c.get::<i64, _>(0) >= head {
            out.push_str(&marker.take().unwrap_or_default());
        }
        out.push_str(&c.get::<String, _>(1));
    }
    out.push_str(&marker.unwrap_or_default());
    Some(out)
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}
