//! Automatic database backups: one component takes them (the server's
//! schedule, `paperclip db backup` on demand), writes each under a temporary
//! name and renames it when complete, keeps the newest few, and leaves a
//! failure marker in the data dir until a backup succeeds again. The health
//! answer reads the folder and the marker ([`Backups::inspect`]).
//!
//! - SQLite: `VACUUM INTO` a consistent, compact copy of the database
//!   (`paperclip-<time>.db`), opened as it is; restoring is copying it over
//!   `paperclip.db` with the server stopped.
//! - Postgres: `pg_dump`'s plain SQL, gzip'd (`paperclip-<time>.sql.gz`),
//!   which needs the PostgreSQL client on the server's PATH; without it each
//!   attempt fails and says so in the health answer, so an operator whose
//!   Postgres is backed up elsewhere turns ours off (`--db-backup false`)
//!   rather than being told nothing. The password goes to `pg_dump` in its
//!   environment, never on its command line.
//!
//! The schedule only backs up an instance that holds a company: a new,
//! empty one has nothing to lose yet (and reports the backup as missing
//! until its first).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use chrono::{DateTime, SecondsFormat, Utc};
use paperclip_core::backup::{self, Format, Warning};
use paperclip_store::Store;

/// The folder under the data dir backups go to unless told otherwise.
pub const DEFAULT_DIR: &str = "backups";
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(24 * 3600);
pub const DEFAULT_KEEP: usize = 7;

/// The marker a failed backup leaves in the data dir (the backup folder may
/// be what failed), removed by the next backup that succeeds.
const MARKER: &str = "database-backup.failure";

#[derive(Debug, Clone)]
pub struct Settings {
    /// Whether the server takes them on its schedule (`paperclip db backup`
    /// takes one either way).
    pub enabled: bool,
    pub dir: PathBuf,
    pub interval: Duration,
    pub keep: usize,
}

/// Which database is backed up, and how.
#[derive(Clone)]
pub enum Source {
    /// The database file.
    Sqlite(PathBuf),
    Postgres {
        url: String,
    },
}

#[derive(Clone)]
pub struct Backups(Arc<Inner>);

struct Inner {
    source: Source,
    settings: Settings,
    marker: PathBuf,
    /// One backup at a time in this process: a scheduled one finding a
    /// backup under way waits for it, then finds none due.
    busy: tokio::sync::Mutex<()>,
}

/// A backup written.
#[derive(Debug)]
pub struct Taken {
    pub path: PathBuf,
    pub size_bytes: u64,
    /// Older backups retention deleted after it.
    pub deleted: Vec<String>,
}

/// What the health answer says of backups.
#[derive(Debug)]
pub struct Inspection {
    pub enabled: bool,
    pub status: &'static str,
    pub dir: String,
    pub max_age_hours: u64,
    pub latest: Option<Latest>,
    pub last_failure: Option<Failure>,
    pub warnings: Vec<Warning>,
}

#[derive(Debug)]
pub struct Latest {
    pub name: String,
    pub path: String,
    pub mtime: String,
    pub age_hours: f64,
    pub size_bytes: u64,
}

#[derive(Debug)]
pub struct Failure {
    pub path: String,
    pub mtime: String,
    pub message: String,
}

impl Backups {
    pub fn new(source: Source, settings: Settings, data_dir: &Path) -> Backups {
        Backups(Arc::new(Inner {
            source,
            settings,
            marker: data_dir.join(MARKER),
            busy: Default::default(),
        }))
    }

    pub fn settings(&self) -> &Settings {
        &self.0.settings
    }

    fn format(&self) -> Format {
        match self.0.source {
            Source::Sqlite(_) => Format::Sqlite,
            Source::Postgres { .. } => Format::PostgresDump,
        }
    }

    /// Takes a backup now, then applies retention. A failure is recorded in
    /// the marker (and returned); a success clears it.
    pub async fn take(&self) -> anyhow::Result<Taken> {
        let one = self.0.busy.lock().await;
        self.take_holding(one).await
    }

    /// A backup asked for by a person: `None` while another is being
    /// written (they are not queued behind each other, as upstream answers
    /// 409 then).
    pub async fn try_take(&self) -> Option<anyhow::Result<Taken>> {
        let one = self.0.busy.try_lock().ok()?;
        Some(self.take_holding(one).await)
    }

    async fn take_holding(&self, _one: tokio::sync::MutexGuard<'_, ()>) -> anyhow::Result<Taken> {
        let taken = self.write_one().await;
        let marker = self.0.marker.clone();
        let failure = taken.as_ref().err().map(|e| one_line(&format!("{e:#}")));
        let recorded = tokio::task::spawn_blocking(move || match failure {
            Some(message) => std::fs::write(&marker, format!("{message}\n")),
            None => match std::fs::remove_file(&marker) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
        })
        .await?;
        if let Err(err) = recorded {
            tracing::warn!(marker = %self.0.marker.display(), error = %err, "could not update the backup failure marker");
        }
        taken
    }

    async fn write_one(&self) -> anyhow::Result<Taken> {
        let dir = self.0.settings.dir.clone();
        let format = self.format();
        let name = backup::file_name(Utc::now(), format);
        let (path, partial) = (dir.join(&name), dir.join(format!("{name}.partial")));
        let prepared = dir.clone();
        tokio::task::spawn_blocking(move || prepare(&prepared, format)).await??;
        let written = match &self.0.source {
            Source::Sqlite(db) => paperclip_store::backup::sqlite_copy(db, &partial)
                .await
                .with_context(|| format!("copying {}", db.display())),
            Source::Postgres { url } => pg_dump(url, &partial).await,
        };
        if let Err(err) = written {
            let _ = tokio::fs::remove_file(&partial).await;
            return Err(err);
        }
        let keep = self.0.settings.keep;
        tokio::task::spawn_blocking(move || {
            let size_bytes = complete(&partial, &path)?;
            Ok(Taken {
                deleted: prune(&dir, format, keep)?,
                path,
                size_bytes,
            })
        })
        .await?
    }

    /// Takes a backup whenever one is due (module doc), from now until the
    /// process stops: at start, then every check period.
    pub async fn run(self, store: Store) {
        let period = backup::check_period(self.0.settings.interval);
        loop {
            match self.due(&store).await {
                Ok(false) => {}
                Ok(true) => match self.take().await {
                    Ok(t) => tracing::info!(
                        backup = %t.path.display(), bytes = t.size_bytes, deleted = t.deleted.len(),
                        "database backup written"
                    ),
                    Err(err) => {
                        tracing::warn!(error = %format!("{err:#}"), "database backup failed")
                    }
                },
                Err(err) => {
                    tracing::warn!(error = %err, "could not tell whether a database backup is due")
                }
            }
            tokio::time::sleep(period).await;
        }
    }

    async fn due(&self, store: &Store) -> anyhow::Result<bool> {
        if !paperclip_store::backup::holds_data(store).await? {
            return Ok(false);
        }
        let (dir, format) = (self.0.settings.dir.clone(), self.format());
        // An unreadable folder is due too: the attempt records why it fails.
        let newest = tokio::task::spawn_blocking(move || newest(&dir, format))
            .await?
            .unwrap_or(None);
        let age = newest.map(|(_, meta)| age(&meta));
        Ok(backup::due(age, self.0.settings.interval))
    }

    /// The backups' state for the health answer (reads the folder and the
    /// marker: call it off the async threads).
    pub fn inspect(&self) -> Inspection {
        let settings = &self.0.settings;
        let dir = settings.dir.display().to_string();
        let max_age_hours = backup::max_age_hours(settings.interval);
        let latest = newest(&settings.dir, self.format()).map(|found| {
            found.map(|(path, meta)| Latest {
                name: path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                path: path.display().to_string(),
                mtime: modified(&meta),
                age_hours: backup::hours(age(&meta)),
                size_bytes: meta.len(),
            })
        });
        let last_failure = read_marker(&self.0.marker);
        let warnings = backup::warnings(&backup::Facts {
            dir: &dir,
            newest_age_hours: latest
                .as_ref()
                .map(|l| l.as_ref().map(|l| l.age_hours))
                .map_err(|e| e.to_string()),
            last_failure: last_failure.as_ref().map(|f| f.message.as_str()),
            max_age_hours,
        });
        Inspection {
            enabled: settings.enabled,
            status: backup::status(&warnings),
            dir,
            max_age_hours,
            latest: latest.ok().flatten(),
            last_failure,
            warnings,
        }
    }
}

/// Makes the folder (private: a backup holds everything the database does,
/// the instance's signing secret included) and removes what an interrupted
/// backup left.
fn prepare(dir: &Path, format: Format) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    if !dir.is_dir() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating the backup folder {}", dir.display()))?;
    }
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name
            .strip_suffix(".partial")
            .is_some_and(|n| backup::is_backup(n, format))
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Ok(())
}

/// Makes a written backup private and durable, then gives it its name: a
/// backup under its final name is always whole. Its size.
fn complete(partial: &Path, path: &Path) -> anyhow::Result<u64> {
    use std::os::unix::fs::PermissionsExt;
    let file = std::fs::File::open(partial)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.sync_all()?;
    std::fs::rename(partial, path)
        .with_context(|| format!("naming the backup {}", path.display()))?;
    if let Some(dir) = path.parent() {
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(file.metadata()?.len())
}

/// Deletes all but the newest `keep` backups; the names deleted.
fn prune(dir: &Path, format: Format, keep: usize) -> anyhow::Result<Vec<String>> {
    let names: Vec<String> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| backup::is_backup(n, format))
        .collect();
    let doomed = backup::to_delete(&names, keep);
    for name in &doomed {
        std::fs::remove_file(dir.join(name))
            .with_context(|| format!("deleting the old backup {name}"))?;
    }
    Ok(doomed)
}

/// The newest backup in `dir` (by name, which is its time), if any; a
/// folder not made yet holds none.
fn newest(dir: &Path, format: Format) -> std::io::Result<Option<(PathBuf, std::fs::Metadata)>> {
    let entries = match std::fs::read_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        other => other?,
    };
    let newest = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| backup::is_backup(n, format))
        .max();
    match newest {
        None => Ok(None),
        Some(name) => {
            let path = dir.join(name);
            let meta = std::fs::metadata(&path)?;
            Ok(Some((path, meta)))
        }
    }
}

fn read_marker(path: &Path) -> Option<Failure> {
    let meta = std::fs::metadata(path).ok()?;
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let message = match text.lines().next().map(str::trim) {
        Some(line) if !line.is_empty() => line.to_string(),
        _ => "A database backup failed.".to_string(),
    };
    Some(Failure {
        path: path.display().to_string(),
        mtime: modified(&meta),
        message,
    })
}

fn age(meta: &std::fs::Metadata) -> Duration {
    meta.modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .unwrap_or_default()
}

fn modified(meta: &std::fs::Metadata) -> String {
    let at: DateTime<Utc> = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH).into();
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// An error as the marker keeps it: one line, bounded.
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    line.chars().take(500).collect()
}

/// Dumps the Postgres database at `url` into `out` (plain SQL, gzip'd).
async fn pg_dump(url: &str, out: &Path) -> anyhow::Result<()> {
    let (url, password) = split_password(url)?;
    let mut cmd = tokio::process::Command::new("pg_dump");
    cmd.arg("--format=plain")
        .arg("--compress=6")
        .arg("--no-owner")
        .arg(format!("--file={}", out.display()))
        .arg(format!("--dbname={url}"))
        .env("PGCONNECT_TIMEOUT", "10")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(password) = password {
        cmd.env("PGPASSWORD", password);
    }
    // SAFETY: prctl only sets this child's parent-death signal, between fork
    // and exec: a server killed outright takes its dump with it.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let output = match cmd.output().await {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
            "pg_dump is not installed (or not on PATH): install the PostgreSQL client, \
             or turn automatic backups off with --db-backup false"
        ),
        other => other.context("starting pg_dump")?,
    };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let why = stderr
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("no message");
        anyhow::bail!("pg_dump failed ({}): {why}", output.status);
    }
    Ok(())
}

/// The URL without its password, and the password (decoded), so the
/// password never shows in a process listing.
fn split_password(url: &str) -> anyhow::Result<(String, Option<String>)> {
    let mut parsed = url::Url::parse(url).context("reading DATABASE_URL for pg_dump")?;
    let password = parsed.password().map(|p| {
        percent_encoding::percent_decode_str(p)
            .decode_utf8_lossy()
            .into_owned()
    });
    if password.is_some() && parsed.set_password(None).is_err() {
        anyhow::bail!("DATABASE_URL's password could not be separated for pg_dump");
    }
    Ok((parsed.to_string(), password))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_leaves_the_url() {
        let (url, pw) =
            split_password("postgres://app:s%40cret@db.internal:5433/paperclip?sslmode=require")
                .unwrap();
        assert_eq!(
            url,
            "postgres://app@db.internal:5433/paperclip?sslmode=require"
        );
        assert_eq!(pw.as_deref(), Some("s@cret"));
        let (url, pw) = split_password("postgres://postgres@127.0.0.1:55432/x").unwrap();
        assert_eq!(url, "postgres://postgres@127.0.0.1:55432/x");
        assert_eq!(pw, None);
    }

    #[test]
    fn retention_and_leftovers_touch_only_our_backups() {
        let dir = std::env::temp_dir().join(format!("paperclip-backups-{}", uuid::Uuid::new_v4()));
        prepare(&dir, Format::Sqlite).unwrap();
        let names = [
            "paperclip-20261201-000000-000.db",
            "paperclip-20261202-000000-000.db",
            "paperclip-20261203-000000-000.db",
        ];
        for name in names
            .iter()
            .chain(&["notes.txt", "paperclip-20261204-000000-000.db.partial"])
        {
            std::fs::write(dir.join(name), b"x").unwrap();
        }
        prepare(&dir, Format::Sqlite).unwrap();
        assert!(!dir
            .join("paperclip-20261204-000000-000.db.partial")
            .exists());
        assert_eq!(prune(&dir, Format::Sqlite, 2).unwrap(), [names[0]]);
        let (newest, _) = newest(&dir, Format::Sqlite).unwrap().unwrap();
        assert!(newest.ends_with(names[2]));
        assert!(dir.join("notes.txt").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
