//! Databases of their own for servers on the test Postgres
//! (`PAPERCLIP_TEST_PG_URL`): copied from a template that already has every
//! migration, and dropped with their server.

/// A fresh database for one server, copied from a template that already has
/// every migration: migrating an empty database costs a server ~1.7 s on
/// Postgres (0.2 s to start on a migrated one), once per test otherwise.
pub async fn create_pg_database(admin_url: &str) -> String {
    use sqlx::Connection;
    let template = pg_template(admin_url).await;
    let name = format!("pc_test_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::postgres::PgConnection::connect(admin_url)
        .await
        .expect("connect to test Postgres");
    sqlx::query(&format!("CREATE DATABASE {name} TEMPLATE {template}"))
        .execute(&mut conn)
        .await
        .expect("create test database");
    let _ = conn.close().await;
    pg_url(admin_url, &name)
}

fn pg_url(admin_url: &str, name: &str) -> String {
    match admin_url.rfind('/') {
        Some(i) => format!("{}/{name}", &admin_url[..i]),
        None => panic!("PAPERCLIP_TEST_PG_URL must end in /<database>"),
    }
}

/// The migrated template for this build's migrations (see
/// [`migrations_hash`]), made once per cluster and build:
/// the first test process to need it builds it under an advisory lock
/// while the others wait, and publishes it by renaming it into place.
async fn pg_template(admin_url: &str) -> String {
    use sqlx::Connection;
    static NAME: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    NAME.get_or_init(async || {
        let name = format!("pc_tmpl_{:016x}", migrations_hash());
        let mut conn = sqlx::postgres::PgConnection::connect(admin_url)
            .await
            .expect("connect to test Postgres");
        sqlx::query("SELECT pg_advisory_lock(7243001)")
            .execute(&mut conn)
            .await
            .expect("take the template lock");
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
                .bind(&name)
                .fetch_one(&mut conn)
                .await
                .expect("look for the template");
        if !exists {
            let building = format!("{name}_building");
            for sql in [
                format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)"),
                format!("CREATE DATABASE {building}"),
            ] {
                sqlx::query(&sql).execute(&mut conn).await.expect(&sql);
            }
            let store = paperclip_store::Store::connect(&pg_url(admin_url, &building))
                .await
                .expect("migrate the template");
            store.close().await;
            drop(store);
            // A session the store opened on the side may linger a moment.
            for sql in [
                format!(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE datname = '{building}' AND pid <> pg_backend_pid()"
                ),
                format!("ALTER DATABASE {building} RENAME TO {name}"),
            ] {
                sqlx::query(&sql).execute(&mut conn).await.expect(&sql);
            }
        }
        let _ = sqlx::query("SELECT pg_advisory_unlock(7243001)")
            .execute(&mut conn)
            .await;
        let _ = conn.close().await;
        name
    })
    .await
    .clone()
}

/// Which build's migrations the template holds: the migrations are compiled
/// into this test binary (its store migrates the template), so it is named
/// after the binary itself (size and modification time), never after the
/// files on disk, which may be newer than what was built.
pub(super) fn migrations_hash() -> u64 {
    let exe = std::env::current_exe().expect("this test binary");
    let meta = std::fs::metadata(&exe).expect("stat this test binary");
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as u64);
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in [meta.len().to_le_bytes(), modified.to_le_bytes()].concat() {
        hash = (hash ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// Drops a database [`create_pg_database`] made, from a thread of its own
/// (a `Drop` cannot await), connections and all.
pub(super) fn drop_pg_database(url: &str) {
    let (Some(i), Ok(admin)) = (url.rfind('/'), std::env::var("PAPERCLIP_TEST_PG_URL")) else {
        return;
    };
    let name = url[i + 1..].to_string();
    if !name.starts_with("pc_test_") || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return;
    }
    let _ = std::thread::spawn(move || {
        use sqlx::Connection;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .ok()?;
        rt.block_on(async {
            let mut conn = sqlx::postgres::PgConnection::connect(&admin).await.ok()?;
            let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut conn)
                .await;
            conn.close().await.ok()
        })
    })
    .join();
}
