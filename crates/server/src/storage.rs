//! Where attachment bytes live: `storage/` under the data dir, one file per
//! object key (`{companyId}/issues/{issueId}/{YYYY}/{MM}/{DD}/{uuid}-{name}`).
//! A write goes to a temporary file first and is renamed into place, so a
//! reader never sees half a file; a key is checked against its company's
//! prefix before it is opened, so a row cannot point outside it.

use std::path::PathBuf;

use paperclip_core::attachment::key_is_safe;

/// The provider name attachments record for this storage.
pub const PROVIDER: &str = "local_disk";

#[derive(Clone)]
pub struct LocalDisk {
    base: PathBuf,
}

impl LocalDisk {
    pub fn under(data_dir: &str) -> LocalDisk {
        LocalDisk {
            base: PathBuf::from(data_dir).join("storage"),
        }
    }

    fn path(&self, company_id: &str, key: &str) -> std::io::Result<PathBuf> {
        if !key_is_safe(company_id, key) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "object key outside its company",
            ));
        }
        Ok(self.base.join(key))
    }

    pub async fn put(&self, company_id: &str, key: &str, bytes: &[u8]) -> std::io::Result<()> {
        let path = self.path(company_id, key)?;
        let dir = path.parent().expect("a key has a directory");
        tokio::fs::create_dir_all(dir).await?;
        let tmp = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4().simple()));
        let written = async {
            tokio::fs::write(&tmp, bytes).await?;
            tokio::fs::rename(&tmp, &path).await
        }
        .await;
        if written.is_err() {
            let _ = tokio::fs::remove_file(&tmp).await;
        }
        written
    }

    pub async fn get(&self, company_id: &str, key: &str) -> std::io::Result<Vec<u8>> {
        tokio::fs::read(self.path(company_id, key)?).await
    }

    pub async fn delete(&self, company_id: &str, key: &str) -> std::io::Result<()> {
        match tokio::fs::remove_file(self.path(company_id, key)?).await {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }

    /// Removes every object of an issue (`Some`) or of a whole company, once
    /// their rows are gone; best effort, as the rows decide what exists.
    pub async fn remove_all(&self, company_id: &str, issue_id: Option<&str>) {
        let key = match issue_id {
            Some(issue) => format!("{company_id}/issues/{issue}/x"),
            None => format!("{company_id}/x"),
        };
        let Ok(path) = self.path(company_id, &key) else {
            return;
        };
        let dir = path.parent().expect("a key has a directory");
        match tokio::fs::remove_dir_all(dir).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                tracing::warn!(error = %e, dir = %dir.display(), "could not remove attachment files");
            }
            _ => {}
        }
    }
}
