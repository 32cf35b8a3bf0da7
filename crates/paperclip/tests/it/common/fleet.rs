//! Several instances of the control plane on one Postgres database, each
//! with its own data dir, as two pods of one Deployment would be.

use super::TestServer;

/// Whether this run has a test Postgres: several instances need one (they
/// cannot share a SQLite file). Tests of several instances return early,
/// saying so, on SQLite.
pub fn on_postgres(test: &str) -> bool {
    let pg = std::env::var("PAPERCLIP_TEST_PG_URL").is_ok_and(|u| !u.is_empty());
    if !pg {
        eprintln!(
            "{test}: several instances need Postgres (PAPERCLIP_TEST_PG_URL); not run on SQLite"
        );
    }
    pg
}

/// Another instance on `first`'s database with a data dir of its own. It
/// leaves the database to `first`, which drops it.
pub async fn second_instance(first: &TestServer) -> TestServer {
    second_instance_args(first, &[], &[]).await
}

/// [`second_instance`] with extra `paperclip run` flags and environment.
pub async fn second_instance_args(
    first: &TestServer,
    extra: &[&str],
    env: &[(&str, &str)],
) -> TestServer {
    let url = first
        .database_url
        .clone()
        .expect("several instances share a Postgres database");
    let mut server = TestServer::start_instance(fresh_dir(), url, extra, env).await;
    server.database_url = None;
    server
}

/// An instance started on `data_dir` (kept or fresh) and `first`'s database.
pub async fn instance_on(
    first: &TestServer,
    data_dir: std::path::PathBuf,
    extra: &[&str],
) -> TestServer {
    let url = first.database_url.clone().expect("a Postgres database");
    let mut server = TestServer::start_instance(data_dir, url, extra, &[]).await;
    server.database_url = None;
    server
}

pub fn fresh_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("paperclip-test-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts `server` again on its data dir and the shared database `url`
/// (after a SIGKILL or a SIGTERM it already finished): the instance that
/// drops the database keeps doing so.
pub async fn restart(server: TestServer, url: &str, extra: &[&str]) -> TestServer {
    let owns_database = server.database_url.is_some();
    let (data_dir, _) = server.stop_keeping_data();
    let mut server = TestServer::start_instance(data_dir, url.to_string(), extra, &[]).await;
    if !owns_database {
        server.database_url = None;
    }
    server
}
