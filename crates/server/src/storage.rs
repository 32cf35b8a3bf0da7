//! Where attachment bytes live: `storage/` under the data dir (the default),
//! one file per object key (`{companyId}/issues/{issueId}/{YYYY}/{MM}/{DD}/
//! {uuid}-{name}`), or an S3-compatible bucket when configured
//! ([`crate::storage_s3`]). A file is written to a temporary name first and
//! renamed into place, so a reader never sees half of one; a key is checked
//! against its company's prefix before it is used, so a row cannot point
//! outside it. Each attachment records its provider, and is read from it.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use axum::body::Bytes;
use futures::{Stream, StreamExt};

use paperclip_core::attachment::key_is_safe;

use crate::storage_s3::{S3Config, S3};

/// The provider name attachments record for the data dir.
pub const PROVIDER: &str = "local_disk";
/// The provider name of objects in S3-compatible storage.
pub const S3_PROVIDER: &str = "s3";

fn unsafe_key() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        "object key outside its company",
    )
}

/// One attachment store: the data dir or the configured bucket.
pub enum Storage {
    Local(LocalDisk),
    S3(Arc<S3>),
}

impl Storage {
    /// The store new uploads go to.
    pub fn for_writes(data_dir: &str, s3: Option<&S3Config>) -> Storage {
        match s3 {
            Some(config) => Storage::S3(client(config)),
            None => Storage::Local(LocalDisk::under(data_dir)),
        }
    }

    /// The store an attachment recorded under `provider` lives in; `None`
    /// when it is in a bucket this instance is not configured for.
    pub fn for_provider(provider: &str, data_dir: &str, s3: Option<&S3Config>) -> Option<Storage> {
        match provider {
            S3_PROVIDER => s3.map(|c| Storage::S3(client(c))),
            _ => Some(Storage::Local(LocalDisk::under(data_dir))),
        }
    }

    pub fn provider(&self) -> &'static str {
        match self {
            Storage::Local(_) => PROVIDER,
            Storage::S3(_) => S3_PROVIDER,
        }
    }

    pub async fn put(&self, company_id: &str, key: &str, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Storage::Local(d) => d.put(company_id, key, bytes).await,
            Storage::S3(s) if key_is_safe(company_id, key) => s.put(key, bytes).await,
            Storage::S3(_) => Err(unsafe_key()),
        }
    }

    /// `len` bytes of an object of `size` bytes from `start`, streamed: a
    /// download holds one chunk in memory, not the file.
    pub async fn read(
        &self,
        company_id: &str,
        key: &str,
        size: u64,
        start: u64,
        len: u64,
    ) -> std::io::Result<Chunks> {
        match self {
            Storage::Local(d) => d.read(company_id, key, size, start, len).await,
            Storage::S3(s) if key_is_safe(company_id, key) => s.read(key, start, len).await,
            Storage::S3(_) => Err(unsafe_key()),
        }
    }

    pub async fn delete(&self, company_id: &str, key: &str) -> std::io::Result<()> {
        match self {
            Storage::Local(d) => d.delete(company_id, key).await,
            Storage::S3(s) if key_is_safe(company_id, key) => s.delete(key).await,
            Storage::S3(_) => Err(unsafe_key()),
        }
    }
}

/// An object's bytes as they are read, one chunk at a time.
pub type Chunks = Pin<Box<dyn Stream<Item = std::io::Result<Bytes>> + Send>>;

/// How much of a file one read takes.
const CHUNK: usize = 64 * 1024;

/// The `len` bytes after the first `skip` of a stream of chunks.
pub(crate) fn window(chunks: Chunks, skip: u64, len: u64) -> Chunks {
    let state = (chunks, skip, len);
    Box::pin(futures::stream::unfold(
        state,
        |(mut chunks, mut skip, mut left)| async move {
            while left > 0 {
                let mut bytes = match chunks.next().await? {
                    Ok(bytes) => bytes,
                    Err(e) => return Some((Err(e), (chunks, 0, 0))),
                };
                if skip >= bytes.len() as u64 {
                    skip -= bytes.len() as u64;
                    continue;
                }
                let _ = bytes.split_to(skip as usize);
                skip = 0;
                let keep = (bytes.len() as u64).min(left);
                left -= keep;
                return Some((Ok(bytes.slice(..keep as usize)), (chunks, skip, left)));
            }
            None
        },
    ))
}

/// One client per process: its connection pool and TLS setup are reused.
fn client(config: &S3Config) -> Arc<S3> {
    static CLIENT: OnceLock<Arc<S3>> = OnceLock::new();
    CLIENT
        .get_or_init(|| Arc::new(S3::new(config.clone())))
        .clone()
}

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
            return Err(unsafe_key());
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

    async fn read(
        &self,
        company_id: &str,
        key: &str,
        size: u64,
        start: u64,
        len: u64,
    ) -> std::io::Result<Chunks> {
        use tokio::io::{AsyncReadExt, AsyncSeekExt};
        let mut file = tokio::fs::File::open(self.path(company_id, key)?).await?;
        // A file whose length is not the recorded one would answer a
        // Content-Length it cannot fill.
        if file.metadata().await?.len() != size {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stored file does not have its recorded size",
            ));
        }
        file.seek(std::io::SeekFrom::Start(start)).await?;
        let reader = file.take(len);
        let chunks = futures::stream::unfold(Some(reader), |reader| async move {
            let mut reader = reader?;
            let mut buf = vec![0u8; CHUNK];
            match reader.read(&mut buf).await {
                Ok(0) => None,
                Ok(n) => {
                    buf.truncate(n);
                    Some((Ok(Bytes::from(buf)), Some(reader)))
                }
                Err(e) => Some((Err(e), None)),
            }
        });
        Ok(Box::pin(chunks))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(parts: &[&'static [u8]]) -> Chunks {
        let items: Vec<std::io::Result<Bytes>> =
            parts.iter().map(|p| Ok(Bytes::from_static(p))).collect();
        Box::pin(futures::stream::iter(items))
    }

    async fn collect(c: Chunks) -> Vec<u8> {
        let parts: Vec<_> = c.collect().await;
        parts
            .into_iter()
            .flat_map(|p| p.unwrap().to_vec())
            .collect()
    }

    #[tokio::test]
    async fn a_window_skips_and_takes_across_chunk_boundaries() {
        let parts: &[&'static [u8]] = &[b"abc", b"defg", b"h", b"ijkl"];
        assert_eq!(collect(window(chunks(parts), 0, 12)).await, b"abcdefghijkl");
        assert_eq!(collect(window(chunks(parts), 2, 3)).await, b"cde");
        assert_eq!(collect(window(chunks(parts), 3, 4)).await, b"defg");
        assert_eq!(collect(window(chunks(parts), 7, 5)).await, b"hijkl");
        assert_eq!(collect(window(chunks(parts), 11, 9)).await, b"l");
        assert!(collect(window(chunks(parts), 12, 1)).await.is_empty());
    }
}
