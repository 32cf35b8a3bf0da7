//! The health answer's instance facts as the original has them (the build's
//! commit, the features, start-up's phase) and automatic database backups:
//! one is written at start once the instance holds a company, holds its
//! data and restores; retention keeps the newest; a failing backup warns in
//! health (never a 500) until one succeeds; a caller not signed in to an
//! authenticated instance gets the warnings without paths.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::teams::{self, call};
use crate::common::{self, TestServer};
use reqwest::{Method, StatusCode};
use serde_json::Value;

async fn health(s: &TestServer) -> Value {
    let (status, body) = s.get("/api/health").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn codes(warnings: &Value) -> Vec<&str> {
    warnings
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w["code"].as_str())
        .collect()
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `paperclip db backup` on the server's data dir and database.
fn db_backup(s: &TestServer, extra: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_paperclip"));
    for var in ["PAPERCLIP_CONFIG", "PAPERCLIP_DATA_DIR", "DATABASE_URL"] {
        cmd.env_remove(var);
    }
    if let Some(url) = &s.database_url {
        cmd.env("DATABASE_URL", url);
    }
    cmd.args(["db", "backup", "--data-dir"])
        .arg(&s.data_dir)
        .args(extra)
        .output()
        .expect("run paperclip db backup")
}

fn backups_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("paperclip-"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The company names a backup holds, read from the file itself.
async fn names_in_backup(path: &Path) -> String {
    if path.extension().is_some_and(|e| e == "db") {
        use sqlx::{ConnectOptions, Connection};
        let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(path)
            .read_only(true)
            .connect()
            .await
            .expect("the backup is a SQLite database");
        let names: Vec<String> = sqlx::query_scalar("SELECT name FROM companies")
            .fetch_all(&mut conn)
            .await
            .unwrap();
        let _ = conn.close().await;
        names.join(",")
    } else {
        let out = Command::new("gunzip").arg("-c").arg(path).output().unwrap();
        assert!(out.status.success(), "the dump is gzip'd");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// A server started on what `backup` holds: a copy of the SQLite file in a
/// new data dir, or the dump loaded into a new Postgres database.
async fn restored(backup: &Path) -> TestServer {
    let dir = std::env::temp_dir().join(format!("paperclip-restored-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    if backup.extension().is_some_and(|e| e == "db") {
        std::fs::copy(backup, dir.join("paperclip.db")).unwrap();
        return TestServer::start_with(dir, None, &[]).await;
    }
    use sqlx::Connection;
    let admin = std::env::var("PAPERCLIP_TEST_PG_URL").unwrap();
    let name = format!("pc_test_{}", uuid::Uuid::new_v4().simple());
    let mut conn = sqlx::postgres::PgConnection::connect(&admin).await.unwrap();
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .unwrap();
    let _ = conn.close().await;
    let url = format!("{}/{name}", &admin[..admin.rfind('/').unwrap()]);
    let load = Command::new("sh")
        .arg("-c")
        .arg("gunzip -c \"$1\" | psql -q -v ON_ERROR_STOP=1 \"$2\" >/dev/null")
        .args(["restore", &backup.display().to_string(), &url])
        .status()
        .unwrap();
    assert!(load.success(), "the dump loads into an empty database");
    TestServer::start_with(dir, Some(url), &[]).await
}

#[tokio::test]
async fn health_tells_the_build_the_features_and_a_backup_taken_at_start() {
    let s = TestServer::start().await;
    let h = health(&s).await;
    assert_eq!(h["status"], "ok");
    assert_eq!(h["localAiLoginSupported"], true);
    assert_eq!(h["startupRecovery"]["phase"], "ready");
    let ready = h["startupRecovery"]["updatedAt"].as_str().unwrap();
    assert!(ready >= h["serverInfo"]["processStartedAt"].as_str().unwrap());
    // The commit is this repository's, with its own subject.
    let git_info = &h["serverInfo"]["git"];
    match h["commit"].as_str() {
        Some(sha) => {
            assert_eq!(git_info["available"], true, "{h}");
            assert_eq!(git_info["fullSha"], sha);
            assert_eq!(
                git_info["shortSha"].as_str().map(|s| sha.starts_with(s)),
                Some(true)
            );
            let subject = git(&["show", "-s", "--format=%s", sha]);
            assert_eq!(subject.as_deref(), git_info["subject"].as_str(), "{h}");
        }
        None => {
            assert!(
                git(&["rev-parse", "HEAD"]).is_none(),
                "built in a checkout: {h}"
            );
            assert_eq!(git_info["unavailableReason"], "git_unavailable");
        }
    }

    // A new, empty instance has no backup yet, and says so.
    let backup_dir = s.data_dir.join("backups");
    let b = &h["databaseBackup"];
    assert_eq!(b["enabled"], true);
    assert_eq!(b["status"], "warning");
    assert_eq!(b["backupDir"], backup_dir.display().to_string());
    assert_eq!(b["maxAgeHours"], 26);
    assert_eq!(b["latestBackup"], Value::Null);
    assert_eq!(codes(&b["warnings"]), ["database_backup_missing"]);
    assert_eq!(h["warnings"], b["warnings"]);

    // Deleting a company is really served.
    assert_eq!(h["features"]["companyDeletionEnabled"], true);
    let doomed = s.company("Short Lived").await;
    let (status, body) = s
        .delete(&format!(
            "/api/companies/{}",
            doomed["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // With a company in it, the next start backs it up.
    s.company("Backed Up Co").await;
    let (data_dir, database_url) = s.stop_keeping_data();
    let s = TestServer::start_with(data_dir, database_url, &[]).await;
    let h = common::until(60, "a backup at start", async || {
        let h = health(&s).await;
        (h["databaseBackup"]["status"] == "ok").then_some(h)
    })
    .await;
    assert!(
        h.get("warnings").is_none(),
        "no warnings once backed up: {h}"
    );
    let latest = &h["databaseBackup"]["latestBackup"];
    let path = PathBuf::from(latest["path"].as_str().unwrap());
    assert_eq!(path.parent(), Some(backup_dir.as_path()));
    assert_eq!(backups_in(&backup_dir), [latest["name"].as_str().unwrap()]);
    let size = std::fs::metadata(&path).unwrap().len();
    assert_eq!(latest["sizeBytes"], size);
    assert!(latest["ageHours"].as_f64().unwrap() < 1.0, "{latest}");
    assert!(names_in_backup(&path).await.contains("Backed Up Co"));

    // Restored, it is the instance as it was.
    let back = restored(&path).await;
    let companies = back.ok_get("/api/companies").await;
    let names: Vec<&str> = companies
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["Backed Up Co"], "{companies}");
}

#[tokio::test]
async fn the_cli_backs_up_now_and_retention_keeps_the_newest() {
    let s = TestServer::start().await;
    s.company("Kept Co").await;
    let mut taken = Vec::new();
    for i in 0..3 {
        let out = db_backup(&s, &["--db-backup-keep", "2"]);
        let (stdout, stderr) = common::cli::text(&out);
        assert!(out.status.success(), "{stdout}\n{stderr}");
        assert!(stdout.contains("Backing up"), "{stdout}");
        let wrote = stdout
            .lines()
            .find_map(|l| l.strip_prefix("Wrote "))
            .and_then(|l| l.split(' ').next())
            .unwrap_or_else(|| panic!("{stdout}"));
        taken.push(
            Path::new(wrote)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
        );
        assert_eq!(
            stdout.contains("Deleted 1 older backup"),
            i == 2,
            "{stdout}"
        );
    }
    let dir = s.data_dir.join("backups");
    assert_eq!(backups_in(&dir), taken[1..].to_vec(), "the oldest went");
    let h = health(&s).await;
    assert_eq!(
        h["databaseBackup"]["latestBackup"]["name"],
        taken[2].as_str()
    );
    assert_eq!(h["databaseBackup"]["status"], "ok");
    let newest = dir.join(&taken[2]);
    assert!(names_in_backup(&newest).await.contains("Kept Co"));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&newest).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "a backup is private");

    // Asked for over the API: the instance's administrator only.
    let company = s.ok_get("/api/companies").await[0].clone();
    let agent = s.agent(company["id"].as_str().unwrap(), "Nosy", None).await;
    let key = s.key(agent["id"].as_str().unwrap()).await;
    let (status, body) = s
        .as_agent(
            &key,
            None,
            "POST",
            "/api/instance/database-backups",
            Some(serde_json::json!({})),
        )
        .await;
    assert_eq!(status, 403, "{body}");
    let (status, body) = s
        .post("/api/instance/database-backups", serde_json::json!({}))
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["trigger"], "manual");
    assert_eq!(body["backupDir"], dir.display().to_string());
    let path = Path::new(body["backupFile"].as_str().unwrap());
    assert!(names_in_backup(path).await.contains("Kept Co"), "{body}");
}

#[tokio::test]
async fn a_failing_backup_warns_in_health_until_one_succeeds() {
    let s = TestServer::start().await;
    s.company("Fragile Co").await;
    let (data_dir, database_url) = s.stop_keeping_data();
    // A file where the backup folder should be.
    let folder = data_dir.join("backups");
    std::fs::write(&folder, b"not a folder").unwrap();
    let s = TestServer::start_with(data_dir, database_url, &[]).await;
    let h = common::until(60, "the failure in health", async || {
        let h = health(&s).await;
        codes(&h["warnings"])
            .contains(&"database_backup_last_failure")
            .then_some(h)
    })
    .await;
    let b = &h["databaseBackup"];
    assert_eq!(b["status"], "warning");
    assert_eq!(
        codes(&b["warnings"]),
        [
            "database_backup_check_failed",
            "database_backup_last_failure"
        ]
    );
    let failure = &b["lastFailure"];
    assert_eq!(
        failure["path"],
        s.data_dir
            .join("database-backup.failure")
            .display()
            .to_string()
    );
    assert!(
        failure["message"]
            .as_str()
            .unwrap()
            .contains("backup folder"),
        "{failure}"
    );

    let out = db_backup(&s, &[]);
    assert_eq!(out.status.code(), Some(1), "{:?}", common::cli::text(&out));

    // Once the folder can be made, a backup clears the failure.
    std::fs::remove_file(&folder).unwrap();
    let out = db_backup(&s, &[]);
    assert!(out.status.success(), "{:?}", common::cli::text(&out));
    let h = health(&s).await;
    assert_eq!(h["databaseBackup"]["status"], "ok", "{h}");
    assert_eq!(h["databaseBackup"]["lastFailure"], Value::Null);
}

#[tokio::test]
async fn strangers_get_the_backup_warnings_without_paths() {
    let (s, admin) = teams::instance(&[]).await;
    let (status, anonymous) = call(&s, Method::GET, "/api/health", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let b = &anonymous["databaseBackup"];
    let mut keys: Vec<&String> = b.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["enabled", "status", "warnings"], "{anonymous}");
    assert_eq!(codes(&b["warnings"]), ["database_backup_missing"]);
    assert_eq!(anonymous["warnings"], b["warnings"]);
    assert!(anonymous.get("commit").is_some());
    assert!(anonymous.get("serverInfo").is_none());
    let text = anonymous.to_string();
    assert!(!text.contains(&*s.data_dir.to_string_lossy()), "{text}");

    let (_, signed_in) = call(&s, Method::GET, "/api/health", Some(&admin), None).await;
    assert_eq!(
        signed_in["databaseBackup"]["backupDir"],
        s.data_dir.join("backups").display().to_string()
    );
}

#[tokio::test]
async fn backups_turned_off_are_not_taken_nor_reported() {
    let s = TestServer::start_args(&["--db-backup", "false"]).await;
    s.company("Unprotected Co").await;
    let (data_dir, database_url) = s.stop_keeping_data();
    let s = TestServer::start_with(data_dir, database_url, &["--db-backup", "false"]).await;
    let h = health(&s).await;
    assert!(h.get("databaseBackup").is_none(), "{h}");
    assert!(h.get("warnings").is_none(), "{h}");
    assert!(!s.data_dir.join("backups").exists());
}
