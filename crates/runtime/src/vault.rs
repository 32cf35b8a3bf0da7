//! The instance's master key and the sealing of company secret values with
//! it (`paperclip_core::secret_box` is the cipher; this is its key and
//! randomness).
//!
//! The key is `PAPERCLIP_SECRETS_MASTER_KEY` when set (64 hex digits or
//! base64 of 32 bytes), else `secrets/master.key` in the data dir, made with
//! mode 0600 (its dir 0700) the first time a secret is written or read. A
//! key file that others may read, or that holds no key, stops the server at
//! start rather than being used or replaced: a loose file may already have
//! been copied, and a new key would make every stored secret unreadable.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{bail, Context};
use paperclip_core::company_secret::SealedVersion;
use paperclip_core::secret_box::{self, MasterKey, Sealed, NONCE_BYTES};

pub const KEY_ENV: &str = "PAPERCLIP_SECRETS_MASTER_KEY";

pub struct Vault {
    file: PathBuf,
    /// From the environment, or the file once read or made.
    key: Mutex<Option<MasterKey>>,
    from_env: bool,
}

impl Vault {
    /// The vault of a data dir; `env_key` is `PAPERCLIP_SECRETS_MASTER_KEY`.
    /// Errs (and the server does not start) on an env key that is no key,
    /// and on an existing key file that is readable by others or holds no
    /// key. A missing file is made when first needed.
    pub fn open(data_dir: &Path, env_key: Option<&str>) -> anyhow::Result<Vault> {
        let file = data_dir.join("secrets").join("master.key");
        let env_key = env_key.filter(|k| !k.trim().is_empty());
        let key = match env_key {
            Some(text) => Some(
                MasterKey::parse(text)
                    .map_err(|why| anyhow::anyhow!("{KEY_ENV} is invalid: {why}"))?,
            ),
            None if file.exists() => Some(read_key_file(&file)?),
            None => None,
        };
        Ok(Vault {
            file,
            key: Mutex::new(key),
            from_env: env_key.is_some(),
        })
    }

    /// Where the key lives (or will), for messages and the README's backup advice.
    pub fn describe(&self) -> String {
        if self.from_env {
            KEY_ENV.to_string()
        } else {
            self.file.display().to_string()
        }
    }

    /// The master key, made on first need.
    pub fn key(&self) -> anyhow::Result<MasterKey> {
        let mut slot = self.key.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(key) = slot.as_ref() {
            return Ok(key.clone());
        }
        let key = create_key_file(&self.file)?;
        *slot = Some(key.clone());
        Ok(key)
    }

    /// A sealer for the store's writes: a fresh random nonce per value.
    pub fn sealer(key: MasterKey) -> impl Fn(&str, i64, &[u8]) -> Sealed + Sync {
        move |secret_id, version, plaintext| {
            let mut nonce = [0u8; NONCE_BYTES];
            // Without the OS random source no nonce can be trusted unique;
            // there is nothing safe to fall back to.
            getrandom::fill(&mut nonce).expect("the OS random source is readable");
            secret_box::seal(&key, nonce, secret_id, version, plaintext)
        }
    }

    /// The plaintext of a stored version. The error says why without any
    /// part of the value or key.
    pub fn reveal(&self, sealed: &SealedVersion) -> Result<String, String> {
        let key = self.key().map_err(|e| format!("{e:#}"))?;
        let nonce: Option<[u8; NONCE_BYTES]> =
            secret_box::decode(&sealed.nonce).and_then(|n| n.try_into().ok());
        let ciphertext = secret_box::decode(&sealed.ciphertext);
        let (Some(nonce), Some(ciphertext)) = (nonce, ciphertext) else {
            return Err("its stored ciphertext is malformed".into());
        };
        let plain = secret_box::open(
            &key,
            &Sealed { nonce, ciphertext },
            &sealed.secret_id,
            sealed.version,
        )
        .map_err(|_| {
            format!(
                "it cannot be decrypted with this server's master key ({}); was the key \
                 changed or lost? Restore the key the secret was written with, or rotate it",
                self.describe()
            )
        })?;
        String::from_utf8(plain).map_err(|_| "its decrypted value is not UTF-8 text".into())
    }
}

fn read_key_file(file: &Path) -> anyhow::Result<MasterKey> {
    let mode = std::fs::metadata(file)
        .with_context(|| format!("reading the secrets master key {}", file.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        bail!(
            "the secrets master key {} is readable by other users (mode {:o}); \
             make it private with `chmod 600 {}` and start again",
            file.display(),
            mode & 0o777,
            file.display()
        );
    }
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("reading the secrets master key {}", file.display()))?;
    MasterKey::parse(&text).map_err(|why| {
        anyhow::anyhow!(
            "the secrets master key {} holds no key ({why}); restore it from your backup",
            file.display()
        )
    })
}

/// Writes a new random key with mode 0600 from the start (never a moment
/// readable by others). A file another process made meanwhile is read instead.
fn create_key_file(file: &Path) -> anyhow::Result<MasterKey> {
    let dir = file
        .parent()
        .expect("the key file is inside the secrets dir");
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating the secrets dir {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("making the secrets dir {} private", dir.display()))?;
    let mut bytes = [0u8; secret_box::KEY_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| anyhow::anyhow!("reading random bytes: {e}"))?;
    let key = MasterKey::from_bytes(bytes);
    let opened = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file);
    match opened {
        Ok(mut f) => {
            f.write_all(key.to_base64().as_bytes())
                .and_then(|_| f.sync_all())
                .with_context(|| format!("writing the secrets master key {}", file.display()))?;
            tracing::info!(path = %file.display(), "created the secrets master key");
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key_file(file),
        Err(e) => {
            Err(e).with_context(|| format!("creating the secrets master key {}", file.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("paperclip-vault-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn sealed(vault: &Vault, id: &str, version: i64, value: &str) -> SealedVersion {
        let seal = Vault::sealer(vault.key().unwrap());
        let s = seal(id, version, value.as_bytes());
        SealedVersion {
            secret_id: id.into(),
            company_id: "c".into(),
            name: "n".into(),
            status: paperclip_core::company_secret::SecretStatus::Active,
            version,
            nonce: secret_box::encode(&s.nonce),
            ciphertext: secret_box::encode(&s.ciphertext),
        }
    }

    #[test]
    fn the_key_file_is_made_private_on_first_need_and_read_back() {
        let dir = temp_dir();
        let vault = Vault::open(&dir, None).unwrap();
        let file = dir.join("secrets/master.key");
        assert!(!file.exists(), "made on first need, not at open");
        let value = sealed(&vault, "id-1", 1, "s3cret-value");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let again = Vault::open(&dir, None).unwrap();
        assert_eq!(again.reveal(&value).unwrap(), "s3cret-value");
        // Two sealings of one value differ: each has its own nonce.
        assert_ne!(
            sealed(&vault, "id-1", 1, "x").nonce,
            sealed(&vault, "id-1", 1, "x").nonce
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_loose_or_empty_key_file_or_bad_env_key_refuses_to_start() {
        let dir = temp_dir();
        let file = dir.join("secrets/master.key");
        Vault::open(&dir, None).unwrap().key().unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Vault::open(&dir, None).err().unwrap().to_string();
        assert!(err.contains("chmod 600"), "{err}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&file, "").unwrap();
        assert!(Vault::open(&dir, None).is_err());
        assert!(Vault::open(&dir, Some("short")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_env_key_wins_and_another_key_cannot_reveal() {
        let dir = temp_dir();
        let from_file = Vault::open(&dir, None).unwrap();
        let value = sealed(&from_file, "id-1", 1, "s3cret-value");
        let env = Vault::open(&dir, Some(&"11".repeat(32))).unwrap();
        let err = env.reveal(&value).unwrap_err();
        assert!(err.contains(KEY_ENV) && !err.contains("s3cret"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
