//! `paperclip db backup`: a database backup now, with the server's settings
//! (the flags and environment of `paperclip run`), whether the server runs
//! or not. It neither migrates the database nor talks to the server.

use std::time::Instant;

use anyhow::Context;
use paperclip_runtime::backups::{Backups, Source};

use crate::config::{Config, RunArgs};

#[derive(clap::Subcommand)]
pub enum DbCommand {
    /// Back the database up now into the backup folder (`backups` in the
    /// data dir unless --db-backup-dir), then delete the oldest beyond
    /// --db-backup-keep. Restoring: see the README.
    Backup(RunArgs),
}

pub fn main(cmd: DbCommand) -> anyhow::Result<()> {
    let DbCommand::Backup(args) = cmd;
    let config = Config::resolve(args)?;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?
        .block_on(backup(config))
}

async fn backup(config: Config) -> anyhow::Result<()> {
    let source = config.backup_source();
    if let Source::Sqlite(db) = &source {
        if !db.exists() {
            anyhow::bail!(
                "there is no database at {}: nothing to back up (is --data-dir right?)",
                db.display()
            );
        }
    }
    let settings = config.backups.clone();
    println!(
        "Backing up {} into {} …",
        config.database_label(),
        settings.dir.display()
    );
    let started = Instant::now();
    let taken = Backups::new(source, settings.clone(), &config.data_dir)
        .take()
        .await
        .context("the backup failed")?;
    println!(
        "Wrote {} ({}) in {} ms",
        taken.path.display(),
        size(taken.size_bytes),
        started.elapsed().as_millis()
    );
    if !taken.deleted.is_empty() {
        println!(
            "Deleted {} older backup{} (keeping the newest {}): {}",
            taken.deleted.len(),
            if taken.deleted.len() == 1 { "" } else { "s" },
            settings.keep,
            taken.deleted.join(", ")
        );
    }
    Ok(())
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / (1 << 10) as f64),
        b => format!("{b} bytes"),
    }
}
